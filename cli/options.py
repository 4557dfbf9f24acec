"""Command-line options that several commands take: one definition each, as a typer ``Annotated``
alias, or as a group of options taken together (``ModelFlags``, ``GroundFlags``, ``LimitFlags``,
``PlanFlags``; ``agent_s.cli.grouped``). A command whose option says something of its own
(``bench run``'s ``--max-steps`` is per task) defines that one itself.

API keys never stay on a command line, where every user of the machine can read them (``ps``,
``/proc/PID/cmdline``): ``hide_api_key`` (called first thing by the ``agent-s`` entry point)
moves ``--api-key VALUE`` into this process's environment and rewrites the command line the OS
shows; ``--api-key-file PATH`` reads the key from a file instead.
"""

from __future__ import annotations

import sys
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from agent_s.cli.grouped import SettingsGroup

KEY_VARIABLE = "_AGENT_S_API_KEY"  # where hide_api_key puts --api-key's value
KEY_WARNING = (
    "warning: --api-key shows the key to other users of this machine (ps) while agent-s "
    "starts; it was moved off the command line. Set the provider's variable (OPENAI_API_KEY, "
    "ANTHROPIC_API_KEY) or use --api-key-file PATH instead."
)
_FIX = (
    "put the key on the first line of a file only you can read (chmod 600), or set the "
    "provider's variable (OPENAI_API_KEY, ANTHROPIC_API_KEY) instead"
)


UTF8_FIX = (
    "agent-s takes text in UTF-8: write it in UTF-8 (a terminal whose locale is not UTF-8 "
    "sends other bytes; `locale` shows it, `export LANG=C.UTF-8` sets one)"
)


def not_utf8(text: str) -> str | None:
    """The bytes of ``text`` as Python shows them when some are not UTF-8, else None.

    Python keeps undecodable bytes of the command line, the environment and (in a non-UTF-8
    locale) stdin as lone surrogates, which fail later, wherever the text is written out."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return repr(text.encode("utf-8", "surrogateescape"))
    return None


def undecodable_inputs(argv: Sequence[str], environ: MutableMapping[str, str]) -> str | None:
    """A one-line error naming the first argument or AGENT_S_* variable that is not UTF-8."""
    for number, arg in enumerate(argv, start=1):
        shown = not_utf8(arg)
        if shown is not None:
            return f"argument {number} ({shown}) has bytes that are not UTF-8; {UTF8_FIX}"
    for name, value in sorted(environ.items()):
        shown = not_utf8(name) or (not_utf8(value) if name.startswith("AGENT_S_") else None)
        if shown is not None and name.startswith("AGENT_S_"):
            return f"the variable {name} ({shown}) has bytes that are not UTF-8; {UTF8_FIX}"
    return None


def _read_key_file(path: str | None) -> str | None:
    """``--api-key-file``'s callback: the first line of the file, stripped."""
    if path is None:
        return None
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or str(err)
        raise typer.BadParameter(f"cannot read {path} ({reason}); {_FIX}") from None
    key = text.split("\n", 1)[0].strip()
    if not key:
        raise typer.BadParameter(f"the first line of {path} is empty; {_FIX}")
    return key


Provider = Annotated[
    str | None,
    typer.Option(
        help="openai | anthropic | openai-compatible | openai-responses (env AGENT_S_PROVIDER)."
    ),
]
Model = Annotated[str | None, typer.Option(help="Model name (env AGENT_S_MODEL).")]
BaseUrl = Annotated[
    str | None,
    typer.Option(help="API base URL, e.g. http://localhost:8000/v1 (env AGENT_S_BASE_URL)."),
]
ApiKey = Annotated[
    str | None,
    typer.Option(
        envvar=KEY_VARIABLE,
        show_envvar=False,
        help="API key (default: the provider's variable, e.g. OPENAI_API_KEY, "
        "ANTHROPIC_API_KEY). Prefer that variable or --api-key-file: a command line is visible "
        "to other users.",
    ),
]
ApiKeyFile = Annotated[
    str | None,
    typer.Option(
        metavar="PATH",
        callback=_read_key_file,
        help="Read the API key from the first line of this file.",
    ),
]
Ground = Annotated[
    str | None, typer.Option(help="auto | ocr | a11y | model | native (env AGENT_S_GROUND).")
]
GroundUrl = Annotated[
    str | None, typer.Option(help="Grounding model base URL (env AGENT_S_GROUND_URL).")
]
GroundModel = Annotated[
    str | None, typer.Option(help="Grounding model name (env AGENT_S_GROUND_MODEL).")
]
GroundConvention = Annotated[
    str | None,
    typer.Option(
        metavar="NAME",
        help="How the model that points writes a point (the grounding model's; the model's own "
        "with --ground native): pixels, grid1000, smart_resize, unit or WxH, each optionally "
        "-yx for [y, x]; `agent-s model check` says which (env AGENT_S_GROUND_CONVENTION).",
    ),
]
Marks = Annotated[
    bool | None,
    typer.Option(
        "--marks/--no-marks",
        help="Set-of-marks: number the controls on each screenshot sent to the model, which "
        "may then answer agent.click(mark=17); with any --ground (default off; env "
        "AGENT_S_MARKS).",
    ),
]
Monitor = Annotated[
    str | None,
    typer.Option(
        metavar="all|active|N",
        help="Which monitor to capture: all of them (default), the active window's, or "
        "number N as `agent-s doctor` lists them (env AGENT_S_MONITOR).",
    ),
]
Plan = Annotated[
    str | None,
    typer.Option(
        metavar="off|auto|always",
        help="Plan the task as subtasks, each checked when done: auto plans a long task up "
        "front, or any task once a step failed twice (default auto; env AGENT_S_PLAN).",
    ),
]
MaxReplans = Annotated[
    int | None,
    typer.Option(help="Replans allowed in a planned run (default 2; env AGENT_S_MAX_REPLANS)."),
]
SubtaskSteps = Annotated[
    int | None,
    typer.Option(
        help="Steps each subtask of a planned run may take (default 15; env AGENT_S_SUBTASK_STEPS)."
    ),
]
Memory = Annotated[
    bool | None,
    typer.Option(
        "--memory/--no-memory",
        help="Memory across runs: show the model relevant entries of earlier runs and learn "
        "from this one; --no-memory reads and writes nothing (default on; env AGENT_S_MEMORY).",
    ),
]
VirtualMonitors = Annotated[
    str | None,
    typer.Option(
        metavar="LAYOUT",
        help="With --virtual: its monitors, WxH or WxH+X+Y, comma-separated (e.g. "
        "1280x800,1024x768+1280+300; default one 1280x800).",
    ),
]


