"""The verdict: what the battery's results say the model is good for, with the exact settings
of `agent-s run` that fit, as lines for people and as JSON.

Uses judged: the worker (a screenshot and a task, one of our actions back), the native worker
(the same, writing the pixel itself: ``--ground native``), the grounding model (``--ground
model``), the code agent (one runnable block) and the planner/judge (reads the screen, answers
in the verifier's format). Each is ``yes``, ``weak`` (it works, often not), ``no`` or
``untested`` (the battery ended before it). A pointing use's settings carry the coordinate
convention its answers fit (``--ground-convention``) when it is not the one agent-s would use
without a setting.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

from agent_s.conventions import PointConvention
from agent_s.modelcheck.battery import Plan, Results
from agent_s.modelcheck.fit import Answer, Fit, best_fit

Level = Literal["yes", "weak", "no", "untested"]
GOOD, WEAK = 0.75, 0.4  # hit or parse rates for "yes" and for "weak"
OPENAI_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class Endpoint:
    """What was checked: the provider's name (as ``--provider`` takes it), model and URL."""

    provider: str
    model: str
    base_url: str | None = None

    def flags(self) -> tuple[str, ...]:
        url = ("--base-url", self.base_url) if self.base_url else ()
        return ("--provider", self.provider, "--model", self.model, *url)


@dataclass(frozen=True)
class Use:
    name: str  # "worker", "native worker", "grounder", "code agent", "planner/judge"
    level: Level
    why: str
    settings: tuple[str, ...] = ()  # what to add to `agent-s run` for this use

    def to_json(self) -> dict[str, object]:
        return {"use": self.name, "verdict": self.level, "why": self.why, "settings": self.settings}


def _level(rate: float) -> Level:
    return "yes" if rate >= GOOD else "weak" if rate >= WEAK else "no"


def _offset(fit: Fit) -> str:
    if fit.offset is None:
        return ""
    dx, dy = fit.offset
    return f", offset {dx:+.0f}, {dy:+.0f} px"


