"""ASGI middleware: Gradio's routes for streamed input (``POST /gradio_api/stream/<event_id>`` and
``.../close``) are answered 404: this page has no input that streams (webcam, streaming
microphone), so no one of its events takes one.

Gradio looks the event up by id alone and hands it the posted values: anyone holding another
visitor's event id replaced the inputs of that visitor's running request. With valid values the
request then never answered (480 "generating" messages a second to its client, 70 % of a core,
while the ledger said ``ok``); with one value it ended at once with the stranger's input error
(helper-87). The page's streamed audio output (``GET /gradio_api/stream/<session>/...``, HLS) is
another route and is left alone.
"""

from __future__ import annotations

import re

from .asgi_requests import answer_json, route_path

_STREAM_INPUT = re.compile(r"^/gradio_api/stream/[^/]+(/close)?/?$")
MESSAGE = ("Not found: this app takes no streamed input (POST /gradio_api/stream/<event_id> sends the next "
           "values to an event whose input streams, and none of this page's does). Send a request with "
           "POST /gradio_api/call/<name> or gradio_client.")


class NoStreamedInput:
    """Pure ASGI middleware; other requests pass through untouched."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST" and _STREAM_INPUT.match(route_path(scope)):
            await answer_json(send, 404, MESSAGE)
            return
        await self.app(scope, receive, send)
