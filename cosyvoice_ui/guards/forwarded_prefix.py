"""ASGI middleware: a reverse proxy's path prefix (``X-Forwarded-Prefix``) becomes the request's root path.

Behind a proxy that serves the app under a path (``https://host/tts/``), the page named its
styles and API calls from the host's root (``/theme.css``, ``/gradio_api/...``): 404s, an
unstyled page and an empty monitor (helper-72). Gradio builds every URL it hands out from the
ASGI ``root_path`` when it has no fixed one (``gradio.route_utils.get_root_url``), and Starlette
routes by the path with that root removed, so a request whose proxy kept the prefix in the path
is routed as well as one whose proxy stripped it. Per request, so the same server still answers
on its own address (an SSH tunnel, a local script) without the prefix; Gradio's own
``GRADIO_ROOT_PATH`` fixed it for every request.

Traefik's StripPrefix sends the header by itself; nginx needs ``proxy_set_header
X-Forwarded-Prefix /tts;`` (README). A header that is not a plain path (a URL, ``//host``, dot
segments, odd characters) is ignored: a client sending its own prefix only changes the URLs in
its own answers.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from .asgi_requests import first_header

_PLAIN_PATH = re.compile(r"(?:/[A-Za-z0-9_~\-][A-Za-z0-9._~\-]*)+")


def forwarded_prefix(headers) -> str | None:
    """The prefix a proxy named in ``X-Forwarded-Prefix`` (first value, trailing ``/`` removed),
    if it is a plain absolute path such as ``/tts`` or ``/apps/tts``; else None.

    Args:
        headers: ASGI headers, a list of ``(name, value)`` byte pairs.
    """
    for name, value in headers:
        if name.lower() == b"x-forwarded-prefix":
            prefix = value.decode("latin-1").split(",")[0].strip().rstrip("/")
            if prefix and _PLAIN_PATH.fullmatch(prefix) and "/." not in prefix:
                return prefix
            return None
    return None


_installed = False


def install() -> None:
    """Make ``gradio.route_utils.get_root_url`` take the request's ``root_path`` when Gradio passes
    none: Gradio passes it for the page and its config only, so a result's file link in an
    answer (queue, ``/call``) and the logout's redirect left the prefix out (a 404 behind the
    proxy: no visitor could play or download a result; helper-74). Idempotent."""
    global _installed
    if _installed:
        return
    from gradio import route_utils

    get_root_url = route_utils.get_root_url

    def get_root_url_with_prefix(request, route_path, root_path):
        if not root_path:
            root_path = (getattr(request, "scope", None) or {}).get("root_path") or None
        return get_root_url(request=request, route_path=route_path, root_path=root_path)

    route_utils.get_root_url = get_root_url_with_prefix
    _installed = True


def location_under_prefix(location: str, prefix: str, scope) -> str:
    """A redirect's ``Location`` for a request that came through the prefix: a path of this app
    that lacks the prefix gets it (Starlette's trailing-slash redirect, ``POST /tts/.../join/`` ->
    ``307 /gradio_api/queue/join``, left the proxy; helper-74), and the bare prefix gets its ``/``
    (``/tts`` is outside a proxy's ``location /tts/``: the logout landed on a 404; helper-75).
    A redirect to another host is left as it is.

    Args:
        location: the header's value, a URL or an absolute path.
        prefix: the prefix, e.g. ``/tts`` (no trailing ``/``).
        scope: the request's ASGI scope, for its ``Host`` and ``X-Forwarded-Host``.
    """
    parts = urlsplit(location)
    if parts.netloc:
        own = {first_header(scope, b"host").decode("latin-1"),
               first_header(scope, b"x-forwarded-host").decode("latin-1").split(",")[0].strip()}
        if parts.netloc not in own:
            return location
    path = parts.path
    if path.rstrip("/") == prefix:
        path = prefix + "/"
    elif path.startswith("/") and not path.startswith(prefix + "/"):
        path = prefix + path
    return urlunsplit(parts._replace(path=path))


_MANIFEST_LINK = b'href="/manifest.json"'
_COOKIE_ROOT_PATH = re.compile(rb"(;\s*[Pp]ath=)/(?=;|$)")


class ForwardedPrefix:
    """Pure ASGI middleware: sets ``scope["root_path"]`` from :func:`forwarded_prefix` for HTTP
    and websocket requests that carry it; others pass untouched. In their answers, cookies set
    for ``Path=/`` are set for the prefix (the login token went to every app on a shared host;
    helper-75), redirects stay under it (:func:`location_under_prefix`), and the page's link to
    its web manifest names it."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        prefix = forwarded_prefix(scope.get("headers") or []) if scope["type"] in ("http", "websocket") else None
        if prefix is None:
            await self.app(scope, receive, send)
            return

        page = False

        async def send_under_prefix(message):
            nonlocal page
            if message["type"] == "http.response.start":
                page = any(name.lower() == b"content-type" and value.startswith(b"text/html")
                           for name, value in message.get("headers", []))
                headers = []
                for name, value in message.get("headers", []):
                    if name.lower() == b"set-cookie":
                        value = _COOKIE_ROOT_PATH.sub(rb"\1" + prefix.encode() + b"/", value)
                    elif name.lower() == b"location":
                        value = location_under_prefix(value.decode("latin-1"), prefix, scope).encode("latin-1")
                    elif name.lower() == b"content-length" and page:
                        continue  # the page's length changes below (sent chunked instead)
                    headers.append((name, value))
                message = {**message, "headers": headers}
            elif message["type"] == "http.response.body" and page:
                # Gradio's page names its web manifest from the host's root: behind /tts/ that was a
                # 404 on every load, or another app's manifest on a shared host (helper-80).
                message = {**message, "body": message.get("body", b"").replace(
                    _MANIFEST_LINK, b'href="' + prefix.encode() + b'/manifest.json"')}
            await send(message)

        await self.app({**scope, "root_path": prefix}, receive, send_under_prefix)
