"""ASGI middleware: a session's message stream (``GET /gradio_api/queue/data?session_hash=...``)
has one reader at a time, and a REST call's messages are read only through its own GET.

Gradio hands each of a session's messages to whichever connection is reading the session, and
ends the session's requests when a reader disconnects. So anyone holding a visitor's
``session_hash`` (without --auth, or logged in as the shared user) took that visitor's result,
and the visitor waited forever; or opened and closed the stream, which cancelled the visitor's
request (gradio_client got an empty ``CancelledError``, the ledger said "cancelled"); and a REST
call's session is its event id, so the same worked with a REST caller's event id, whose GET then
got only heartbeats (helper-85).

The page and gradio_client open one stream per session (and a new one once the last closed). Here:

- a second reader of a session whose stream is open waits up to :data:`HANDOVER_S` for it to end
  (the client's next stream may arrive while the server still closes the last), then is refused;
- a reader of a REST call's session (its event id) is refused: its result is read with ``GET
  /gradio_api/call/<name>/<event_id>`` (``guards/rest_results.py``);
- a reader of a session with no request waiting or running is refused: Gradio kept such a stream
  open, so a stranger who opened it between a visitor's requests took the visitor's next result
  (helper-89). The page and gradio_client open their stream after joining the queue;
- a request naming ``session_hash`` more than once is refused: this guard read the first and
  Gradio the last, which let a second reader in (helper-89).

Left open: a stranger who holds a visitor's session_hash and opens the stream in the moment
between the visitor's join and the visitor's own stream.

A refusal is the stream's own error message (``{"msg": "unexpected_error"}``), as Gradio sends
one for an unknown session; it is sent only to a caller that passes the login check (``--auth``),
so that it tells an outsider nothing about which sessions exist.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse

from .asgi_requests import QUEUE_DATA as ROUTE, logged_in, route_path

HANDOVER_S = 2.0
SECOND_READER = ("Another connection is reading this session's messages: a session has one stream at a time "
                 "(gradio_client and the page open one each). Use a session_hash of your own.")
REST_SESSION = ("This session_hash is a REST call's event id: read that call's result with GET "
                "/gradio_api/call/<name>/<event_id>.")
NOTHING_PENDING = ("No request of this session is waiting or running: open the stream after joining the queue "
                   "(POST /gradio_api/queue/join), as gradio_client and the page do.")
TWO_SESSIONS = "The request names session_hash more than once: send it once."


class OneStreamPerSession:
    """Pure ASGI middleware; anything that is not a ``queue/data`` stream passes through.

    Args:
        app: the ASGI app below.
        owner_of: ``owner_of(event_id)``: the session_hash of the event while Gradio knows it,
            else None (a REST call's event is its own session).
        pending: ``pending(session_hash)``: True while a request of that session waits or runs
            (or its answer is still to be read).
    """

    def __init__(self, app, owner_of=lambda event_id: None, pending=lambda session: True) -> None:
        self.app, self.owner_of, self.pending = app, owner_of, pending
        self._open: set[str] = set()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET" or route_path(scope) != ROUTE:
            await self.app(scope, receive, send)
            return
        query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
        named = query.get("session_hash") or []
        session = named[-1] if named else None  # the one Gradio reads
        if not session:  # Gradio answers a missing one (422)
            await self.app(scope, receive, send)
            return
        refusal = None
        if len(set(named)) > 1:
            refusal = TWO_SESSIONS
        elif self.owner_of(session) == session:
            refusal = REST_SESSION
        elif not self.pending(session):
            refusal = NOTHING_PENDING
        else:
            deadline = time.monotonic() + HANDOVER_S
            while session in self._open and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            if session in self._open:
                refusal = SECOND_READER
        if refusal is not None and await logged_in(self.app, scope, ROUTE):
            await _stream_error(send, refusal)
            return
        if refusal is not None:  # not logged in: Gradio's own 401
            await self.app(scope, receive, send)
            return
        self._open.add(session)
        try:
            await self.app(scope, receive, send)
        finally:
            self._open.discard(session)


async def _stream_error(send, message: str) -> None:
    body = json.dumps({"msg": "unexpected_error", "message": message, "success": False})
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]})
    await send({"type": "http.response.body", "body": f"data: {body}\n\n".encode()})
