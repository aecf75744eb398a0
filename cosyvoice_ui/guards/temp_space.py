"""Free space in the temporary folder: uploads are refused, with a message, before it runs out.

Uploads and results live in ``$GRADIO_TEMP_DIR`` for ``--temp-file-ttl``. When its disk filled, every
upload failed with a bare 500 "Internal Server Error" while ``/healthz`` said "ok" (helper-50), and
an anonymous client could fill the disk at 125 MB/s with 19 MB uploads (helper-51). Here an upload
that would leave less than ``--temp-reserve-mb`` free is answered 507 with what is going on, and
``/healthz`` (``degraded``, ``temp_folder_free_bytes``) and ``/metrics`` say so; the room kept is
for the results of requests already accepted, and for the ledger and logs if they share the disk.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time

from ..log_throttle import OncePerMinute
from .asgi_requests import answer_json, first_header, logged_in

log = logging.getLogger(__name__)

MIB = 2**20
_UPLOAD = "/gradio_api/upload"


class TempSpace:
    """The temporary folder's free space against a reserve.

    Args:
        folder: ``$GRADIO_TEMP_DIR``.
        reserve_bytes: uploads that would leave less free than this are refused.
    """

    def __init__(self, folder: str, reserve_bytes: int) -> None:
        self.folder, self.reserve_bytes = folder, int(reserve_bytes)
        self.refused_uploads = 0
        self.arriving_bytes = 0  # declared lengths of the uploads being received now
        self._last_refusal: tuple[float, str] | None = None  # (time.monotonic(), message)
        self._lock = threading.Lock()
        self._logged = OncePerMinute(log, logging.WARNING, "refused an upload: %s")

    def free_bytes(self) -> int | None:
        """Bytes free for this process on the folder's file system (``shutil.disk_usage``), or
        ``None`` when the folder cannot be examined."""
        try:
            return shutil.disk_usage(self.folder).free
        except OSError:
            return None

    def problem(self, incoming_bytes: int = 0) -> str | None:
        """Why an upload of ``incoming_bytes`` cannot be taken now, or ``None``."""
        free = self.free_bytes()
        # Uploads still arriving will take their room too: six of 4.7 MiB at once all passed with
        # 23 MiB free, and four then filled the disk (helper-60).
        if free is None or free - incoming_bytes - self.arriving_bytes >= self.reserve_bytes:
            return None
        # One decimal: "20 MiB free, and 20 MiB are kept" read as room enough (19.8 MiB free; helper-56).
        upload = f", this upload needs {incoming_bytes / MIB:,.1f} MiB," if incoming_bytes else ""
        if self.arriving_bytes:
            upload += f" {self.arriving_bytes / MIB:,.1f} MiB more are arriving in other uploads,"
        return (f"The server has no room for uploads now: {free / MIB:,.1f} MiB free in its temporary folder"
                f"{upload} and {self.reserve_bytes / MIB:,.1f} MiB are kept for results (--temp-reserve-mb). "
                f"Try again later; uploads and results are deleted after --temp-file-ttl.")

    def refuse(self, message: str) -> None:
        """Count and log (at most a line a minute) a refused upload."""
        with self._lock:
            self.refused_uploads += 1
            self._last_refusal = (time.monotonic(), message)
        self._logged.note(message)

    @contextlib.contextmanager
    def arriving(self, declared_bytes: int):
        """Count an upload's declared length against the free space while it is received."""
        with self._lock:
            self.arriving_bytes += declared_bytes
        try:
            yield
        finally:
            with self._lock:
                self.arriving_bytes -= declared_bytes

    def status(self) -> dict:
        """``temp_folder_free_bytes``, ``temp_reserve_bytes``, ``uploads_refused_for_space`` and
        ``temp_folder_error`` (the refusal message while space is short, or while an upload was
        refused in the last minute, else ``None``: with 8.4 MiB free over a reserve of 8, a 1 MiB
        upload was refused while /healthz said "ok"; helper-60)."""
        error = self.problem()
        if error is None and self._last_refusal is not None and time.monotonic() - self._last_refusal[0] < 60:
            error = self._last_refusal[1]
        return {"temp_folder_free_bytes": self.free_bytes(), "temp_reserve_bytes": self.reserve_bytes,
                "uploads_refused_for_space": self.refused_uploads, "temp_folder_error": error}


class UploadSpace:
    """Pure ASGI middleware: ``POST .../gradio_api/upload`` is answered 507 while
    :meth:`TempSpace.problem` says there is no room for its declared length (to a logged-in caller,
    under ``--auth``). Installed inside :class:`~.request_size_limit.RequestSizeLimit`, so an upload
    over ``--max-upload-mb`` is told so (413), not to try again later (helper-56)."""

    def __init__(self, app, space: TempSpace) -> None:
        self.app, self.space = app, space

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope.get("path", "").rstrip("/").endswith(_UPLOAD):
            declared = first_header(scope, b"content-length", b"0")
            declared_bytes = int(declared) if declared.strip().isdigit() else 0
            message = self.space.problem(declared_bytes)
            # Under --auth, only a logged-in caller learns the disk's figures; others get Gradio's 401.
            if message is not None and await logged_in(self.app, scope, _UPLOAD):
                self.space.refuse(message)
                await answer_json(send, 507, message, close=True)
                return
            with self.space.arriving(declared_bytes):
                await self.app(scope, receive, send)
            return
        await self.app(scope, receive, send)
