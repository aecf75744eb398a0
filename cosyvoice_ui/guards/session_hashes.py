"""ASGI middleware: a session hash is a short id on every route that makes a Gradio session.

Gradio keeps a session's state (up to ``SESSION_STATES`` of them, ``server.py``) under whatever
``session_hash`` a request names. The join guard (``queue_join.py``) refused hashes over
:data:`~.queue_join.MAX_SESSION_CHARS` characters, but ``POST /gradio_api/run/<name>`` and
``POST /gradio_api/component_server`` took any: 1 MB hashes took the web process from 643 to
853 MiB in 200 calls, and from 619 to 1,668 MiB through component_server, for good (helper-108).
Here a JSON body on those routes naming a longer one, and a body there that is not JSON (Gradio
parsed a multipart one too), are refused with 400.
"""

from __future__ import annotations

from .asgi_requests import answer_json, read_json, replay, route_path, with_length
from .queue_join import LONG_SESSION, MAX_SESSION_CHARS

_RUN = "/gradio_api/run/"
_COMPONENT_SERVER = "/gradio_api/component_server"
NOT_JSON = "This route takes a JSON object (as the page sends it): send the request as application/json."


class ShortSessionHashes:
    """Pure ASGI middleware; other requests pass through untouched.

    Args:
        app: the ASGI app below.
    """

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        path = route_path(scope).rstrip("/") if scope["type"] == "http" and scope.get("method") == "POST" else ""
        if not (path.startswith(_RUN) or path == _COMPONENT_SERVER):
            await self.app(scope, receive, send)
            return
        body, payload = await read_json(receive)
        session = payload.get("session_hash") if payload else None
        if payload is None and body.strip():
            await answer_json(send, 400, NOT_JSON)
            return
        if isinstance(session, str) and len(session) > MAX_SESSION_CHARS:
            await answer_json(send, 400, LONG_SESSION)
            return
        await self.app(with_length(scope, len(body)), replay(body, receive), send)
