"""`agent-s model check` against scripted servers (the real openai SDK, the local server) that
answer as models of each reply style and coordinate convention would, and as endpoints that
refuse images, time out or answer garbage: the verdict, the settings it suggests, and that
those settings, applied, put the click on the control."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from clean_env import clean_env
from modelcheck_scripts import act_reply, battery_script, ground_reply, native_reply
from typer.testing import CliRunner

from agent_s.actions import parse_reply
from agent_s.cli.main import app
from agent_s.desktop.ops import Point
from agent_s.grounding import OcrGrounder
from agent_s.modelcheck import Battery
from agent_s.modelcheck.screens import screens
from agent_s.models.profiles import ProfileRegistry
from agent_s.settings.read import load_settings
from agent_s.testing.scripted_replies import Step, reply
from agent_s.testing.scripted_server import ScriptedModelServer

MODEL = ["--provider", "openai-compatible", "--model", "scripted-model"]


def _env(config: Path | None = None) -> dict[str, str]:
    env = clean_env()
    env.pop("OPENAI_API_KEY", None)
    return {**env, "AGENT_S_CONFIG": str(config or os.devnull), "NO_COLOR": "1", "COLUMNS": "200"}


def _check(
    script: list[Step], *args: str, config: Path | None = None
) -> tuple[int, dict[str, Any], str]:
    """Run `agent-s model check --json` against ``script``: exit code, JSON, stderr."""
    with ScriptedModelServer(script) as server:
        argv = ["model", "check", *MODEL, "--base-url", server.openai_base_url, "--json", *args]
        done = CliRunner().invoke(app, argv, env=_env(config))
    assert done.stdout.strip(), done.output
    return done.exit_code, json.loads(done.stdout), done.stderr


def _uses(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {u["use"]: u for u in report["uses"]}


# (reply style, convention it points in, the --ground-convention suggested: None for none)
CASES = [
    ("calls", "pixels", None),
    ("json", "grid1000-yx", "grid1000-yx"),
    ("ui-tars", "grid1000", "grid1000"),
    ("qwen-vl", "smart_resize", "smart_resize"),
    ("pyautogui", "pixels", None),
    ("calls", "unit-yx", "unit-yx"),
    ("ui-tars", "1920x1080", "1920x1080"),
    ("calls", "pixels-yx", "pixels-yx"),
]


@pytest.mark.parametrize(("style", "convention", "suggested"), CASES, ids=[c[1] for c in CASES])
def test_each_style_and_convention_gets_its_verdict_and_settings(
    style: str, convention: str, suggested: str | None
) -> None:
    code, report, err = _check(battery_script(style=style, convention=convention))
    assert code == 0, report
    assert "at most 27 calls" in err
    uses = _uses(report)
    assert {u: uses[u]["verdict"] for u in uses} == dict.fromkeys(uses, "yes")
    assert report["ground"]["fit"]["hits"] == report["ground"]["fit"]["total"] == 8
    assert report["ground"]["fit"]["convention"] == convention
    assert report["native"]["fit"]["convention"] == convention
    assert {a["style"] for a in report["act"]} == {style}
    flag = ["--ground-convention", suggested] if suggested else []
    grounder = uses["grounder"]["settings"]
    assert grounder[:2] == ["--ground", "model"]
    assert grounder[2:] == ["--ground-url", grounder[3], "--ground-model", "scripted-model", *flag]
    assert uses["native worker"]["settings"] == ["--ground", "native", *flag]
    # a worker writing coordinates needs them read as it writes them; one naming elements not
    points = style not in ("calls", "json")
    assert uses["worker"]["settings"] == (["--ground", "native", *flag] if points else [])
    assert len(report["calls"]) == 21  # reach, code, see, 4 act, 4 native, 8 ground, 2 judge
    # streamed (Chat Completions): each call timed to its first token and to its end
    assert all(0 <= c["first_token_s"] <= c["seconds"] for c in report["calls"])
    assert report["totals"]["first_token_s"] is not None
    assert report["totals"]["tokens_per_call"] == 30  # the scripted usage: 20 in, 10 out


@pytest.mark.parametrize("convention", ["grid1000-yx", "1920x1080", "smart_resize", "unit-yx"])
def test_the_suggested_setting_applied_in_ground_puts_the_click_on_the_control(
    convention: str, tmp_path: Path
) -> None:
    """The verdict's settings, given to `agent-s ground` (the settings `run` reads), with a
    grounding model and a native worker answering in that convention: inside the truth box."""
    _, report, _ = _check(battery_script(style="ui-tars", convention=convention))
    screen = screens()[1]  # galculator at 800x600, none of whose boxes the check asked
    control = screen.controls[1]
    image = tmp_path / "screen.png"
    screen.image().save(image)
    grounder = _uses(report)["grounder"]["settings"]
    with ScriptedModelServer([reply(ground_reply(convention, screen, control))]) as server:
        settings = [server.openai_base_url if s.startswith("http") else s for s in grounder]
        argv = ["ground", control.target, "--image", str(image), "--json", *settings]
        done = CliRunner().invoke(app, argv, env=_env())
    found = json.loads(done.stdout)
    assert control.box.contains(Point(*found["point"])), (found, control.box)

    native = _uses(report)["native worker"]["settings"]
    written = native_reply("ui-tars", convention, screen, control)
    target = parse_reply(written).action.targets()[0].text  # "(x, y)" as the worker wrote it
    done = CliRunner().invoke(
        app, ["ground", target, "--image", str(image), "--json", *native], env=_env()
    )
    found = json.loads(done.stdout)
    assert control.box.contains(Point(*found["point"])), (found, control.box)
    if convention == "smart_resize":
        return  # Qwen's frame is within 1% of the image's own: read as pixels, it hits too
    # without the setting the same answers miss (or fall off the image)
    plain = CliRunner().invoke(
        app, ["ground", target, "--image", str(image), "--json", "--ground", "native"], env=_env()
    )
    missed = json.loads(plain.stdout)
    assert not missed.get("found") or not control.box.contains(Point(*missed["point"]))


def test_an_endpoint_that_refuses_images_is_no_worker_but_a_code_agent() -> None:
    script = [
        reply("ready"),
        reply("```python\nprint(1)\n```"),
        Step("bad_request", message="image input is not supported by this model"),
    ]
    code, report, err = _check(script)
    assert code == 1
    assert report["see"]["accepts_images"] is False
    uses = _uses(report)
    for use in ("worker", "native worker", "grounder", "planner/judge"):
        assert uses[use]["verdict"] == "no"
        assert "refuses images" in uses[use]["why"]
    assert uses["code agent"]["verdict"] == "yes"
    assert len(report["calls"]) == 3  # nothing more was asked
    assert "refused an image" in err


def test_an_endpoint_that_times_out_ends_the_check_early() -> None:
    slow = Step("slow", delay_s=5, then=reply("ready"))
    code, report, err = _check([slow, slow], "--model-timeout", "1")
    assert code == 1
    assert report["reached"] is False
    assert "does not answer" in report["stopped"]
    assert {u["verdict"] for u in report["uses"]} == {"untested"}
    assert "Traceback" not in err


def test_an_endpoint_that_answers_garbage_is_no_use() -> None:
    garbage = [reply("ready")] + [reply("banana " * 5)] * 25  # the bound less a 2nd reach
    code, report, _ = _check(garbage)
    assert code == 1
    uses = _uses(report)
    assert {u: uses[u]["verdict"] for u in uses} == dict.fromkeys(uses, "no")
    assert report["see"]["reads_image"] is False
    assert all(a["parsed"] is False and a["feedback"] for a in report["act"])
    assert report["code"]["feedback"] is True
    assert report["ground"]["fit"] is None
    assert all(u["settings"] == [] for u in report["uses"])


def test_a_worker_that_needs_the_feedback_is_counted(tmp_path: Path) -> None:
    code, report, _ = _check(battery_script(feedback=True))
    assert code == 0
    assert [a["feedback"] for a in report["act"]] == [True] * 4
    assert all(a["parsed"] for a in report["act"])
    assert len(report["calls"]) == 25


def test_the_bound_is_stated_and_max_cost_stops_the_check(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[profiles."scripted-model"]\ninput_price = 100.0\noutput_price = 100.0\n')
    registry = load_settings(path=config, environ={}).build_profiles()
    profile = registry.resolve("scripted-model", "openai_compatible")
    plan = Battery(_unused_provider(), profile).plan()
    assert plan.calls == 27
    assert plan.max_cost_usd is not None
    assert plan.max_cost_usd > 0
    # 30 tokens a call at $100 per million: $0.003 a call; $0.007 allows three calls
    code, report, err = _check(battery_script()[:3], "--max-cost", "0.007", config=config)
    assert f"at most 27 calls, cost at most ${plan.max_cost_usd:.4f}" in err
    assert "cost limit" in report["stopped"]
    assert len([c for c in report["calls"] if not c["error"]]) == 3
    assert report["totals"]["cost_usd"] == pytest.approx(0.009)
    assert code == 1


def _unused_provider() -> Any:
    from agent_s.models.endpoints import settings_from_env
    from agent_s.models.factory import build_provider

    return build_provider(
        settings_from_env("openai_compatible", "scripted-model", base_url="http://127.0.0.1:9/v1")
    )


def test_save_profile_writes_the_convention_and_keeps_the_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    kept = '# my settings\n[model]\nname = "gpt-4o"\n\n[profiles."other*"]\ninput_price = 1.0\n'
    config.write_text(kept)
    config.chmod(0o640)
    script = battery_script(style="ui-tars", convention="grid1000-yx")
    code, report, _ = _check(script, "--save-profile", "scripted*", config=config)
    assert code == 0
    assert report["saved_profile"] == str(config)
    text = config.read_text()
    assert text.startswith(kept)
    assert oct(config.stat().st_mode & 0o777) == oct(0o640)
    settings = load_settings(path=config, environ={})
    assert settings.model.name == "gpt-4o"
    profile = settings.build_profiles().resolve("scripted-model", "openai_compatible")
    assert profile.point_convention == "grid1000-yx"
    # checked again: what run now reads for this model needs no flag
    _, again, _ = _check(script, config=config)
    assert _uses(again)["native worker"]["settings"] == ["--ground", "native"]
    assert "--ground-convention" not in _uses(again)["grounder"]["settings"]
    assert _uses(again)["grounder"]["verdict"] == "yes"
    # saved again with another answer: the one line is replaced, not added
    script = battery_script(style="ui-tars", convention="grid1000")
    _check(script, "--save-profile", "scripted*", config=config)
    assert config.read_text().count("point_convention") == 1
    profiles = load_settings(path=config, environ={}).build_profiles()
    assert profiles.resolve("scripted-model", "openai_compatible").point_convention == "grid1000"


def test_save_profile_follows_no_symbolic_link(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    real.write_text("[model]\nname = 'gpt-4o'\n")
    link = tmp_path / "config.toml"
    link.symlink_to(real)
    script = battery_script(style="ui-tars", convention="grid1000")
    with ScriptedModelServer(script) as server:
        argv = ["model", "check", *MODEL, "--base-url", server.openai_base_url]
        done = CliRunner().invoke(app, [*argv, "--save-profile", "x"], env=_env(link))
    assert done.exit_code == 2
    assert "symbolic link" in done.stderr
    assert real.read_text() == "[model]\nname = 'gpt-4o'\n"
    assert link.is_symlink()


def test_a_profile_s_convention_reaches_run_s_native_worker() -> None:
    """What --save-profile writes is what `run` reads for a native worker."""
    from agent_s.grounding.locate import Locator
    from agent_s.settings.config import GroundingConfig

    screen = screens()[0]
    control = screen.controls[2]
    written = native_reply("ui-tars", "grid1000-yx", screen, control)
    target = parse_reply(written).action.targets()[0]
    profile = ProfileRegistry((("scripted*", {"point_convention": "grid1000-yx"}),)).resolve(
        "scripted-model", "openai_compatible"
    )
    located = Locator.for_config(GroundingConfig("native"), None, profile).locate(
        (target,), screen.observation()
    )
    assert control.box.contains(located.points[0])  # type: ignore[union-attr]


def test_the_shipped_screens_match_their_truth_boxes() -> None:
    """Each control's label, read by OCR, lies inside its box; the editor's word is on the
    screen; the images are the sizes the index says, and small."""
    ocr = OcrGrounder()
    shown = screens()
    assert len({s.size for s in shown}) >= 3
    assert len({s.app for s in shown}) >= 3
    for screen in shown:
        observation = screen.observation()
        assert observation.screenshot.image.size == screen.size
        for control in screen.controls:
            found = ocr.ground(f'the "{control.name}" button', observation)
            assert control.box.contains(found.point), (screen.name, control, found)
    editor = next(s for s in shown if s.word)
    assert ocr.ground(f'the text "{editor.word}"', editor.observation()).point is not None
    data = Path(__file__).resolve().parent.parent / "agent_s" / "modelcheck" / "data"
    assert sum(p.stat().st_size for p in data.iterdir()) < 300_000


def test_reply_styles_are_told_apart() -> None:
    replies = {
        'agent.click("the OK button")': "calls",
        '{"name": "click", "arguments": {"element_description": "OK"}}': "json",
        "Action: click(start_box='(10,20)')": "ui-tars",
        '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", '
        '"coordinate": [1, 2]}}</tool_call>': "qwen-vl",
        '{"type": "computer_call", "action": {"type": "click", "button": "left", "x": 1, '
        '"y": 2}}': "computer-use",
        '{"action": "left_click", "coordinate": [3, 4]}': "computer-use",
        "```python\npyautogui.click(10, 20)\n```": "pyautogui",
    }
    assert {text: parse_reply(text).style for text in replies} == replies


def test_the_suggested_setting_applied_to_a_run_clicks_the_control(tmp_path: Path) -> None:
    """The native worker's settings from the verdict, read as `run` reads flags, make the
    agent's click land on the galculator button its UI-TARS reply pointed at."""
    from agent_s.desktop.ops import Click
    from agent_s.desktop.recording import RecordingBackend
    from agent_s.loop.agent import Agent
    from agent_s.record.result import RunStatus
    from agent_s.settings.config import AgentConfig, ModelConfig
    from agent_s.settings.read import flag_values

    _, report, _ = _check(battery_script(style="ui-tars", convention="grid1000-yx"))
    settings = _uses(report)["worker"]["settings"]
    assert settings == ["--ground", "native", "--ground-convention", "grid1000-yx"]
    grounding = load_settings(
        flag_values(dict(zip(settings[::2], settings[1::2], strict=True))), environ={}
    ).build_grounding(environ={})
    screen = screens()[0]
    control = screen.controls[0]
    clicked = act_reply("ui-tars", "grid1000-yx", screen, control)
    script = [reply(clicked), reply("Done.\n```python\nagent.done()\n```")]
    backend = RecordingBackend([screen.image()] * 4)
    with ScriptedModelServer(script) as server:
        model = ModelConfig("openai-compatible", "scripted-model", server.openai_base_url, "k")
        config = AgentConfig(settle_seconds=0, record_dir=tmp_path)
        result = Agent(model, settings=config, grounding=grounding, backend=backend).run(
            "compute 7+8 on the calculator"
        )
    assert result.status is RunStatus.SUCCEEDED, result
    clicks = [op for op in backend.ops if isinstance(op, Click)]
    assert len(clicks) == 1
    assert control.box.contains(clicks[0].at), (clicks, control.box)


