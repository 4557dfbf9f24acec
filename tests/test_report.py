"""``agent-s report``: HTML reports of real runs, looked at in headless Chromium.

A planned run on the session's virtual desktop (mousepad, a scripted model whose replies carry
markup, a refusal and approvals, the code agent), a bench results folder from the smoke suite's
reference policy, and a best-of-2 run on virtual desktops (the judge's pick, its reason, each
attempt's narrative and page) are reported on; Debian's Chromium loads each page offline (its
net log must show no request but files), every image must decode, and a screenshot of the page
must show the step screenshots that were embedded, with the action drawn where the grounding
put it. A 500-step run written with the real trajectory writer renders in a measured time.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from clean_env import clean_env
from PIL import Image, ImageChops, ImageDraw, ImageOps
from scripted_cli import key_file, model_options
from typer.testing import CliRunner

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig, RunStatus
from agent_s.bench.chrome import DevTools, Page, free_port
from agent_s.cli.main import app
from agent_s.grounding.locate import TargetGrounding
from agent_s.models.types import Usage
from agent_s.planning.plan import PlanSettings
from agent_s.record.result import RunResult, Timings
from agent_s.record.step import ModelCall, Step, SubStep
from agent_s.record.trajectory import TrajectoryWriter, load_trajectory
from agent_s.report.pages import write_report
from agent_s.report.run import ReportError
from agent_s.safety.gate import Approval
from agent_s.settings.config import CodeAgentConfig, SafetyConfig
from agent_s.testing.scripted_replies import reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

CHROMIUM = shutil.which("chromium")
pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed"),
]
AGENT_S = str(Path(sys.executable).parent / "agent-s")
_CLEAN = clean_env()
HOSTILE = "<script>document.title='pwned'</script><img src=\"http://198.51.100.7/x.png\">"


def act(code: str, before: str = "Next.") -> str:
    return f"{before}\n```python\n{code}\n```"


# -- the browser ----------------------------------------------------------------------------------


@contextmanager
def chromium(scratch: Path) -> Iterator[tuple[DevTools, Path]]:
    """Headless Chromium, offline flags, its DevTools port and its net log."""
    assert CHROMIUM is not None
    port = free_port()
    netlog = scratch / "netlog.json"
    argv = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--hide-scrollbars",  # the same layout when a capture resizes the viewport
        f"--user-data-dir={scratch / 'profile'}",
        f"--remote-debugging-port={port}",
        f"--log-net-log={netlog}",
        "--window-size=1600,1000",
        "about:blank",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        devtools = DevTools(port)
        devtools.wait_ready(60)
        yield devtools, netlog
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


LOOK = """(async () => {
  const images = [...document.images];
  // as the page's load left them: every image already loaded and decoded, none lazy
  const atLoad = images.filter(i => i.complete && i.naturalWidth > 0).length;
  for (const image of images) {  // each image brought into view and decoded (or failed)
    image.scrollIntoView();
    await Promise.race([image.decode().catch(() => null),
                        new Promise(done => setTimeout(done, 5000))]);
  }
  const end = Date.now() + 30000;
  while (images.some(i => !i.complete) && Date.now() < end)
    await new Promise(done => setTimeout(done, 50));
  window.scrollTo(0, 0);
  const links = [...document.querySelectorAll('[src], [href]')].map(
    e => e.getAttribute('src') || e.getAttribute('href'));
  return {
    images: images.length,
    shown: images.filter(i => i.complete && i.naturalWidth > 0).length,
    lazy: images.filter(i => i.loading === 'lazy').length,
    at_load: atLoad,
    sources: images.map(i => i.getAttribute('src').slice(0, 300)),
    links: links.map(l => l.slice(0, 300)),
    scripts: document.scripts.length,
    title: document.title,
    text: document.body.innerText,
    steps: document.querySelectorAll('section.step').length,
  };
})()"""


def look(page: Page) -> dict[str, Any]:
    return dict(page.evaluate(LOOK))


#: Chromium's own background services (its clock check, component updates), not the page's
BROWSER_HOSTS = (".google.com", ".googleapis.com", ".gstatic.com", ".gvt1.com")


def requested_urls(netlog: Path) -> set[str]:
    """Every URL the browser's net log names (read once the browser has exited), less the
    browser's own background requests."""
    text = netlog.read_text(encoding="utf-8", errors="replace") if netlog.exists() else ""
    urls = set(re.findall(r'"url":\s*"([^"]+)"', text))
    return {u for u in urls if not (urlparse(u).hostname or "").endswith(BROWSER_HOSTS)}


def offline(urls: set[str]) -> bool:
    return all(u.startswith(("file:", "data:", "about:", "chrome")) for u in urls)


