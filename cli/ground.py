"""``agent-s ground "EXPRESSION"``: where would the agent click?

Grounds one referring expression on the current screen (or on ``--image FILE``) and prints the
point, the box, the grounder that answered and its evidence, and every grounder tried with the
reason it did or did not answer (``--json`` for machines). ``--annotate OUT.png`` saves the
screenshot with the point and box drawn on it. ``--explain`` lists, per grounder, every
candidate it saw with its score (with ``--annotate``, draws them all: the answer in green, the
other candidates in red, each labelled with its grounder and score). Exit codes: 0 found,
1 not found (the candidates seen are listed), 2 usage or setup error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from agent_s.cli import options, output
from agent_s.errors import AgentSError

if TYPE_CHECKING:  # imported where used: together they cost 0.35 s at every agent-s start
    from agent_s.conventions import PointConvention
    from agent_s.grounding import Grounder, GroundingResult, ModelGrounder, NotFound, Observation
    from agent_s.grounding.chain import Explanation
    from agent_s.images import ImageSpec


def _p(text: str) -> str:
    """Text read off the screen or from a model server, safe to show on a terminal."""
    return output.printable(text)


def _observe(image: Path | None, err: Console) -> Observation:
    from PIL import Image

    from agent_s.desktop.base import Screenshot
    from agent_s.grounding import Observation

    if image is not None:
        try:
            with Image.open(image) as opened:
                pixels = opened.convert("RGB")
        except (OSError, ValueError) as error:
            reason = getattr(error, "strerror", None) or str(error)
            err.print(
                f"error: --image {image}: cannot read it as an image ({reason})",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
            raise typer.Exit(2) from error
        return Observation(Screenshot(pixels))
    from agent_s.desktop.choose import choose_backend, open_backend

    choice = choose_backend(os.environ)
    if choice.kind is None:
        if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
            problem = escape(choice.reason)  # e.g. a GNOME Wayland session
        else:
            problem = "DISPLAY is not set"
        err.print(
            f"[red]no screen to ground on: {problem}[/]; run inside an X session "
            "(DISPLAY=:N) or a sway session, or pass --image FILE",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(2)
    try:
        with open_backend() as backend:
            return Observation(backend.capture(), tuple(backend.windows()), backend.geometry())
    except AgentSError as error:
        err.print(
            f"[red]cannot capture the screen: {escape(str(error))}[/] (or pass --image FILE)",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(2) from error


def _check_annotate(out: Path | None, err: Console) -> None:
    """Before grounding: ``--annotate``'s folder must exist and the name must be an image."""
    from PIL import Image

    if out is None:
        return
    folder = out.expanduser().parent
    problem = None
    if not folder.is_dir():
        problem = f"--annotate {out}: the folder {folder} does not exist; create it first"
    elif out.suffix.lower() not in Image.registered_extensions():
        problem = f"--annotate {out}: give an image file name, e.g. {out.with_suffix('.png')}"
    if problem is not None:
        err.print(f"error: {problem}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2)


def _model_grounder(
    url: str | None, model: str | None, convention: PointConvention | None
) -> ModelGrounder:
    from agent_s.grounding import ModelGrounder
    from agent_s.models.endpoints import settings_from_env
    from agent_s.models.factory import build_provider

    if not model:
        raise typer.BadParameter("a grounding model needs --ground-model (and --ground-url)")
    settings = settings_from_env("openai_compatible", model, base_url=url)
    return ModelGrounder(build_provider(settings), convention=convention)


def _native_spec(model: str | None) -> ImageSpec:
    """The image limits of the generation model whose coordinates are given (its profile)."""
    from agent_s.images import ImageSpec
    from agent_s.models.profiles import ApiKind, ProfileRegistry

    if not model:
        return ImageSpec()

    api: ApiKind = "anthropic" if "claude" in model.lower() else "openai_chat"
    profile = ProfileRegistry().resolve(model, api)
    return ImageSpec(
        format=profile.image_format,
        max_long_side=profile.max_image_long_side,
        max_pixels=profile.max_image_pixels,
    )


def _grounder(
    mode: str,
    *,
    live: bool,
    url: str | None,
    model: str | None,
    frame: PointConvention | None,
    native_model: str | None,
) -> Grounder:
    from agent_s.grounding import (
        AccessibilityGrounder,
        GroundingChain,
        NativeGrounder,
        OcrGrounder,
    )

    if mode == "a11y":
        if not live:
            raise typer.BadParameter("--ground a11y reads the live screen; it cannot use --image")
        return AccessibilityGrounder()
    if mode == "ocr":
        return OcrGrounder()
    if mode == "native":
        return NativeGrounder(_native_spec(native_model), frame or "pixels")
    if mode == "model":
        return _model_grounder(url, model, frame)
    chain: list[Grounder] = [AccessibilityGrounder()] if live else []
    chain.append(OcrGrounder())
    if model or url:
        chain.append(_model_grounder(url, model, frame))
    return GroundingChain(chain)


def annotate(observation: Observation, result: GroundingResult, out: Path) -> None:
    """Save the screenshot with the box (outlined, labelled with the grounder) and the point
    (ringed) drawn on it."""
    from agent_s.marks import drawing as marks

    picture = marks.grounding_picture(
        observation.screenshot, result.point, result.box, label=result.grounder
    )
    picture.save(out)


def explain_picture(
    observation: Observation, explanations: list[Explanation], out: Path, *, per_grounder: int = 12
) -> None:
    """Save the screenshot with every grounder's candidates outlined (red, labelled with the
    grounder and score; at most ``per_grounder`` each) and each answer (green, ringed)."""
    from agent_s.marks import drawing as marks

    drawn: list[marks.Mark] = []
    answers: list[marks.Mark] = []
    for explained in explanations:
        for candidate in explained.candidates[:per_grounder]:
            if candidate.box is not None:
                label = f"{explained.grounder} {candidate.score:.2f}"
                drawn.append(marks.Outline(candidate.box, marks.RED, width=1, label=label))
        result = explained.result
        if result is not None:
            if result.box is not None:
                answers.append(marks.Outline(result.box, marks.GREEN, label=explained.grounder))
            answers.append(marks.Ring(result.point, radius=9, width=2))
    marks.draw(observation.screenshot, [*drawn, *answers]).save(out)


def _print_explanations(out: Console, explanations: list[Explanation]) -> None:
    for explained in explanations:
        out.print(
            f"{explained.grounder}: {explained.outcome.replace('_', ' ')}, "
            f"{len(explained.candidates)} candidate(s)",
            highlight=False,
        )
        for candidate in explained.candidates[:20]:
            out.print(
                f"  {candidate.score:.2f}  {_p(candidate.describe())}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )


def _explanations_json(explanations: list[Explanation]) -> list[dict[str, Any]]:
    return [
        {
            "grounder": e.grounder,
            "outcome": e.outcome,
            "reason": e.reason,
            "candidates": [
                {
                    "text": c.text,
                    "role": c.role,
                    "score": c.score,
                    "box": list(c.box.as_tuple()) if c.box else None,
                }
                for c in e.candidates
            ],
        }
        for e in explanations
    ]


def _print_result(out: Console, result: GroundingResult) -> None:
    out.print(f"point     ({result.point.x}, {result.point.y})", highlight=False)
    if result.box is not None:
        b = result.box
        out.print(f"box       ({b.x}, {b.y}) {b.width}x{b.height}", highlight=False)
    else:
        out.print("box       unknown", highlight=False)
    out.print(f"grounder  {result.grounder} (confidence {result.confidence:.2f})", highlight=False)
    out.print(f"evidence  {_p(result.evidence)}", highlight=False, markup=False, soft_wrap=True)
    for attempt in result.attempts:
        line = f"tried     {attempt.grounder}: {attempt.outcome} ({attempt.seconds:.2f} s)"
        out.print(f"{line} {_p(attempt.reason)}", highlight=False, markup=False, soft_wrap=True)


def _print_not_found(out: Console, error: NotFound) -> None:
    out.print(f"not found: {_p(str(error))}", highlight=False, markup=False, soft_wrap=True)
    if error.candidates:
        out.print("candidates:", highlight=False)
        for candidate in error.candidates:
            out.print(
                f"  {_p(candidate.describe())}  (score {candidate.score:.2f})",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
    else:
        out.print("candidates: none", highlight=False)


def _not_found_json(error: NotFound) -> dict[str, Any]:
    return {
        "found": False,
        "expression": error.expression,
        "message": str(error),
        "reason": error.reason,
        "candidates": [
            {
                "text": c.text,
                "role": c.role,
                "score": c.score,
                "box": list(c.box.as_tuple()) if c.box else None,
            }
            for c in error.candidates
        ],
        "attempts": [
            {
                "grounder": a.grounder,
                "outcome": a.outcome,
                "reason": a.reason,
                "seconds": round(a.seconds, 3),
            }
            for a in error.attempts
        ],
    }


def ground(
    expression: Annotated[
        str, typer.Argument(metavar="EXPRESSION", help='What to find, e.g. "the Save button".')
    ],
    image: Annotated[
        Path | None, typer.Option("--image", help="Ground on this image, not the live screen.")
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--ground",
            help="Grounder: auto, a11y, ocr, model or native (default auto; env AGENT_S_GROUND).",
        ),
    ] = None,
    ground_url: Annotated[
        str | None,
        typer.Option(
            "--ground-url",
            help="OpenAI-compatible grounding model URL (env AGENT_S_GROUND_URL).",
        ),
    ] = None,
    ground_model: Annotated[
        str | None,
        typer.Option(
            "--ground-model",
            help="Grounding model name, e.g. UI-TARS (env AGENT_S_GROUND_MODEL).",
        ),
    ] = None,
    ground_convention: options.GroundConvention = None,
    ground_frame: Annotated[
        str | None,
        typer.Option("--ground-frame", help="The same as --ground-convention.", hidden=True),
    ] = None,
    native_model: Annotated[
        str | None,
        typer.Option(
            "--native-model",
            help="With --ground native: the generation model whose "
            "coordinates are given (its image limits set the frame).",
        ),
    ] = None,
    annotate_to: Annotated[
        Path | None, typer.Option("--annotate", help="Save the screenshot with point and box.")
    ] = None,
    as_json: options.AsJson = False,
    explain_all: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="List every candidate each grounder saw, with scores "
            "(drawn into the --annotate picture).",
        ),
    ] = False,
) -> None:
    """Where would the agent click? Ground EXPRESSION and print the point and the evidence.

    The grounding settings are those agent-s run would use: the flags, then AGENT_S_GROUND,
    AGENT_S_GROUND_URL and AGENT_S_GROUND_MODEL, then the configuration file."""
    from agent_s.grounding import GrounderUnavailable, GroundingError, NotFound
    from agent_s.grounding.chain import explain
    from agent_s.models.errors import AuthenticationError, ProviderUnavailable
    from agent_s.settings.read import flag_values, load_settings

    out, err = output.console(), output.console(stderr=True)
    given = {
        "--ground": mode,
        "--ground-url": ground_url,
        "--ground-model": ground_model,
        "--ground-convention": ground_convention or ground_frame,
    }
    try:
        config = load_settings(flag_values(given)).build_grounding()
    except AgentSError as error:
        err.print(f"error: {error}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from error
    mode, ground_url, ground_model = config.mode, config.url, config.model
    grounder = _grounder(
        mode,
        live=image is None,
        url=ground_url,
        model=ground_model,
        frame=config.convention,
        native_model=native_model,
    )
    _check_annotate(annotate_to, err)
    observation = _observe(image, err)
    if image is not None and mode == "auto":
        err.print("accessibility skipped: --image is not the live screen", highlight=False)
    explained: list[Explanation] | None = None
    if explain_all:
        explained = explain(grounder, expression, observation)
        if not as_json:
            _print_explanations(out, explained)
        if annotate_to is not None:
            try:
                explain_picture(observation, explained, annotate_to.expanduser())
            except (OSError, ValueError) as error:
                err.print(f"cannot save {annotate_to}: {error}", markup=False, soft_wrap=True)
                raise typer.Exit(2) from error
            err.print(f"candidates drawn: {annotate_to}", highlight=False)
            annotate_to = None  # the picture is the explanation's
    try:
        result = grounder.ground(expression, observation)
    except NotFound as error:
        if annotate_to is not None:
            err.print(f"not annotated: {expression!r} was not found", markup=False)
        if as_json:
            found = _not_found_json(error)
            if explained is not None:
                found["explain"] = _explanations_json(explained)
            out.print_json(json.dumps(found))
        else:
            _print_not_found(out, error)
        raise typer.Exit(1) from error
    except (GroundingError, AgentSError, ValueError) as error:
        # A grounder that cannot look (no bus, no model server) is a setup problem: exit 2.
        setup = isinstance(error, (GrounderUnavailable, ProviderUnavailable, AuthenticationError))
        if as_json:
            out.print_json(
                json.dumps(
                    {
                        "found": False,
                        "expression": expression,
                        "message": str(error),
                        "reason": type(error).__name__,
                    }
                )
            )
        else:
            err.print(
                f"grounding failed: {_p(str(error))}", highlight=False, markup=False, soft_wrap=True
            )
        raise typer.Exit(2 if setup else 1) from error
    if annotate_to is not None:
        try:
            annotate(observation, result, annotate_to.expanduser())
        except (OSError, ValueError) as error:
            err.print(f"cannot save {annotate_to}: {error}", markup=False, soft_wrap=True)
            raise typer.Exit(2) from error
        err.print(f"annotated screenshot: {annotate_to}", highlight=False)
    if as_json:
        answer = {"found": True, **result.to_json()}
        if explained is not None:
            answer["explain"] = _explanations_json(explained)
        out.print_json(json.dumps(answer))
    else:
        _print_result(out, result)
