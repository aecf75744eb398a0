"""HTTP connections that stall are closed, and a flood of connections is turned away at the door.

uvicorn closes an idle keep-alive connection after a response (``timeout_keep_alive``), but sets
no deadline on a connection that never sends a whole request head, nor on a body that stops
midway. Such connections stayed open for good: 10,500 half-sent uploads held 14,813 file handles
(a socket and a temporary file each) until the web process hit its open-file limit, and then
every accept failed and asyncio logged 16,384 tracebacks in seconds (helper-51).

:class:`DeadlineH11Protocol` is uvicorn's own h11 protocol (``uvicorn.Config(http=...)``, the
documented way to choose one) with two additions:

- a read deadline: a request head must arrive whole within ``read_timeout_s`` of the connection
  (or of its first byte after a response), and a body may pause for at most ``read_timeout_s``
  between bytes; past it the connection is closed (the app sees a client disconnect). A pause
  that is the server's own (uvicorn stopped reading because the app has not taken the bytes
  yet) does not count.
- a connection limit: beyond ``max_connections`` open connections (:func:`connection_limit`) a
  new one is answered 503 and closed at once, so the process keeps file handles for its own
  files, the worker's pipes and the clients already served.
- a limit per address: one remote address holds at most half of ``max_connections``. 120 POSTs
  sending a byte of body every 10 s (never a pause long enough for the deadline) held every
  connection, and ``/healthz``, the login and the page answered 503 to everyone (helper-100).
  Loopback addresses and the proxies named by ``--forwarded-allow-ips`` (not ``*``) are not
  limited: behind a proxy every client comes from its address (nginx buffers a request's body before it sends it on,
  so a slow body never reaches the app), and a local process can open as many connections as the
  operating system lets it in any case.

Both log at most one line a minute, with a count.
"""

from __future__ import annotations

import asyncio
import collections
import ipaddress
import logging
import os
import resource

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..errors import STOPPING_MESSAGE
from ..log_throttle import OncePerMinute, OncePerMinuteByKind
from .http_errors import CUT_AT_SHUTDOWN

log = logging.getLogger(__name__)


def _plain_response(status: bytes, body: bytes, headers: bytes = b"") -> bytes:
    """A whole HTTP/1.1 response with a text body that closes the connection, written to a
    transport directly (before or instead of the app)."""
    return (b"HTTP/1.1 %s\r\ncontent-type: text/plain; charset=utf-8\r\n%sconnection: close\r\n"
            b"content-length: %d\r\n\r\n%s" % (status, headers, len(body), body))


_BUSY_RESPONSE = _plain_response(b"503 Service Unavailable",
                                 b"Too many open connections to this server; try again in a moment.")
_STOPPING_RESPONSE = _plain_response(b"503 Service Unavailable", STOPPING_MESSAGE.encode())
_CROWDING_RESPONSE = _plain_response(b"429 Too Many Requests", b"This address holds half of this server's connections "
                                     b"already; close some and try again.", b"retry-after: 10\r\n")


def _limited_address(client, unlimited: tuple) -> str | None:
    """The address a connection is counted under, or None when it is not limited (loopback, a
    Unix socket, or in one of the ``unlimited`` networks)."""
    try:
        address = ipaddress.ip_address(client[0]) if client else None
    except ValueError:
        return None
    if address is None or address.is_loopback or any(address in network for network in unlimited):
        return None
    return str(address)


