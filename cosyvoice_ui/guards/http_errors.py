"""ASGI middleware that keeps junk requests from flooding the server log.

uvicorn logs every exception that escapes the app as an "Exception in ASGI application" with
its whole traceback, about 100 lines. Several Gradio routes raise on input a client controls
(an unknown ``fn_index`` or event id, a ``/queue/data`` for an unknown session, a client that
leaves mid-upload), so a client repeating such a request could write megabytes of log per minute
(second and third newcomer sessions). Here:

- a client that leaves while sending its body (Starlette's ``ClientDisconnect``) is one line, at
  most one a minute with a count (a flood of dropped uploads wrote a line each; helper-51); one
  the shutdown ended (``guards/slow_clients.py``) says so;
- a 4xx ``HTTPException`` raised after the response started (Gradio's result stream for an event
  id it no longer knows, which a client reading a result twice gets: the client was already sent
  the error) is one line, at most one a minute per method and status with a count; it logged a
  90-line traceback (sixteenth newcomer session), then a line per request (helper-56);
- any other error that escapes is logged with its traceback the first time its kind is seen
  (exception type and the line that raised it) and after that as one line a minute per kind,
  with a count, so a real bug still shows its traceback once; the client gets a plain 500.
"""

from __future__ import annotations

import logging
import traceback

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from ..log_throttle import OncePerMinute, OncePerMinuteByKind, printable

log = logging.getLogger(__name__)
_client_left = OncePerMinute(log, logging.INFO, "a client left in the middle of %s %s")
# Set in a request's scope by slow_clients when the shutdown ends a request still sending its body:
# it was logged as a client that left (helper-137).
CUT_AT_SHUTDOWN = "cosyvoice_ui.cut_at_shutdown"
_cut_at_shutdown = OncePerMinute(log, logging.INFO, "ended %s %s, still arriving, at shutdown (answered 503)")
# A result GET for an unknown event id, /queue/data for an unknown session: one line a minute per
# method and status (a line each flooded the log; helper-56).
_answered = OncePerMinuteByKind(log, logging.INFO, "answered %s %s with %d: %s")

MAX_KINDS = 1000  # distinct error kinds remembered; beyond this each gets one line without traceback


class QuietRequestErrors:
    """Pure ASGI middleware (wraps the whole app, Gradio included); see the module docstring."""

    def __init__(self, app) -> None:
        self.app = app
        self.seen: dict[tuple[str, str, int], int] = {}
        self.repeats = OncePerMinuteByKind(log, logging.WARNING, "error while serving %s: %s: %.200s (kind seen %d "
                                                                 "times; traceback logged the first time)",
                                           max_kinds=MAX_KINDS)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_tracking(message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, send_tracking)
        except ClientDisconnect:
            (_cut_at_shutdown if scope.get(CUT_AT_SHUTDOWN) else _client_left).note(
                scope.get("method"), printable(scope.get("path")))
        except Exception as e:  # noqa: BLE001 - logged here instead of by uvicorn
            client_error = _client_error(e)
            if client_error is not None:
                _answered.note((scope.get("method"), client_error.status_code), scope.get("method"),
                               printable(scope.get("path")), client_error.status_code, printable(client_error.detail))
                await self._finish(send, started, client_error.status_code, str(client_error.detail))
                return
            self._log(scope, e)
            await self._finish(send, started)

    def _log(self, scope, error: Exception) -> None:
        frames = traceback.extract_tb(error.__traceback__)
        where = frames[-1] if frames else None
        kind = (type(error).__name__, where.filename if where else "", where.lineno if where else 0)
        count = self.seen.get(kind, 0) + 1
        if count == 1 and len(self.seen) >= MAX_KINDS:
            count = 2  # too many kinds to remember: no more tracebacks
        else:
            self.seen[kind] = count
        request = f"{scope.get('method')} {printable(scope.get('path'))}"
        if count == 1:
            log.error("error while serving %s (traceback shown once per kind of error):", request, exc_info=error)
        else:  # past MAX_KINDS, the kinds not remembered share one throttle
            self.repeats.note(kind, request, type(error).__name__, printable(error), count)

    @staticmethod
    async def _finish(send, started: bool, status: int = 500, body: str = "Internal Server Error") -> None:
        try:
            if not started:
                await send({"type": "http.response.start", "status": status,
                            "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
                await send({"type": "http.response.body", "body": body.encode()})
            else:  # a stream that broke off: end it cleanly
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except Exception:  # noqa: BLE001 - the connection is already gone
            pass


def _client_error(error: BaseException) -> HTTPException | None:
    """The 4xx HTTPException behind ``error`` (itself, or the cause Starlette wraps in "Caught
    handled exception, but response already started"), or ``None``."""
    for e in (error, error.__cause__):
        if isinstance(e, HTTPException) and 400 <= e.status_code < 500:
            return e
    return None