def test_an_anthropic_endpoint_is_checked_over_the_messages_api() -> None:
    """The same battery through the anthropic SDK; a grounding model is reached through an
    OpenAI-compatible API only, so the grounder verdict says so even when it points well."""
    script = battery_script(style="calls", convention="pixels")
    with ScriptedModelServer(script) as server:
        argv = ["model", "check", "--provider", "anthropic", "--model", "claude-sonnet-4-5"]
        argv += ["--base-url", server.base_url, "--json"]
        env = {**_env(), "ANTHROPIC_API_KEY": "sk-ant-test"}
        done = CliRunner().invoke(app, argv, env=env)
        assert {r.wire for r in server.requests} == {"messages"}
    report = json.loads(done.stdout)
    assert done.exit_code == 0, done.output
    uses = _uses(report)
    assert uses["worker"]["verdict"] == "yes"
    assert uses["grounder"]["verdict"] == "no"
    assert "OpenAI-compatible" in uses["grounder"]["why"]
    assert report["ground"]["fit"]["hits"] == 8
    assert report["totals"]["prices_known"] is True
    assert report["totals"]["cost_usd"] > 0
    assert report["totals"]["first_token_s"] is None  # this adapter answers whole


def test_an_endpoint_that_does_not_stream_is_timed_whole() -> None:
    script = battery_script()
    refused = Step("bad_request", message="stream is not supported")
    with ScriptedModelServer([refused, *script]) as server:
        argv = ["model", "check", *MODEL, "--base-url", server.openai_base_url]
        done = CliRunner().invoke(app, argv, env=_env())
        asked = [bool(r.body.get("stream")) for r in server.requests]
    assert done.exit_code == 0, done.output
    assert asked[:2] == [True, False]
    assert not any(asked[2:])
    assert "first token not measured: the replies did not stream" in done.stdout
