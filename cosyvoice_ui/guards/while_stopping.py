"""ASGI middleware: while the app drains, a REST call is refused at once with 503.

Gradio's REST API answers ``POST /gradio_api/call/<name>`` with an event id and sends the result
to a later ``GET``. During a drain the call was refused inside its event ("shutting down"), but the
server could close before the client's GET came: the last requests of each client got an event id
and then an empty result, with no word of whether to retry (helper-60, one SIGTERM). A POST in
the drain is answered here instead, in the same response, with ``Retry-After``. The page and
``gradio_client`` (``queue/join``) keep their in-event answer, which reaches them on their open
stream.
"""

from __future__ import annotations

from typing import Callable

from .asgi_requests import answer_json

MESSAGE = "The application is shutting down and takes no new requests. Try again shortly."


class RefuseWhileStopping:
    """Pure ASGI middleware.

    Args:
        app: the ASGI app inside.
        stopping: True once the drain has begun (``Supervisor.stopping``).
        on_refused: called with the path of each call refused here (the synthesis calls go to the
            ledger, as every refusal does).
    """

    def __init__(self, app, stopping: Callable[[], bool], on_refused: Callable[[str], None] = lambda path: None) -> None:
        self.app, self.stopping, self.on_refused = app, stopping, on_refused

    async def __call__(self, scope, receive, send) -> None:
        if (scope["type"] == "http" and scope["method"] == "POST" and "/gradio_api/call/" in scope.get("path", "")
                and self.stopping()):
            self.on_refused(scope["path"])
            await answer_json(send, 503, MESSAGE, close=True, headers=((b"retry-after", b"10"),))
            return
        await self.app(scope, receive, send)