@dataclass(frozen=True)
class Report:
    endpoint: Endpoint
    plan: Plan
    results: Results
    ground_fit: Fit | None
    native_fit: Fit | None
    uses: tuple[Use, ...]

    @classmethod
    def of(cls, endpoint: Endpoint, plan: Plan, results: Results) -> Report:
        ground = best_fit(results.ground, results.grounding_default)
        native = best_fit(results.native, results.native_default)
        uses = (
            _worker(results, native),
            _native_worker(results, native),
            _grounder(endpoint, results, ground),
            _code(results),
            _judge(results),
        )
        return cls(endpoint, plan, results, ground, native, uses)

    def use(self, name: str) -> Use:
        return next(u for u in self.uses if u.name == name)

    def point_convention(self) -> PointConvention | None:
        """The convention to save in the model's profile: the pointing use that works best."""
        fits = [f for f in (self.native_fit, self.ground_fit) if f and f.rate >= GOOD]
        return max(fits, key=lambda f: f.rate).convention if fits else None

    # -- output ------------------------------------------------------------------------------

    def to_json(self) -> dict[str, object]:
        results = self.results
        return {
            "endpoint": self.endpoint.__dict__,
            "plan": {
                "calls": self.plan.calls,
                "per_probe": self.plan.per_probe,
                "max_cost_usd": self.plan.max_cost_usd,
            },
            "stopped": results.stopped,
            "reached": results.reached,
            "see": {
                "accepts_images": results.accepts_images,
                "reads_image": results.reads_image,
                "answer": results.seen,
            },
            "act": [a.to_json() for a in results.acts],
            "native": _answers(results.native, self.native_fit),
            "ground": _answers(results.ground, self.ground_fit),
            "code": None if results.code is None else results.code.to_json(),
            "judge": results.judged,
            "calls": [c.to_json() for c in results.calls],
            "totals": self._totals(),
            "uses": [u.to_json() for u in self.uses],
            "point_convention": _name(self.point_convention()),
        }

    def _totals(self) -> dict[str, object]:
        calls = self.results.calls
        answered = [c for c in calls if not c.error]
        count = len(answered) or 1
        return {
            "calls": len(calls),
            "failed": len(calls) - len(answered),
            "seconds_per_call": round(sum(c.seconds for c in answered) / count, 3),
            "first_token_s": _mean([c.first_token_s for c in answered]),
            "tokens_per_call": round(
                sum(c.input_tokens + c.output_tokens for c in answered) / count
            ),
            "cost_usd": round(sum(c.cost_usd for c in calls), 6),
            "prices_known": self.plan.max_cost_usd is not None,
        }

    def lines(self) -> list[str]:
        """The report for people: what was asked, what came back, the verdict per use."""
        results, plan = self.results, self.plan
        where = f" at {self.endpoint.base_url}" if self.endpoint.base_url else ""
        cost = (
            f"cost at most ${plan.max_cost_usd:.4f}"
            if plan.max_cost_usd is not None
            else "cost unknown (no prices in the model's profile)"
        )
        out = [
            f"model check: {self.endpoint.model} ({self.endpoint.provider}{where})",
            f"at most {plan.calls} calls, {cost}",
        ]
        out.append(f"reach     {'answered' if results.reached else 'no answer'}")
        out += self._probe_lines()
        totals = self._totals()
        spent = f"${totals['cost_usd']:.4f}" if totals["prices_known"] else "cost unknown"
        first = totals["first_token_s"]
        timed = (
            f"{first:.1f} s to the first token, " if isinstance(first, float) else ""
        ) + f"{totals['seconds_per_call']:.1f} s to the whole reply"
        if first is None:
            timed += " (first token not measured: the replies did not stream)"
        out.append(
            f"calls     {totals['calls']} call{'' if totals['calls'] == 1 else 's'} "
            f"({totals['failed']} failed), {timed}, {totals['tokens_per_call']} tokens per "
            f"call, {spent}"
        )
        if results.stopped:
            out.append(f"stopped   {results.stopped}")
        out.append("verdict")
        for use in self.uses:
            settings = shlex.join(use.settings)
            out.append(f"  {use.name:<14} {use.level:<8} {settings or use.why}".rstrip())
        return out

    def _probe_lines(self) -> list[str]:
        results, out = self.results, []
        if results.accepts_images is False:
            out.append("see       refuses images")
        elif results.accepts_images:
            read = "read" if results.reads_image else f"did not read (said {results.seen!r})"
            out.append(f"see       accepts images; {read} the word only the image holds")
        if results.acts:
            parsed = [a for a in results.acts if a.parsed]
            styles = ", ".join(sorted({str(a.style) for a in parsed})) or "none"
            helped = sum(a.feedback and a.parsed for a in results.acts)
            out.append(
                f"act       {len(parsed)} of {len(results.acts)} replies are actions, "
                f"{helped} after feedback; styles: {styles}"
            )
        for name, answers, fit in (
            ("native", results.native, self.native_fit),
            ("ground", results.ground, self.ground_fit),
        ):
            if not answers:
                continue
            if fit is None:
                out.append(f"{name:<9} 0 of {len(answers)} answers hold a point")
            else:
                out.append(
                    f"{name:<9} {fit.hits} of {fit.total} on target in {fit.convention}"
                    f"{_offset(fit)}"
                )
        if results.code is not None:
            code = results.code
            said = f"a runnable {code.style} block" if code.parsed else f"no block ({code.error})"
            out.append(f"code      {said}{', after feedback' if code.feedback else ''}")
        if results.judged:
            right = sum(j is True for j in results.judged)
            out.append(f"judge     {right} of {len(results.judged)} verdicts right")
        return out


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(sum(known) / len(known), 3) if known else None


def _name(convention: PointConvention | None) -> str | None:
    return None if convention is None else str(convention)


def _answers(answers: list[Answer], fit: Fit | None) -> dict[str, object]:
    return {
        "fit": None if fit is None else fit.to_json(),
        "answers": [
            {
                "screen": a.screen,
                "target": a.target,
                "truth": list(a.truth.as_tuple()),
                "sent": list(a.sent),
                "location": None if a.location is None else list(a.location.values),
                "error": a.error,
            }
            for a in answers
        ],
    }


