"""ASGI middleware: one upload request carries at most ``--max-upload-mb`` in all.

Gradio's limit is per file: one POST to ``/gradio_api/upload`` with ten files of 20 MiB was
accepted and kept for ``--temp-file-ttl`` (eighteenth newcomer session). The page and
gradio_client send one file per request, so a request's declared length is capped at the file
limit plus room for the multipart headers. A request that declares no length (chunked) is
refused: it could not be bounded before it is read.
"""

from __future__ import annotations

import json

_UPLOAD = "/gradio_api/upload"
MULTIPART_ALLOWANCE_BYTES = 64 * 1024  # part headers and boundaries around the one file


class UploadRequestLimit:
    """Pure ASGI middleware; requests other than ``POST /gradio_api/upload`` pass through.

    Args:
        app: the ASGI app to wrap.
        max_upload_bytes: ``--max-upload-mb`` in bytes (the per-file limit Gradio enforces).
    """

    def __init__(self, app, max_upload_bytes: int) -> None:
        self.app = app
        self.max_upload_bytes = int(max_upload_bytes)
        self.max_request_bytes = self.max_upload_bytes + MULTIPART_ALLOWANCE_BYTES

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope.get("path", "").rstrip("/") == _UPLOAD:
            declared = dict(scope.get("headers") or []).get(b"content-length", b"")
            if not declared.strip().isdigit():
                await _refuse(send, 411, "An upload must declare its Content-Length (a chunked upload cannot be "
                                         "bounded before it is read); send the file as an ordinary form upload.")
                return
            if int(declared) > self.max_request_bytes:
                await _refuse(send, 413, f"Upload too large: the maximum allowed size is {self.max_upload_bytes} bytes "
                                         f"({self.max_upload_bytes / 2**20:g} MiB, --max-upload-mb) for one request "
                                         f"in all, got {int(declared)} bytes. Send one file per request, as the page "
                                         "and gradio_client do.")
                return
        await self.app(scope, receive, send)


async def _refuse(send, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
