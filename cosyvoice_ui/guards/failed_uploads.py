"""An upload that fails midway leaves nothing in the temporary folder.

Gradio's multipart parser (``gradio.route_utils.GradioMultiPartParser``) writes each uploaded file
to a ``NamedTemporaryFile(delete=False)`` as it arrives, and deletes those files only when the
request is malformed or too large. A client that left midway (a closed tab) or a disk that filled
while the file was written left the partial file for ``--temp-file-ttl`` (an hour by default): two
uploads that filled a 1 MiB disk kept it full after both were refused, so the next upload was
refused too (this session's test). Here any failure of the parse closes and deletes the files it
had opened, then goes on as before.
"""

from __future__ import annotations

import contextlib
import os

_installed = False


def install() -> None:
    """Wrap ``GradioMultiPartParser.parse`` so that on any exception (``OSError`` such as ENOSPC,
    Starlette's ``ClientDisconnect``, a cancelled task) the parser's temporary files are closed and
    unlinked before the exception goes on. A parse that succeeds is untouched. Idempotent."""
    global _installed
    if _installed:
        return
    from gradio.route_utils import GradioMultiPartParser

    parse = GradioMultiPartParser.parse

    async def parse_leaving_nothing_on_failure(self):
        try:
            return await parse(self)
        except BaseException:
            for file in getattr(self, "_files_to_close_on_error", ()):
                with contextlib.suppress(OSError):
                    file.close()  # may itself fail on a full disk (its buffer is flushed)
                with contextlib.suppress(OSError):
                    os.unlink(file.name)  # already gone where Gradio deleted it
            raise

    GradioMultiPartParser.parse = parse_leaving_nothing_on_failure
    _installed = True
