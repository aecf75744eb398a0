"""ASGI middleware: Gradio routes this app has no use for answer 404 before Gradio sees them.

- ``GET /gradio_api/deep_link`` writes a file of the caller's session (about 52 KB) into
  ``<GRADIO_TEMP_DIR>/deep_links/`` on every call, which no sweep removes: alternating it with
  ``POST /gradio_api/run/status`` wrote 16 MB in 5 s, about 10 GB an hour from one client
  (helper-108). The page has no deep-link button.
- ``GET /gradio_api/dev/reload`` is Gradio's reload watcher for ``gradio app.py`` (dev mode); each
  stream polls every 50 ms for as long as it is held open, and anyone could open them (helper-108).
- ``GET /gradio_api/startup-events`` ran Gradio's startup again on its first call (mounting never
  marks it done), with no login check: a second queue loop, and the running requests' progress,
  notes and withdrawal on leaving were lost (helper-112). The app starts Gradio itself.
- ``GET /gradio_api/custom_component/...`` printed the caller's path to the log before any check,
  with no login and no limit (6 MB in 2.2 s, escape characters raw; helper-112). The page has no
  custom components.
- ``POST /gradio_api/process_recording`` is Gradio's screen recorder (a developer tool that posts a
  video): it runs ffmpeg on the upload with no deadline when ffmpeg is on the path, as it is with
  ``--stream``. It was refused only because the upload check takes files sent as ``files``
  (helper-143). The page's microphone uploads through ``/gradio_api/upload``.
"""

from __future__ import annotations

from .asgi_requests import answer_json, route_path

UNUSED = ("/gradio_api/deep_link", "/gradio_api/dev/reload", "/gradio_api/startup-events",
          "/gradio_api/custom_component", "/gradio_api/process_recording")
UNUSED_BELOW = "/gradio_api/custom_component/"


class UnusedGradioRoutes:
    """Pure ASGI middleware; see the module docstring."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        path = route_path(scope).rstrip("/") if scope["type"] == "http" else ""
        if path in UNUSED or path.startswith(UNUSED_BELOW):
            await answer_json(send, 404, "Not Found: this app does not serve this Gradio route.")
            return
        await self.app(scope, receive, send)
