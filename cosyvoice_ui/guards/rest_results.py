"""ASGI middleware: the result of a two-step REST call is read by one GET at a time, and a GET
after it was delivered is told so.

Gradio's REST API (``POST /gradio_api/call/<api>`` gives an ``event_id``; ``GET
/gradio_api/call/<api>/<event_id>`` streams the events) hands each message to one reader. A
second GET of an event whose result was already sent answered 200 and then nothing, forever;
two GETs at once split the messages between them, and one waited forever for its end
(forty-eighth newcomer session). Here:

- a GET of an event whose last message (``complete`` or ``error``) went out at once gets
  ``event: error`` saying so;
- a GET while another connection is reading the same event gets ``event: error`` at once;
- a GET after a reader left before the end (a dropped connection) goes on to Gradio, which
  sends what was not yet sent: a retry after a network blip still gets its result;
- a GET of an event id Gradio does not know gets Gradio's error event with words instead of its
  bare "404: Not Found" (only in a stream without Content-Length, as Gradio's is);
- a GET of an event that was not made by a REST call (the page's or gradio_client's, which joined
  the queue with a session of their own) gets that same answer: Gradio looks the event up by id
  alone and streamed its result to the GET, which took it from its own client, left waiting
  forever (helper-82). A REST call's event is its own session (Gradio names it by its id).

Up to :data:`_REMEMBERED` event ids are remembered (about 1 MB), the oldest forgotten first.
"""

from __future__ import annotations

import collections
import json
import re

from .asgi_requests import rest_result_event

_FINAL = re.compile(rb"(?:^|\n)event: (?:complete|error)\n")
_REMEMBERED = 10_000
_READING, _DELIVERED = "reading", "delivered"
_GRADIO_UNKNOWN = b'"404: Not Found"'
_UNKNOWN = json.dumps("404: No call with this event id is waiting here: event ids come from POST "
                      "/gradio_api/call/<name>, and one is forgotten once its result was read or the server "
                      "restarted. Send the call again for a new event id.").encode()


class OneReaderPerResult:
    """Pure ASGI middleware; anything that is not a GET of a REST call's result passes through."""

    def __init__(self, app, owner_of=lambda event_id: None) -> None:
        """``owner_of(event_id)``: the session_hash of the event while Gradio knows it, else None."""
        self.app, self.owner_of = app, owner_of
        self._events: collections.OrderedDict[str, str] = collections.OrderedDict()

    async def __call__(self, scope, receive, send) -> None:
        event_id = rest_result_event(scope)
        if event_id is None:
            await self.app(scope, receive, send)
            return
        if self.owner_of(event_id) not in (None, event_id):  # another session's event
            await _error(send, json.loads(_UNKNOWN))
            return
        state = self._events.get(event_id)
        if state == _DELIVERED:
            await _error(send, "This event has ended: its result was sent to an earlier GET, or that GET closed "
                               "before the end, which stopped the request. A result is sent once; send the request "
                               "again (POST to the call URL) for a new event id.")
            return
        if state == _READING:
            await _error(send, "Another connection is reading this event's result; a result is sent to one "
                               "reader. Wait for that one, or send the request again for a new event id.")
            return
        self._remember(event_id, _READING)
        delivered = False

        sized = False

        async def watch(message) -> None:
            nonlocal delivered, sized
            if message["type"] == "http.response.start":
                sized = any(k.lower() == b"content-length" for k, _ in message.get("headers", ()))
            body = message.get("body", b"") if message["type"] == "http.response.body" else b""
            if _FINAL.search(body) and _GRADIO_UNKNOWN in body and not sized:  # an unknown id was not delivered
                # Gradio's bare "404: Not Found" said nothing of why or what to do (helper-56).
                message = {**message, "body": body.replace(_GRADIO_UNKNOWN, _UNKNOWN)}
            elif _FINAL.search(body):
                delivered = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if delivered:
                self._remember(event_id, _DELIVERED)
            else:  # the reader left early: a retry may read on
                self._events.pop(event_id, None)

    def _remember(self, event_id: str, state: str) -> None:
        self._events[event_id] = state
        self._events.move_to_end(event_id)
        while len(self._events) > _REMEMBERED:
            self._events.popitem(last=False)


async def _error(send, message: str) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]})
    await send({"type": "http.response.body", "body": f"event: error\ndata: {json.dumps(message)}\n\n".encode()})
