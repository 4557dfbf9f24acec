"""Request size per step over a 50-step session: our context policy next to Agent S3's.

A scripted session (synthetic 1920x1080 screenshots whose content changes every step, scripted
model replies) runs through the context builder. Each step makes a reflection request (from
step 2) and a worker request; both go through the real adapters (OpenAI Chat Completions,
OpenAI Responses, Anthropic Messages, each with its default profile's image encoding) to the
scripted model server, and the request bodies it records are measured: wire bytes (JSON with
base64 images), images sent, and tokens estimated by each vendor's published rule (images) and
at 4 characters a token (text).

The same session is then replayed with Agent S3's history policy, modelled from its published
behaviour: every step's screenshot sent as a full-resolution PNG, the newest 8 kept in both its
generation and its reflection conversations, all text kept. Both sides use our system prompts,
so the difference is the history policy and the image encoding alone.

Run: ``.venv/bin/python scripts/bench_context.py [--steps 50] [--keep-images 3]``.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

from agent_s.context import (
    ContextPolicy,
    Grounding,
    Outcome,
    StepRecord,
    build_messages,
    build_reflection_messages,
    measure,
)
from agent_s.desktop.ops import Point
from agent_s.images import EncodedImage, ImageSpec, encode_screenshot
from agent_s.models.endpoints import ProviderSettings
from agent_s.models.factory import build_adapter
from agent_s.models.profiles import ApiKind, ModelProfile, ProfileRegistry
from agent_s.models.types import ImagePart, Message, ModelRequest, Provider, TextPart
from agent_s.prompting import Platform, reflection_system_prompt, worker_system_prompt
from agent_s.testing.scripted_replies import Step, reply
from agent_s.testing.scripted_server import ScriptedModelServer

WIDTH, HEIGHT = 1920, 1080
TASK = "Copy the invoice total from invoice.pdf into cell B7 of budget.ods and save the file."
PLATFORM = Platform("linux", WIDTH, HEIGHT, desktop="gnome")
ADAPTERS: tuple[tuple[str, ApiKind, str], ...] = (
    ("OpenAI Chat Completions", "openai_chat", "gpt-4.1"),
    ("OpenAI Responses", "openai_responses", "gpt-4.1"),
    ("Anthropic Messages", "anthropic", "claude-sonnet-4-5"),
)
S3_IMAGES = 8
S3_SPEC = ImageSpec(format="png")  # S3 sends the screenshot as it was captured
REPORT_STEPS = (1, 10, 25, 50)

# -- the scripted session ----------------------------------------------------------------------

_ACTIONS = (
    ('agent.open(app_or_filename="invoice.pdf")', "The desktop shows no window yet.", None),
    (
        'agent.scroll(element_description="the invoice page in the document viewer", clicks=-5)',
        "The invoice is open at the top of page one; the totals are further down.",
        "the invoice page",
    ),
    (
        'agent.save_to_knowledge(text=["invoice total: 1,284.50 EUR"])',
        "The total line reads 1,284.50 EUR at the bottom right of the table.",
        None,
    ),
    (
        'agent.switch_applications(app_code="libreoffice-calc")',
        "I have the total in my notes; the spreadsheet must come to the front.",
        None,
    ),
    (
        'agent.click(element_description="cell B7 in the Budget sheet")',
        "The spreadsheet is in front with the Budget sheet selected; B7 is empty.",
        "cell B7",
    ),
    (
        'agent.type(text="1284.50", enter=True)',
        "Cell B7 is selected, as the Name Box shows, so I type the amount.",
        None,
    ),
    (
        'agent.hotkey(keys=["ctrl", "s"])',
        "B7 now shows 1,284.50. Saving keeps the file in its own format.",
        None,
    ),
    (
        'agent.click(element_description="the Use ODF Format! button in the Keep format dialog")',
        "A dialog asks which format to keep; the file must stay .ods.",
        "the Use ODF Format! button",
    ),
)


@dataclass(frozen=True)
class ScriptedStep:
    reply: str
    action: str
    outcome: Outcome
    grounding: tuple[Grounding, ...]
    note: str | None


def session(steps: int) -> list[ScriptedStep]:
    """The replies and outcomes of the run: the task's actions, with some detours and failures."""
    rng = random.Random(7)  # noqa: S311 - synthetic data
    script = []
    for n in range(1, steps + 1):
        action, why, target = _ACTIONS[(n - 1) % len(_ACTIONS)]
        detail = " ".join(
            rng.sample(
                [
                    "The toolbar and the menu bar are unchanged since the last step.",
                    "The status bar shows the sheet is modified but not saved.",
                    "No dialog is open, so keyboard input goes to the focused window.",
                    "The previous action had the effect I expected.",
                    "The document viewer still shows page one of two.",
                    "The formula bar confirms the value in the selected cell.",
                    "Nothing on the screen asks for anything outside the task.",
                ],
                3,
            )
        )
        outcome = Outcome.success()
        if n % 9 == 0:
            outcome = Outcome.failure("the element was found but the click changed nothing")
        if n == 30:
            why, target = "Before finishing I want the saved file itself checked.", None
            action = 'agent.call_code_agent(task="check that budget.ods has 1284.5 in Budget.B7")'
            outcome = Outcome.success(
                "The code agent read budget.ods with Python's zipfile and xml modules: sheet "
                "Budget, cell B7 holds 1284.5 (float), the file was saved 40 s ago. DONE."
            )
        text = f"{why} {detail} Next I act on it.\n```python\n{action}\n```"
        grounding = ()
        if target:
            point = Point(300 + rng.randrange(1200), 150 + rng.randrange(800))
            grounding = (Grounding(target, "ui-tars-1.5-7b", point),)
        saves = action.startswith("agent.save_to_knowledge")
        note = "invoice total: 1,284.50 EUR" if saves else None
        script.append(ScriptedStep(text, action, outcome, grounding, note))
    return script


