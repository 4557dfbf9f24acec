"""Request size per step over a 50-step session: ours next to Agent S3's real requests.

One scripted session (synthetic 1920x1080 screenshots whose content changes every step; the
same scripted replies: a reflection from step 2, then the action, in Agent S3's action syntax)
is run by both agents against scripted model servers (``agent_s.testing.scripted_server``),
one for the main model and one for the grounding model (UI-TARS-1.5-7B by name), and the
request bodies the servers record are measured: bytes on the wire (JSON, base64 images),
images, and tokens estimated by each vendor's published image rule (UI-TARS/Qwen: one token
per 28x28 patch) and at 4 bytes a token for everything else.

- Ours: ``agent_s.Agent`` with its defaults (the context policy, the model profile's image
  size and format) and reflection switched on, as Agent S3 has it, stepping on each
  screenshot without executing (``step(observation, execute=False)``).
- Agent S3 0.3.2: its own ``AgentS3`` and ``OSWorldACI`` driven through ``predict`` on the
  PNG screenshots, as OSWorld's runners do (``scripts/s3_driver.py``, in ``.venv-s3``). Agent
  S3 has no Responses API client: the Responses rows compare against its Chat Completions run.
  Without ``.venv-s3`` the script says how to make it, and falls back to a MODEL of S3's
  history policy (every screenshot a full-size PNG, the newest 8 in generation and in
  reflection, all text kept, two grounding calls per grounded action), labelled as such.

Run: ``.venv/bin/python scripts/bench_context.py [--steps 50] [--keep-images 3] [--modelled]``
(``--keep-images``: the screenshots our context policy keeps per request, the current one
included).
"""

from __future__ import annotations

import argparse
import io
import math
import os
import random
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont
from s3_driver import INSTALL, S3Process, s3_python

from agent_s import Agent, AgentConfig, GroundingConfig, ModelConfig
from agent_s.desktop.base import Monitor, ScreenGeometry, Screenshot
from agent_s.grounding import Observation
from agent_s.images import EncodedImage
from agent_s.loop.context import ContextPolicy
from agent_s.models.endpoints import ProviderSettings
from agent_s.models.factory import build_provider
from agent_s.models.types import ImagePart, Message, ModelRequest, Provider, TextPart
from agent_s.prompting import Platform, reflection_system_prompt, worker_system_prompt
from agent_s.testing.scripted_replies import Step, reply
from agent_s.testing.scripted_server import RecordedRequest, ScriptedModelServer

WIDTH, HEIGHT = 1920, 1080
TASK = "Copy the invoice total from invoice.pdf into cell B7 of budget.ods and save the file."
# (label, our provider name, model, Agent S3's engine_type)
ADAPTERS: tuple[tuple[str, str, str, str], ...] = (
    ("OpenAI Chat Completions", "openai", "gpt-4.1", "openai"),
    ("OpenAI Responses", "openai-responses", "gpt-4.1", "openai"),
    ("Anthropic Messages", "anthropic", "claude-sonnet-4-5", "anthropic"),
)
GROUND_MODEL = "ui-tars-1.5-7b"
S3_IMAGES = 8
REPORT_STEPS = (1, 10, 25, 30, 50)

# -- the scripted session ----------------------------------------------------------------------

_ACTIONS = (
    ('agent.open(app_or_filename="invoice.pdf")', "The desktop shows no window yet."),
    (
        'agent.scroll(element_description="the invoice page in the document viewer", clicks=-5)',
        "The invoice is open at the top of page one; the totals are further down.",
    ),
    (
        'agent.save_to_knowledge(text=["invoice total: 1,284.50 EUR"])',
        "The total line reads 1,284.50 EUR at the bottom right of the table.",
    ),
    (
        'agent.switch_applications(app_code="libreoffice-calc")',
        "I have the total in my notes; the spreadsheet must come to the front.",
    ),
    (
        'agent.click(element_description="cell B7 in the Budget sheet")',
        "The spreadsheet is in front with the Budget sheet selected; B7 is empty.",
    ),
    (
        'agent.type(text="1284.50", enter=True)',
        "Cell B7 is selected, as the Name Box shows, so I type the amount.",
    ),
    (
        'agent.hotkey(keys=["ctrl", "s"])',
        "B7 now shows 1,284.50. Saving keeps the file in its own format.",
    ),
    (
        'agent.click(element_description="the Use ODF Format! button in the Keep format dialog")',
        "A dialog asks which format to keep; the file must stay .ods.",
    ),
)
_DETAILS = (
    "The toolbar and the menu bar are unchanged since the last step.",
    "The status bar shows the sheet is modified but not saved.",
    "No dialog is open, so keyboard input goes to the focused window.",
    "The previous action had the effect I expected.",
    "The document viewer still shows page one of two.",
    "The formula bar confirms the value in the selected cell.",
    "Nothing on the screen asks for anything outside the task.",
)


