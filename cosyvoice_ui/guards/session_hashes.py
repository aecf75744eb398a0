"""ASGI middleware: a session hash is a short id on every route that makes a Gradio session.

Gradio keeps state under whatever ``session_hash`` a request names: a join's list of unanswered
events until its stream reads them (unread joins with 1 MB hashes grew the web process by 1.1 GB
in a minute, for good; helper-82), and a session's component states (up to ``SESSION_STATES`` of
them, ``server.py``) for ``POST /gradio_api/run/<name>`` and ``POST /gradio_api/component_server``
(1 MB hashes took the web process from 643 to 853 MiB in 200 calls, and from 619 to 1,668 MiB
through component_server, for good; helper-108). The three routes naming a session in a body are
checked here, by one rule: a hash over :data:`MAX_SESSION_CHARS` characters is refused with 400.
On run and component_server a body that is not JSON is refused too (Gradio parsed a multipart one);
a join's is left to Gradio's own validation. The heartbeat and ``queue/data`` name a session in the
URL (bounded by the HTTP parser's line limit) and keep nothing under one they do not know.
"""

from __future__ import annotations

from .asgi_requests import answer_json, read_json, replay, route_path, with_length
from .queue_join import is_join

MAX_SESSION_CHARS = 128  # the page's are 11 characters, gradio_client's 36 (a UUID)
LONG_SESSION = (f"The session_hash is longer than {MAX_SESSION_CHARS} characters: send a short random id "
                "(gradio_client and the page make one of 11-36 characters).")
NOT_JSON = "This route takes a JSON object (as the page sends it): send the request as application/json."
_RUN = "/gradio_api/run/"
_COMPONENT_SERVER = "/gradio_api/component_server"


class ShortSessionHashes:
    """Pure ASGI middleware; other requests pass through untouched.

    Args:
        app: the ASGI app below.
    """

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        path = route_path(scope).rstrip("/") if scope["type"] == "http" and scope.get("method") == "POST" else ""
        join = bool(path) and is_join(scope)
        if not (join or path.startswith(_RUN) or path == _COMPONENT_SERVER):
            await self.app(scope, receive, send)
            return
        body, payload = await read_json(receive)
        session = payload.get("session_hash") if payload else None
        if payload is None and body.strip() and not join:
            await answer_json(send, 400, NOT_JSON)
            return
        if isinstance(session, str) and len(session) > MAX_SESSION_CHARS:
            await answer_json(send, 400, LONG_SESSION)
            return
        await self.app(with_length(scope, len(body)), replay(body, receive), send)
