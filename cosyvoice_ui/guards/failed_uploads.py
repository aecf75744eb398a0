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

    from gradio.route_utils import MultiPartException

    parse = GradioMultiPartParser.parse

    async def parse_leaving_nothing_on_failure(self):
        try:
            return await parse(self)
        except MultiPartException as e:
            # Gradio calls any multipart parse error that mentions a header "Headers exceeded maximum
            # allowed size" (a 413): a 17-byte body with a broken part header got that (helper-60).
            cause = e.__cause__
            if cause is not None and "maximum allowed size" in e.message and "exceed" not in str(cause).lower():
                raise MultiPartException(f"The upload is not a well-formed multipart form ({cause}); send the "
                                         "file as multipart/form-data in the field 'files'.") from cause
            raise
        except BaseException:
            for file in getattr(self, "_files_to_close_on_error", ()):
                with contextlib.suppress(OSError):
                    file.close()  # may itself fail on a full disk (its buffer is flushed)
                with contextlib.suppress(OSError):
                    os.unlink(file.name)  # already gone where Gradio deleted it
            raise

    GradioMultiPartParser.parse = parse_leaving_nothing_on_failure
    _installed = True