def probe_page(folder: Path) -> Path:
    """A page that does ask the network for an image: the net log check must see it."""
    page = folder / "probe.html"
    page.write_text('<img src="http://198.51.100.7/probe.png">')
    return page


def check_offline(result: dict[str, Any], page_path: Path) -> None:
    """Every image and link is a data: URI, an in-page anchor or a file beside the page."""
    for link in result["links"]:
        if link.startswith(("data:", "#")):
            continue
        assert "://" not in link, link
        assert (page_path.parent / unquote(link)).exists(), link


def shot_of(page: Page, step: int, selector: str | None = None) -> Image.Image:
    """The browser's own pixels of step ``step``'s screenshot as laid out on the page (or of
    the image ``selector`` finds)."""
    found = selector or f'img[data-step="{step}"]'
    page.evaluate(  # decoded and painted before the capture (a lazy image may lag behind)
        f"""(async () => {{
        const image = document.querySelector('{found}');
        image.scrollIntoView();
        await image.decode();
        await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
        return true;
    }})()"""
    )
    rect = page.evaluate(
        f"""(() => {{
        const image = document.querySelector('{found}');
        image.scrollIntoView();
        const r = image.getBoundingClientRect();
        return {{x: r.left + window.scrollX, y: r.top + window.scrollY,
                 width: r.width, height: r.height}};
    }})()"""
    )
    clip = {**rect, "scale": 1}
    data = page.call("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)[
        "data"
    ]
    return Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")


def matching(shown: Image.Image, source: Image.Image) -> float:
    """The share of pixels of ``shown`` within 40 levels of ``source`` scaled to its size."""
    expected = source.convert("RGB").resize(shown.size, Image.Resampling.BILINEAR)
    diff = ImageChops.difference(shown, expected).convert("L")
    histogram = diff.histogram()
    return sum(histogram[:40]) / (shown.width * shown.height)


# -- a real run ----------------------------------------------------------------------------------


def plan_reply(note: Path) -> str:
    body = {
        "feasible": True,
        "reason": "",
        "subtasks": [
            {
                "id": "write",
                "description": "Type hello into note.txt and save it",
                "evidence": "note.txt holds hello",
                "check": {"kind": "file", "path": str(note), "contains": "hello"},
            }
        ],
    }
    return "The plan:\n```json\n" + json.dumps(body) + "\n```"


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory, desktop: Any, x11: Any) -> Path:
    """A planned run on mousepad: a refused click then an approved one, typing, saving, the
    code agent printing the note's size, done; the first reply carries markup."""
    from conftest import AppRunner

    work = tmp_path_factory.mktemp("report-run")
    note = work / "note.txt"
    note.write_text("")
    runner = AppRunner(desktop, x11)
    try:
        runner(["mousepad", str(note)], window="note.txt", timeout=30)
        size = "import os\nprint('size', os.path.getsize('note.txt'), '<b>bold</b>')"
        script = [
            reply(plan_reply(note)),
            reply(act('agent.switch_applications("note.txt")', HOSTILE)),
            reply(act('agent.click("File")')),  # refused by the approver
            reply(act('agent.click("File")')),
            reply(act('agent.hotkey(["escape"])')),
            reply(act('agent.type(text="hello")')),
            reply(act('agent.hotkey(["ctrl", "s"])')),
            reply(act('agent.call_code_agent("Print the size of note.txt")')),
            reply(f"Print it.\n```python\n{size}\n```"),
            reply("Printed the size.\nDONE"),
            reply(act("agent.done()")),
        ]
        asked: list[str] = []

        def approve(request: Any) -> Approval:
            asked.append(request.subject.action)
            if request.subject.action == "click" and asked.count("click") == 1:
                return Approval(False, by="tester")
            return Approval(True, by="tester")

        with ScriptedModelServer(script) as server:
            model = ModelConfig(
                "openai-compatible", "scripted-model", server.openai_base_url, "sk-report"
            )
            config = AgentConfig(
                record_dir=work / "runs",
                settle_seconds=0.3,
                plan=PlanSettings("always"),
                safety=SafetyConfig(mode="confirm-all"),
                code=CodeAgentConfig(workdir=work, python=sys.executable, timeout_s=20),
            )
            agent = Agent(
                model,
                settings=config,
                grounding=GroundingConfig("auto"),
                backend=x11,
                approver=approve,
            )
            result = agent.run("Write hello into note.txt and tell me its size")
        assert result.status is RunStatus.SUCCEEDED, result
        assert "click" in asked
    finally:
        runner.close()
    assert result.trajectory_dir is not None
    return result.trajectory_dir


