"""The battery: a bounded number of calls to one model endpoint, each asking what a run would
ask, on the shipped screens (``agent_s.modelcheck.screens``), with no desktop.

1. reach: a text-only question (does the endpoint answer at all);
2. see: the editor screen, asking for the word typed in it (does it take an image, does it
   read what only the image holds);
3. act: each screen with a task, under the worker's own system prompt; the reply is read by
   ``agent_s.actions.parse_reply`` (style and action); an unusable reply gets the worker's
   invalid-reply feedback once, as a run does;
4. native: each screen, the worker prompt for ``--ground native``, asked to click a control of
   known box: the point written in its target is kept for the convention fit;
5. ground: controls of known box, each asked with the grounding query ``ModelGrounder`` sends;
6. code: the code agent's prompt and a small task (one runnable block expected);
7. judge: the verifier's prompt on a screen, once with evidence that is there, once not.

Each call is timed, to its first token where the reply streams (the Chat Completions
adapter streams when asked; the others answer whole) and to its end, with its tokens and cost
at the profile's prices, on a meter that ``--max-cost`` bounds. An endpoint that refuses to
stream is asked again without (the first question only). An endpoint that does not answer,
refuses the key or runs out of budget ends the battery early; an image refused ends the
image probes. The bound on calls is ``plan().calls``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agent_s.actions import ActionParseError, literal_point, parse_reply
from agent_s.coding.agent import parse_code_reply
from agent_s.conventions import PointConvention, point_convention
from agent_s.grounding.model import ModelGrounder
from agent_s.grounding.replies import ReplySaysNotFound, parse_location
from agent_s.grounding.types import GroundingReplyError
from agent_s.images import EncodedImage, ImageSpec, encode_screenshot
from agent_s.modelcheck.fit import Answer
from agent_s.modelcheck.screens import Screen, screens
from agent_s.models.errors import (
    AuthenticationError,
    BadRequest,
    BudgetExceeded,
    ModelError,
    ProviderUnavailable,
    Timeout,
)
from agent_s.models.profiles import ModelProfile
from agent_s.models.types import Message, ModelRequest, Provider, TextPart
from agent_s.planning.manager import read_verdict
from agent_s.prompting import (
    Platform,
    code_agent_system_prompt,
    load_template,
    render,
    worker_system_prompt,
)

# the task each screen is shown with for "can it act"
TASKS = {
    "galculator-1280x800": "compute 7+8 on the calculator",
    "galculator-800x600": "compute 9-3 on the calculator",
    "mousepad-1024x768": "save the document in the text editor",
    "form-1280x800": "fill in the sign-up form with the name Ada",
}
GROUND_PER_SCREEN = 2  # controls asked of the grounding model on each screen
CODE_TASK = "write the number of lines of notes.txt, in the working folder, into count.txt"
# (screen, evidence, whether it is there) for the verifier's two questions
JUDGE_CASES = (
    ("galculator-800x600", "the calculator's display shows 0", True),
    ("mousepad-1024x768", "the text editor holds the word BANANA", False),
)
OUTPUT_TOKENS = {"reach": 16, "see": 32, "act": 400, "native": 400, "ground": 128}
OUTPUT_TOKENS.update({"code": 600, "judge": 120})
_TEXT_TOKENS = {"reach": 20, "see": 60, "act": 2500, "native": 2500, "ground": 120}
_TEXT_TOKENS.update({"code": 1500, "judge": 300})


class _Stop(Exception):
    """The battery cannot go on (no answer, no key, no budget); ``str()`` says why."""


@dataclass(frozen=True)
class Call:
    """One call of the battery: which probe, how long the whole reply took (and its first
    token, when it streamed), its tokens and cost (at the profile's prices), and the error if
    it failed."""

    probe: str
    seconds: float
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    error: str = ""
    first_token_s: float | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "probe": self.probe,
            "seconds": round(self.seconds, 3),
            "first_token_s": None if self.first_token_s is None else round(self.first_token_s, 3),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 6),
            "error": self.error,
        }


@dataclass(frozen=True)
class ActReply:
    """One "can it act" task: whether a reply was one of our actions (``parsed``), its style,
    whether it took the invalid-reply feedback, the action, or the last parse error."""

    screen: str
    task: str
    parsed: bool
    style: str | None = None
    feedback: bool = False
    action: str = ""
    error: str = ""
    points: bool = False  # the action's target is a point the model wrote, not a description

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Plan:
    """What the battery will ask: the number of calls at most, per probe, and the cost at most
    (None: the profile has no prices)."""

    calls: int
    per_probe: dict[str, int]
    max_cost_usd: float | None


@dataclass
class Results:
    """What the battery found (``agent_s.modelcheck.verdict`` judges it)."""

    model: str
    calls: list[Call] = field(default_factory=list)
    reached: bool = False
    accepts_images: bool | None = None  # None: not asked
    reads_image: bool | None = None
    seen: str = ""  # what it read
    acts: list[ActReply] = field(default_factory=list)
    native: list[Answer] = field(default_factory=list)
    ground: list[Answer] = field(default_factory=list)
    code: ActReply | None = None
    judged: list[bool | None] = field(default_factory=list)  # None: no verdict read
    stopped: str = ""  # why the battery ended early ("" if it did not)
    streamed: bool = False  # the replies were asked to stream (their first token timed)
    grounding_default: PointConvention = field(default_factory=PointConvention)
    native_default: PointConvention = field(default_factory=PointConvention)


class Battery:
    """The battery for ``provider`` (its ``profile`` gives the image size and the prices).
    ``progress`` gets a line per probe done."""

    def __init__(
        self,
        provider: Provider,
        profile: ModelProfile,
        *,
        progress: Callable[[str], None] = lambda line: None,
        platform: Platform | None = None,
    ) -> None:
        self.provider, self.profile, self.progress = provider, profile, progress
        self.platform = platform or Platform("linux", 1280, 800, "openbox")
        self.screens = screens()
        # asked as run asks it: in the profile's convention if one was saved, else the family's
        saved = point_convention(profile.point_convention)
        self.grounder = ModelGrounder(provider, convention=saved)
        self._failures = 0
        self._last_error: ModelError | None = None
        self.stream = True  # asked to stream, to time the first token (where the API can)

    # -- the bound ---------------------------------------------------------------------------

    def plan(self) -> Plan:
        acts = sum(1 for s in self.screens if s.name in TASKS)
        per_probe = {
            "reach": 2,  # again without streaming, if the endpoint refuses to stream
            "see": 1,
            "act": 2 * acts,
            "native": len(self.screens),
            "ground": sum(min(GROUND_PER_SCREEN, len(s.controls)) for s in self.screens),
            "code": 2,
            "judge": len(JUDGE_CASES),
        }
        return Plan(sum(per_probe.values()), per_probe, self._max_cost(per_probe))

    def _max_cost(self, per_probe: dict[str, int]) -> float | None:
        if not self.profile.prices_known:
            return None
        width, height = max((s.size for s in self.screens), key=lambda size: size[0] * size[1])
        sent = self.profile.image_spec.fit(width, height)
        image = self.profile.estimate_image_tokens(*sent)
        total = 0.0
        for probe, count in per_probe.items():
            with_image = probe not in ("reach", "code")
            tokens = _TEXT_TOKENS[probe] + (image if with_image else 0)
            # a retried act sends the image and the first reply again
            total += count * self.profile.cost_usd(
                input_tokens=tokens + OUTPUT_TOKENS[probe], output_tokens=OUTPUT_TOKENS[probe]
            )
        return total

    # -- the run -----------------------------------------------------------------------------

    def run(self) -> Results:
        results = Results(
            self.provider.model,
            grounding_default=self.grounder.spec,
            native_default=PointConvention.parse(self.profile.point_convention or "pixels"),
        )
        self._results = results
        try:
            self._reach(results)
            self._code(results)
            if self._see(results):
                self._act(results)
                self._native(results)
                self._ground(results)
                self._judge(results)
        except _Stop as stop:
            results.stopped = str(stop)
            self.progress(f"stopped: {stop}")
        return results

    def _ask(
        self, probe: str, messages: Sequence[Message], *, purpose: str = "model_check"
    ) -> str | None:
        """One call; its reply's text, or None (the error recorded) when it failed."""
        request = ModelRequest(
            tuple(messages),
            max_output_tokens=OUTPUT_TOKENS[probe],
            temperature=0.0,
            metadata={"purpose": purpose},
            stream=self.stream,
        )
        start = time.perf_counter()
        try:
            reply = self.provider.complete(request)
        except BudgetExceeded as err:
            self._note(probe, start, f"budget: {err}")
            raise _Stop(f"the cost limit was reached ({err})") from err
        except ModelError as err:
            self._note(probe, start, f"{type(err).__name__}: {err}")
            self._failures += 1
            self._last_error = err
            if isinstance(err, AuthenticationError):
                raise _Stop(f"the endpoint refused the key: {err}") from err
            if isinstance(err, (Timeout, ProviderUnavailable)) and (
                self._failures >= 2 or not self._results.reached
            ):
                raise _Stop(f"the endpoint does not answer: {err}") from err
            if isinstance(err, BadRequest) and probe == "see":
                raise  # an image refused: _see says so, and the image probes are skipped
            return None
        self._failures = 0
        usage = reply.usage
        self._results.calls.append(
            Call(
                probe,
                time.perf_counter() - start,
                usage.input_tokens,
                usage.output_tokens,
                usage.cost_usd,
                first_token_s=reply.first_token_s,
            )
        )
        return reply.text

    def _note(self, probe: str, start: float, error: str) -> None:
        self._results.calls.append(Call(probe, time.perf_counter() - start, error=error[:300]))

    def _sent(self, screen: Screen, spec: ImageSpec | None = None) -> EncodedImage:
        return encode_screenshot(screen.image(), spec or self.profile.image_spec)

    # -- the probes --------------------------------------------------------------------------

    def _reach(self, results: Results) -> None:
        question = [Message.text("user", render("model_check", "reach"))]
        text = self._ask("reach", question)
        if text is None and isinstance(self._last_error, BadRequest) and self.stream:
            self.stream = False  # an endpoint that does not stream: the whole reply is timed
            text = self._ask("reach", question)
        results.streamed = self.stream
        if text is None:
            error = results.calls[-1].error if results.calls else "no answer"
            raise _Stop(f"the endpoint gave no answer to a text question: {error}")
        results.reached = True
        self.progress(f"reach: answered in {results.calls[-1].seconds:.1f} s")

    def _see(self, results: Results) -> bool:
        screen = next(s for s in self.screens if s.word)
        sent = self._sent(screen)
        question = Message("user", (sent.to_part(), TextPart(render("model_check", "see"))))
        try:
            text = self._ask("see", [question])
        except BadRequest as err:
            results.accepts_images = False
            self.progress(f"see: the endpoint refused an image ({err})")
            return False
        results.accepts_images = text is not None
        results.seen = (text or "").strip()[:80]
        results.reads_image = text is not None and screen.word.lower() in text.lower()
        said = "read" if results.reads_image else f"did not read (answered {results.seen!r})"
        self.progress(f"see: {said} the word only the image holds")
        return text is not None

    def _act(self, results: Results) -> None:
        system = Message.text("system", worker_system_prompt(self.platform, style="labels"))
        for screen in self.screens:
            task = TASKS.get(screen.name)
            if task is None:
                continue
            results.acts.append(self._act_on(system, screen, task))
        done = sum(a.parsed for a in results.acts)
        self.progress(f"act: {done} of {len(results.acts)} replies are actions")

    def _worker_turn(self, screen: Screen, task: str, sent: EncodedImage) -> Message:
        template = load_template("worker")
        return Message(
            "user",
            (
                TextPart(template.render("task", task=task)),
                TextPart(template.render("screen", step=1)),
                sent.to_part(),
                TextPart(template.render("next", step=1)),
            ),
        )

    def _act_on(self, system: Message, screen: Screen, task: str) -> ActReply:
        messages = [system, self._worker_turn(screen, task, self._sent(screen))]
        error = ""
        for attempt in range(2):
            text = self._ask("act", messages, purpose="generate")
            if text is None:
                return ActReply(screen.name, task, False, error="the call failed")
            try:
                parsed = parse_reply(text)
            except ActionParseError as err:
                error = str(err)
                feedback = render("worker", "invalid_reply", error=error)
                messages += [Message.text("assistant", text), Message.text("user", feedback)]
                continue
            action = parsed.action.model_dump_json(exclude_defaults=True)[:200]
            points = any(literal_point(t.text) for t in parsed.action.targets())
            return ActReply(screen.name, task, True, parsed.style, attempt > 0, action, "", points)
        return ActReply(screen.name, task, False, feedback=True, error=error[:300])

    def _native(self, results: Results) -> None:
        for screen in self.screens:
            control = screen.controls[0]
            sent = self._sent(screen)
            system = worker_system_prompt(self.platform, native_image=(sent.width, sent.height))
            turn = self._worker_turn(screen, f"click {control.target}", sent)
            text = self._ask("native", [Message.text("system", system), turn], purpose="generate")
            results.native.append(self._answer(screen, control.target, sent, text, native=True))
        self._said("native", results.native)

    def _ground(self, results: Results) -> None:
        for screen in self.screens:
            sent = self._sent(screen, self.grounder.image_spec)
            for control in screen.controls[:GROUND_PER_SCREEN]:
                prompt = self.grounder.prompt(control.target, sent)
                question = Message("user", (sent.to_part(), TextPart(prompt)))
                text = self._ask("ground", [question], purpose="grounding")
                results.ground.append(self._answer(screen, control.target, sent, text))
        self._said("ground", results.ground)

    def _said(self, probe: str, answers: Sequence[Answer]) -> None:
        read = sum(a.location is not None for a in answers)
        self.progress(f"{probe}: {read} of {len(answers)} answers hold a point")

    def _answer(
        self,
        screen: Screen,
        target: str,
        sent: EncodedImage,
        text: str | None,
        native: bool = False,
    ) -> Answer:
        control = next(c for c in screen.controls if c.target == target)
        sizes = (screen.size, (sent.width, sent.height))
        if text is None:
            return Answer(screen.name, target, control.box, *sizes, None, "the call failed")
        where = text
        if native:  # the point is in the action's target, as --ground native reads it
            try:
                targets = parse_reply(text).action.targets()
                where = targets[0].text if targets else ""
            except ActionParseError as err:
                return Answer(screen.name, target, control.box, *sizes, None, str(err)[:200])
        try:
            location = parse_location(where)
        except (GroundingReplyError, ReplySaysNotFound) as err:
            return Answer(screen.name, target, control.box, *sizes, None, str(err)[:200])
        return Answer(screen.name, target, control.box, *sizes, location)

    def _code(self, results: Results) -> None:
        template = load_template("code_agent")
        system = code_agent_system_prompt(self.platform, max_steps=10, timeout_seconds=30)
        opening = "\n".join(
            [
                template.render("task", task=CODE_TASK),
                template.render("workdir", workdir="~/work"),
            ]
        )
        messages = [Message.text("system", system), Message.text("user", opening)]
        for attempt in range(2):
            text = self._ask("code", messages, purpose="code")
            if text is None:
                results.code = ActReply("", CODE_TASK, False, error="the call failed")
                break
            reply = parse_code_reply(text)
            if reply.kind == "block":
                style = reply.language or "code"
                results.code = ActReply("", CODE_TASK, True, style, attempt > 0, reply.code[:200])
                break
            results.code = ActReply("", CODE_TASK, False, feedback=attempt > 0, error=reply.error)
            feedback = template.render("invalid_reply", step=1, error=reply.error, remaining=9)
            messages += [Message.text("assistant", text), Message.text("user", feedback)]
        code = results.code
        self.progress(f"code: {'a runnable block' if code and code.parsed else 'no block'}")

    def _judge(self, results: Results) -> None:
        template = load_template("verifier")
        system = template.render("system", platform_summary=self.platform.summary())
        by_name = {s.name: s for s in self.screens}
        for name, evidence, there in JUDGE_CASES:
            request = template.render(
                "request", subtask="check the screen", evidence=evidence, result="done"
            )
            sent = self._sent(by_name[name])
            user = Message("user", (TextPart(request), sent.to_part()))
            text = self._ask("judge", [Message.text("system", system), user], purpose="verify")
            verdict = None if text is None else read_verdict(text)[0]
            results.judged.append(None if verdict is None else verdict == there)
        right = sum(j is True for j in results.judged)
        self.progress(f"judge: {right} of {len(results.judged)} verdicts right")


__all__ = ["ActReply", "Battery", "Call", "Plan", "Results"]
