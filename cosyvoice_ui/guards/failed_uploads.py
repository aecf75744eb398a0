"""An upload that fails midway leaves nothing in the temporary folder.

Gradio's multipart parser (``gradio.route_utils.GradioMultiPartParser``) writes each uploaded file
to a ``NamedTemporaryFile(delete=False)`` as it arrives, and deletes those files only when the
request is malformed or too large. A client that left midway (a closed tab) or a disk that filled
while the file was written left the partial file for ``--temp-file-ttl`` (an hour by default): two
uploads that filled a 1 MiB disk kept it full after both were refused, so the next upload was
refused too (this session's test). Here any failure of the parse closes and deletes the files it
had opened, then goes on as before.

A form Gradio would take but not use is refused or tidied the same way (helper-69): a part named
``files`` without a ``filename`` (a plain form field) made Gradio's upload route raise TypeError, a
bare 500 and a traceback, and is now a 400 that says what the part needs; the files of parts
under other names and a last part the body never closed, which Gradio ignores, are deleted at
once (they stayed until the sweep).
"""

from __future__ import annotations

import contextlib
import os

_installed = False
HEADERS_TOO_LONG = ("An upload part's headers exceeded the maximum allowed size (4 KiB a header line): a file "
                    "name thousands of characters long does this. Rename the file to a shorter name (under 255 "
                    "characters) and upload it again.")


def install() -> None:
    """Wrap ``GradioMultiPartParser.parse`` so that on any exception (``OSError`` such as ENOSPC,
    Starlette's ``ClientDisconnect``, a cancelled task) the parser's temporary files are closed and
    unlinked before the exception goes on. After a parse that succeeds, the files of parts Gradio
    will not use are deleted, and a non-file part in the field ``files`` raises
    ``MultiPartException`` (Gradio's upload route answers it 400). Idempotent."""
    global _installed
    if _installed:
        return
    from gradio.route_utils import GradioMultiPartParser, GradioUploadFile, MultiPartException

    parse = GradioMultiPartParser.parse

    def delete(files) -> None:
        for file in files:
            with contextlib.suppress(OSError):
                file.close()  # may itself fail on a full disk (its buffer is flushed)
            with contextlib.suppress(OSError):
                os.unlink(file.name)  # already gone where Gradio deleted it

    async def parse_leaving_nothing_on_failure(self):
        try:
            form = await parse(self)
        except MultiPartException as e:
            # Gradio calls any multipart parse error that mentions a header "Headers exceeded maximum
            # allowed size" (a 413): a 17-byte body with a broken part header got that (helper-60).
            cause = e.__cause__
            if cause is not None and "maximum allowed size" in e.message and "exceed" not in str(cause).lower():
                raise MultiPartException(f"The upload is not a well-formed multipart form ({cause}); send the "
                                         "file as multipart/form-data in the field 'files'.") from cause
            if e.message.startswith("Headers exceeded"):
                # Said as Gradio says it, a 5,000-character file name left the sender guessing (helper-74).
                # The words "maximum allowed size" keep Gradio's 413.
                raise MultiPartException(HEADERS_TOO_LONG) from cause
            raise
        except BaseException:
            delete(getattr(self, "_files_to_close_on_error", ()))
            raise
        opened = getattr(self, "_files_to_close_on_error", ())
        if any(key == "files" and not isinstance(value, GradioUploadFile) for key, value in form.multi_items()):
            delete(opened)
            raise MultiPartException("A part in the field 'files' is not a file: its Content-Disposition needs a "
                                     "filename (form-data; name=\"files\"; filename=\"prompt.wav\"; an RFC 5987 "
                                     "filename*= alone is not read), as curl -F files=@prompt.wav sends it.")
        # A file under another name ("file", as curl -F file=@x.wav) was answered 200 [] (helper-73).
        others = sorted({key for key, value in form.multi_items()
                         if key != "files" and isinstance(value, GradioUploadFile)})
        if others and not form.getlist("files"):
            delete(opened)
            raise MultiPartException(f"No file in the field 'files': the upload sent {', '.join(map(repr, others))}. "
                                     "Send the file in the field 'files' (curl -F files=@prompt.wav).")
        # Gradio refuses the name ".." (400) after the parse, and its file stayed behind (helper-69).
        for value in form.getlist("files"):
            if value.filename and os.path.basename(value.filename.replace("\\", "/")).strip() in (".", ".."):
                delete(opened)
                raise MultiPartException(f"{value.filename!r} is not a file name: send the file under its own "
                                         "name (filename=\"prompt.wav\").")
        # Files Gradio will not use: parts under other names, a last part the body never closed.
        used = {id(value.file) for value in form.getlist("files")}
        delete(file for file in opened if id(file) not in used)
        return form

    GradioMultiPartParser.parse = parse_leaving_nothing_on_failure
    _installed = True
