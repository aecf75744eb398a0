"""ASGI middleware: one client address holds at most :data:`MAX_STREAMS_PER_ADDRESS` open streams.

Gradio's heartbeat (``GET /gradio_api/heartbeat/<session>``), a session's messages (``GET
/gradio_api/queue/data``) and a REST call's result (``GET /gradio_api/call/<name>/<event_id>``)
are server-sent event streams that stay open as long as the client wants. One local client held
6,659 heartbeats open, every connection the process may have (``guards/slow_clients.py``), so
every other visitor and ``/healthz`` got 503 while it lasted, and the web process grew from 706
to 1,050 MB for good (helper-97). A browser tab holds two such streams at a time, a
``gradio_client.Client`` one or two; past the limit a new stream from that address is answered
429 with what to do. The address is the client's as uvicorn gives it: behind a reverse proxy on
the same machine, the one in ``X-Forwarded-For``.
"""

from __future__ import annotations

import collections

from .asgi_requests import answer_json, route_path

MAX_STREAMS_PER_ADDRESS = 256  # a class of 100 tabs behind one NAT holds about 200
TOO_MANY = (f"This address already holds {MAX_STREAMS_PER_ADDRESS} open streams (heartbeats, queue messages, "
            "REST results): close some (tabs, clients that never ended) and try again.")


def _is_stream(path: str) -> bool:
    return (path.startswith("/gradio_api/heartbeat/") or path == "/gradio_api/queue/data"
            or (path.startswith("/gradio_api/call/") and path.count("/") >= 4))


class StreamsPerAddress:
    """Pure ASGI middleware; see the module docstring.

    Args:
        app: the ASGI app inside.
        limit: open streams per client address.
    """

    def __init__(self, app, limit: int = MAX_STREAMS_PER_ADDRESS) -> None:
        self.app, self.limit = app, limit
        self._open: collections.Counter = collections.Counter()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET" or not _is_stream(route_path(scope)):
            await self.app(scope, receive, send)
            return
        address = (scope.get("client") or ("?",))[0]
        if self._open[address] >= self.limit:
            await answer_json(send, 429, TOO_MANY, headers=((b"retry-after", b"10"),))
            return
        self._open[address] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._open[address] -= 1
            if self._open[address] <= 0:
                del self._open[address]
