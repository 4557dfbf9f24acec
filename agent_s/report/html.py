"""The HTML of reports (``agent_s.report.run``): escaping, the page frame, images.

Every text that reaches a page goes through ``esc`` (model replies, window titles, file names:
all of it is data, never markup). The page allows nothing to load from anywhere but files and
``data:`` URIs (its Content-Security-Policy), runs no script, and is written as it is made: a
``PageWriter`` streams parts to a temporary file that replaces the page when it is complete, so
a 500-step run is never one string in memory.

Images are either beside the page (referenced by a relative URL: where they already are when
the page is in their folder, else copied into a folder next to the page) or embedded
(``data:`` URIs: one file to send, larger).
"""

from __future__ import annotations

import base64
import html
import os
from pathlib import Path
from urllib.parse import quote

from agent_s.guards import files

_MEDIA = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}

#: Nothing but files and data: URIs, no script at all.
CSP = (
    "default-src 'none'; img-src file: data: 'self'; style-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'none'"
)

STYLE = """
:root { --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --dim: #57606a; --line: #d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0;
  color: #1f2328; background: #f6f8fa; }
header.top { background: #fff; border-bottom: 1px solid var(--line); padding: 12px 24px; }
main { padding: 12px 24px 48px; max-width: 1800px; }
h1 { font-size: 20px; margin: 4px 0; } h2 { font-size: 17px; margin: 20px 0 8px; }
h3 { font-size: 15px; margin: 0 0 8px; }
pre { white-space: pre-wrap; overflow-wrap: break-word; background: #fff; border: 1px solid
  var(--line); border-radius: 4px; padding: 6px 8px; margin: 4px 0; max-height: 28em;
  overflow: auto; font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
pre.code { white-space: pre; overflow-wrap: normal; }
code { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; overflow-wrap: break-word; }
table { border-collapse: collapse; margin: 4px 0 8px; background: #fff; }
th, td { border: 1px solid var(--line); padding: 3px 6px; text-align: left;
  vertical-align: top; overflow-wrap: break-word; }
th { background: #eef1f4; font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px;
  margin: 10px 0; }
.step { display: grid; grid-template-columns: minmax(0, 1fr); gap: 12px; }
.shot { margin: 0; border: 1px solid var(--line); }
.shot .frame { position: relative; line-height: 0; }
.shot img { display: block; width: 100%; height: auto; background: #ddd; }
.shot svg { position: absolute; left: 0; top: 0; width: 100%; height: 100%;
  pointer-events: none; overflow: hidden; }
.zoom { display: block; cursor: zoom-in; }
.zoom > input { display: none; }
.zoom > .view, .zoom .frame { display: block; }
.zoom > input:checked + .view { position: fixed; inset: 0; z-index: 10; overflow: auto;
  background: rgba(0, 0, 0, 0.85); cursor: zoom-out; padding: 8px; }
.zoom > input:checked + .view .frame { display: inline-block; }
.zoom > input:checked + .view img { width: auto; max-width: none; }
figcaption { line-height: 1.4; font-size: 12px; color: var(--dim); padding: 4px 6px; }
.noshot { padding: 24px; color: var(--dim); border: 1px dashed var(--line); text-align: center; }
.badge { display: inline-block; border-radius: 10px; padding: 0 8px; font-size: 12px;
  color: #fff; background: var(--dim); margin-left: 6px; vertical-align: 1px; }
.badge.ok, .badge.succeeded, .badge.terminal, .badge.allowed,
.badge.passed { background: var(--ok); }
.badge.error, .badge.failed, .badge.invalid, .badge.refused, .badge.not-passed,
.badge.infeasible { background: var(--bad); }
.badge.partial { background: var(--warn); }
.badge.cancelled, .badge.max_steps, .badge.budget_exceeded, .badge.needs_input,
.badge.planned, .badge.skipped { background: var(--warn); }
.meta { color: var(--dim); font-size: 12px; }
.warn { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 8px 12px; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 4px 0; }
dl.kv dt { color: var(--dim); } dl.kv dd { margin: 0; min-width: 0; overflow-wrap: break-word; }
nav.toc { display: flex; flex-wrap: wrap; gap: 3px; margin: 8px 0; }
nav.toc a { display: inline-block; min-width: 2.6em; text-align: center; padding: 1px 4px;
  border-radius: 3px; background: #eef1f4; color: #1f2328; text-decoration: none;
  font-size: 12px; border-left: 3px solid var(--ok); }
nav.toc a.error, nav.toc a.invalid, nav.toc a.cancelled { border-left-color: var(--bad); }
details > summary { cursor: pointer; color: #0969da; }
.sub { border-left: 3px solid var(--line); padding-left: 8px; margin: 6px 0; }
.extra img { max-width: 100%; height: auto; border: 1px solid var(--line); }
.final img { max-width: 640px; }
ul.narrative { list-style: none; padding-left: 0; }
ul.narrative li { padding: 2px 0; border-bottom: 1px solid #eef1f4; overflow-wrap: break-word; }
"""


