"""``agent-s doctor``: is this machine ready to run the agent? One clear line per check.

Each check returns a ``Check``; a failed check says exactly what to install or set. The checks
run against the current display, or against a fresh virtual desktop (``virtual=True``).

``provider_checks`` asks each configured model (the generation model, and the grounding model
when one is set) for one output token through the provider layer, with a short timeout and no
retries, and names what is wrong: nothing configured (which flag or variable to set), a missing
key (which variable), a rejected key, an unreachable URL, or a refused request (the model name).
The settings come from the same flags and variables ``agent-s run`` reads.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from agent_s.desktop.choose import BackendChoice
    from agent_s.desktop.gnome import GnomeBackend
    from agent_s.models.endpoints import ProviderSettings

Status = Literal["ok", "fail", "warn"]

_APT = "apt-get install"
_GNOME_PACKAGES = "python3-gi gir1.2-gstreamer-1.0 gstreamer1.0-pipewire"
_GNOME_FIX = (
    "run agent-s inside the GNOME Wayland session (GNOME 40 or newer: its session bus, "
    "DBUS_SESSION_BUS_ADDRESS, must offer mutter's org.gnome.Mutter.RemoteDesktop and "
    "ScreenCast), or try a virtual one: --virtual --desktop gnome"
)


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class DoctorReport:
    checks: tuple[Check, ...]
    display: str

    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)


def run_checks(
    *,
    virtual: bool = False,
    size: tuple[int, int] = (1280, 800),
    providers: Callable[[], list[Check]] | None = None,
    sandbox: str = "auto",
    desktop: str | None = None,
) -> DoctorReport:
    """Run every check, on the current display or inside a fresh virtual desktop; then
    ``providers`` (e.g. ``provider_checks`` with the caller's settings), if given.
    ``sandbox``: the ``--code-sandbox`` setting whose containment is reported; ``desktop``:
    which virtual desktop (``agent_s.desktop.choose.DESKTOPS``)."""
    from agent_s.desktop.choose import choose_backend
    from agent_s.errors import AgentSError

    with contextlib.ExitStack() as stack:
        try:
            display = stack.enter_context(_display(virtual, size, desktop))
        except AgentSError as err:  # the virtual desktop could not start: said, not raised
            display = None
            checks = [
                _tools(choose_backend(os.environ).kind),
                Check("display", "fail", f"no virtual desktop: {err}"),  # it names its fix
                _tesseract(),
                _code_containment(sandbox),
            ]
        else:
            choice = choose_backend(os.environ)
            checks = [_tools(choice.kind)]
            if choice.kind is None:
                checks.append(
                    Check(
                        "display", "fail", _no_backend(choice.reason), _no_backend_fix(choice.fix)
                    )
                )
            else:
                checks.extend(_desktop_checks(display or "", choice))
            checks.append(_tesseract())
            checks.append(_accessibility(display))
            checks.append(_code_containment(sandbox))
    if providers is not None:
        checks.extend(providers())
    return DoctorReport(tuple(checks), display or "")


@contextmanager
def _display(
    virtual: bool, size: tuple[int, int], desktop: str | None = None
) -> Iterator[str | None]:
    if not virtual:
        yield os.environ.get("DISPLAY") or None
        return
    from agent_s.desktop.choose import virtual_kind
    from agent_s.desktop.virtual import VirtualDesktop

    # --desktop sway|gnome|kde, or AGENT_S_BACKEND: another desktop than Xvfb with openbox
    kind = virtual_kind(os.environ, desktop)
    with VirtualDesktop(*size, home="temp", kind=kind) as desk, desk.exported():
        yield desk.display


def _no_backend(reason: str) -> str:
    """Why no backend can drive this session; a session with neither display variable is
    told so in the words a person checks first."""
    if reason.startswith("no desktop session"):
        return "DISPLAY is not set (nor WAYLAND_DISPLAY): no screen to see or act on"
    return reason


def _no_backend_fix(fix: str) -> str:
    if "--virtual" in fix and "virtual desktop (--virtual)" in fix:
        return f"{fix} ({_APT} xvfb xauth openbox)"
    return fix


def _tools(kind: str | None) -> Check:
    if kind == "gnome":  # no programs: GStreamer in this process reads mutter's screencast
        from agent_s.desktop._mutter import gi_modules
        from agent_s.errors import DesktopSetupError

        try:
            gi_modules()
        except DesktopSetupError as err:
            return Check("tools", "fail", str(err), f"{_APT} {_GNOME_PACKAGES}")
        return Check("tools", "ok", "PyGObject, GStreamer and its PipeWire source are installed")
    if kind == "wayland":
        from agent_s.desktop.wayland import REQUIRED_TOOLS

        needed = dict(REQUIRED_TOOLS)
    else:
        needed = {"xdotool": "xdotool", "xclip": "xclip", "xprop": "x11-utils"}
    missing = sorted({pkg for exe, pkg in needed.items() if shutil.which(exe) is None})
    if missing:
        return Check(
            "tools", "fail", "missing: " + ", ".join(missing), f"{_APT} {' '.join(missing)}"
        )
    names = sorted(needed)
    return Check("tools", "ok", f"{', '.join(names[:-1])} and {names[-1]} are installed")


def _desktop_checks(display: str, choice: BackendChoice) -> list[Check]:
    from agent_s.desktop.choose import open_backend
    from agent_s.desktop.gnome import GnomeBackend
    from agent_s.desktop.ops import Point
    from agent_s.desktop.wayland import WaylandBackend
    from agent_s.errors import AgentSError, DisplayAuthorizationError

    try:
        backend = open_backend()
    except DisplayAuthorizationError as err:
        return [Check("display", "fail", str(err), "set XAUTHORITY to the server's cookie file")]
    except AgentSError as err:
        if choice.kind == "gnome":
            return [Check("display", "fail", str(err), _GNOME_FIX)]
        where = "WAYLAND_DISPLAY and SWAYSOCK" if choice.kind == "wayland" else "DISPLAY"
        return [Check("display", "fail", str(err), f"check {where} and that the server runs")]
    if isinstance(backend, GnomeBackend):
        return _gnome_checks(backend, choice)
    if isinstance(backend, WaylandBackend):
        what = f"Wayland display {backend.display} (sway) is reachable"
    else:
        what = f"X display {display} is reachable"
    checks = [Check("display", "ok", f"{what}; {choice.kind} backend, chosen for {choice.reason}")]

    def attempt(name: str, body: Callable[[], Check]) -> None:
        try:
            checks.append(body())
        except Exception as err:  # a doctor reports every failure, whatever its type
            checks.append(Check(name, "fail", f"{type(err).__name__}: {err}"))

    def screen() -> Check:
        geometry = backend.geometry()
        monitors = "; ".join(
            f"{m.width}x{m.height}+{m.x}+{m.y} scale {m.scale:g}" for m in geometry.monitors
        )
        return Check("screen", "ok", f"{len(geometry.monitors)} monitor(s): {monitors}")

    def capture() -> Check:
        start = time.perf_counter()
        shot = backend.capture()
        ms = (time.perf_counter() - start) * 1000
        w, h = shot.image.size
        return Check("capture", "ok", f"{w}x{h} screenshot in {ms:.0f} ms")

    def pointer() -> Check:
        if isinstance(backend, WaylandBackend):
            kinds = backend.input_devices()
            missing = [k for k in ("pointer", "keyboard") if k not in kinds]
            if missing:
                return Check(
                    "input",
                    "fail",
                    f"sway's seat has no virtual {' or '.join(missing)} from agent-s "
                    f"(it lists {', '.join(kinds) or 'no devices'})",
                    "use sway 1.5 or newer (virtual-pointer and virtual-keyboard protocols)",
                )
        geometry = backend.geometry()
        left, top, width, height = geometry.bounds
        target = Point(left + width // 2 + 7, top + height // 2 + 3)
        backend.move(target)
        seen = backend.pointer()
        if seen != target:
            return Check("input", "fail", f"moved the pointer to {target}, it is at {seen}")
        if isinstance(backend, WaylandBackend):  # Wayland lets no client read the pointer
            return Check(
                "input",
                "ok",
                f"virtual pointer and keyboard are on sway's seat; pointer moved to "
                f"({target.x}, {target.y})",
            )
        return Check("input", "ok", f"pointer moved to ({target.x}, {target.y}) and read back")

    attempt("screen", screen)
    attempt("capture", capture)
    attempt("input", pointer)
    if isinstance(backend, WaylandBackend):
        backend.close()
    return checks


def _gnome_checks(backend: GnomeBackend, choice: BackendChoice) -> list[Check]:
    """The GNOME backend names each capability, and what the session refuses."""
    try:
        geometry = backend.geometry()
        monitors = "; ".join(
            f"{m.width}x{m.height}+{m.x}+{m.y} scale {m.scale:g}" for m in geometry.monitors
        )
        checks = [
            Check(
                "display",
                "ok",
                f"GNOME Shell (mutter) is reachable on the session bus; gnome backend, chosen "
                f"for {choice.reason}",
            ),
            Check("screen", "ok", f"{len(geometry.monitors)} monitor(s): {monitors}"),
        ]
        start = time.perf_counter()
        shot = backend.capture()
        ms = (time.perf_counter() - start) * 1000
        w, h = shot.image.size
        for cap in backend.capabilities():
            detail = cap.detail
            if cap.name == "capture":
                detail = f"{w}x{h} screenshot in {ms:.0f} ms, {detail}"
            checks.append(Check(cap.name, "ok" if cap.ok else "warn", detail, cap.fix))
        return checks
    finally:
        backend.close()


def _code_containment(sandbox: str) -> Check:
    """Which containment model-written code and checks get here under ``--code-sandbox
    sandbox`` (the setting ``agent-s run`` reads), in one line."""
    from agent_s.coding.containment import containment_problem, sandbox_in_force, sandbox_problem

    sandboxed, line = sandbox_in_force(sandbox)
    if sandboxed:
        return Check("code sandbox", "ok", line)
    if sandbox == "none":
        fix = "--code-sandbox auto (or unset AGENT_S_CODE_SANDBOX) for bubblewrap"
        if sandbox_problem() is not None or containment_problem() is not None:
            fix = f"{_APT} bubblewrap, or enable unprivileged user namespaces; then {fix}"
        return Check("code sandbox", "warn", line, fix)
    return Check(
        "code sandbox",
        "warn",
        line,
        f"{_APT} bubblewrap, or enable unprivileged user namespaces (or pass --code-sandbox "
        "none to accept this)",
    )


def _tesseract() -> Check:
    if shutil.which("tesseract") is None:
        return Check(
            "ocr", "fail", "tesseract is not installed", f"{_APT} tesseract-ocr tesseract-ocr-eng"
        )
    import pytesseract
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("L", (360, 60), 255)
    try:
        font: ImageFont.FreeTypeFont | ImageFont.ImageFont = ImageFont.truetype(
            "DejaVuSans.ttf", 28
        )
    except OSError:
        font = ImageFont.load_default()
    ImageDraw.Draw(image).text((10, 12), "Save file 42", fill=0, font=font)
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    text = pytesseract.image_to_string(image, config="--psm 7").strip()
    version = pytesseract.get_tesseract_version()
    if "Save" not in text or "42" not in text:
        return Check(
            "ocr",
            "fail",
            f"tesseract {version} read {text!r} instead of 'Save file 42'",
            f"{_APT} tesseract-ocr-eng",
        )
    return Check("ocr", "ok", f"tesseract {version} reads text")


def _accessibility(display: str | None) -> Check:
    if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return Check(
            "accessibility",
            "warn",
            "no D-Bus session bus: the accessibility tree is unavailable (OCR still works)",
            "run inside a desktop session or with --virtual (dbus-x11 at-spi2-core)",
        )
    from agent_s.desktop.atspi import ATSPI_LOCK, AccessibilityUnavailable, bindings

    try:
        atspi = bindings()
    except AccessibilityUnavailable as err:
        if err.reason == "Atspi bindings missing":
            return Check(
                "accessibility",
                "warn",
                "PyGObject with Atspi is not importable in this Python",
                f"{_APT} python3-gi gir1.2-atspi-2.0 and use a venv made with "
                "--system-site-packages (scripts/setup.sh does this)",
            )
        return Check(
            "accessibility",
            "warn",
            f"the accessibility tree is unavailable (OCR still works): {err}",
            f"{_APT} at-spi2-core, or run inside a desktop session or with --virtual",
        )
    with ATSPI_LOCK:
        desktop = atspi.get_desktop(0)
        count = desktop.get_child_count() if desktop is not None else 0
    return Check("accessibility", "ok", f"AT-SPI bus reachable, {count} application(s) exposed")


# -- model providers ---------------------------------------------------------------------------

PROBE_TIMEOUT_S = 10.0
_PROBE_PROMPT = "Reply with the single word OK."


@dataclass(frozen=True)
class ModelOptions:
    """The model flags of ``agent-s doctor`` / ``agent-s run`` (None: not given)."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    ground: str | None = None
    ground_url: str | None = None
    ground_model: str | None = None


def provider_checks(
    options: ModelOptions,
    environ: Mapping[str, str],
    *,
    timeout_s: float = PROBE_TIMEOUT_S,
) -> list[Check]:
    """One check per configured model: the generation model ("model"), and the grounding
    model ("grounding model") when one is set. ``environ`` is read here, as ``agent-s run``
    reads it (flags first, then ``AGENT_S_*``, then the provider's key variable)."""
    from agent_s.settings.config import ConfigError, GroundingConfig, ModelConfig

    checks: list[Check] = []
    if not (options.model or environ.get("AGENT_S_MODEL")):
        checks.append(
            Check(
                "model",
                "warn",
                "no model configured: agent-s run cannot start",
                "pass --model NAME and --provider, or set AGENT_S_MODEL and AGENT_S_PROVIDER "
                "(the key: OPENAI_API_KEY / ANTHROPIC_API_KEY, or --api-key-file PATH)",
            )
        )
    else:
        try:
            config = ModelConfig.from_env(
                provider=options.provider,
                model=options.model,
                base_url=options.base_url,
                api_key=options.api_key,
                environ=environ,
            )
        except ConfigError as err:
            checks.append(Check("model", "fail", str(err)))
        else:
            checks.append(probe_provider("model", config.settings(), timeout_s=timeout_s))
    try:
        grounding = GroundingConfig.from_env(
            mode=options.ground,
            url=options.ground_url,
            model=options.ground_model,
            environ=environ,
        )
    except ConfigError as err:
        checks.append(Check("grounding model", "fail", str(err)))
        return checks
    settings = grounding.settings()
    if settings is not None:
        checks.append(
            probe_provider(
                "grounding model",
                settings,
                timeout_s=timeout_s,
                url_setting="--ground-url / AGENT_S_GROUND_URL",
            )
        )
    return checks


def probe_provider(
    name: str,
    settings: ProviderSettings,
    *,
    timeout_s: float = PROBE_TIMEOUT_S,
    url_setting: str = "--base-url / AGENT_S_BASE_URL",
) -> Check:
    """Ask the model for one token (one attempt, ``timeout_s``) and say what happened;
    ``url_setting`` names where its URL is set, for the fix of an unreachable server."""
    from agent_s.models.errors import (
        AuthenticationError,
        BadRequest,
        ModelError,
        OutputTruncated,
        ProviderUnavailable,
        RateLimited,
        Refused,
        Timeout,
    )
    from agent_s.models.factory import build_adapter
    from agent_s.models.profiles import ProfileRegistry
    from agent_s.models.types import Message, ModelRequest

    settings = dataclasses.replace(settings, timeout_s=min(settings.timeout_s, timeout_s))
    url = settings.endpoint.base_url
    label = f"{settings.model} at {url}"
    profile = ProfileRegistry().resolve(settings.model, settings.api)
    try:
        adapter = build_adapter(settings, profile)
    except AuthenticationError as err:
        return Check(
            name,
            "fail",
            f"API key missing for {label}: {err.key_source} is not set",
            f"set {err.key_source}, or pass --api-key",
        )
    request = ModelRequest(
        (Message.text("user", _PROBE_PROMPT),),
        max_output_tokens=1,
        metadata={"purpose": "doctor"},
    )
    start = time.perf_counter()
    try:
        adapter.complete(request)
    except AuthenticationError as err:
        source = err.key_source or settings.key_source
        return Check(
            name,
            "fail",
            f"{label} rejected the API key from {source} ({err.status or 'no status'}): {err}",
            f"check the key in {source}",
        )
    except (ProviderUnavailable, Timeout) as err:
        status = getattr(err, "status", None)
        if status is not None:
            return Check(
                name,
                "fail",
                f"{url} answered with a server error ({status}): {err}",
                "try again later, or check the server's logs",
            )
        if isinstance(err, Timeout):
            detail = f"no reply from {url} within {settings.timeout_s:g} s"
        else:
            cause = type(err.__cause__).__name__ if err.__cause__ is not None else "no connection"
            detail = f"cannot reach {url} ({cause})"
        return Check(
            name, "fail", detail, f"check {url_setting}, the network, and that the server runs"
        )
    except RateLimited as err:
        return Check(
            name,
            "warn",
            f"{label} accepted the key but is rate limiting: {err}",
            "wait, or check the account's limits",
        )
    except (OutputTruncated, Refused):
        pass  # it answered: reachable, and the key works
    except BadRequest as err:
        return Check(
            name,
            "fail",
            f"{label} refused the request ({err.status}): {err}",
            "check the model name (--model / AGENT_S_MODEL) and the provider",
        )
    except ModelError as err:
        return Check(name, "fail", f"{label}: {type(err).__name__}: {err}")
    ms = (time.perf_counter() - start) * 1000
    key = f"key from {settings.key_source}" if settings.api_key else "no key needed"
    return Check(name, "ok", f"{label} answered in {ms:.0f} ms ({key})")
