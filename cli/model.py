r"""``agent-s model check``: does this model endpoint work for agent-s, and with which settings.

    agent-s model check --provider openai-compatible --base-url http://localhost:11434/v1 \
        --model qwen2.5vl
    agent-s model check --model gpt-4o --max-cost 0.10 --json
    agent-s model check ... --save-profile "qwen2.5vl*"

The model comes from the flags, the ``AGENT_S_*`` variables and the configuration file, as for
``agent-s run``; the battery and the verdict are ``agent_s.modelcheck``. Progress goes to stderr,
the report to stdout (``--json``: one object). Exit codes: 0 the model works as a worker or a
grounder, 1 it works for neither (or the endpoint gave no answer), 2 usage or configuration.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from agent_s.cli import options, output
from agent_s.cli.grouped import grouped, settings_flags
from agent_s.cli.helptext import Command, command_group
from agent_s.errors import AgentSError

model_app = command_group("Check a model endpoint: what it is good for, with which settings.")

RETRY_ATTEMPTS = 2  # a check should not wait out a retry schedule meant for runs


@grouped
def check(
    *,
    models: options.ModelFlags,
    model_timeout: options.ModelTimeout = None,
    max_cost: options.MaxCost = None,
    save_profile: Annotated[
        str | None,
        typer.Option(
            metavar="NAME",
            help="Write the coordinate convention found into the configuration file as "
            '[profiles."NAME"] point_convention (NAME: the model name or a pattern such as '
            '"qwen2.5vl*"), so agent-s run reads its points right with no flag.',
        ),
    ] = None,
    as_json: options.JsonReport = False,
) -> None:
    """Run a short battery against the model (no desktop needed: screens of real applications
    are shipped with agent-s) and say, per use (worker, native worker, grounder, code agent,
    planner/judge), whether it works and the exact agent-s run settings that fit."""
    from agent_s.modelcheck import Battery, Endpoint, Report
    from agent_s.modelcheck import save_profile as write_profile
    from agent_s.models.factory import build_metered_provider
    from agent_s.models.profiles import ModelProfile
    from agent_s.models.retry import RetryPolicy
    from agent_s.models.usage import Budget, UsageMeter
    from agent_s.settings.read import flag_values, load_settings

    out, err = output.console(), output.console(stderr=True)
    try:
        flags = settings_flags(models, model_timeout=model_timeout, max_cost=max_cost)
        settings = load_settings(flag_values(flags))
        model = settings.build_model(models.key())
        profiles = settings.build_profiles()
        profile: ModelProfile = profiles.resolve(model.model, model.api)
        meter = UsageMeter(Budget(max_cost_usd=settings.limits.max_cost))
        provider = build_metered_provider(
            model.settings(), meter, profiles=profiles, retry=RetryPolicy(RETRY_ATTEMPTS)
        )
    except (AgentSError, ValueError) as error:
        err.print(f"[red]error:[/] {escape(output.printable(str(error)))}", highlight=False)
        raise typer.Exit(2) from error

    def progress(line: str) -> None:
        err.print(f"  {output.printable(line)}", highlight=False, markup=False, soft_wrap=True)

    battery = Battery(provider, profile, progress=progress)
    plan = battery.plan()
    cost = "" if plan.max_cost_usd is None else f", cost at most ${plan.max_cost_usd:.4f}"
    err.print(f"checking {model.model}: at most {plan.calls} calls{cost}", highlight=False)
    endpoint = Endpoint(model.provider, model.model, model.base_url)
    report = Report.of(endpoint, plan, battery.run())
    saved = None
    if save_profile is not None:
        convention = report.point_convention()
        if convention is None:
            err.print("profile not saved: no pointing use fits any convention", highlight=False)
        else:
            try:
                saved = write_profile(save_profile, convention)
            except (AgentSError, OSError) as error:
                err.print(f"[red]error:[/] {escape(str(error))}", highlight=False)
                raise typer.Exit(2) from error
    if as_json:
        payload = report.to_json()
        payload["saved_profile"] = None if saved is None else str(saved)
        out.print_json(json.dumps(payload))
    else:
        for line in report.lines():
            out.print(output.printable(line), highlight=False, markup=False, soft_wrap=True)
        if saved is not None:
            said = f'[profiles."{save_profile}"] point_convention = "{convention}"'
            out.print(f"saved {said} in {saved}", highlight=False, markup=False, soft_wrap=True)
    works = any(report.use(u).level in ("yes", "weak") for u in ("worker", "grounder"))
    raise typer.Exit(0 if works else 1)


model_app.command("check", cls=Command)(check)
