"""ASGI middleware for file links into the temporary folder (``GET /gradio_api/file=<path>``, and
Gradio's older ``GET /gradio_api/file/<path>``, which helper-107 read other files through): only
the app's own files are served there, and a link whose file was deleted after ``--temp-file-ttl``
says so.

Gradio answers ``GET /gradio_api/file=<path>`` for a file it no longer has with 403 ``File not
allowed: /tmp/.../audio.wav``: "not allowed" for a file that merely expired, and the server's
absolute temporary path to anyone (helper-50, downloading a result from a tab left open past the
time-to-live). A path inside the temporary folder that no longer exists is answered 404 with how
long files are kept and what to do; other paths go to Gradio as before.

Gradio serves any file under its temporary folder. With ``GRADIO_TEMP_DIR`` pointed at a folder
that held other files (a project folder, ``$HOME``), each of them could be downloaded by anyone,
without login (helper-97). Only the files Gradio makes there (``<folder>/<hash>/<name>``: uploads
and results) are served now; any other path inside the folder is a 404, decided by its form
alone, so the answer tells nothing about what exists.
"""

from __future__ import annotations

import os
import re

from ..temp_files import upload_ttl_text
from .asgi_requests import answer_json, logged_in

_FILE_ROUTE = re.compile(r"/gradio_api/file[=/]")
_URL = re.compile(r"\s*[A-Za-z][A-Za-z0-9+.-]*:")  # a scheme (http:, https:, ...)
_MADE_HERE = re.compile(r"[0-9a-f]{32,64}/[^/]+")  # Gradio's hash folder, then the file


class FileLinks:
    """Pure ASGI middleware; see the module docstring.

    Args:
        app: the ASGI app inside.
        folder: ``$GRADIO_TEMP_DIR``, where Gradio keeps uploads and results.
    """

    def __init__(self, app, folder: str) -> None:
        self.app, self.folder = app, os.path.realpath(folder)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            raw = scope.get("path", "")
            route = _FILE_ROUTE.search(raw)
            at, path = (route.start(), raw[route.end():]) if route else (-1, "")
            # Under --auth only for a logged-in caller: the answer names the folder's time-to-live
            # (helper-54); others get Gradio's 401. The scope's path is decoded already.
            if at >= 0 and "\x00" in raw[at:]:
                # No file has a NUL in its name: Gradio's path check raised ValueError, a 500 with a
                # traceback, before any login check (helper-60).
                await answer_json(send, 400, "A file path cannot hold a NUL character (%00); no file has one.")
                return
            inside = self._inside(path) if at >= 0 else None
            refusal = None
            if at >= 0 and _URL.match(path):
                # Gradio fetched any public URL for anyone and streamed it back (helper-108): the
                # server's bandwidth, no size limit. No link of this app names another server.
                refusal = "This app serves only its own uploads and results; it does not fetch other addresses."
            elif inside is not None and not _MADE_HERE.fullmatch(inside):
                refusal = "This app serves only its own uploads and results from its temporary folder; that path is neither."
            elif inside is not None and not os.path.exists(os.path.join(self.folder, inside)):
                refusal = (f"This file is not on the server (any more): uploads and results are kept for "
                           f"{upload_ttl_text()} (--temp-file-ttl). Generate the result again, or upload the prompt again.")
            # Both only for a logged-in caller under --auth: others get Gradio's 401, as for any file.
            if refusal is not None and await logged_in(self.app, scope, raw[at:]):
                await answer_json(send, 404, refusal)
                return
        await self.app(scope, receive, send)

    def _inside(self, path: str) -> str | None:
        """``path`` (resolved, a relative one from the working folder, as Gradio resolves it)
        relative to the temporary folder when it lies inside it, else None (one elsewhere: Gradio's
        own checks answer those)."""
        if not path:
            return None
        real = os.path.realpath(path)
        return real[len(self.folder) + 1:] if real.startswith(self.folder + os.sep) else None
