"""One generation: the model's reply read into exactly one action (or, when the run allows it,
a short sequence of at most ``most``: ``agent_s.actions.parse.parse_actions``), or sent back
with why not.

Each try is one model call. A reply that is no valid action (empty, unparseable, several
actions, cut off at the output limit) goes back to the model with the reason, at most
``tries - 1`` times; then the run ends (``RunEnded``, cause ``invalid_replies``). A refusal ends
the run as infeasible. Nothing is ever turned into a wait, and nothing is executed to validate.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from agent_s.actions import ActionModel, ActionParseError, parse_actions
from agent_s.loop.context import ContextPolicy, with_feedback
from agent_s.models.errors import OutputTruncated, Refused
from agent_s.models.types import Message, ModelReply
from agent_s.record.result import RunEnded, RunStatus
from agent_s.record.step import ModelCall

EMPTY_REPLY = (
    "the reply was empty. Reply with brief reasoning, then exactly one action in a ```python block."
)
CUT_OFF = "the reply was cut off at the output limit; keep the reasoning short"
T = TypeVar("T")


def generate(
    call: Callable[[Sequence[Message]], ModelReply],
    messages: Sequence[Message],
    *,
    tries: int,
    policy: ContextPolicy,
    on_call: Callable[[ModelCall], None],
    check: Callable[[ActionModel], None] | None = None,
    most: int = 1,
) -> tuple[tuple[ActionModel, ...], str]:
    """(the actions, in order: one unless ``most`` allows more, the reply they came from).
    ``call`` makes one model call; ``on_call`` gets the record of each (its reply, usage, and
    the problem fed back). ``check`` may refuse a parsed action with an ``ActionParseError``
    (a mark not on the screenshot), which is fed back like any invalid reply; so is a reply
    with more than ``most`` actions, whole."""

    def parse(text: str) -> tuple[ActionModel, ...]:
        if not text.strip():
            raise ActionParseError(EMPTY_REPLY, kind="none")
        actions = parse_actions(text, most)
        for action in actions:
            if check is not None:
                check(action)
        return actions

    return generate_parsed(
        call,
        messages,
        parse,
        tries=tries,
        purpose="generate",
        on_call=on_call,
        feedback=lambda sent, text, problem: with_feedback(
            sent, text, problem, policy=policy, most=most
        ),
        what="action",
    )


def generate_parsed(
    call: Callable[[Sequence[Message]], ModelReply],
    messages: Sequence[Message],
    parse: Callable[[str], T],
    *,
    tries: int,
    purpose: str,
    on_call: Callable[[ModelCall], None],
    feedback: Callable[[Sequence[Message], str, str], Sequence[Message]],
    what: str = "reply",
) -> tuple[T, str]:
    """(``parse(reply)``, the reply): the worker's action (``generate``) or any other reply
    read strictly (a best-of-N judge's pick). A reply ``parse`` refuses with a ValueError, or
    one cut off, goes back to the model through ``feedback(messages, reply, problem)``, at most
    ``tries - 1`` times; then ``RunEnded`` (cause ``invalid_replies``; ``what`` names the
    wanted thing in its message). A refusal ends it as infeasible."""
    problem = ""
    for _ in range(tries):
        start = time.perf_counter()
        try:
            reply = call(messages)
        except OutputTruncated as err:
            text, problem = err.partial_text, CUT_OFF
            on_call(ModelCall.of(purpose, text, err.usage, start, 1, problem))
        except Refused as err:
            on_call(ModelCall.of(purpose, err.refusal, err.usage, start, 1, "refused"))
            raise RunEnded(
                f"the model refused the task: {err.refusal.strip()[:300]}",
                status=RunStatus.INFEASIBLE,
                cause="refused",
            ) from err
        else:
            text = reply.text
            try:
                value = parse(text)
            except ValueError as err:
                problem = str(err)
                on_call(ModelCall.of(purpose, text, reply.usage, start, reply.attempts, problem))
            else:
                on_call(ModelCall.of(purpose, text, reply.usage, start, reply.attempts))
                return value, text
        messages = feedback(messages, text, problem)
    raise RunEnded(
        f"no usable {what} after {tries} replies; the last problem: {problem}",
        status=RunStatus.FAILED,
        cause="invalid_replies",
    )


__all__ = ["generate", "generate_parsed"]
