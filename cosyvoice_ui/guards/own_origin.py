"""ASGI middleware: a browser request sent by a page from another origin is refused.

Gradio answers a page on any ``localhost`` or ``127.0.0.1`` port (and, when the app is not on a
loopback name, a page from anywhere) with CORS headers that let it read the answers with the
visitor's cookies. Browsers count every port of a host as the same *site*, so the ``--auth``
login cookie (``SameSite=Lax``) goes along too: a page the user opened on ``localhost:9999`` (a
dev server, a notebook's output, another user's app on a shared machine) could synthesize,
restart the worker and read the status as the logged-in user (helper-91). Even without reading
the answer, a form POST from such a page is a request made in the user's name.

Browsers name the page that sent a request in its ``Origin`` header (every cross-origin request,
and same-origin ones other than GET and HEAD); scripts and ``gradio_client`` send none. So a
request whose ``Origin`` names another host or port than the one it was sent to (its ``Host``,
or the ``X-Forwarded-Host`` a reverse proxy sets) is answered 403 with what would work.
``X-Forwarded-Host`` counts only when ``--forwarded-allow-ips`` names a proxy: anyone can send
one, and a script that sent ``Origin: http://localhost:9999`` with a matching one was let
through (helper-116; a browser's page cannot add it without a preflight, which is refused).
``Origin: null`` (a sandboxed frame, a local file) is foreign too. Port 80 and 443 are the same
as none, as in a URL. A name given with ``--allowed-host`` is no exception: any port of it
passed, so another service on the proxy's host could act as its visitors (helper-95).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from .asgi_requests import first_header, refuse


def _authority(text: str) -> tuple[str, int | None] | None:
    """``host[:port]`` (or a URL's) as ``(lower-case name, port or None)``; None if it is not one."""
    try:
        parts = urlsplit(text if "//" in text else "//" + text)
        name, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not name:
        return None
    return name.removesuffix("."), (None if port in (80, 443) else port)


class OwnOriginOnly:
    """Pure ASGI middleware; see the module docstring.

    Args:
        app: the ASGI app inside.
        forwarded_host: whether a proxy's ``X-Forwarded-Host`` names the app's own address too
            (``--forwarded-allow-ips`` given).
    """

    def __init__(self, app, forwarded_host: bool = False) -> None:
        self.app, self.forwarded_host = app, forwarded_host

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] in ("http", "websocket"):
            origin = first_header(scope, b"origin", None)
            if origin is not None and not self._own(origin.decode("latin-1"), scope):
                await self._refuse(scope, send, origin.decode("latin-1"))
                return
        await self.app(scope, receive, send)

    def _own(self, origin: str, scope) -> bool:
        sender = _authority(origin) if origin.lower().startswith(("http://", "https://")) else None
        if sender is None:
            return False
        own = [first_header(scope, b"host").decode("latin-1")]
        if self.forwarded_host:
            own += [h.strip() for h in first_header(scope, b"x-forwarded-host").decode("latin-1").split(",")[:1]]
        return any(_authority(h) == sender for h in own if h)

    async def _refuse(self, scope, send, origin: str) -> None:
        message = (f"This app takes requests only from its own page: this one came from a page at "
                   f"{origin[:100]!r}, another address, which could otherwise act in its visitor's name. Open "
                   f"the app at its own address; scripts (curl, gradio_client) send no Origin and are not "
                   f"affected. A reverse proxy must pass the host name and port the browser used (Host, or "
                   f"X-Forwarded-Host from a proxy named by --forwarded-allow-ips).")
        await refuse(scope, send, 403, message)