def test_a_real_run_renders_offline_with_every_image_and_the_action_drawn(
    real_run: Path, tmp_path: Path
) -> None:
    trajectory = load_trajectory(real_run)
    page_path = write_report(real_run)
    assert page_path == real_run / "report.html"
    html = page_path.read_text()
    assert "<script" not in html.replace("&lt;script", "")  # the reply's markup is text
    assert "198.51.100.7" in html  # ... shown, as escaped text
    shots = [s for s in trajectory.steps if s.screenshot]
    clicked = next(s for s in shots if s.grounding and s.grounding[0].box and s.executed)
    with chromium(tmp_path) as (devtools, netlog), devtools.new_page(page_path.as_uri()) as page:
        result = look(page)
        own = shot_of(page, clicked.step)
    # offline: nothing requested but files (the net log lists every URL the browser asked for)
    urls = requested_urls(netlog)
    assert offline(urls), urls
    probe = probe_page(tmp_path)  # ... and the log would show a fetch, had there been one
    with chromium(tmp_path / "probe") as (devtools, probe_log), devtools.new_page(probe.as_uri()):
        time.sleep(0.5)
    assert "http://198.51.100.7/probe.png" in requested_urls(probe_log)
    check_offline(result, page_path)
    assert result["images"] >= len(shots)
    assert result["shown"] == result["images"], result["sources"]
    assert result["lazy"] == 0
    assert result["at_load"] == result["images"]  # shown once the page has loaded, no scrolling
    assert result["steps"] == len(trajectory.steps)
    # hostile text stays text: no script ran, the title is ours, the characters are shown
    assert result["scripts"] == 0
    assert result["title"].startswith("agent-s run: Write hello")
    assert "<script>document.title='pwned'</script>" in result["text"]
    assert "<b>bold</b>" in result["text"]  # the code agent's output, as printed
    # what the report says: the plan and its check, the refusal and approvals, code, result
    text = result["text"]
    assert "Type hello into note.txt and save it" in text
    assert re.search(r"passed\s*write attempt 1 by file", text), text[:3000]
    # the plan's subtasks with their status, strategy and attempts, and the planner's events
    assert re.search(r"write\s+Type hello into note.txt and save it\s+done\s+gui\s+1", text)
    assert re.search(r"Events \(\d+\)", text)
    assert re.search(r"plan\s+write Type hello into note.txt and save it check", text), text
    assert "refused" in text
    assert "tester" in text
    assert "size 5" in text  # the code block's stdout
    assert "succeeded" in text
    # the browser's pixels of the clicked step are the screenshot the model was sent ...
    source = Image.open(real_run / str(clicked.screenshot))
    assert matching(own, source) > 0.9
    assert matching(own, ImageOps.invert(source.convert("RGB"))) < 0.5  # the check can fail
    # ... with the grounded box drawn in green where the grounding put it
    assert clicked.grounding[0].box is not None
    bx, by, bw, bh = clicked.grounding[0].box
    scale = own.width / source.width
    left, middle = int(bx * scale), int((by + bh / 2) * scale)  # the box's left edge
    edge = own.crop((left - 4, middle - 2, left + 4, middle + 2))
    assert any(g > 150 and r < 100 and b < 100 for r, g, b in edge.get_flattened_data()), (
        "no green box"
    )


def test_the_report_can_be_written_elsewhere_or_embedded(real_run: Path, tmp_path: Path) -> None:
    beside = write_report(real_run, tmp_path / "out" / "mine.html")
    files = sorted(p.name for p in (tmp_path / "out" / "mine_files").iterdir())
    assert files
    assert all(p.endswith(".png") for p in files)
    assert 'src="mine_files/step_001.png"' in beside.read_text()
    embedded = write_report(real_run, tmp_path / "one.html", embed=True)
    assert not (tmp_path / "one_files").exists()
    with chromium(tmp_path) as (devtools, _), devtools.new_page(embedded.as_uri()) as page:
        result = look(page)
    assert result["images"] > 0
    assert result["shown"] == result["images"]
    assert all(s.startswith("data:image/png;base64,") for s in result["sources"])


# -- a bench results folder -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def bench_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("report-bench") / "results"
    argv = ["bench", "run", "smoke", "--policy", "reference", "--domain", "calculator"]
    done = CliRunner().invoke(app, [*argv, "--results", str(results), "--json"])
    assert done.exit_code == 0, done.output
    return results