def reflection_reply(n: int) -> str:
    verdict = "OFF TRACK" if n % 9 == 1 and n > 1 else "ON TRACK"
    return (
        f"{verdict}\nStep {n - 1} did what the agent intended: the screen changed as expected. "
        "Keep going with the spreadsheet, and check the saved format before finishing."
    )


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
    # Document viewer: the invoice, scrolled a little further each step.
    draw.rectangle((40, 60, 900, 1040), fill=(245, 245, 245), outline=(90, 90, 90))
    draw.rectangle((40, 60, 900, 92), fill=(220, 220, 220))
    draw.text((56, 68), "invoice.pdf - Document Viewer", font=font, fill="black")
    for row in range(40):
        y = 110 + row * 23
        amount = rng.randrange(10, 999)
        line = f"{(row + n) % 97:3d}  Item {row + n} description text here   {amount}.00 EUR"
        draw.text((70, y), line, font=small, fill=(30, 30, 30))
    # A photo in the document (noise compresses like a real picture).
    noise = Image.effect_noise((260, 160), 60).convert("RGB")
    image.paste(noise, (600, 140 + (n % 5) * 10))
    # Spreadsheet window with a grid of numbers.
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


# -- the two history policies ------------------------------------------------------------------


@dataclass
class Sample:
    """One request as recorded by the server, and our estimate of its tokens."""

    wire_bytes: int
    images: int
    image_tokens: int
    text_tokens: int


def image_tokens(api: ApiKind, width: int, height: int) -> int:
    """Input tokens for one image by the vendor's published rule (after its own resizing)."""
    if api == "anthropic":  # resized to <= 1568 px and ~1.15 MP, then width * height / 750
        scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)))
        return math.ceil(width * scale * (height * scale) / 750)
    # OpenAI, detail high: fit in 2048x2048, then the short side to 768; 85 + 170 per 512 tile
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def estimate(api: ApiKind, messages: Sequence[Message], wire_bytes: int) -> Sample:
    images = [p for m in messages for p in m.parts if isinstance(p, ImagePart)]
    return Sample(
        wire_bytes=wire_bytes,
        images=len(images),
        image_tokens=sum(image_tokens(api, p.width, p.height) for p in images),
        text_tokens=math.ceil(measure(messages).text_chars / 4),
    )


def s3_generation(
    system: str, step_texts: Sequence[str], screens: Sequence[EncodedImage], replies: Sequence[str]
) -> tuple[Message, ...]:
    """S3's generation conversation at the current step: every turn, the newest 8 images."""
    messages = [Message.text("system", system)]
    first_image = max(0, len(screens) - S3_IMAGES)
    for i, (text, screen) in enumerate(zip(step_texts, screens, strict=True)):
        parts: tuple[TextPart | ImagePart, ...] = (TextPart(text),)
        if i >= first_image:
            parts += (screen.to_part(),)
        messages.append(Message("user", parts))
        if i < len(replies):
            messages.append(Message.text("assistant", replies[i]))
    return tuple(messages)


