"""ASGI middleware: one client address holds at most :data:`MAX_STREAMS_PER_ADDRESS` open streams,
and all clients together leave room for requests that are not streams.

Gradio's heartbeat (``GET /gradio_api/heartbeat/<session>``), a session's messages (``GET
/gradio_api/queue/data``) and a REST call's result (``GET /gradio_api/call/<name>/<event_id>``)
are server-sent event streams that stay open as long as the client wants. One local client held
6,659 heartbeats open, every connection the process may have (``guards/slow_clients.py``), so
every other visitor and ``/healthz`` got 503 while it lasted, and the web process grew from 706
to 1,050 MB for good (helper-97). A browser tab holds two such streams at a time, a
``gradio_client.Client`` one or two; past the limit a new stream from that address is answered
429 with what to do.

The address is the client's as uvicorn gives it: the connection's own, or, from a proxy named by
``--forwarded-allow-ips``, the one in its ``X-Forwarded-For``. uvicorn took that header from any
connection from 127.0.0.1 by default, so one local client sending a new address in each request
held 6,659 streams again (helper-99); the app now trusts the header only from the addresses the
operator names. Every loopback address (``127.x.y.z``, ``::1``) counts as one: a local client can
bind as many of them as it likes. A local client that the operator's trusted proxy address lets
it forge, or a crowd of real addresses, is held by the total instead: at most
:func:`room_for_streams` of the process's connections are streams, so ``/healthz``, page loads
and API calls always find a connection.
"""

from __future__ import annotations

import collections
import ipaddress
from typing import Callable

from .asgi_requests import answer_json, is_stream

MAX_STREAMS_PER_ADDRESS = 256  # a class of 100 tabs behind one NAT holds about 200
TOO_MANY = (f"This address already holds {MAX_STREAMS_PER_ADDRESS} open streams (heartbeats, queue messages, "
            "REST results): close some (tabs, clients that never ended) and try again.")
TOO_MANY_IN_TOTAL = ("The server already holds {n} open streams (heartbeats, queue messages, REST results), all "
                     "its connections leave room for: try again in a moment.")
LOOPBACK = "this machine (loopback)"


def room_for_streams(max_connections: int) -> int:
    """Open streams allowed in total: the connection limit (``slow_clients.connection_limit``)
    less a quarter of it, at least 16, kept for requests that end (page loads, uploads, API
    calls, ``/healthz``); at least 8. Our choice: a quarter is enough for the requests of the
    visitors the streams belong to, which end in seconds."""
    return max(8, max_connections - max(16, max_connections // 4))


def _counted_as(address: str) -> str:
    """The key an address is counted under: loopback addresses are one."""
    try:
        return LOOPBACK if ipaddress.ip_address(address).is_loopback else address
    except ValueError:  # a Unix socket's path, or "?"
        return address


class StreamsPerAddress:
    """Pure ASGI middleware; see the module docstring.

    Args:
        app: the ASGI app inside.
        limit: open streams per client address.
        total: open streams in all (a callable, as the connection limit is set once the server
            starts: ``lambda: room_for_streams(DeadlineH11Protocol.max_connections)``).
    """

    def __init__(self, app, limit: int = MAX_STREAMS_PER_ADDRESS, total: Callable[[], int] = lambda: 8192) -> None:
        self.app, self.limit, self.total = app, limit, total
        self._open: collections.Counter = collections.Counter()
        self._open_in_total = 0

    async def __call__(self, scope, receive, send) -> None:
        if not is_stream(scope):
            await self.app(scope, receive, send)
            return
        address = _counted_as((scope.get("client") or ("?",))[0])
        if self._open[address] >= self.limit:
            await answer_json(send, 429, TOO_MANY, headers=((b"retry-after", b"10"),))
            return
        total = self.total()
        if self._open_in_total >= total:
            await answer_json(send, 429, TOO_MANY_IN_TOTAL.format(n=total), headers=((b"retry-after", b"10"),))
            return
        self._open[address] += 1
        self._open_in_total += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._open_in_total -= 1
            self._open[address] -= 1
            if self._open[address] <= 0:
                del self._open[address]
