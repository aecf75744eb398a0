"""ASGI middleware: pages at other addresses cannot show the app in a frame.

Without it a page on another port of the same host (a dev server, a notebook, another user's app)
framed the logged-in app: browsers send the ``--auth`` cookie (``SameSite=Lax``) to a frame of
the same *site*, and the framed app's own requests are same-origin, so ``guards/own_origin.py``
does not see them. A page that lays a harmless-looking button over the frame's Restart had a
visitor's click restart the worker in their name (helper-99, clickjacking).

Every HTTP response gets ``Content-Security-Policy: frame-ancestors <sources>`` (CSP Level 2;
default ``'self'``: only the app's own pages may frame it) and, for that default, ``X-Frame-Options:
SAMEORIGIN`` for browsers older than CSP Level 2. An operator who embeds the app on purpose (a
Hugging Face Space is shown in a frame of huggingface.co) names the framing pages with
``--frame-ancestors``; browsers then ignore ``X-Frame-Options``, which cannot name them, so it is
left out. Headers an inner app set already are kept.
"""

from __future__ import annotations

SAME_ORIGIN = "'self'"


class FrameAncestors:
    """Pure ASGI middleware; see the module docstring.

    Args:
        app: the ASGI app inside.
        sources: a CSP ``frame-ancestors`` source list, e.g. ``'self'`` or
            ``'self' https://huggingface.co``; ``settings.py`` refuses one with ``;`` or a line break.
    """

    def __init__(self, app, sources: str = SAME_ORIGIN) -> None:
        self.app = app
        self.headers = [(b"content-security-policy", b"frame-ancestors " + sources.encode("ascii"))]
        if sources == SAME_ORIGIN:
            self.headers.append((b"x-frame-options", b"SAMEORIGIN"))

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers") or ()}
                added = [(name, value) for name, value in self.headers if name not in present]
                message = {**message, "headers": [*(message.get("headers") or ()), *added]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