def worker_replies(steps: int) -> list[str]:
    """The model's reply at each step: the task's actions in a loop, with varied reasoning."""
    rng = random.Random(7)  # noqa: S311 - synthetic data
    replies = []
    for n in range(1, steps + 1):
        action, why = _ACTIONS[(n - 1) % len(_ACTIONS)]
        detail = " ".join(rng.sample(_DETAILS, 3))
        replies.append(f"{why} {detail} Next I act on it.\n```python\n{action}\n```")
    return replies


def reflection_reply(n: int) -> str:
    verdict = "OFF TRACK" if n % 9 == 1 and n > 1 else "ON TRACK"
    return (
        f"{verdict}\nStep {n - 1} did what the agent intended: the screen changed as expected. "
        "Keep going with the spreadsheet, and check the saved format before finishing."
    )


def main_script(steps: int) -> list[Step]:
    """The main model's answers in order: (a reflection from step 2, then) the action."""
    out: list[Step] = []
    for n, text in enumerate(worker_replies(steps), start=1):
        if n > 1:
            out.append(reply(reflection_reply(n)))
        out.append(reply(text))
    return out


def grounding_answer(request: RecordedRequest) -> Step:
    """The grounding model's answer to any request: a point inside both agents' frames."""
    return reply("(812, 436)")


# -- the screenshots ---------------------------------------------------------------------------


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.truetype("DejaVuSans.ttf", size)
    except OSError:
        return ImageFont.load_default()


def screenshot(n: int) -> Image.Image:
    """A 1920x1080 desktop: panel, a document window and a spreadsheet, changing each step."""
    rng = random.Random(n)  # noqa: S311 - synthetic data
    font, small = _font(15), _font(12)
    image = Image.new("RGB", (WIDTH, HEIGHT))
    draw = ImageDraw.Draw(image)
    for y in range(0, HEIGHT, 4):  # wallpaper gradient
        draw.rectangle((0, y, WIDTH, y + 3), fill=(20 + y // 20, 40 + y // 30, 90 + y // 12))
    draw.rectangle((0, 0, WIDTH, 32), fill=(30, 30, 30))
    draw.text((12, 8), "Activities", font=font, fill="white")
    draw.text((900, 8), f"10:{n:02d}", font=font, fill="white")
    draw.rectangle((40, 60, 900, 1040), fill=(245, 245, 245), outline=(90, 90, 90))
    draw.rectangle((40, 60, 900, 92), fill=(220, 220, 220))
    draw.text((56, 68), "invoice.pdf - Document Viewer", font=font, fill="black")
    for row in range(40):
        amount = rng.randrange(10, 999)
        line = f"{(row + n) % 97:3d}  Item {row + n} description text here   {amount}.00 EUR"
        draw.text((70, 110 + row * 23), line, font=small, fill=(30, 30, 30))
    noise = Image.effect_noise((260, 160), 60).convert("RGB")  # a photo in the document
    image.paste(noise, (600, 140 + (n % 5) * 10))
    draw.rectangle((940, 60, 1880, 1040), fill="white", outline=(90, 90, 90))
    draw.rectangle((940, 60, 1880, 92), fill=(220, 220, 220))
    draw.text((956, 68), "budget.ods - LibreOffice Calc", font=font, fill="black")
    for row in range(36):
        for col in range(8):
            x, y = 980 + col * 110, 130 + row * 25
            draw.rectangle((x, y, x + 110, y + 25), outline=(200, 200, 200))
            if (row * 8 + col + n) % 3:
                draw.text((x + 6, y + 5), f"{rng.randrange(0, 9999)}", font=small, fill="black")
    cursor = (500 + n * 23 % 1200, 300 + n * 17 % 600)
    draw.polygon([cursor, (cursor[0], cursor[1] + 18), (cursor[0] + 12, cursor[1] + 12)], "black")
    return image


def png(image: Image.Image) -> bytes:
    """The screenshot as a runner hands it to Agent S3: a PNG file, as Pillow saves it."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


# -- measuring the recorded requests -----------------------------------------------------------


def image_tokens(rule: str, width: int, height: int) -> int:
    """Input tokens for one image by the vendor's published rule (after its own resizing)."""
    if rule == "qwen":  # UI-TARS-1.5 / Qwen2.5-VL: one token per 28x28 patch
        return math.ceil(width / 28) * math.ceil(height / 28)
    if rule == "anthropic":  # resized to <= 1568 px and ~1.15 MP, then width * height / 750
        scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)))
        return math.ceil(width * scale * (height * scale) / 750)
    # OpenAI, detail high: fit in 2048x2048, then the short side to 768; 85 + 170 per 512 tile
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


