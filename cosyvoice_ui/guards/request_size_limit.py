"""ASGI middleware: every POST declares its length, and that length is bounded.

Gradio bounds uploads per file only and API bodies not at all: one POST to
``/gradio_api/upload`` with ten files of 20 MiB was accepted and kept for ``--temp-file-ttl``
(eighteenth newcomer session), and a ``/gradio_api/call/synthesize`` body with a text of 100
million characters was parsed and held, costing the web process minutes of CPU and hundreds of
MiB (twenty-first). The page and gradio_client send one file per upload and small JSON bodies,
always with a ``Content-Length``; a POST without one (chunked) is refused, as it could not be
bounded before it is read, and so is any request with a chunked body (``Transfer-Encoding``),
with or without a ``Content-Length`` beside it.

An upload request carries one file. Gradio opens a temporary file for every part at once (up to
1,000 per request): three connections sending 1,000 one-byte files each used up the web process's
file handles, uploads failed with "Too many open files", accepts failed, and another visitor's
request was made but its answer never reached it (helper-102). The parts are counted as the body
arrives (by its multipart boundary); at the second file the request is cut off and answered 400.
A multipart body to any other route (Gradio parses one at ``component_server`` too: 1,018 file
handles for one request, helper-108) is cut off past :data:`MAX_FORM_PARTS` parts.
"""

from __future__ import annotations

from ..inputs.text import RAW_TEXT_FACTOR
from .asgi_requests import answer_json, first_header

_UPLOAD = "/gradio_api/upload"
MULTIPART_ALLOWANCE_BYTES = 64 * 1024  # part headers and boundaries around the one file
# A JSON body holds at most three texts (text, prompt text, instruction), each refused beyond
# RAW_TEXT_FACTOR times --max-text-chars, at up to 6 bytes a character (\uXXXX), plus the rest.
JSON_ALLOWANCE_BYTES = 2**20
JSON_BYTES_PER_TEXT_CHAR = 3 * RAW_TEXT_FACTOR * 6


class RequestSizeLimit:
    """Pure ASGI middleware; GET and other methods pass through.

    Args:
        app: the ASGI app to wrap.
        max_upload_bytes: ``--max-upload-mb`` in bytes (the per-file limit Gradio enforces): the
            most one upload request may carry in all.
        max_text_chars: ``--max-text-chars``; other POST bodies may be
            ``1 MiB + 72 * max_text_chars`` bytes.
    """

    def __init__(self, app, max_upload_bytes: int, max_text_chars: int) -> None:
        self.app = app
        self.max_upload_bytes = int(max_upload_bytes)
        self.max_body_bytes = JSON_ALLOWANCE_BYTES + JSON_BYTES_PER_TEXT_CHAR * int(max_text_chars)

    async def __call__(self, scope, receive, send) -> None:
        names = {k.lower() for k, _ in scope.get("headers") or ()} if scope["type"] == "http" else set()
        if b"transfer-encoding" in names and b"content-length" in names:
            # Both: the server reads the chunked body and the length bounded nothing. "Content-Length:
            # 2" and a chunked body of 300 MB was parsed (2.96 GB of RSS), and an upload of 97 MB
            # passed the 20 MiB total and --temp-reserve-mb (helper-66). RFC 9112, 6.1: a server may
            # reject such a message.
            await _refuse(send, 400, "A request cannot have both Content-Length and Transfer-Encoding: the body's "
                                     "length would be ambiguous. Send it with Content-Length only.")
            return
        if scope["type"] == "http" and (scope["method"] == "POST" or b"transfer-encoding" in names):
            # Ends with: behind a proxy's prefix the path is /tts/gradio_api/upload (forwarded_prefix.py).
            upload = scope.get("path", "").rstrip("/").endswith(_UPLOAD)
            declared = first_header(scope, b"content-length")
            if not declared.strip().isdigit():
                await _refuse(send, 411, "A request body must declare its Content-Length (a chunked body cannot be "
                                         "bounded before it is read); send it as an ordinary request.")
                return
            length = int(declared)
            if upload and length > self.max_upload_bytes + MULTIPART_ALLOWANCE_BYTES:
                await _refuse(send, 413, f"Upload too large: the maximum allowed size is {self.max_upload_bytes} bytes "
                                         f"({self.max_upload_bytes / 2**20:g} MiB, --max-upload-mb) for one request "
                                         f"in all, got {length} bytes. A voice prompt needs a few MiB at most (10 s "
                                         "of 48 kHz 16-bit stereo is 1.9 MB): upload a shorter clip, or FLAC or "
                                         "MP3, one file per request.")
                return
            if not upload and length > self.max_body_bytes:
                await _refuse(send, 413, f"Request body too large: {length} bytes, at most {self.max_body_bytes} are "
                                         "accepted (texts are limited by --max-text-chars).")
                return
            if upload:
                await _one_file_per_upload(self.app, scope, receive, send)
                return
            if first_header(scope, b"content-type").lower().lstrip().startswith(b"multipart/"):
                # Gradio parses a multipart body on other routes too (component_server), opening a
                # file per part: one request held 1,018 file handles (helper-108). No form here has
                # more than a few fields (the login has two).
                await _one_file_per_upload(self.app, scope, receive, send, max_parts=MAX_FORM_PARTS,
                                           refusal=MANY_PARTS)
                return
        await self.app(scope, receive, send)