def s3_reflection(
    system: str, replies: Sequence[str], screens: Sequence[EncodedImage]
) -> tuple[Message, ...]:
    """S3's reflection conversation: the first screen, then each reply with the next screen."""
    first_image = max(0, len(screens) - S3_IMAGES)
    texts = ["The first screen; no action has been taken yet.", *replies]
    messages = [Message.text("system", system)]
    for i, (text, screen) in enumerate(zip(texts, screens, strict=True)):
        parts: tuple[TextPart | ImagePart, ...] = (TextPart(text),)
        if i >= first_image:
            parts += (screen.to_part(),)
        messages.append(Message("user", parts))
    return tuple(messages)


# -- running -----------------------------------------------------------------------------------


@dataclass
class Run:
    worker: list[Sample]
    reflection: list[Sample | None]
    encode_seconds: float


def _send(
    server: ScriptedModelServer, provider: Provider, api: ApiKind, messages: tuple[Message, ...]
) -> tuple[str, Sample]:
    before = len(server.requests)
    text = provider.complete(ModelRequest(messages, max_output_tokens=1024)).text
    recorded = server.requests[before:]
    if len(recorded) != 1:
        raise RuntimeError(f"expected one request on the wire, saw {len(recorded)}")
    return text, estimate(api, messages, len(recorded[0].raw))


def image_spec(api: ApiKind, model: str) -> ImageSpec:
    """The encoding the model's profile asks for."""
    return ProfileRegistry().resolve(model, api).image_spec


def _provider(api: ApiKind, model: str, server: ScriptedModelServer) -> Provider:
    profile: ModelProfile = ProfileRegistry().resolve(model, api)
    url = server.base_url if api == "anthropic" else server.openai_base_url
    settings = ProviderSettings(api, model, base_url=url, api_key="bench-key", timeout_s=60)
    return build_adapter(settings, profile)


def _script(steps: int) -> list[Step]:
    script = session(steps)
    out: list[Step] = []
    for n in range(1, steps + 1):
        if n > 1:
            out.append(reply(reflection_reply(n)))
        out.append(reply(script[n - 1].reply))
    return out


def run_ours(
    api: ApiKind, model: str, steps: int, policy: ContextPolicy, shots: Callable[[int], Image.Image]
) -> Run:
    script = session(steps)
    worker_system = worker_system_prompt(PLATFORM)
    reflection_system = reflection_system_prompt(PLATFORM)
    run = Run([], [], 0.0)
    with ScriptedModelServer(_script(steps)) as server:
        provider, spec = _provider(api, model, server), image_spec(api, model)
        records: list[StepRecord] = []
        notes: list[str] = []
        for n in range(1, steps + 1):
            screen = encode_screenshot(shots(n), spec)  # once per step, reused as history
            run.encode_seconds += screen.encode_seconds
            reflection = None
            if records:
                messages = build_reflection_messages(
                    reflection_system, TASK, records, screen, policy=policy
                )
                reflection, sample = _send(server, provider, api, messages)
                run.reflection.append(sample)
            else:
                run.reflection.append(None)
            messages = build_messages(
                worker_system,
                TASK,
                records,
                screen,
                notes,
                policy=policy,
                reflection=reflection,
                max_steps=steps,
            )
            text, sample = _send(server, provider, api, messages)
            run.worker.append(sample)
            done = script[n - 1]
            records.append(StepRecord(n, screen, text, done.action, done.outcome, done.grounding))
            if done.note:
                notes.append(done.note)
    return run


def run_s3(api: ApiKind, model: str, steps: int, shots: Callable[[int], Image.Image]) -> Run:
    script = session(steps)
    worker_system = worker_system_prompt(PLATFORM) + f"\n\nYour task: {TASK}"
    reflection_system = reflection_system_prompt(PLATFORM) + f"\n\nThe agent's task: {TASK}"
    run = Run([], [], 0.0)
    with ScriptedModelServer(_script(steps)) as server:
        provider = _provider(api, model, server)
        screens: list[EncodedImage] = []
        replies: list[str] = []
        step_texts: list[str] = []
        notes: list[str] = []
        for n in range(1, steps + 1):
            screen = encode_screenshot(shots(n), S3_SPEC)
            run.encode_seconds += screen.encode_seconds
            screens.append(screen)
            reflection = ""
            if n > 1:
                messages = s3_reflection(reflection_system, replies, screens)
                reflection, sample = _send(server, provider, api, messages)
                run.reflection.append(sample)
            else:
                run.reflection.append(None)
            text = f"Reflection on the last step:\n{reflection}\n" if reflection else ""
            text += f"Notes: [{', '.join(notes)}]"
            done = script[n - 1]
            if n > 1 and script[n - 2].action.startswith("agent.call_code_agent"):
                text += f"\nCode agent result: {script[n - 2].outcome.detail}"
            step_texts.append(text)
            messages = s3_generation(worker_system, step_texts, screens, replies)
            answer, sample = _send(server, provider, api, messages)
            run.worker.append(sample)
            replies.append(answer)
            if done.note:
                notes.append(done.note)
    return run


