"""Secrets never leave: one ``Redactor`` replaces every secret value in what is written or sent.

    redactor = Redactor(["sk-live-0123456789"], environ=os.environ)
    redactor.text("the key is sk-live-0123456789")      # 'the key is [redacted]'

What is secret:

- the values given: the API keys (generation and grounding model) and the user's
  (``AgentConfig.secrets``; ``agent_s.settings.read`` fills it from ``[secrets]`` in the
  configuration file and from ``AGENT_S_SECRET_ENV``);
- with ``environ``: every variable whose NAME looks secret (``*_API_KEY``, ``*TOKEN*``,
  ``*SECRET*``, ``*PASSWORD*``, ...) whose value has at least ``ENV_MIN_LENGTH`` characters and
  is not an absolute path.

Values shorter than ``MIN_LENGTH`` characters are ignored: they occur by chance in ordinary text
(``EMPTY``, a local server's dummy key, is not worth mangling every prompt for). Each value is
matched as printed and in the encodings a printout produces: base64 (standard and URL-safe, at
each of the three alignments, so ``base64(user:password)`` is caught too), hex, URL-quoted and
JSON-escaped. Longer matches win; each match becomes ``[redacted]``.

Where it is applied (one ``Redactor`` per ``Agent``): every text part of every model request,
in ``MeteredProvider``, the one layer every call goes through; and locally in everything written
or shown: the trajectory folder (``TrajectoryWriter``), the code agent's sub-steps, its feedback
to the code model and its summary for the GUI worker, the accessibility snapshot, each step's
outcome and the run's result (reason, answer).

Screenshots are images: a secret shown on the screen reaches the model, and the screenshot
files, as pixels, and no text redaction can remove it. Keep secrets off the screen.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import quote, quote_plus

from agent_s.models.types import Message, ModelRequest, TextPart

PLACEHOLDER = "[redacted]"
MIN_LENGTH = 6  # shorter values are ignored
ENV_MIN_LENGTH = 8  # for values found by a variable's name rather than named by the user
_BASE64_SKIP = (0, 2, 3)  # characters that mix in the bytes before, per alignment
_URLSAFE = str.maketrans("+/", "-_")
_NAME_LISTS = frozenset({"AGENT_S_SECRET_ENV"})  # variables that name secrets, holding none


#: Names of environment variables that hold secrets: API keys, tokens, passwords.
SECRET_NAME = re.compile(r"API_?KEY|_KEY$|^KEY$|TOKEN|SECRET|PASSW|CREDENTIAL", re.IGNORECASE)


def secret_env_values(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Values of the variables whose name looks secret (long enough, not a path;
    ``AGENT_S_SECRET_ENV`` holds the NAMES of secret variables, not a secret)."""
    return tuple(
        value
        for name, value in environ.items()
        if SECRET_NAME.search(name)
        and name not in _NAME_LISTS
        and len(value) >= ENV_MIN_LENGTH
        and not value.startswith("/")
    )


def without_secrets(
    environ: Mapping[str, str], values: Iterable[str | None] = ()
) -> dict[str, str]:
    """``environ`` without the variables whose name looks secret or that hold one of
    ``values``: what every program agent-s starts gets (code, the apps it opens, desktops)."""
    hidden = {v for v in values if v}
    return {k: v for k, v in environ.items() if not SECRET_NAME.search(k) and v not in hidden}


def encoded_forms(value: str) -> set[str]:
    """``value`` and how a printout may show it: base64 (whole, or inside a longer encoded
    text at any alignment), hex, URL-quoted, JSON-escaped. Forms shorter than MIN_LENGTH are
    left out."""
    raw = value.encode("utf-8")
    whole = base64.b64encode(raw).decode("ascii")
    forms = {
        value,
        whole,
        whole.translate(_URLSAFE),
        raw.hex(),
        quote(value, safe=""),
        quote_plus(value, safe=""),
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
    }
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii").rstrip("=")
        end = len(encoded) - (1 if (shift + len(raw)) % 3 else 0)  # the last one mixes too
        core = encoded[_BASE64_SKIP[shift] : end]
        forms |= {core, core.translate(_URLSAFE)}
    return {form for form in forms if len(form) >= MIN_LENGTH}


class Redactor:
    """Replaces the secret values (see the module docstring) in text and in nested data."""

    def __init__(
        self,
        values: Iterable[str | None] = (),
        *,
        environ: Mapping[str, str] | None = None,
        placeholder: str = PLACEHOLDER,
    ) -> None:
        found = [v for v in values if v]
        if environ is not None:
            found += secret_env_values(environ)
        kept = {v for v in found if len(v) >= MIN_LENGTH}
        self._values = tuple(sorted(kept, key=lambda v: (-len(v), v)))  # longest first
        forms = sorted({f for v in kept for f in encoded_forms(v)}, key=lambda f: (-len(f), f))
        self._pattern = re.compile("|".join(map(re.escape, forms))) if forms else None
        self.placeholder = placeholder

    @property
    def values(self) -> tuple[str, ...]:
        """The secret values, longest first."""
        return self._values

    def __repr__(self) -> str:  # never the values
        return f"Redactor({len(self._values)} secret(s))"

    def text(self, text: str) -> str:
        """``text`` with every secret (in any of its forms) replaced by the placeholder."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(lambda _: self.placeholder, text)

    def count(self, text: str) -> int:
        """How many secrets (in any of their forms) ``text`` holds."""
        if self._pattern is None or not text:
            return 0
        return sum(1 for _ in self._pattern.finditer(text))

    def data(self, value: Any) -> Any:
        """``value`` with every string in it redacted: dicts (keys too), lists and tuples are
        copied; anything else is returned as it is."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.data(v) for v in value)
        return value

    def messages(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        """``messages`` with every text part redacted (images cannot be; see the module)."""
        return tuple(
            replace(
                m,
                parts=tuple(
                    TextPart(self.text(p.text)) if isinstance(p, TextPart) else p for p in m.parts
                ),
            )
            for m in messages
        )

    def request(self, request: ModelRequest) -> ModelRequest:
        """``request`` with every text part of every message redacted."""
        if self._pattern is None:
            return request
        return replace(request, messages=self.messages(request.messages))


__all__ = [
    "MIN_LENGTH",
    "PLACEHOLDER",
    "SECRET_NAME",
    "Redactor",
    "encoded_forms",
    "secret_env_values",
    "without_secrets",
]
