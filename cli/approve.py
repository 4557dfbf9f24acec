"""The CLI's approver: asks the person at the terminal about each action the safety mode holds.

It prints what is about to happen (the action, why it needs approval, and the exact text to
type or code to run, with invisible characters made visible) and, for screen actions, saves
the screen crop with the target marked to a PNG file whose path it prints. Then it asks:
``y`` allows this once, ``n`` refuses, ``a`` allows it and everything with the same risks for
the rest of this run. End of input refuses. ``agent-s run`` wires it only when stdin is a
terminal; otherwise nobody can approve and such actions are refused.
"""

from __future__ import annotations

import getpass
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from agent_s.cli.output import ask_line, printable
from agent_s.guards import files
from agent_s.safety.gate import RUN_CODE, Approval, ApprovalRequest

_ANSWERS = {"y": "yes", "yes": "yes", "n": "no", "no": "no", "a": "always", "always": "always"}
_MAX_TRIES = 5
_SHOWN_CHARS = 20_000


def _visible(text: str) -> str:
    """The text with characters a person could miss written out: newlines, tabs, trailing
    spaces, carriage returns, escape sequences and every other control or invisible format
    character (``output.printable``)."""
    out = []
    for line in text.split("\n"):
        stripped = line.rstrip(" ")
        trailing = len(line) - len(stripped)
        out.append(printable(stripped, keep="") + "·" * trailing)
    return "⏎\n".join(out)


def _safe(text: str) -> str:
    """Outside text for a rich console: no markup, nothing a terminal would act on."""
    return escape(printable(text))


class CliApprover:
    """``SafetyGate`` approver for a terminal. ``read_line(prompt)`` reads one answer (default:
    the console's input); images go to ``image_dir`` when the run records none itself."""

    name = "cli"

    def __init__(
        self,
        console: Console,
        *,
        read_line: Callable[[str], str] | None = None,
        image_dir: Path | None = None,
        user: str | None = None,
    ) -> None:
        self.console = console
        self.read_line = read_line or (lambda prompt: ask_line(console, prompt))
        self.image_dir = image_dir
        self.user = user or _user()

    def __call__(self, request: ApprovalRequest) -> Approval:
        by = f"{self.user} (cli)"
        self._show(request)
        for _ in range(_MAX_TRIES):
            try:
                raw = self.read_line("Allow it? [y]es / [n]o / [a]lways for this run: ")
            except EOFError:
                self.console.print("[red]no answer (end of input): refused[/]")
                return Approval(False, by=by, note="no answer (end of input)")
            answer = _ANSWERS.get(raw.strip().lower())
            if answer == "yes":
                return Approval(True, by=by)
            if answer == "always":
                return Approval(True, by=by, always=True)
            if answer == "no":
                return Approval(False, by=by)
            self.console.print("Please answer y, n or a.")
        return Approval(False, by=by, note="no valid answer")

    def _show(self, request: ApprovalRequest) -> None:
        subject = request.subject
        where = "" if request.step is None else f" at step {request.step}"
        if request.substep is not None:
            where += f", code agent turn {request.substep}"
        say = self.console.print
        say(
            f"\n[bold yellow]Approval needed{where}[/] (safety mode {request.mode})",
            highlight=False,
        )
        say(f"  {_safe(subject.description)}", highlight=False)
        for risk in request.risks:
            say(f"  [yellow]- it {_safe(risk.reason)}[/]", highlight=False)
        if subject.app and subject.action not in ("open", "switch_applications"):
            say(f"  in the window of: {_safe(subject.app)}", highlight=False)
        if subject.shown:
            label = {RUN_CODE: f"{subject.language} code to run", "type": "text to type, exactly"}
            say(f"  {label.get(subject.action, 'details')}:", highlight=False)
            shown = subject.shown[:_SHOWN_CHARS]
            if subject.action == RUN_CODE:  # tabs stay: they indent code
                body = printable(shown[:-1] if shown.endswith("\n") else shown, keep="\n\t")
            else:  # a final newline (Enter) is the ⏎ at the end of the last line
                body = _visible(shown[:-1] if shown.endswith("\n") else shown)
                body += "⏎" if shown.endswith("\n") else ""
            for number, line in enumerate(body.split("\n"), 1):
                say(f"  [dim]{number:>4} |[/] {escape(line)}", highlight=False)
            if len(subject.shown) > _SHOWN_CHARS:
                say(f"  [dim]... {len(subject.shown) - _SHOWN_CHARS:,} more characters[/]")
        path = request.image_path or self._save(request)
        if path is not None:
            say(f"  screen, target marked: {escape(str(path))}", highlight=False, soft_wrap=True)

    def _save(self, request: ApprovalRequest) -> Path | None:
        if request.image is None:
            return None
        shared = Path(tempfile.gettempdir()) / f"agent-s-approvals-{os.getuid()}"
        folder = self.image_dir or shared
        try:  # the shared temporary folder: this user's own (0700), never a link
            files.output_folder(folder, mode=0o700)
            if folder == shared and folder.stat().st_uid != os.getuid():
                return None
            stamp = time.strftime("%Y%m%d-%H%M%S")
            name = f"approval-{stamp}-step{request.step or 0}-{time.monotonic_ns()}.png"
            return files.write_bytes(folder / name, request.image, mode=0o600)
        except OSError:
            return None


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "user"


__all__ = ["CliApprover"]
