"""``agent-s mcp --transport http``: the MCP server over streamable HTTP, on loopback, behind the
servers' lock (``agent_s.guards.servers``).

    sock = listen("127.0.0.1", 8765)
    serve(build_server(settings), sock, Door(token, sock.getsockname()[1]))

Every request, on every path, passes the lock before the MCP SDK sees it: the Host header names
this server (421 otherwise), an Origin header is this server's own (403 otherwise), the
``Authorization: Bearer TOKEN`` header carries the server's token (401 otherwise, with
``WWW-Authenticate: Bearer``), and a POST is JSON (415 otherwise), so a page in a browser cannot
drive the server even when it runs on the same machine. Nothing is served to other machines:
the socket is bound to a loopback address only.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from agent_s.guards.servers import Door, Refusal, bearer, loopback_address

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``, which must be a loopback address (port 0: any free one).
    A non-loopback host or a port in use raises ``ValueError`` naming the fix."""
    address = loopback_address(host)
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError as error:
        sock.close()
        reason = error.strerror or str(error)
        raise ValueError(
            f"--port {port}: cannot listen on {address} ({reason}); pick another"
        ) from None
    sock.listen(64)
    return sock


class GuardedApp:
    """An ASGI app that answers only the requests ``door`` lets in, and hands those to
    ``app`` (the MCP SDK's Starlette app). Lifespan events pass through; websockets are refused."""

    def __init__(self, app: App, door: Door) -> None:
        self.app = app
        self.door = door

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        given = [v for k, v in headers if k.lower() == "authorization"]
        token = bearer(given[0]) if len(given) == 1 else None
        refusal = self.door.check(str(scope["method"]), headers, token)
        if refusal is None:
            await self.app(scope, receive, send)
        else:
            await _refuse(refusal, send)


async def _refuse(refusal: Refusal, send: Send) -> None:
    body = (refusal.reason + "\n").encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"),
    ]
    if refusal.kind == "token":
        headers.append((b"www-authenticate", b'Bearer realm="agent-s"'))
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def serve(server: Any, sock: socket.socket, door: Door) -> None:
    """Serve ``server`` (an ``MCPServer``) on ``sock`` behind ``door`` until interrupted."""
    import anyio
    import uvicorn

    host = sock.getsockname()[0]
    app = GuardedApp(server.streamable_http_app(host=host), door)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


__all__ = ["GuardedApp", "listen", "serve"]