@dataclass(frozen=True)
class Sent:
    """One request body as the server recorded it."""

    wire_bytes: int
    images: int
    image_tokens: int
    other_tokens: int

    @classmethod
    def of(cls, request: RecordedRequest, rule: str) -> Sent:
        images = request.images()
        sizes = [Image.open(io.BytesIO(data)).size for _, data in images]
        base64_bytes = sum(4 * math.ceil(len(data) / 3) for _, data in images)
        return cls(
            wire_bytes=len(request.raw),
            images=len(images),
            image_tokens=sum(image_tokens(rule, w, h) for w, h in sizes),
            other_tokens=math.ceil(max(0, len(request.raw) - base64_bytes) / 4),
        )


@dataclass
class StepCost:
    """What one step sent: its main (worker / generation) request, reflection, groundings."""

    main: Sent
    reflection: Sent | None
    grounding: list[Sent] = field(default_factory=list)

    @property
    def all(self) -> list[Sent]:
        return [self.main, *([self.reflection] if self.reflection else []), *self.grounding]

    @property
    def wire_bytes(self) -> int:
        return sum(s.wire_bytes for s in self.all)


class Recorder:
    """Splits the requests the two servers recorded into steps."""

    def __init__(self, main: ScriptedModelServer, ground: ScriptedModelServer, rule: str) -> None:
        self.main, self.ground, self.rule = main, ground, rule
        self._seen = (0, 0)
        self.steps: list[StepCost] = []

    def close_step(self, n: int) -> None:
        main, ground = self.main.requests, self.ground.requests
        new_main, new_ground = main[self._seen[0] :], ground[self._seen[1] :]
        self._seen = (len(main), len(ground))
        expected = 1 if n == 1 else 2  # the reflection from step 2 on, then the action
        if len(new_main) != expected:
            raise RuntimeError(f"step {n}: {len(new_main)} main requests, expected {expected}")
        sent = [Sent.of(r, self.rule) for r in new_main]
        grounding = [Sent.of(r, "qwen") for r in new_ground]
        self.steps.append(StepCost(sent[-1], sent[0] if n > 1 else None, grounding))


def _rule(provider: str) -> str:
    return "anthropic" if provider == "anthropic" else "openai"


# -- the runs ----------------------------------------------------------------------------------


def run_ours(
    provider: str, model: str, screens: Sequence[bytes], policy: ContextPolicy
) -> tuple[list[StepCost], str]:
    steps = len(screens)
    geometry = ScreenGeometry((Monitor(0, 0, WIDTH, HEIGHT, primary=True),))
    with (
        ScriptedModelServer(main_script(steps)) as main,
        ScriptedModelServer(grounding_answer) as ground,
    ):
        url = main.base_url if provider == "anthropic" else main.openai_base_url
        agent = Agent(
            ModelConfig(provider, model, url, "bench-key"),  # type: ignore[arg-type]
            settings=AgentConfig(
                max_steps=steps, reflection=True, retry_attempts=1, context=policy
            ),
            grounding=GroundingConfig(
                "model", url=ground.openai_base_url, model=GROUND_MODEL, api_key="bench-key"
            ),
        )
        recorder = Recorder(main, ground, _rule(provider))
        agent.start(TASK)
        spec = ""
        for n, data in enumerate(screens, start=1):
            image = Image.open(io.BytesIO(data)).convert("RGB")
            step = agent.step(Observation(Screenshot(image), (), geometry), execute=False)
            if step.image is not None:
                spec = f"{step.image.media_type} {step.image.width}x{step.image.height}"
            recorder.close_step(n)
        agent.reset()
    return recorder.steps, spec