def _kb(n: int) -> str:
    return f"{n / 1024:8.0f}"


def table(name: str, ours: Run, s3: Run, steps: int) -> list[str]:
    rows = [
        f"{name}",
        f"{'step':>5} | {'ours: worker KiB':>16} {'+refl KiB':>9} {'imgs':>4} {'img tok':>7} "
        f"{'text tok':>8} | {'S3: gen KiB':>11} {'+refl KiB':>9} {'imgs':>4} {'img tok':>7} "
        f"{'text tok':>8} | {'S3/ours bytes':>13}",
    ]
    shown = [n for n in REPORT_STEPS if n <= steps]
    totals: list[tuple[int, int, int, int]] = []
    for run in (ours, s3):
        wire = sum(s.wire_bytes for s in run.worker) + sum(
            s.wire_bytes for s in run.reflection if s
        )
        samples = run.worker + [s for s in run.reflection if s]
        totals.append(
            (
                wire,
                sum(s.image_tokens for s in samples),
                sum(s.text_tokens for s in samples),
                sum(s.images for s in samples),
            )
        )
    for n in shown:
        cells = []
        byte_sum = []
        for run in (ours, s3):
            w, r = run.worker[n - 1], run.reflection[n - 1]
            images = w.images + (r.images if r else 0)
            img_tok = w.image_tokens + (r.image_tokens if r else 0)
            txt_tok = w.text_tokens + (r.text_tokens if r else 0)
            refl = _kb(r.wire_bytes) if r else f"{'-':>8}"
            width = 16 if run is ours else 11
            cells.append(
                f"{w.wire_bytes / 1024:{width}.0f} {refl:>9} {images:4d} {img_tok:7d} {txt_tok:8d}"
            )
            byte_sum.append(w.wire_bytes + (r.wire_bytes if r else 0))
        rows.append(f"{n:5d} | {cells[0]} | {cells[1]} | {byte_sum[1] / byte_sum[0]:12.1f}x")
    (ow, oi, ot, oim), (sw, si, st, sim) = totals
    rows.append(
        f"  run total, ours: {ow / 2**20:6.1f} MiB, {oim:4d} images, {oi:9,d} image + "
        f"{ot:7,d} text tokens"
    )
    rows.append(
        f"  run total, S3:   {sw / 2**20:6.1f} MiB, {sim:4d} images, {si:9,d} image + "
        f"{st:7,d} text tokens  ({sw / ow:.1f}x the bytes, {(si + st) / (oi + ot):.1f}x the tokens)"
    )
    rows.append(
        f"  encoding time over the run: ours {ours.encode_seconds:.1f} s, "
        f"S3 {s3.encode_seconds:.1f} s"
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50, help="steps in the session")
    parser.add_argument("--keep-images", type=int, default=ContextPolicy().keep_images)
    parser.add_argument("--history-steps", type=int, default=ContextPolicy().history_steps)
    args = parser.parse_args()
    policy = ContextPolicy(keep_images=args.keep_images, history_steps=args.history_steps)
    cache: dict[int, Image.Image] = {}

    def shots(n: int) -> Image.Image:
        if n not in cache:
            cache[n] = screenshot(n)
        return cache[n]

    start = time.perf_counter()
    sample = encode_screenshot(shots(1), S3_SPEC)
    print(
        f"{args.steps}-step scripted session, {WIDTH}x{HEIGHT} screenshots "
        f"(full-resolution PNG {sample.nbytes / 1024:.0f} KiB); ours: keep_images="
        f"{policy.keep_images}, history_steps={policy.history_steps}; S3: {S3_IMAGES} PNG "
        "screenshots in generation and in reflection, all text kept."
    )
    print(
        "KiB = request body on the wire (JSON, base64 images) as the scripted server recorded "
        "it; tokens estimated: images by the vendor's rule, text at 4 characters a token; "
        "each row is one step: worker/generation request plus reflection request.\n"
    )
    for name, api, model in ADAPTERS:
        ours = run_ours(api, model, args.steps, policy, shots)
        s3 = run_s3(api, model, args.steps, shots)
        spec = image_spec(api, model)
        label = (
            f"{name} ({model}; ours sends {spec.format} q{spec.quality} at "
            f"{'x'.join(map(str, spec.fit(WIDTH, HEIGHT)))})"
        )
        print("\n".join(table(label, ours, s3, args.steps)))
        print()
    print(f"done in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
