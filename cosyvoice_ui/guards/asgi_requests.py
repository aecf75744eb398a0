"""ASGI helpers the guards share: read a request's body and hand it on (rewritten or not), and
ask Gradio whether the caller is logged in."""

from __future__ import annotations


async def logged_in(app, scope, route: str) -> bool:
    """Gradio's own ``GET /gradio_api/login_check``, asked with this request's cookies: True when
    ``--auth`` is off or the caller is logged in.

    Args:
        app: the ASGI app below the middleware (Gradio mounted in it).
        scope: the ASGI scope of the request being checked.
        route: the Gradio route the request's path ends in (``/gradio_api/cancel``), so the login
            check is asked under the same mount prefix.
    """
    path = scope["path"][: scope["path"].rfind(route)] + "/gradio_api/login_check"
    check = {**scope, "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b""}
    status = 0

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(check, receive, send)
    return status == 200


async def read_body(receive) -> bytes:
    """The whole request body (what arrived before the client left, if it left)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client left
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def replay(body: bytes, receive):
    """A ``receive`` for the app below that first gives ``body`` whole, then waits on ``receive``."""
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # later reads wait for the disconnect, as usual
    return replay


def with_length(scope, length: int) -> dict:
    """``scope`` with its Content-Length header set to ``length`` (a body read and rewritten)."""
    headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
    return {**scope, "headers": headers + [(b"content-length", str(length).encode())]}