def test_a_bench_folder_gets_an_index_and_a_page_per_task(
    bench_results: Path, tmp_path: Path
) -> None:
    done = CliRunner().invoke(app, ["report", str(bench_results)])
    assert done.exit_code == 0, done.output
    index = Path(done.stdout.strip())
    assert index == bench_results / "report.html"
    tasks = sorted(p.parent for p in bench_results.rglob("result.txt"))
    assert len(tasks) == 2
    with chromium(tmp_path) as (devtools, netlog):
        with devtools.new_page(index.as_uri()) as page:
            front = look(page)
        pages = []
        for folder in tasks:
            with devtools.new_page((folder / "report.html").as_uri()) as page:
                pages.append((folder, look(page)))
            with devtools.new_page((folder / "trajectory" / "report.html").as_uri()) as page:
                pages.append((folder / "trajectory", look(page)))
                calc_shot = shot_of(page, 1) if "e8b52f13" in folder.name else None
                if calc_shot is not None:
                    after = sorted(folder.glob("step_1_*.png"))[0]
                    assert matching(calc_shot, Image.open(after)) > 0.9
    assert offline(requested_urls(netlog)), requested_urls(netlog)
    # the index: the score per domain and each task, linking to its page
    assert re.search(r"calculator\s+2\s+2\s+100\.0%", front["text"]), front["text"]
    assert re.search(r"overall\s+2\s+2\s+100\.0%", front["text"])
    for folder in tasks:
        link = os.path.relpath(folder / "report.html", index.parent)
        assert link in [unquote(x) for x in front["links"]]
    for where, result in pages:
        check_offline(result, where / "report.html")
        assert result["images"] > 0
        assert result["shown"] == result["images"]
    # the task page links its run report, which links back
    first_task = pages[0][1]
    assert "trajectory/report.html" in [unquote(x) for x in first_task["links"]]
    assert "../report.html" in [unquote(x) for x in pages[1][1]["links"]]


def test_a_bench_report_written_elsewhere_carries_its_images(
    bench_results: Path, tmp_path: Path
) -> None:
    index = write_report(bench_results, tmp_path / "site" / "bench.html")
    pages = sorted((tmp_path / "site" / "bench_files").rglob("report.html"))
    assert len(pages) == 4  # two task pages, two run reports
    for page in pages:
        html = page.read_text()
        for src in re.findall(r'src="([^"]+)"', html):
            assert (page.parent / unquote(src)).is_file(), (page, src)
    assert "bench_files/" in index.read_text()


# -- synthetic runs through the real writer -------------------------------------------------------