def connection_limit() -> int:
    """Open connections allowed: a third of the file handles the process has left under its soft
    open-file limit (``RLIMIT_NOFILE``), at least 32 and at most 8192. A connection holds up to two
    (its socket, and a temporary file while it uploads); the rest stay for logs and the worker."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 8192
    try:
        in_use = len(os.listdir("/proc/self/fd"))
    except OSError:  # no /proc (not Linux)
        in_use = 64
    return max(32, min(8192, (soft - in_use) // 3))


# What uvicorn warns about for each request a client sends so: garbage bytes (it answers 400), an
# Upgrade header it does not serve.
_CLIENT_MADE_WARNINGS = ("Invalid HTTP request received.", "Unsupported upgrade request.")
_client_made = OncePerMinuteByKind(log, logging.WARNING, "uvicorn: %s")


class _QuietInvalidRequests:
    """uvicorn's logger for one connection, with its warnings about what a client sent
    (``_CLIENT_MADE_WARNINGS``) written at most once a minute each, with a count: garbage sent in
    a loop wrote a line each (helper-56). Everything else goes to uvicorn's logger as before."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger

    def warning(self, msg, *args, **kwargs) -> None:
        if msg in _CLIENT_MADE_WARNINGS and not args:
            _client_made.note(msg, msg.rstrip("."))
            return
        self._logger.warning(msg, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._logger, name)


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a read deadline and a connection limit (see the module).

    Configure the class before the server starts: ``DeadlineH11Protocol.configure(30.0)``.
    """

    read_timeout_s: float = 30.0
    max_connections: int = 8192
    unlimited: tuple = ()  # networks whose connections are not limited per address
    _per_address: collections.Counter = collections.Counter()
    _admitted = 0  # open connections let in (those turned away are not counted while they close)
    _stalled = OncePerMinute(log, logging.WARNING, "closed a connection from %s that sent no whole request within %g s")
    _turned_away = OncePerMinute(log, logging.WARNING, "turned away a connection: %d are open (limit %d, from the "
                                                       "open-file limit)")
    _crowding = OncePerMinute(log, logging.WARNING, "turned away a connection from %s: it holds %d, half of the "
                                                    "limit")

    @classmethod
    def configure(cls, read_timeout_s: float, max_connections: int | None = None,
                  trusted_proxies: tuple[str, ...] = ()) -> None:
        """Set the deadline (seconds), the connection limit (default :func:`connection_limit`) and
        the proxies not limited per address (``--forwarded-allow-ips``: addresses, networks, ``*``)."""
        cls.read_timeout_s = read_timeout_s
        cls.max_connections = connection_limit() if max_connections is None else max_connections
        # "*" (or a /0) would exempt every client: with it one remote address held every connection
        # again (helper-102). Only proxies named more narrowly are exempt.
        networks = (ipaddress.ip_network(p, strict=False) for p in trusted_proxies if p != "*")
        cls.unlimited = tuple(n for n in networks if n.prefixlen > 0)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.logger = _QuietInvalidRequests(self.logger)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._deadline: asyncio.TimerHandle | None = None
        self._counted_as: str | None = None
        self._admitted_here = False
        super().connection_made(transport)
        # Connections being turned away are not counted: a burst from one address over its share
        # counted against the limit while they closed, and /healthz got 503 now and then (helper-102).
        if DeadlineH11Protocol._admitted >= self.max_connections:
            self._turned_away.note(DeadlineH11Protocol._admitted, self.max_connections)
            transport.write(_BUSY_RESPONSE)
            transport.close()
            return
        address = _limited_address(self.client, self.unlimited)
        if address is not None:
            if self._per_address[address] >= max(1, self.max_connections // 2):
                self._crowding.note(address, self._per_address[address])
                transport.write(_CROWDING_RESPONSE)
                transport.close()
                return
            self._per_address[address] += 1
            self._counted_as = address
        DeadlineH11Protocol._admitted += 1
        self._admitted_here = True
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            self._arm()  # a body may pause read_timeout_s between bytes
        elif state is h11.IDLE:
            if self._deadline is None:  # part of a head: it has read_timeout_s from its first byte
                self._arm()
        else:  # the request is whole (or the connection switched protocol): the app has it now
            self._disarm()

    def shutdown(self) -> None:
        """uvicorn's graceful shutdown, except for a request whose body is still arriving (a slow
        upload): it held an idle app's exit for the whole graceful timeout (5 s), then was
        cancelled with a 145-line ``CancelledError`` traceback in the log (helper-137). It cannot be
        answered before its body ends, so it is ended now with a 503 (if the client still reads),
        and the app sees its client gone (a partial upload is deleted, as for any disconnect). An
        upload's progress stream (Gradio's ``upload_progress``, which the page holds open beside the
        upload) is closed too: it waited for the upload ended here, and held the exit the same way
        (helper-143)."""
        cycle = self.cycle
        if self.conn.their_state is h11.SEND_BODY and (cycle is None or not cycle.response_started):
            if cycle is not None:  # for the log: the server ended it, the client did not leave
                cycle.scope[CUT_AT_SHUTDOWN] = True
            self.transport.write(_STOPPING_RESPONSE)
            self.transport.close()
            return
        if cycle is not None and not cycle.response_complete and cycle.scope.get("path", "").endswith(
                "/upload_progress"):
            self.transport.close()
            return
        super().shutdown()

    def on_response_complete(self) -> None:
        self._disarm()  # idle until the next request: uvicorn's keep-alive timeout applies
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if getattr(self, "_admitted_here", False):
            DeadlineH11Protocol._admitted -= 1
            self._admitted_here = False
        if getattr(self, "_counted_as", None) is not None:
            self._per_address[self._counted_as] -= 1
            if self._per_address[self._counted_as] <= 0:
                del self._per_address[self._counted_as]
            self._counted_as = None
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.read_timeout_s, self._expired)

    def _disarm(self) -> None:
        if getattr(self, "_deadline", None) is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            return
        if self.flow is not None and self.flow.read_paused:
            self._arm()  # the app has not taken the bytes yet: the wait is the server's, not the client's
            return
        self._stalled.note(self.client[0] if self.client else "an unknown address", self.read_timeout_s)
        self.transport.close()


_accept_failed = OncePerMinute(log, logging.WARNING, "could not accept a connection: %s (the process is out of file "
                                                     "handles; connections past the limit are turned away)")


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Make ``loop`` log a failed ``accept()`` (``EMFILE`` in a burst of connections) as one line a
    minute instead of asyncio's traceback per attempt: 1,500 connections at once against
    ``ulimit -n 1024`` wrote 1,100 tracebacks in 2 s (helper-54), as asyncio accepts a backlog of
    sockets before any of them reaches :class:`DeadlineH11Protocol`'s limit. Other errors go to
    the loop's handler as before."""
    previous = loop.get_exception_handler()

    def handler(loop: asyncio.AbstractEventLoop, context: dict) -> None:
        if str(context.get("message", "")).startswith("socket.accept() out of system resource"):
            _accept_failed.note(context.get("exception"))
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