VirtualDesktopName = Annotated[
    str | None,
    typer.Option(
        "--desktop",
        metavar="NAME",
        help="With --virtual: the desktop to start: openbox (Xvfb, the default), sway, gnome "
        "(GNOME Shell, headless) or kde (KWin, virtual).",
    ),
]


def check_desktop(virtual: bool, desktop: str | None) -> None:
    """``ValueError`` (exit 2, before anything starts) when ``--desktop`` names no desktop or
    comes without ``--virtual``."""
    if desktop is None:
        return
    import os

    from agent_s.desktop.choose import virtual_kind

    if not virtual:
        raise ValueError("--desktop names the desktop --virtual starts: add --virtual")
    virtual_kind(os.environ, desktop)


def api_key(key: str | None, key_file: str | None) -> str | None:
    """The key given by ``--api-key`` or by ``--api-key-file`` (already read), if any."""
    if key and key_file:
        raise typer.BadParameter("give --api-key or --api-key-file, not both")
    return key or key_file


def _without_key(args: Sequence[str]) -> tuple[list[str], str | None]:
    """``args`` without ``--api-key VALUE`` / ``--api-key=VALUE`` (before a ``--``), and the
    value (the last one given, as the parser would take it)."""
    kept: list[str] = []
    value = None
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            kept += [arg, *rest]
            break
        if arg == "--api-key" and rest:
            value = rest.pop(0)
        elif arg.startswith("--api-key="):
            value = arg.split("=", 1)[1]
        else:
            kept.append(arg)
    return kept, value


def hide_api_key(argv: list[str], environ: MutableMapping[str, str]) -> bool:
    """Move ``--api-key``'s value from ``argv`` (changed in place) to ``environ[KEY_VARIABLE]``
    (which ``--api-key`` reads), and rewrite the process's command line as the OS shows it
    (Linux, with setproctitle) so the key is no longer in it. True if a key was moved."""
    kept, value = _without_key(argv[1:])
    if value is None:
        return False
    argv[1:] = kept
    environ[KEY_VARIABLE] = value
    try:
        from setproctitle import setproctitle
    except ImportError:  # pragma: no cover - a dependency; without it the key stays visible
        return True
    shown, _ = _without_key(getattr(sys, "orig_argv", argv))
    setproctitle(" ".join(shown))
    return True


ModelTimeout = Annotated[
    float | None,
    typer.Option(
        metavar="SECONDS",
        help="Seconds one attempt at a model call may take (default 60, plus 5 per image and 1 "
        "per 100 KB of request; env AGENT_S_MODEL_TIMEOUT).",
    ),
]
MaxSteps = Annotated[
    int | None, typer.Option(help="Step limit (default 30; env AGENT_S_MAX_STEPS).")
]
MaxCost = Annotated[float | None, typer.Option(help="Cost limit in USD (env AGENT_S_MAX_COST).")]
Safety = Annotated[
    str | None,
    typer.Option(
        help="auto | confirm | confirm-all | deny-risky (default confirm; env AGENT_S_SAFETY)."
    ),
]
Check = Annotated[
    str | None, typer.Option(help="A command run after done; exit status 0 = verified.")
]
AsJson = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
JsonReport = Annotated[bool, typer.Option("--json", help="Print the report as JSON.")]
CodeAgent = Annotated[
    bool | None,
    typer.Option("--code-agent/--no-code-agent", help="Offer the code agent (default on)."),
]


@dataclass(frozen=True)
class ModelFlags(SettingsGroup):
    """The model and its key: --provider, --model, --base-url, --api-key, --api-key-file."""

    not_settings = frozenset({"api_key", "api_key_file"})  # the key is read apart: ``key``

    provider: Provider = None
    model: Model = None
    base_url: BaseUrl = None
    api_key: ApiKey = None
    api_key_file: ApiKeyFile = None

    def key(self) -> str | None:
        """The key given by --api-key or --api-key-file (already read), if any."""
        return api_key(self.api_key, self.api_key_file)


@dataclass(frozen=True)
class GroundFlags(SettingsGroup):
    """How targets are found: --ground, --ground-url, --ground-model, --ground-convention."""

    ground: Ground = None
    ground_url: GroundUrl = None
    ground_model: GroundModel = None
    ground_convention: GroundConvention = None


@dataclass(frozen=True)
class LimitFlags(SettingsGroup):
    """What a run may take: --model-timeout (a model call), --max-steps, --max-cost."""

    model_timeout: ModelTimeout = None
    max_steps: MaxSteps = None
    max_cost: MaxCost = None


@dataclass(frozen=True)
class PlanFlags(SettingsGroup):
    """Planned runs: --plan, --max-replans, --subtask-steps."""

    plan: Plan = None
    max_replans: MaxReplans = None
    subtask_steps: SubtaskSteps = None
