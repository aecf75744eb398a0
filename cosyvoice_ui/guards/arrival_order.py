"""ASGI middleware: each ``POST .../queue/join`` is numbered as it arrives, for its session.

Gradio starts the events of one session in its own time: an event carrying a file (the prompt)
goes through Gradio's file handling first and started after a later press without one, so a
tab's third Generate ran before its second and the page kept the older result under the newer
text (helper-52). The number, taken here in arrival order, travels in a request header
(:data:`ARRIVAL_HEADER`) that Gradio hands to the handler with the request; the synthesis
service then queues a session's requests in that order (``SynthesisService.turn``).

Joins Gradio would mishandle are refused before they get here (``guards/queue_join.py``).
"""

from __future__ import annotations

from .asgi_requests import read_json, replay, with_length
from .queue_join import is_join, join_fields

ARRIVAL_HEADER = "x-cosyvoice-ui-arrival"
_HEADER = ARRIVAL_HEADER.encode()


class NumberArrivals:
    """Pure ASGI middleware.

    Args:
        app: the ASGI app inside.
        arrived: ``arrived(session_hash) -> int``: registers a request of that session and returns
            its number (``SynthesisService.arrived``).
        numbered: the ``fn_index`` values of the events to number (the synthesis events; filled in
            once the page is built). Others (Restart, Free cache) are not synthesis requests: a
            number no synthesis handler takes would hold the session's next request for a while.
    """

    def __init__(self, app, arrived, numbered: set[int]) -> None:
        self.app, self.arrived, self.numbered = app, arrived, numbered

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Only this middleware sets the header: one a client sends is dropped.
        scope = {**scope, "headers": [(k, v) for k, v in scope.get("headers", []) if k.lower() != _HEADER]}
        if not is_join(scope):
            await self.app(scope, receive, send)
            return
        body, payload = await read_json(receive, scope)
        session, fn_index = join_fields(payload)
        if isinstance(session, str) and session and fn_index in self.numbered:
            scope["headers"].append((_HEADER, str(self.arrived(session)).encode()))
        await self.app(with_length(scope, len(body)), replay(body, receive), send)
