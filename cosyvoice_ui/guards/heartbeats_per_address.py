"""ASGI middleware: one client address holds at most :data:`MAX_HEARTBEATS_PER_ADDRESS` open
heartbeats, at most half of those all clients together may hold, and all of them leave room for
requests that are not heartbeats.

Gradio's heartbeat (``GET /gradio_api/heartbeat/<session>``, one per open tab) is a server-sent
event stream that stays open as long as the client wants, for any session name it makes up. One
local client held 6,659 heartbeats open, every connection the process may have
(``guards/slow_clients.py``), so every other visitor and ``/healthz`` got 503 while it lasted, and
the web process grew from 706 to 1,050 MB for good (helper-97). Past the limit a new heartbeat is
answered 429 with what to do. The other held-open streams are bounded already: a session's
messages (``queue/data``) only while one of its requests waits or runs, and a REST call's result
only for a call in the queue (``guards/session_streams.py``, ``guards/rest_results.py``), so both
are bounded by ``--max-queue``. They are not counted: a ``queue/data`` refused while the total was
full left a request that had joined the queue to run for no one, and the page said the connection
had dropped (helper-100).

The address is the client's as uvicorn gives it: the connection's own, or, from a proxy named by
``--forwarded-allow-ips``, the one in its ``X-Forwarded-For``. uvicorn took that header from any
connection from 127.0.0.1 by default, so one local client sending a new address in each request
held 6,659 heartbeats again (helper-99); the app now trusts the header only from the addresses the
operator names. Every loopback address (``127.x.y.z``, ``::1``) counts as one: a local client can
bind as many of them as it likes. One address holds at most half of the total, or it filled the
total alone at an open-file limit of 1,024 (helper-100). A process on a trusted proxy's host that
forges addresses, or a crowd of real ones, is held by the total: at most
:func:`room_for_heartbeats` of the process's connections are heartbeats, so ``/healthz``, page loads,
API calls and the streams of requests in the queue always find a connection.
"""

from __future__ import annotations

import collections
import ipaddress
from typing import Callable

from .asgi_requests import HEARTBEAT, answer_json, route_path

MAX_HEARTBEATS_PER_ADDRESS = 256  # a class of 200 tabs behind one NAT
TOO_MANY = ("This address already holds {n} open heartbeats (one per open page of this app): close some "
            "tabs, or clients that never ended, and try again.")
TOO_MANY_IN_TOTAL = ("The server already holds {n} open heartbeats (one per open page of this app), all its "
                     "connections leave room for: try again in a moment.")
LOOPBACK = "this machine (loopback)"


def room_for_heartbeats(max_connections: int) -> int:
    """Open heartbeats allowed in total: the connection limit (``slow_clients.connection_limit``)
    less a quarter of it, at least 16, kept for requests that end (page loads, uploads, API
    calls, ``/healthz``); at least 8. Our choice: a quarter is enough for the requests of the
    visitors the heartbeats belong to, which end in seconds."""
    return max(8, max_connections - max(16, max_connections // 4))


def _counted_as(address: str) -> str:
    """The key an address is counted under: loopback addresses are one."""
    try:
        return LOOPBACK if ipaddress.ip_address(address).is_loopback else address
    except ValueError:  # a Unix socket's path, or "?"
        return address


class HeartbeatsPerAddress:
    """Pure ASGI middleware; see the module docstring.

    Args:
        app: the ASGI app inside.
        limit: open heartbeats per client address (and at most half of ``total``).
        total: open heartbeats in all (a callable, as the connection limit is set once the server
            starts: ``lambda: room_for_heartbeats(DeadlineH11Protocol.max_connections)``).
    """

    def __init__(self, app, limit: int = MAX_HEARTBEATS_PER_ADDRESS, total: Callable[[], int] = lambda: 8192) -> None:
        self.app, self.limit, self.total = app, limit, total
        self._open: collections.Counter = collections.Counter()
        self._open_in_total = 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET" or not route_path(scope).startswith(HEARTBEAT):
            await self.app(scope, receive, send)
            return
        address = _counted_as((scope.get("client") or ("?",))[0])
        total = self.total()
        per_address = min(self.limit, max(1, total // 2))
        if self._open[address] >= per_address:
            await answer_json(send, 429, TOO_MANY.format(n=per_address), headers=((b"retry-after", b"10"),))
            return
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