def _untested(name: str, results: Results) -> Use | None:
    if not results.reached:
        return Use(name, "untested", "the endpoint gave no answer")
    if results.accepts_images is False and name != "code agent":
        return Use(name, "no", "the endpoint refuses images; this use is sent screenshots")
    return None


def _convention_flags(fit: Fit, default: PointConvention) -> tuple[str, ...]:
    same = fit.convention == default
    return () if same else ("--ground-convention", str(fit.convention))


def _worker(results: Results, native: Fit | None) -> Use:
    early = _untested("worker", results)
    if early is not None:
        return early
    if not results.acts:
        return Use("worker", "untested", "the battery ended before the act probe")
    parsed = [a for a in results.acts if a.parsed]
    level = _level(len(parsed) / len(results.acts))
    why = f"{len(parsed)} of {len(results.acts)} replies are actions"
    if results.reads_image is False and level == "yes":
        level, why = "weak", why + ", but it did not read the screen"
    if sum(a.points for a in parsed) > len(parsed) / 2:
        # it writes coordinates: a run must read them in its convention (--ground native)
        if native is None or native.rate < GOOD:
            return Use("worker", "weak" if level != "no" else "no", why + "; its points miss")
        flags = ("--ground", "native", *_convention_flags(native, results.native_default))
        return Use("worker", level, why, flags)
    return Use("worker", level, why + " (grounding: the default, auto)")


def _pointing(
    name: str,
    results: Results,
    answers: list[Answer],
    fit: Fit | None,
    flags: tuple[str, ...],
    default: PointConvention,
) -> Use:
    """A pointing use (``native worker``, ``grounder``): its hits, and ``flags`` with the
    convention its answers fit when that is not ``default``."""
    early = _untested(name, results)
    if early is not None:
        return early
    if not answers:
        return Use(name, "untested", "the battery ended before its probe")
    if fit is None:
        return Use(name, "no", "no answer held a point")
    why = f"{fit.hits} of {fit.total} points on target in {fit.convention}"
    level = _level(fit.rate)
    settings = (*flags, *_convention_flags(fit, default)) if level != "no" else ()
    return Use(name, level, why, settings)


def _native_worker(results: Results, fit: Fit | None) -> Use:
    flags = ("--ground", "native")
    return _pointing("native worker", results, results.native, fit, flags, results.native_default)


def _grounder(endpoint: Endpoint, results: Results, fit: Fit | None) -> Use:
    url = endpoint.base_url or OPENAI_URL
    flags = ("--ground", "model", "--ground-url", url, "--ground-model", endpoint.model)
    use = _pointing("grounder", results, results.ground, fit, flags, results.grounding_default)
    if endpoint.provider == "anthropic" and use.level != "untested":
        why = use.why + "; but agent-s reaches a grounding model through an OpenAI-compatible API"
        return Use("grounder", "no", why)
    return use


def _code(results: Results) -> Use:
    if not results.reached:
        return Use("code agent", "untested", "the endpoint gave no answer")
    code = results.code
    if code is None:
        return Use("code agent", "untested", "the battery ended before the code probe")
    if not code.parsed:
        return Use("code agent", "no", f"no runnable block: {code.error}")
    after = " after feedback" if code.feedback else ""
    return Use("code agent", "yes" if not code.feedback else "weak", f"a {code.style} block{after}")


def _judge(results: Results) -> Use:
    early = _untested("planner/judge", results)
    if early is not None:
        return early
    if not results.judged:
        return Use("planner/judge", "untested", "the battery ended before the judge probe")
    right = sum(j is True for j in results.judged)
    level = _level(right / len(results.judged))
    if not results.reads_image and level == "yes":
        level = "weak"
    return Use("planner/judge", level, f"{right} of {len(results.judged)} verdicts right")


__all__ = ["Endpoint", "Level", "Report", "Use"]
