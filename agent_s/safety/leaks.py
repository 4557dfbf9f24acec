"""What never leaves without the user saying so, whatever the mode: secrets and new web hosts.

Instructions on the screen (a page, a document, a window title, a notification) may ask the
agent to send a secret somewhere or to visit a site. Even in mode ``auto``, where the gate
allows what the user did not forbid, two effects still need the user (``agent_s.safety.gate`` makes
them "ask": an approver decides, and with nobody to ask they are refused; ``deny-risky``
refuses them):

- **a secret value typed outside the applications allowed for it.** The secrets are the
  redactor's (``agent_s.guards.redaction``: the API keys, ``[secrets]``, variables whose name looks
  secret), in any of the encoded forms it knows. The characters an action types (``type``,
  ``set_cell_values``, letters pressed one by one with ``hotkey`` or ``hold_and_press``) are
  added to what earlier actions typed into the same window, so a secret typed in pieces is
  caught too. Allowed only in windows of ``[safety] secret_apps`` (an application's class or
  a window's title). A launch (``open``) or a block of code that holds a secret counts too.
- **a web host the task does not name.** Opening a URL (``http``, ``https``, ``ftp``,
  ``mailto``, any ``scheme://``), typing one into a terminal or a window that cannot be
  identified, typing any address (a bare domain, an IP address, an e-mail address) into a
  browser, or into a terminal in a line that runs a network command (``curl``, ``wget``,
  ``nc``, ``ssh``, ``mail``, ...), is allowed only for a host the user's task names (as a
  URL, a domain or an e-mail address; a subdomain of a named domain counts; a port, when the
  task gives one, must match) or that ``[safety] allow_hosts`` lists (``"*"``: any host,
  the default of ``agent-s bench run``, whose tasks browse on a desktop thrown away).

    watch = LeakWatch(redactor, secret_apps=("keepassxc",), allow_hosts=("example.org",))
    watch.begin("Open https://docs.python.org and find the tutorial")
    list(watch.launch_risks("https://evil.test/?q=1"))   # [("host:evil.test", "opens ...")]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from urllib.parse import urlsplit

from agent_s.desktop.base import WindowInfo
from agent_s.guards.redaction import Redactor

#: Window classes (lower case, or a part of one) of web browsers: a URL typed there is opened.
BROWSERS = (
    "firefox",
    "navigator",
    "chromium",
    "chrome",
    "brave",
    "vivaldi",
    "opera",
    "epiphany",
    "falkon",
    "qutebrowser",
    "midori",
    "konqueror",
    "librewolf",
    "browser",
)
_BUFFER = 512  # characters kept per window of what was typed there
_URL = re.compile(r"\b([a-z][a-z0-9+.-]{1,15})://([^\s/?#\"'<>\\]+)", re.IGNORECASE)
_MAILTO = re.compile(r"\bmailto:([^\s?\"'<>]+)", re.IGNORECASE)
_DOMAIN = re.compile(
    r"(?<![\w.@-])((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24}|"
    r"\d{1,3}(?:\.\d{1,3}){3}|localhost)(?::(\d{1,5}))?(?![\w-])",
    re.IGNORECASE,
)
#: Commands that reach a host named bare (``curl evil.test``, ``nc 203.0.113.9 80``, ``mail
#: x@evil.test``): typed into a terminal with one of them, every host-like word is an address.
_NETWORK_TOOL = re.compile(
    r"\b(?:curl|wget|nc|ncat|netcat|socat|ssh|scp|sftp|rsync|ftp|lftp|telnet|aria2c|http|xh|"
    r"mail|mailx|sendmail|mutt|msmtp|git)\b",
    re.IGNORECASE,
)
_EMAIL = re.compile(r"[\w.+-]+@([\w-]+(?:\.[\w-]+)+)", re.IGNORECASE)

Host = tuple[str, int | None]  # a host name and, when one was given, a port
Found = tuple[str, str]  # a risk's key and its reason (``agent_s.safety.gate`` makes it a Risk)


def _host(netloc: str) -> Host | None:
    """The host (lower case) and port of a URL's network location (user info dropped)."""
    try:
        parts = urlsplit(f"//{netloc}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return (netloc.lower(), None) if netloc else None
    return (host.lower().rstrip("."), port) if host else None


def url_hosts(text: str) -> list[Host]:
    """The hosts of the URLs in ``text`` (``scheme://host``, ``mailto:user@host``)."""
    found = [h for m in _URL.finditer(text) if (h := _host(m.group(2))) is not None]
    for match in _MAILTO.finditer(text):
        address = match.group(1).split(",")[0]
        if "@" in address:
            found.append((address.rsplit("@", 1)[1].lower().rstrip("."), None))
    return found


def hosts_named(text: str) -> set[Host]:
    """The hosts a text names: in URLs, e-mail addresses and bare domains (``docs.python.org``,
    ``127.0.0.1:8000``). A file name such as ``report.pdf`` may count as a domain: harmless,
    since only opening that very host is allowed by it."""
    named = set(url_hosts(text))
    named |= {(m.group(1).lower(), None) for m in _EMAIL.finditer(text)}
    for match in _DOMAIN.finditer(text):
        port = int(match.group(2)) if match.group(2) else None
        named.add((match.group(1).lower().rstrip("."), port))
    return named


def _covered(host: Host, named: Iterable[Host]) -> bool:
    name, port = host
    for known, known_port in named:
        same = name == known or name.endswith("." + known)
        if same and (known_port is None or known_port == port):
            return True
    return False


def is_browser(app: str | None) -> bool:
    name = (app or "").strip().lower()
    return bool(name) and any(b in name for b in BROWSERS)


_SHIFTED = dict(zip("`1234567890-=[]\\;',./", '~!@#$%^&*()_+{}|:"<>?', strict=True))


def key_chars(keys: frozenset[str]) -> str:
    """The character a key combination types into a text field ("" for none): one printable
    key, alone or with shift."""
    rest = keys - {"shift"}
    if len(rest) != 1:
        return ""
    (key,) = rest
    if key == "space":
        return " "
    if len(key) != 1 or not key.isprintable():
        return ""
    if "shift" in keys:
        return key.upper() if key.isalpha() else _SHIFTED.get(key, key)
    return key


@dataclass
class LeakWatch:
    """The two checks of the module docstring, for one run (``begin`` at each task)."""

    redactor: Redactor
    secret_apps: Sequence[str] = ()
    allow_hosts: Sequence[str] = ()

    def __post_init__(self) -> None:
        self._apps = {a.strip().lower() for a in self.secret_apps if a.strip()}
        self._allowed = {h for text in self.allow_hosts for h in hosts_named(text)}
        self._any_host = "*" in (h.strip() for h in self.allow_hosts)  # the host rule is off
        self._named: set[Host] = set()
        self._typed: dict[int | None, str] = {}

    def begin(self, task: str) -> None:
        """A new task: the hosts it names are allowed; nothing has been typed yet."""
        self._named = hosts_named(task)
        self._typed.clear()

    # -- what the policy asks ----------------------------------------------------------------

    def typing_risks(
        self, window: WindowInfo | None, chars: str, *, url_opens: bool
    ) -> list[Found]:
        """Risks of typing ``chars`` into ``window`` (None: a window that cannot be known);
        ``url_opens``: a URL typed there is opened or fetched (a terminal, say)."""
        found: list[Found] = []
        if self._holds_new_secret(self._typed.get(_key(window), ""), chars) and not (
            window is not None and self._secret_app(window)
        ):
            where = f"{window.app} ({window.title})" if window else "a window not known beforehand"
            found.append(
                (
                    f"secret:{_key(window)}",
                    f"types a secret value into {where}, which is not "
                    "an application allowed for secrets ([safety] secret_apps)",
                )
            )
        browser = window is not None and is_browser(window.app)
        if browser or ((url_opens or window is None) and _NETWORK_TOOL.search(chars)):
            found += self._host_risks(chars, "types an address of", hosts_named(chars))
        elif url_opens or window is None:
            found += self._host_risks(chars, "types a URL for")
        return found

    def launch_risks(self, target: str) -> list[Found]:
        found = self._host_risks(target, "opens")
        if self.redactor.count(target):
            found.append(("secret:open", "opens a target that holds a secret value"))
        return found

    def code_risks(self, code: str) -> list[Found]:
        if self.redactor.count(code):
            return [("secret:code", "runs code that holds a secret value")]
        return []

    def typed(self, window: WindowInfo | None, chars: str) -> None:
        """Remember what an allowed action typed into ``window`` (the last characters)."""
        if chars:
            key = _key(window)
            self._typed[key] = (self._typed.get(key, "") + chars)[-_BUFFER:]

    # -- helpers -----------------------------------------------------------------------------

    def _holds_new_secret(self, before: str, chars: str) -> bool:
        if not chars:
            return False
        return self.redactor.count(before + chars) > self.redactor.count(before)

    def _secret_app(self, window: WindowInfo) -> bool:
        app = window.app.strip().lower()
        names = {app, PurePath(app).name, window.title.strip().lower()}
        return bool(names & self._apps)

    def _host_risks(self, text: str, verb: str, hosts: Iterable[Host] | None = None) -> list[Found]:
        """A risk per host in ``text``'s URLs (``hosts``: these instead) the task did not name."""
        found: list[Found] = []
        if self._any_host:
            return found
        for host in url_hosts(text) if hosts is None else sorted(hosts, key=str):
            if not _covered(host, self._named | self._allowed):
                name = host[0] if host[1] is None else f"{host[0]}:{host[1]}"
                found.append(
                    (
                        f"host:{name}",
                        f"{verb} {name}, a web host the task does not name ([safety] allow_hosts)",
                    )
                )
        return found


def _key(window: WindowInfo | None) -> int | None:
    return window.id if window is not None else None


__all__ = ["BROWSERS", "LeakWatch", "hosts_named", "is_browser", "key_chars", "url_hosts"]