def run_s3(
    python: Path, engine: str, model: str, screens: Sequence[bytes], folder: Path
) -> list[StepCost]:
    steps = len(screens)
    with (
        ScriptedModelServer(main_script(steps)) as main,
        ScriptedModelServer(grounding_answer) as ground,
    ):
        env = dict(os.environ, ANTHROPIC_BASE_URL=main.base_url)
        params: dict[str, Any] = {"engine_type": engine, "model": model, "api_key": "bench-key"}
        if engine != "anthropic":
            params["base_url"] = main.openai_base_url
        grounding = {
            "engine_type": "huggingface",
            "model": GROUND_MODEL,
            "base_url": ground.openai_base_url,
            "api_key": "bench-key",
            "grounding_width": WIDTH,
            "grounding_height": HEIGHT,
        }
        recorder = Recorder(main, ground, _rule(engine))
        with S3Process(python, env) as s3:
            s3.ask(
                op="init",
                engine=params,
                grounding=grounding,
                width=WIDTH,
                height=HEIGHT,
                instruction=TASK,
            )
            for n, data in enumerate(screens, start=1):
                path = folder / f"step_{n:03d}.png"
                path.write_bytes(data)
                s3.ask(op="predict", screenshot=str(path))
                recorder.close_step(n)
    return recorder.steps


def run_s3_modelled(provider: str, model: str, screens: Sequence[bytes]) -> list[StepCost]:
    """A MODEL of Agent S3's requests (see the module docstring), sent through our adapters."""
    steps = len(screens)
    platform = Platform("linux", WIDTH, HEIGHT, desktop="gnome")
    worker_system = worker_system_prompt(platform) + f"\n\nYour task: {TASK}"
    reflection_system = reflection_system_prompt(platform) + f"\n\nThe agent's task: {TASK}"
    with (
        ScriptedModelServer(main_script(steps)) as main,
        ScriptedModelServer(grounding_answer) as ground,
    ):
        url = main.base_url if provider == "anthropic" else main.openai_base_url
        talk = _provider(ModelConfig(provider, model, url, "bench-key"))  # type: ignore[arg-type]
        grounder = _provider(
            ProviderSettings("openai_compatible", GROUND_MODEL, ground.openai_base_url, "k")
        )
        recorder = Recorder(main, ground, _rule(provider))
        shown: list[EncodedImage] = []
        replies: list[str] = []
        turns: list[str] = []
        for n, data in enumerate(screens, start=1):
            screen = EncodedImage(data, "image/png", WIDTH, HEIGHT, WIDTH, HEIGHT)  # as given
            shown.append(screen)
            text = ""
            if n > 1:
                texts = ["The initial screen is provided. No action has been taken yet.", *replies]
                text = _ask(talk, _with_images(reflection_system, texts, shown, None))
                text = f"REFLECTION: {text}\n"
            turns.append(text + "Current Text Buffer = []")
            replies.append(_ask(talk, _with_images(worker_system, turns, shown, replies)))
            if "element_description=" in replies[-1]:  # validated by grounding, then grounded
                query = Message("user", (screen.to_part(), TextPart("Query: the element")))
                for _ in range(2):
                    _ask(grounder, (query,))
            recorder.close_step(n)
    return recorder.steps


def _provider(settings: ProviderSettings) -> Provider:
    return build_provider(settings)


def _ask(provider: Provider, messages: Sequence[Message]) -> str:
    return provider.complete(ModelRequest(tuple(messages), max_output_tokens=1024)).text


def _with_images(
    system: str,
    texts: Sequence[str],
    screens: Sequence[EncodedImage],
    replies: Sequence[str] | None,
) -> tuple[Message, ...]:
    """One user turn per step (text and, for the newest 8, its screenshot), replies between."""
    first_image = max(0, len(screens) - S3_IMAGES)
    messages = [Message.text("system", system)]
    for i, text in enumerate(texts):
        parts: tuple[TextPart | ImagePart, ...] = (TextPart(text),)
        if i >= first_image:
            parts += (screens[i].to_part(),)
        messages.append(Message("user", parts))
        if replies is not None and i < len(replies):
            messages.append(Message.text("assistant", replies[i]))
    return tuple(messages)


