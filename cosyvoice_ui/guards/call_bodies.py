"""ASGI middleware: the JSON body of a call to Gradio's API is checked before Gradio reads it.

Session hashes. Gradio keeps state under whatever ``session_hash`` a request names: a join's
list of unanswered events until its stream reads them (unread joins with 1 MB hashes grew the web
process by 1.1 GB in a minute, for good; helper-82), and a session's component states (up to
``SESSION_STATES`` of them, ``server.py``) for ``POST /gradio_api/run/<name>`` and ``POST
/gradio_api/component_server`` (1 MB hashes took the web process from 643 to 853 MiB in 200
calls, and from 619 to 1,668 MiB through component_server, for good; helper-108), and Gradio's
other names for them take a hash too: ``/gradio_api/api/<name>`` and ``POST
/gradio_api/call/<name>`` (+1 GB of web process in 600 calls; helper-110). So one rule holds for
every ``POST`` under ``/gradio_api/`` (and every ``queue/join``) whose body is not multipart: a
``session_hash`` over :data:`MAX_SESSION_CHARS` characters is refused with 400. On run, api and
component_server a body that is not JSON is refused too (Gradio parsed a multipart one there,
opening a file per part); elsewhere a multipart body (the upload) passes unread. The heartbeat
and ``queue/data`` name a session in the URL (bounded by the HTTP parser's line limit) and keep
nothing under one they do not know.

Numbers. A field outside ``data`` holding a number JSON cannot carry (``1e400``, read as infinity,
or ``NaN``) made Gradio's validation error unserializable: a bare 500 and a traceback, on join,
run, api, cancel and reset (helper-112). It is refused with 400 naming the field. Values inside
``data`` are the inputs, checked with their own messages (``ui/api_blocks.py``, ``inputs/``).
"""

from __future__ import annotations

import math

from .asgi_requests import answer_json, first_header, read_json, replay, route_path, with_length
from .queue_join import is_join

MAX_SESSION_CHARS = 128  # the page's are 11 characters, gradio_client's 36 (a UUID)
LONG_SESSION = (f"The session_hash is longer than {MAX_SESSION_CHARS} characters: send a short random id "
                "(gradio_client and the page make one of 11-36 characters).")
NOT_JSON = "This route takes a JSON object (as the page sends it): send the request as application/json."
_API = "/gradio_api/"
_JSON_ONLY = ("/gradio_api/run/", "/gradio_api/api/")  # and component_server: routes of one JSON body
_COMPONENT_SERVER = "/gradio_api/component_server"


def _non_finite(value) -> bool:
    """True when ``value`` is or holds (in lists and objects, any depth) a float that is not finite.
    Walked without recursion: JSON nested 900 deep parses, and a recursive walk of it overflowed."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class ApiCallBodies:
    """Pure ASGI middleware; other requests pass through untouched.

    Args:
        app: the ASGI app below.
    """

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        path = route_path(scope).rstrip("/") if scope["type"] == "http" and scope.get("method") == "POST" else ""
        json_only = path.startswith(_JSON_ONLY) or path == _COMPONENT_SERVER
        multipart = first_header(scope, b"content-type").lower().lstrip().startswith(b"multipart/")
        if not (json_only or ((path.startswith(_API) or is_join(scope)) and not multipart)):
            await self.app(scope, receive, send)
            return
        body, payload = await read_json(receive, scope)
        session = payload.get("session_hash") if payload else None
        if payload is None and json_only:  # an empty multipart body to component_server was a 500 (helper-112)
            await answer_json(send, 400, NOT_JSON)
            return
        if isinstance(session, str) and len(session) > MAX_SESSION_CHARS:
            await answer_json(send, 400, LONG_SESSION)
            return
        if bad := next((key for key, value in (payload or {}).items() if key != "data" and _non_finite(value)), None):
            await answer_json(send, 400, f"The field {str(bad)[:40]!r} holds a number out of range (infinity or NaN; "
                                         "1e400 reads as infinity): send a finite number, as the API page shows.")
            return
        await self.app(with_length(scope, len(body)), replay(body, receive), send)
