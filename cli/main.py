import typer

app = typer.Typer()


@app.command()
def doctor() -> None:
    """Check."""


def main() -> None:
    app()