# -- the report --------------------------------------------------------------------------------


def _cells(cost: StepCost) -> str:
    refl = f"{cost.reflection.wire_bytes / 1024:6.0f}" if cost.reflection else f"{'-':>6}"
    ground = sum(s.wire_bytes for s in cost.grounding) / 1024
    images = sum(s.images for s in cost.all)
    img_tok = sum(s.image_tokens for s in cost.all)
    other = sum(s.other_tokens for s in cost.all)
    return (
        f"{cost.main.wire_bytes / 1024:6.0f} {refl} {ground:6.0f} {cost.wire_bytes / 1024:7.0f}"
        f" {images:4d} {img_tok:7d} {other:6d}"
    )


def table(label: str, ours: list[StepCost], s3: list[StepCost], s3_label: str) -> list[str]:
    head = (
        f"{'main':>6} {'refl':>6} {'ground':>6} {'total':>7} {'imgs':>4} {'img tok':>7} {'text':>6}"
    )
    rows = [
        label,
        f"{'':5} | {'ours (KiB, tokens)':^46} | {s3_label + ' (KiB, tokens)':^46} | "
        f"{'S3/ours':^17}",
        f"{'step':>5} | {head} | {head} | {'main':>7} {'step':>9}",
    ]
    for n in (n for n in REPORT_STEPS if n <= len(ours)):
        o, s = ours[n - 1], s3[n - 1]
        ratio_main = s.main.wire_bytes / o.main.wire_bytes
        ratio_step = s.wire_bytes / o.wire_bytes
        rows.append(f"{n:5d} | {_cells(o)} | {_cells(s)} | {ratio_main:6.1f}x {ratio_step:8.1f}x")
    totals = []
    for run in (ours, s3):
        sent = [x for cost in run for x in cost.all]
        totals.append(
            (
                sum(x.wire_bytes for x in sent),
                sum(x.image_tokens + x.other_tokens for x in sent),
                len(sent),
            )
        )
    (ob, ot, on), (sb, st, sn) = totals
    rows.append(
        f"  whole run: ours {ob / 2**20:.1f} MiB, {ot:,} tokens, {on} requests; {s3_label} "
        f"{sb / 2**20:.1f} MiB, {st:,} tokens, {sn} requests ({sb / ob:.1f}x the bytes, "
        f"{st / ot:.1f}x the tokens)"
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50, help="steps in the session")
    parser.add_argument("--modelled", action="store_true", help="model S3 even if installed")
    parser.add_argument("--keep-images", type=int, default=ContextPolicy().keep_images)
    args = parser.parse_args()
    policy = ContextPolicy(keep_images=args.keep_images)
    start = time.perf_counter()
    screens = [png(screenshot(n)) for n in range(1, args.steps + 1)]
    python = None if args.modelled else s3_python()
    if python is None and not args.modelled:
        print(f"Agent S3 is not installed in .venv-s3; to measure its real requests: {INSTALL}")
    s3_label = "Agent S3 0.3.2" if python else "S3 MODELLED"
    print(
        f"{args.steps}-step scripted session, {WIDTH}x{HEIGHT} screenshots (PNG "
        f"{sum(map(len, screens)) / len(screens) / 1024:.0f} KiB each); grounding model "
        f"{GROUND_MODEL}; reflection on in both; ours keeps {policy.keep_images} screenshots. "
        "KiB: request bodies on the wire as the scripted servers recorded them (main = "
        "worker / generation request, refl = reflection, ground = grounding requests of the "
        "step, total = all of the step's); tokens estimated (images by the vendor's rule, "
        "the rest at 4 bytes a token)."
    )
    if python is None:
        print("S3 MODELLED: Agent S3's policy as published, not its own code (see --help).")
    s3_runs: dict[str, list[StepCost]] = {}
    with tempfile.TemporaryDirectory() as temp:
        for label, provider, model, engine in ADAPTERS:
            ours, spec = run_ours(provider, model, screens, policy)
            if python is not None:
                if engine not in s3_runs:
                    s3_runs[engine] = run_s3(python, engine, model, screens, Path(temp))
                s3 = s3_runs[engine]
            else:
                s3 = run_s3_modelled(provider, model, screens)
            print()
            print("\n".join(table(f"{label} ({model}; ours sends {spec})", ours, s3, s3_label)))
    print(f"\ndone in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
