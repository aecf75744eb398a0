"""ASGI middleware: Gradio routes this app has no use for answer 404 before Gradio sees them.

- ``GET /gradio_api/deep_link`` writes a file of the caller's session (about 52 KB) into
  ``<GRADIO_TEMP_DIR>/deep_links/`` on every call, which no sweep removes: alternating it with
  ``POST /gradio_api/run/status`` wrote 16 MB in 5 s, about 10 GB an hour from one client
  (helper-108). The page has no deep-link button.
- ``GET /gradio_api/dev/reload`` is Gradio's reload watcher for ``gradio app.py`` (dev mode); each
  stream polls every 50 ms for as long as it is held open, and anyone could open them (helper-108).
"""

from __future__ import annotations

from .asgi_requests import answer_json, route_path

UNUSED = ("/gradio_api/deep_link", "/gradio_api/dev/reload")


class UnusedGradioRoutes:
    """Pure ASGI middleware; see the module docstring."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and route_path(scope).rstrip("/") in UNUSED:
            await answer_json(send, 404, "Not Found: this app does not serve this Gradio route.")
            return
        await self.app(scope, receive, send)