ONE_FILE = ("An upload request carries one file and nothing else; this one had more parts. Send one file per "
            "request, as the page and gradio_client do.")
MAX_FORM_PARTS = 8
MANY_PARTS = (f"A form sent to this app has at most {MAX_FORM_PARTS} parts (the login has two); this one had more. "
              "Send files to /gradio_api/upload, one per request, and other values as JSON.")


async def _one_file_per_upload(app, scope, receive, send, max_parts: int = 1, refusal: str = ONE_FILE) -> None:
    """Pass an upload to ``app``, counting its multipart delimiters as the body arrives; one past
    ``max_parts`` parts' (a second file, by default) ends the body for ``app`` (a client
    disconnect) and the request is answered 400 ``refusal`` instead of by ``app``.

    The boundary is read from the first ``Content-Type`` by python-multipart's own
    ``parse_options_header``, as Gradio's parser reads it: a stricter reading here (``BOUNDARY=``,
    blanks around ``=``, the parameter given twice) found no second file while Gradio parsed 1,000
    (helper-104). A delimiter is ``CRLF--boundary`` followed by CR, ``-`` or transport padding (the
    body's start counts as a CRLF): a bare LF, or the boundary's text inside a file, is none."""
    from python_multipart.multipart import parse_options_header

    _, options = parse_options_header(first_header(scope, b"content-type"))
    boundary = options.get(b"boundary")
    if not boundary:  # Gradio refuses it itself
        await app(scope, receive, send)
        return
    delimiter = b"\r\n--" + boundary
    seen, tail, cut, started = 0, b"\r\n", False, False

    async def counting_receive():
        nonlocal seen, tail, cut
        if cut:
            return {"type": "http.disconnect"}
        message = await receive()
        if message["type"] == "http.request":
            data = tail + message.get("body", b"")
            at = data.find(delimiter)
            while at >= 0 and at + len(delimiter) < len(data):  # the byte after it has arrived
                seen += data[at + len(delimiter)] in b"\r- \t"
                at = data.find(delimiter, at + 1)
            tail = data[max(0, len(data) - len(delimiter)):]  # a delimiter whose next byte is still to come
            if seen > max_parts + 1:  # a delimiter before each part and the closing one, then one more
                cut = True
                return {"type": "http.disconnect"}
        return message

    async def send_unless_cut(message):
        nonlocal started
        if not cut:
            started = True
            await send(message)

    try:
        await app(scope, counting_receive, send_unless_cut)
    except Exception:
        if not cut:
            raise
    if cut and not started:
        await _refuse(send, 400, refusal)


async def _refuse(send, status: int, message: str) -> None:
    # Connection: close, since the body was never read: the client may still be sending it.
    await answer_json(send, status, message, close=True)
