"""Gradio's upload progress tracking (``POST /gradio_api/upload?upload_id=ID``, ``GET
/gradio_api/upload_progress?upload_id=ID``) holds a bounded amount of memory.

Gradio keeps, per upload id, a progress record (until someone reads the id's progress stream to
its end) and an ``asyncio.Event`` (for good: a progress request for an unknown id left one after
its 3 s wait, and so did every finished upload). One client grew the web process by 126 MiB in
27 s with progress requests for new 60,000-character ids, and by 116 MiB with 2,000 uploads of a
6-byte file under new ids (helper-107). Here:

- an ``upload_id`` over :data:`MAX_ID_CHARS` characters is refused (400; the page makes ids of
  up to 13 characters, gradio_client sends none);
- an id's event goes when its record goes, or when a wait for an unknown id ends;
- at most :data:`MAX_TRACKED` ids are tracked, the oldest forgotten first (its progress bar,
  if anyone still reads it, stops; the upload itself is not affected).
"""

from __future__ import annotations

import urllib.parse

from .asgi_requests import answer_json, route_path

MAX_ID_CHARS = 64
MAX_TRACKED = 1000
_ROUTES = ("/gradio_api/upload", "/gradio_api/upload_progress")
LONG_ID = (f"upload_id is at most {MAX_ID_CHARS} characters long (it only names an upload for its progress "
           "bar); send a short one, or none.")
_installed = False


class ShortUploadIds:
    """Pure ASGI middleware: an upload or upload-progress request whose ``upload_id`` is longer
    than :data:`MAX_ID_CHARS` characters is answered 400 (also without login: the refusal tells
    nothing about the app, and Gradio would answer 401 only after reading the query)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and route_path(scope).rstrip("/") in _ROUTES:
            query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
            if any(len(upload_id) > MAX_ID_CHARS for upload_id in query.get("upload_id", ())):
                await answer_json(send, 400, LONG_ID, close=scope["method"] == "POST")
                return
        await self.app(scope, receive, send)


def install() -> None:
    """Bound Gradio's ``FileUploadProgress`` (the one object ``gradio.routes.file_upload_statuses``
    of its class) as the module docstring says. Idempotent."""
    global _installed
    if _installed:
        return
    from gradio.route_utils import FileUploadProgress

    track, is_tracked, stop_tracking = (FileUploadProgress.track, FileUploadProgress.is_tracked,
                                        FileUploadProgress.stop_tracking)

    def track_at_most_some(self, upload_id: str) -> None:
        track(self, upload_id)
        while len(self._statuses) > MAX_TRACKED:
            oldest = next(iter(self._statuses))
            stop_tracking_with_event(self, oldest)

    async def is_tracked_leaving_no_event(self, upload_id: str) -> bool:
        try:
            return await is_tracked(self, upload_id)
        finally:  # also when the route's 3 s wait cancels it
            if upload_id not in self._statuses:
                self._signals.pop(upload_id, None)

    def stop_tracking_with_event(self, upload_id: str) -> None:
        stop_tracking(self, upload_id)
        self._signals.pop(upload_id, None)

    FileUploadProgress.track = track_at_most_some
    FileUploadProgress.is_tracked = is_tracked_leaving_no_event
    FileUploadProgress.stop_tracking = stop_tracking_with_event
    _installed = True