def synthetic_run(parent: Path, steps: int, *, screen: tuple[int, int] = (1280, 800)) -> Path:
    """A run of ``steps`` steps written with ``TrajectoryWriter``: each screenshot a white
    image (half the screen's size: a HiDPI-like downscale) with a black square where the step's
    grounding found its target, on a monitor whose origin is (1280, 0)."""
    writer = TrajectoryWriter.create(parent)
    writer.write_run({"task": "synthetic " + HOSTILE, "model": "scripted-model"})
    origin = (1280, 0)
    size = (screen[0] // 2, screen[1] // 2)
    total = Usage()
    for n in range(1, steps + 1):
        box = (origin[0] + 100 + (n * 37) % 900, 100 + (n * 53) % 500, 120, 60)
        image = Image.new("RGB", size, "white")
        pen = ImageDraw.Draw(image)
        left, top = (box[0] - origin[0]) // 2, (box[1] - origin[1]) // 2
        pen.rectangle((left, top, left + box[2] // 2, top + box[3] // 2), fill="black")
        pen.text((10, size[1] - 20), f"step {n}", fill="black")
        buffer = io.BytesIO()
        image.save(buffer, "PNG", compress_level=1)
        name = writer.write_image(f"step_{n:03d}.png", buffer.getvalue())
        centre = (box[0] + box[2] // 2, box[1] + box[3] // 2)
        found = TargetGrounding(
            target=f"the target of step {n}",
            kind="element",
            grounder="a11y",
            point=centre,
            box=box,
            confidence=1.0,
            evidence=HOSTILE,
            image_point=((centre[0] - origin[0]) // 2, (centre[1] - origin[1]) // 2),
            image_size=size,
        )
        call = ModelCall(
            purpose="generate",
            reply=f"Step {n}. {HOSTILE}",
            input_tokens=1000,
            output_tokens=50,
            cost_usd=0.001,
            seconds=0.5,
        )
        total = Usage(input_tokens=1000 * n, output_tokens=50 * n, cost_usd=0.001 * n)
        executed: tuple[dict[str, Any], ...] = (
            {"op": "Click", "at": {"x": centre[0], "y": centre[1]}, "button": "left", "clicks": 1},
        )
        if n % 3 == 0:
            executed = (
                {
                    "op": "Drag",
                    "start": {"x": centre[0], "y": centre[1]},
                    "end": {"x": centre[0] + 200, "y": centre[1] + 100},
                },
                {"op": "TypeText", "text": f"typed {n} {HOSTILE}"},
            )
        substeps = ()
        if n % 50 == 0:
            substeps = (
                SubStep(
                    substep=1,
                    started_at=time.time(),
                    kind="block",
                    language="bash",
                    code="echo '<script>alert(1)</script>'",
                    run={
                        "exit_status": 0,
                        "stdout": {
                            "text": "<script>alert(1)</script>\n",
                            "total_bytes": 26,
                            "truncated": False,
                        },
                        "stderr": {"text": "", "total_bytes": 0, "truncated": False},
                    },
                    safety={
                        "allowed": n % 100 != 0,
                        "decided_by": "approver",
                        "approver": "tester",
                        "mode": "confirm",
                        "risks": ["runs code"],
                    },
                ),
            )
        step = Step(
            step=n,
            started_at=time.time(),
            seconds=1.0,
            screenshot=name,
            screen=size,
            active_window=f"App: window {n} {HOSTILE}",
            calls=(call,),
            reply=call.reply,
            action_text=f"agent.click('the target of step {n}')",
            grounding=(found,),
            executed=executed,
            outcome="ok",
            detail=HOSTILE,
            timings={"model": 0.5},
            substeps=substeps,
            usage=total,
            safety={"allowed": True, "decided_by": "mode auto", "mode": "auto"},
            code=f"import pyautogui\npyautogui.click({centre[0]}, {centre[1]})",
        )
        writer.write_step(step)
    writer.write_result(
        RunResult(
            task="synthetic " + HOSTILE,
            status=RunStatus.SUCCEEDED,
            cause="done",
            reason=HOSTILE,
            steps=steps,
            usage=total,
            model_calls=steps,
            timings=Timings(total=steps * 1.0),
            trajectory_dir=writer.folder,
        )
    )
    writer.close()
    return writer.folder


def test_the_overlay_lands_on_the_target_after_downscale_and_monitor_origin(tmp_path: Path) -> None:
    folder = synthetic_run(tmp_path, 3)
    page_path = write_report(folder)
    with chromium(tmp_path) as (devtools, _), devtools.new_page(page_path.as_uri()) as page:
        result = look(page)
        shown = [shot_of(page, n) for n in (1, 2, 3)]
    assert result["shown"] == result["images"] == 3
    assert result["scripts"] == 0
    assert result["title"] == "agent-s run: " + ("synthetic " + HOSTILE)[:80]  # shown, not run
    trajectory = load_trajectory(folder)
    for step, picture in zip(trajectory.steps, shown, strict=True):
        box = step.grounding[0].box
        assert box is not None
        source = Image.open(folder / str(step.screenshot))
        scale = picture.width / source.width
        # the black square is where it was drawn, and the green outline runs along its edge
        left, top = (box[0] - 1280) / 2 * scale, box[1] / 2 * scale
        right = left + box[2] / 2 * scale
        inside = picture.getpixel((int(left + 8), int(top + 8)))
        assert max(inside) < 60, inside
        edge = picture.crop((int(left) - 3, int(top) + 6, int(left) + 4, int(top) + 14))
        assert any(g > 150 and r < 100 and b < 100 for r, g, b in edge.get_flattened_data())
        far = picture.crop((int(right) + 20, int(top) + 6, int(right) + 26, int(top) + 14))
        assert not any(g > 150 and r < 100 and b < 100 for r, g, b in far.get_flattened_data())


READING = """(async () => {
  const step = document.querySelector('section.step');
  const image = step.querySelector('img[data-step]');
  const code = step.querySelector('pre.code');
  const heads = [...step.querySelectorAll('th')];
  const line = parseFloat(getComputedStyle(heads[0]).lineHeight) || 20;
  const column = step.getBoundingClientRect().width;
  const before = image.getBoundingClientRect().width;
  image.closest('label').click();  // a click opens it at full size
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  const zoomed = image.getBoundingClientRect().width;
  image.closest('label').click();  // another closes it
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  return {
    code: code ? code.innerText : null,
    code_scrolls: code ? getComputedStyle(code).whiteSpace : null,
    heads: heads.map(h => [h.innerText, h.getBoundingClientRect().height <= line * 1.6]),
    column, before, zoomed, natural: image.naturalWidth,
    after: image.getBoundingClientRect().width,
  };
})()"""


def test_the_page_reads_well_code_tables_and_images(tmp_path: Path) -> None:
    """Code keeps its lines, table headings keep their words whole, a step's image is as wide
    as the page's column and opens at full size on a click."""
    folder = synthetic_run(tmp_path, 2)
    page_path = write_report(folder)
    with chromium(tmp_path) as (devtools, _), devtools.new_page(page_path.as_uri()) as page:
        page.call(
            "Emulation.setDeviceMetricsOverride",
            width=1000,
            height=900,
            deviceScaleFactor=1,
            mobile=False,
        )
        seen = dict(page.evaluate(READING))
    assert seen["code"].splitlines() == ["import pyautogui", "pyautogui.click(1477, 183)"]
    assert seen["code_scrolls"] == "pre"  # a long line scrolls instead of wrapping
    assert seen["heads"]
    assert all(one_line for _, one_line in seen["heads"]), seen["heads"]
    assert seen["before"] >= 0.9 * (seen["column"] - 40), seen  # the column, less its padding
    assert seen["zoomed"] == seen["natural"], seen  # full size, not scaled to the column
    assert seen["after"] == seen["before"]


def test_a_500_step_run_renders_in_reasonable_time(tmp_path: Path) -> None:
    folder = synthetic_run(tmp_path, 500)
    start = time.perf_counter()
    page_path = write_report(folder)
    written = time.perf_counter() - start
    size = page_path.stat().st_size
    with chromium(tmp_path) as (devtools, _), devtools.new_page(page_path.as_uri()) as page:
        counts = page.evaluate(
            "({steps: document.querySelectorAll('section.step').length,"
            " lazy: [...document.images].filter(i => i.loading === 'lazy').length,"
            " scripts: document.scripts.length})"
        )
        loaded = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
        first = shot_of(page, 1)
    assert counts == {"steps": 500, "lazy": 0, "scripts": 0}
    assert matching(first, Image.open(folder / "step_001.png")) > 0.8
    print(
        f"\n500-step report: written in {written:.2f} s, {size / 1e6:.1f} MB of HTML, "
        f"loaded by Chromium in {float(loaded) / 1000:.2f} s"
    )


# -- the command's errors -------------------------------------------------------------------------


def _report(*args: str) -> Any:
    return CliRunner().invoke(app, ["report", *args])


def test_errors_name_the_fix_and_never_show_a_traceback(tmp_path: Path) -> None:
    """A folder that is no run is a usage error (exit 2, as replay says of it); a run that
    cannot be read is a failure (exit 1)."""
    missing = _report(str(tmp_path / "nope"))
    assert missing.exit_code == 2
    assert "does not exist" in missing.output
    (empty := tmp_path / "empty").mkdir()
    done = _report(str(empty))
    assert done.exit_code == 2
    assert "is empty" in done.output
    assert "agent-s run prints it" in done.output
    (stray := tmp_path / "stray").mkdir()
    (stray / "notes.txt").write_text("x")
    done = _report(str(stray))
    assert done.exit_code == 2
    assert "not a run folder" in done.output
    runs = tmp_path / "runs"
    run = synthetic_run(runs, 2)
    done = _report(str(runs))
    assert done.exit_code == 2
    assert f"agent-s report {run}" in done.output  # the folder of runs: pick one
    done = _report(str(run / "trajectory.jsonl"))
    assert done.exit_code == 2
    assert "is a file" in done.output
    replayed = CliRunner().invoke(app, ["replay", str(stray)])
    assert replayed.exit_code == done.exit_code == 2, replayed.output
    # a torn last line: the steps before it are reported, with a warning
    lines = (run / "trajectory.jsonl").read_text()
    (run / "trajectory.jsonl").write_text(lines + '{"step": 3, "scre')
    done = _report(str(run))
    assert done.exit_code == 0, done.output
    assert "cut off" in done.output
    assert "was cut off" in (run / "report.html").read_text()
    # a damaged line in the middle: named, with what to do
    first, second = lines.splitlines()
    (run / "trajectory.jsonl").write_text(first + "\n{garbage\n" + second + "\n")
    done = _report(str(run))
    assert done.exit_code == 1
    assert "trajectory.jsonl:2" in done.output
    assert "remove that line" in done.output
    for result in (missing, done):
        assert "Traceback" not in result.output
    with pytest.raises(ReportError):
        write_report(empty)


def test_open_without_a_desktop_says_so_and_keeps_the_report(tmp_path: Path) -> None:
    run = synthetic_run(tmp_path, 1)
    env = {k: v for k, v in _CLEAN.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    done = subprocess.run(
        [AGENT_S, "report", str(run), "--open"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout.strip() == str(run / "report.html")
    assert "cannot open the report" in done.stderr
    assert "in a browser yourself" in done.stderr
    assert "Traceback" not in done.stderr
    assert (run / "report.html").is_file()


# -- a best-of-N run ------------------------------------------------------------------------------

_NO_DISPLAY = {k: v for k, v in _CLEAN.items() if k not in ("DISPLAY", "XAUTHORITY")}


def _write_word(word: str) -> str:
    """Type a command that writes ``word`` into ~/result.txt and retitles the terminal."""
    command = f"echo {word} > ~/result.txt; echo -ne '\\\\033]2;wrote {word}\\\\007'"
    return f'agent.type(text="{command}", enter=True)'


@pytest.fixture(scope="module")
def best_of_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunResult]:
    """``agent-s run --virtual --best-of 2`` one attempt at a time: attempt 1 writes the wrong
    word, attempt 2 the right one, and the judge picks attempt 2."""
    work = tmp_path_factory.mktemp("report-best-of")
    script = [
        reply(act('agent.open("xterm")')),
        reply(act(_write_word("bad"))),
        reply(act("agent.done()")),
        reply(act('agent.open("xterm")')),
        reply(act(_write_word("good"))),
        reply(act("agent.done()")),
        reply("ATTEMPT: 2\nREASON: its terminal shows <b>good</b> written to the file"),
    ]
    with ScriptedModelServer(script) as server:
        key = key_file(work, "sk-report-best-of")
        argv = [AGENT_S, "run", *model_options(server.openai_base_url, key=key)]
        argv += ["--virtual", "--best-of", "2", "--workers", "1", "--safety", "auto"]
        argv += ["--max-steps", "6", "--record", str(work / "runs"), "--json"]
        argv += ["--check", "grep -qx good ~/result.txt", "Write the word good into ~/result.txt"]
        done = subprocess.run(
            argv, env=_NO_DISPLAY, capture_output=True, text=True, timeout=400, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(server.requests) == len(script)
    result = RunResult.from_json(json.loads(done.stdout.splitlines()[0]))
    assert result.best_of is not None
    assert result.best_of.picked == 2
    (folder,) = (work / "runs").iterdir()
    return folder, result


def test_a_best_of_run_shows_the_pick_the_reason_and_each_narrative(
    best_of_run: tuple[Path, RunResult], tmp_path: Path
) -> None:
    folder, result = best_of_run
    assert result.best_of is not None
    done = CliRunner().invoke(app, ["report", str(folder)])
    assert done.exit_code == 0, done.output
    index = Path(done.stdout.strip())
    assert index == folder / "report.html"
    attempt_pages = [folder / f"attempt-{n}" / "trajectory" / "report.html" for n in (1, 2)]
    with chromium(tmp_path) as (devtools, netlog):
        with devtools.new_page(index.as_uri()) as page:
            front = look(page)
            final = shot_of(page, 0, 'img[data-attempt="2"]')
        attempts = []
        for path in attempt_pages:
            with devtools.new_page(path.as_uri()) as page:
                attempts.append(look(page))
    assert offline(requested_urls(netlog)), requested_urls(netlog)
    check_offline(front, index)
    text = front["text"]
    assert front["title"].startswith("agent-s best of 2: Write the word good")
    # the pick, by whom, and the judge's reason (its markup shown as text)
    assert re.search(r"picked\s+attempt 2", text), text[:2000]
    assert re.search(r"picked by\s+comparative", text)
    assert "its terminal shows <b>good</b> written to the file" in text
    assert re.search(r"judge\s+1 call\(s\)", text)
    assert str(folder / "home") in text  # the files handed back
    # every attempt's narrative, line by line, as the run's result holds it
    for attempt in result.best_of.attempts:
        assert attempt.narrative
        for line in attempt.narrative:
            assert line in text, line
    assert any("wrote good" in line for line in result.best_of.attempts[1].narrative)
    assert any("wrote bad" in line for line in result.best_of.attempts[0].narrative)
    assert re.search(r"Attempt 1\s*failed", text), text
    assert re.search(r"Attempt 2\s*succeeded\s*picked", text), text
    # each attempt's final screen is shown, and its run report is linked
    assert front["images"] == 2
    assert front["shown"] == 2, front["sources"]
    picked = folder / "attempt-2" / "trajectory"
    last = json.loads((picked / "narrative.json").read_text())["final_screenshot"]
    source = Image.open(picked / last)
    assert matching(final, source) > 0.9  # the picked attempt's last screen, as the judge saw it
    assert matching(final, ImageOps.invert(source.convert("RGB"))) < 0.5
    links = [unquote(x) for x in front["links"]]
    for number in (1, 2):
        assert f"attempt-{number}/trajectory/report.html" in links
    # each attempt's page is its run, saying which attempt it is and linking back
    for number, page_text in ((1, attempts[0]), (2, attempts[1])):
        check_offline(page_text, attempt_pages[number - 1])
        assert page_text["steps"] == 3
        assert page_text["shown"] == page_text["images"] > 0
        assert "../../report.html" in [unquote(x) for x in page_text["links"]]
    assert "Attempt 2 of 2 of a best-of run: the judge picked it" in attempts[1]["text"]
    assert "Attempt 1 of 2 of a best-of run: the judge picked attempt 2" in attempts[0]["text"]
    # written elsewhere, the attempts' pages and images go beside it
    elsewhere = write_report(folder, tmp_path / "site" / "best.html")
    beside = tmp_path / "site" / "best_files"
    for number in (1, 2):
        copied = beside / f"attempt-{number}" / "report.html"
        assert f"best_files/attempt-{number}/report.html" in elsewhere.read_text()
        for src in re.findall(r'src="([^"]+)"', copied.read_text()):
            assert (copied.parent / unquote(src)).is_file(), (copied, src)
    for src in re.findall(r'src="([^"]+)"', elsewhere.read_text()):
        assert (elsewhere.parent / unquote(src)).is_file(), src


# -- a bench task run best-of-2 -------------------------------------------------------------------

NOTES = "hello bench"


def _request_texts(request: RecordedRequest) -> list[str]:
    found: list[str] = []
    for message in request.body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            found.append(content)
        elif isinstance(content, list):
            found.extend(str(p.get("text", "")) for p in content if p.get("type") == "text")
    return found


class AttemptsThenJudge:
    """The attempts' replies in the order they are asked for (one attempt at a time), and the
    judge's pick of the attempt whose narrative holds ``marker``."""

    def __init__(self, replies: list[Any], marker: str) -> None:
        self.replies, self.marker = list(replies), marker
        self.judged = 0

    def __call__(self, request: RecordedRequest) -> Any:
        texts = _request_texts(request)
        if any("You judge the work of an agent" in t for t in texts):
            self.judged += 1
            blocks = {int(m[1]): t for t in texts if (m := re.match(r"Attempt (\d+) \(", t))}
            (number,) = [n for n, text in blocks.items() if self.marker in text]
            return reply(f"ATTEMPT: {number}\nREASON: it wrote the line the task asks for")
        assert self.replies, "a request beyond the attempts' script"
        return self.replies.pop(0)


def test_a_best_of_bench_task_shows_the_scores_the_pick_and_each_attempt(tmp_path: Path) -> None:
    from agent_s.bench.tasks import load_suite

    task = next(t for t in load_suite("smoke").tasks(["os"]) if "notes.txt" in t.instruction)
    (tmp_path / "suite" / "examples" / "os").mkdir(parents=True)
    shutil.copy(str(task.path), tmp_path / "suite" / "examples" / "os" / f"{task.id}.json")
    suite = tmp_path / "suite" / "test_one.json"
    suite.write_text(json.dumps({"os": [task.id]}))

    def typed(words: str) -> Any:
        return reply(act(f"agent.type(text=\"echo '{words}' > ~/notes.txt\", enter=True)"))

    done_reply = reply(act("agent.done()"))
    script = AttemptsThenJudge([typed("hello"), done_reply, typed(NOTES), done_reply], f"'{NOTES}'")
    results = tmp_path / "results"
    with ScriptedModelServer(script) as server:
        argv = ["bench", "run", str(suite), "--policy", "agent"]
        argv += model_options(server.openai_base_url, key="sk-report-bench")
        argv += ["--max-steps", "4", "--results", str(results), "--best-of", "2"]
        argv += ["--workers", "1", "--json"]
        ran = CliRunner().invoke(app, argv)
    assert ran.exit_code == 0, ran.output
    assert not script.replies
    assert script.judged == 1
    (record,) = json.loads(ran.stdout)["records"]
    best = record["best_of"]
    assert (best["single"], best["picked_score"], best["oracle"]) == (0.5, 1.0, 1.0)
    (folder,) = results.glob("*/*/scripted-model/os/*")
    done = CliRunner().invoke(app, ["report", str(results)])
    assert done.exit_code == 0, done.output
    page_path = folder / "report.html"
    attempt_pages = [folder / "attempts" / str(n) / "trajectory" / "report.html" for n in (1, 2)]
    with chromium(tmp_path) as (devtools, netlog):
        with devtools.new_page(page_path.as_uri()) as page:
            shown = look(page)
        attempts = []
        for path in attempt_pages:
            with devtools.new_page(path.as_uri()) as page:
                attempts.append(look(page))
    assert offline(requested_urls(netlog)), requested_urls(netlog)
    check_offline(shown, page_path)
    text = shown["text"]
    # the judge's quality: one attempt's mean score, the picked one's, the best any reached
    assert re.search(r"single attempt \(mean score\)\s+0\.5", text), text[:3000]
    assert re.search(r"judge-picked score\s+1\.0", text)
    assert re.search(r"best possible \(oracle\)\s+1\.0", text)
    assert re.search(rf"picked\s+attempt {best['picked']}", text)
    assert "it wrote the line the task asks for" in text
    for attempt in best["attempts"]:
        assert attempt["narrative"]
        for line in attempt["narrative"]:
            assert line in text, line
        assert re.search(rf"Attempt {attempt['number']}\s*{attempt['status']}", text)
    # each attempt's final screen and run report, which links back to the task's page
    assert shown["images"] == 2
    assert shown["shown"] == 2
    links = [unquote(x) for x in shown["links"]]
    for number, result in ((1, attempts[0]), (2, attempts[1])):
        assert f"attempts/{number}/trajectory/report.html" in links
        check_offline(result, attempt_pages[number - 1])
        assert result["steps"] == 2
        assert result["shown"] == result["images"] > 0
        assert "../../../report.html" in [unquote(x) for x in result["links"]]
        assert f"Attempt {number} of 2 of a best-of run" in result["text"]
