"""ASGI helpers the guards share: answer with a JSON refusal, read a request's body and hand it
on (rewritten or not), and ask Gradio whether the caller is logged in."""

from __future__ import annotations

import json
import re

import pydantic

# Gradio's routes that answer with a server-sent event stream held open as long as the client
# wants: the guards that count or own streams share these (they were spelled three ways).
HEARTBEAT = "/gradio_api/heartbeat/"  # + session_hash
QUEUE_DATA = "/gradio_api/queue/data"  # ?session_hash=...: a session's messages
# A REST call's result; Gradio serves the same stream at /call/v2/<name>/<id> (helper-110: a second
# reader there took another session's result, and read one twice, past the guards of /call/).
_REST_RESULT = re.compile(r"^/gradio_api/call/(?:v2/)?[^/]+/([0-9A-Za-z_-]{1,64})/?$")


def first_header(scope, name: bytes, default: bytes = b"") -> bytes:
    """A request header's first value, as Starlette's ``request.headers[name]`` (and so Gradio)
    reads it; ``default`` when it is absent. Every guard reads headers here: ``dict(headers)`` took
    the last of two, so a guard could judge a value other than the one Gradio then used.

    Args:
        scope: an ASGI scope (``http`` or ``websocket``).
        name: the header's name in lower case, e.g. ``b"origin"``.
    """
    return next((v for k, v in scope.get("headers") or () if k.lower() == name), default)


async def answer_json(send, status: int, detail: str, *, close: bool = False,
                      headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """Send a whole HTTP response ``{"detail": detail}`` (FastAPI's shape for an HTTPException, so
    gradio_client and the page show the message as they show Gradio's own refusals).

    Args:
        send: the ASGI ``send`` of a request no response has started for.
        status: the HTTP status (401, 403, 413, 503, 507, ...).
        detail: the message for the person; any text (it is JSON-escaped here).
        close: add ``Connection: close``, for a refusal sent before the body was read (keeping the
            connection would make the server read, or the client send, the rest of it).
        headers: more headers, e.g. ``((b"retry-after", b"10"),)``.
    """
    body = json.dumps({"detail": detail}).encode()
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    if close:
        start.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})


async def refuse(scope, send, status: int, detail: str) -> None:
    """:func:`answer_json` for an HTTP request; a WebSocket is closed with 1008 (policy violation),
    the one refusal its handshake can carry here."""
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    await answer_json(send, status, detail)


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


_PARSED = "cosyvoice_ui.json_body"  # the scope key of read_json's last parse


async def read_json(receive, scope: dict) -> tuple[bytes, dict | None]:
    """The whole request body, and the JSON object it holds (None when it is not one: the app
    below answers a malformed body itself). The one parser of the queue/join and cancel bodies
    the guards look into (``{"session_hash", "fn_index", "event_id", ...}``).

    The parse is kept in ``scope`` (which :func:`with_length` copies on): a guard further in,
    handed the same body by :func:`replay`, takes it instead of parsing it again (a join body of
    up to the request limit went through ``json.loads`` in three guards). The payload is shared:
    callers must not change it."""
    body = await read_body(receive)
    parsed = scope.get(_PARSED)
    if parsed is not None and parsed[0] == body:
        return parsed
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError too; 5,000 nested "[" was a 500 (helper-95)
        payload = None
    scope[_PARSED] = parsed = (body, payload if isinstance(payload, dict) else None)
    return parsed


_INT = pydantic.TypeAdapter(int)


def lax_int(value) -> int | None:
    """``value`` as an int the way Gradio's request models read one (pydantic's lax mode: ``"5"``,
    ``5.0`` and ``"5.0"`` are 5), or None when it is none (a list, ``"five"``, 5.5, null)."""
    try:
        return _INT.validate_python(value)
    except pydantic.ValidationError:
        return None


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


def route_path(scope) -> str:
    """The path Starlette routes by: the request's path without its root path (a proxy's prefix,
    ``guards/forwarded_prefix.py``) when the proxy kept it. Matching the path's end instead took
    ``/anything/gradio_api/cancel`` for a cancel and answered it 401 without --auth (Gradio: 404;
    helper-74)."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root + "/") else path


def rest_result_event(scope) -> str | None:
    """The event id of a ``GET /gradio_api/call/<name>/<event_id>`` (a REST call's result stream;
    also ``/call/v2/<name>/<event_id>``), else None; matched on :func:`route_path`, as Starlette routes it."""
    if scope["type"] != "http" or scope.get("method") != "GET":
        return None
    match = _REST_RESULT.match(route_path(scope))
    return match.group(1) if match else None
