"""ASGI middleware: while the app drains, a REST call is refused at once with 503.

Gradio's REST API answers ``POST /gradio_api/call/<name>`` with an event id and sends the result
to a later ``GET``. During a drain the call was refused inside its event ("shutting down"), but the
server could close before the client's GET came: the last requests of each client got an event id
and then an empty result, with no word of whether to retry (helper-60, one SIGTERM). A POST in
the drain is answered here instead, in the same response, with ``Retry-After``. The page and
``gradio_client`` (``queue/join``) keep their in-event answer, which reaches them on their open
stream, until the last moments of the shutdown: then a join is refused here too (503), since the
stream its answer would take is about to end (helper-77: the ledger said "refused" and the client
got an empty error). gradio_client words a 503 on a join as "Queue is full! Please try again.",
the page as "This application is currently busy. Please try again."
"""

from __future__ import annotations

from typing import Callable

from ..errors import STOPPING_MESSAGE
from .asgi_requests import answer_json, read_json
from .queue_join import is_join


class RefuseWhileStopping:
    """Pure ASGI middleware.

    Args:
        app: the ASGI app inside.
        stopping: True once the drain has begun (``Supervisor.stopping``).
        joins_closed: True in the last moments of the shutdown (``server.close_joins``).
        on_refused: called with the path of each call refused here, and for a join with its
            ``fn_index`` too (the synthesis calls go to the ledger, as every refusal does).
    """

    def __init__(self, app, stopping: Callable[[], bool], joins_closed: Callable[[], bool] = lambda: False,
                 on_refused: Callable[..., None] = lambda path, fn_index=None: None,
                 joins: "JoinsInFlight | None" = None) -> None:
        self.app, self.stopping, self.joins_closed, self.on_refused = app, stopping, joins_closed, on_refused
        self.joins = joins if joins is not None else JoinsInFlight()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            path = scope.get("path", "")
            if "/gradio_api/call/" in path and self.stopping():
                self.on_refused(path)
                await answer_json(send, 503, STOPPING_MESSAGE, close=True, headers=((b"retry-after", b"10"),))
                return
            if is_join(scope) and self.joins_closed():
                _, payload = await read_json(receive, scope)
                fn_index = payload.get("fn_index") if payload else None
                self.on_refused(path, fn_index)
                await answer_json(send, 503, STOPPING_MESSAGE, close=True, headers=((b"retry-after", b"10"),))
                return
            if is_join(scope):
                self.joins.count += 1
                try:
                    await self.app(scope, receive, send)
                finally:
                    self.joins.count -= 1
                return
        await self.app(scope, receive, send)


class JoinsInFlight:
    """Joins let in and not yet answered with their event id. The shutdown waits for them too: one
    let in just before the door closed reached Gradio's queue after it had stopped, and its
    client was told "Queue is full" with no ledger record (a test run under load, 2 of 22)."""

    def __init__(self) -> None:
        self.count = 0  # changed and read in the event loop's thread only
