"""agent-s's model options for a command run against a ScriptedModelServer, written once:
``model_options`` (the model and its key), ``key_file`` (a key in a file, as ``--api-key-file``
reads it), ``run_options`` (``run`` with them, native grounding and a record folder). E.g.
``["mcp", *model_options(url, key=key_file(tmp_path, "sk-SECRET"))]``."""

from __future__ import annotations

from pathlib import Path

UNREACHABLE = "http://127.0.0.1:9/v1"  # a base URL nothing answers at: for runs that never ask


def key_file(folder: Path, key: str) -> Path:
    """A file in ``folder`` holding ``key`` on its first line, readable by its owner only."""
    path = folder / "key"
    path.write_text(key + "\n")
    path.chmod(0o600)
    return path


def model_options(url: str = UNREACHABLE, *, key: str | Path | None = None) -> list[str]:
    """``--provider openai-compatible --model scripted-model --base-url URL``, then the key: a
    string with ``--api-key``, a path (``key_file``) with ``--api-key-file``; None: no key
    option (the provider's variable, or none)."""
    options = ["--provider", "openai-compatible", "--model", "scripted-model", "--base-url", url]
    if isinstance(key, Path):
        options += ["--api-key-file", str(key)]
    elif key is not None:
        options += ["--api-key", key]
    return options


def run_options(url: str, record: Path, *, key: str | Path | None = None) -> list[str]:
    """``run`` with the scripted model (``model_options``), native grounding (the model's own
    coordinates: no grounder), recording into ``record``."""
    return ["run", *model_options(url, key=key), "--ground", "native", "--record", str(record)]
