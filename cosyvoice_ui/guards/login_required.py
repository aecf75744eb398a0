"""ASGI middleware: Gradio routes that skip the login under ``--auth`` ask for it here.

``GET /gradio_api/heartbeat/{session_hash}`` checks no login in Gradio. It holds a stream open for
anyone (eleventh newcomer session), and when it closes Gradio ends that session: unload
events, session caches, pending streams. With ``--auth`` on, only a logged-in caller may open it;
the page's own heartbeat sends the login cookie. ``/gradio_api/stream/...`` (the page's streamed
audio: HLS playlists and segments, and the stream's close) checks none either: with ``--auth`` on,
a playlist URL from a proxy log played the synthesized speech to anyone (helper-51).
``/gradio_api/cancel`` gets the same check in :mod:`.precise_cancel`.
"""

from __future__ import annotations

from .asgi_requests import answer_json, logged_in

_UNCHECKED_ROUTES = ("/gradio_api/heartbeat/", "/gradio_api/stream/")


class LoginRequired:
    """Pure ASGI middleware; other requests pass through untouched."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        route = next((r for r in _UNCHECKED_ROUTES if r in path), None)
        if route is not None and not await logged_in(self.app, scope, path[path.rfind(route):]):
            await answer_json(send, 401, "Not authenticated")
            return
        await self.app(scope, receive, send)