def esc(value: object) -> str:
    """``value`` as HTML text: every ``<``, ``>``, ``&`` and quote escaped."""
    return html.escape(str(value), quote=True)


def media_type(path: Path) -> str:
    return _MEDIA.get(path.suffix.lower(), "application/octet-stream")


class Assets:
    """Where a page's images come from: ``embed`` (data: URIs), else beside the page, copied
    into ``copy_to`` first when it is given (the page lives away from the images). The paths
    given are ones ``agent_s.guards.files.contained`` let through (inside their run folder);
    they are read and copied following no link."""

    def __init__(self, page_dir: Path, *, copy_to: Path | None = None, embed: bool = False) -> None:
        self.page_dir = page_dir
        self.copy_to = copy_to
        self.embed = embed
        self._copied: dict[Path, Path] = {}

    def src(self, path: Path) -> str | None:
        """The URL of the image file ``path`` for the page, or None when there is no such file."""
        if not path.is_file():
            return None
        if self.embed:
            data = base64.b64encode(files.read_bytes(path)).decode("ascii")
            return f"data:{media_type(path)};base64,{data}"
        target = path
        if self.copy_to is not None:
            target = self._copy(path)
        relative = os.path.relpath(target.resolve(), self.page_dir.resolve())
        return quote(Path(relative).as_posix())

    def _copy(self, path: Path) -> Path:
        source = path.resolve()
        if source in self._copied or self.copy_to is None:
            return self._copied.get(source, path)
        files.output_folder(self.copy_to)
        used = {target.name for target in self._copied.values()}
        name, n = path.name, 1
        while name in used:  # two folders' step_001.png: one of them renamed
            name, n = f"{path.stem}-{n}{path.suffix}", n + 1
        target = self.copy_to / name
        if target.resolve() != source:
            files.copy_into(source, target)
        self._copied[source] = target
        return target


class PageWriter(files.AtomicFile):
    """One HTML page, written part by part into a temporary file that becomes ``path`` when
    the page is complete (``commit``, as the ``with`` block ends); a page that fails half-way
    leaves nothing behind. The temporary file follows no link and a symbolic link at ``path``
    is replaced, never written through (``agent_s.guards.files.AtomicFile``); a page folder
    that is a link is refused."""

    def __init__(self, path: Path, title: str) -> None:
        super().__init__(path, text=True)
        self.write(
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">\n'
            '<meta name="referrer" content="no-referrer">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{esc(title)}</title>\n<style>{STYLE}</style></head>\n<body>\n"
        )

    def write(self, *parts: str) -> None:
        for part in parts:
            self.file.write(part)

    def commit(self, *, sync: bool = False) -> Path:
        self.write("</body></html>\n")
        return super().commit(sync=sync)


def badge(word: str, kind: str | None = None) -> str:
    css = (kind or word).replace(" ", "-")
    return f'<span class="badge {esc(css)}">{esc(word)}</span>'


def kv(rows: list[tuple[str, str]]) -> str:
    """A definition list; the values are HTML already (escape them before)."""
    body = "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in rows if v != "")
    return f'<dl class="kv">{body}</dl>' if body else ""


def pre(text: str, *, code: bool = False) -> str:
    """Text as written; ``code``: its lines kept whole (scrolls sideways), not wrapped."""
    return f'<pre class="code">{esc(text)}</pre>' if code else f"<pre>{esc(text)}</pre>"


def picture(
    src: str,
    alt: str,
    *,
    size: tuple[int, int] | None = None,
    over: str = "",
    data: dict[str, object] | None = None,
) -> str:
    """An image at the width of its column that opens at full size on a click (and closes on
    another; CSS only: the page runs no script). Eager and decoded at once, so that the page's
    ``load`` comes only once every image shows. ``over``: an SVG drawn on it; ``data``: the
    image's ``data-`` attributes."""
    sized = f' width="{size[0]}" height="{size[1]}"' if size else ""
    marks = "".join(f' data-{esc(k)}="{esc(v)}"' for k, v in (data or {}).items())
    return (
        f'<label class="zoom" title="click for full size"><input type="checkbox">'
        f'<span class="view"><span class="frame"><img src="{esc(src)}" decoding="sync"{sized}'
        f'{marks} alt="{esc(alt)}">{over}</span></span></label>'
    )


def table(head: list[str], rows: list[list[str]], numeric: frozenset[int] = frozenset()) -> str:
    """A table; the cells are HTML already (escape them before)."""
    if not rows:
        return ""
    ths = "".join(
        f'<th class="num">{esc(h)}</th>' if i in numeric else f"<th>{esc(h)}</th>"
        for i, h in enumerate(head)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{ths}</tr></thead><tbody>{body}</tbody></table>"


def money(value: float) -> str:
    return f"${value:.4f}"


def seconds(value: float) -> str:
    return f"{value:.2f} s"


__all__ = [
    "CSP",
    "Assets",
    "PageWriter",
    "badge",
    "esc",
    "kv",
    "media_type",
    "money",
    "pre",
    "seconds",
    "table",
    "picture",
]
