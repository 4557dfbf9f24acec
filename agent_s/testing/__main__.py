"""``python -m agent_s.testing serve SCRIPT.json [--host H] [--port N]``

Serves the scripted model server until interrupted (Ctrl-C or SIGTERM). The first line on
stdout is the base URL (``http://127.0.0.1:PORT``; the OpenAI SDK wants ``.../v1``). On exit it
verifies the script: exit code 0 if every step was used and no request broke the script,
1 otherwise (the problems go to stderr), 2 for a bad script file.

SCRIPT.json is a list of steps, or ``{"steps": [...]}``; see ``agent_s.testing.scripted_replies``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from agent_s.testing.scripted_replies import Step
from agent_s.testing.scripted_server import ScriptedModelServer


def load_script(path: Path) -> list[Step]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict):
        data = data.get("steps")
    if not isinstance(data, list):
        raise ValueError("the script must be a JSON list of steps or an object with 'steps'")
    return [Step.from_json(item) for item in data]


def _serve(args: argparse.Namespace) -> int:
    try:
        steps = load_script(Path(args.script))
    except (OSError, ValueError, TypeError) as err:
        sys.stderr.write(f"cannot load script {args.script}: {err}\n")
        return 2
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    server = ScriptedModelServer(steps, host=args.host, port=args.port).start()
    sys.stdout.write(server.base_url + "\n")
    sys.stdout.flush()
    sys.stderr.write(
        f"scripted model server: {len(steps)} step(s); OpenAI SDK base_url="
        f"{server.openai_base_url}, Anthropic SDK base_url={server.base_url}\n"
    )
    stop.wait()
    server.close()
    try:
        server.verify()
    except AssertionError as err:
        sys.stderr.write(f"{err}\n")
        return 1
    sys.stderr.write(f"scripted model server: all {len(steps)} step(s) used, no stray requests\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent_s.testing")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve a scripted model from a JSON script")
    serve.add_argument("script", help="JSON file: a list of steps")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args(argv)
    return _serve(args)


if __name__ == "__main__":
    sys.exit(main())
