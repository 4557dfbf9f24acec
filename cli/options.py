"""Command-line options shared by ``run``, ``doctor`` and ``bench run``: one definition each."""

from __future__ import annotations

from typing import Annotated

import typer

Provider = Annotated[
    str | None,
    typer.Option(
        help="openai | anthropic | openai-compatible | openai-responses [env AGENT_S_PROVIDER]"
    ),
]
Model = Annotated[str | None, typer.Option(help="Model name [env AGENT_S_MODEL].")]
BaseUrl = Annotated[str | None, typer.Option(help="API base URL [env AGENT_S_BASE_URL].")]
ApiKey = Annotated[
    str | None, typer.Option(help="API key (default: the provider's usual variable).")
]
Ground = Annotated[
    str | None, typer.Option(help="auto | ocr | a11y | model | native [env AGENT_S_GROUND].")
]
GroundUrl = Annotated[str | None, typer.Option(help="Grounding model base URL.")]
GroundModel = Annotated[str | None, typer.Option(help="Grounding model name.")]
