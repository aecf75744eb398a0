"""ASGI middleware: an app serving on a loopback address answers only to loopback host names.

Serving on 127.0.0.1 keeps other machines out, but not a web page the local user opens: by DNS
rebinding, a page from ``evil.example`` gets its name to resolve to 127.0.0.1 and then calls the
API as a same-origin page (helper-51: ``Host: evil.example:7860`` got 200 and CORS headers
allowing that origin). Such a request still names the foreign host in its ``Host`` header, so
with ``--host`` a loopback address, a request whose ``Host`` is not ``localhost``, a 127.x.y.z
address, ``[::1]`` or a name given with ``--allowed-host`` (each also with DNS's final dot,
``localhost.``) is answered 403 with what would work. ``0.0.0.0`` is refused: browsers reach this
machine through it, and so did DNS-rebinding attacks ("0.0.0.0 day", 2024).
Serving on another address (``0.0.0.0``, a LAN address) the app cannot know its names, and this
check is off.
"""

from __future__ import annotations

import ipaddress
import re

from .asgi_requests import first_header, refuse

LOOPBACK_NAMES = ("localhost",)
# A name or an IPv6 address in brackets, then a port: "localhost:1@evil.example" was read as
# "localhost" (helper-91).
_HOST_HEADER = re.compile(r"(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (``127.0.0.1``, ``::1``, with or without brackets)."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The name in a ``Host`` header, without the port: ``[::1]:7860`` -> ``::1``, ``a.b:80`` -> ``a.b``."""
    header = header.strip()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class LoopbackHostOnly:
    """Pure ASGI middleware; see the module docstring.

    Args:
        app: the ASGI app inside.
        port: the port served, for the message.
        allowed_hosts: more host names to answer to (``--allowed-host``), lower case.
    """

    def __init__(self, app, port: int, allowed_hosts: tuple[str, ...] = ()) -> None:
        self.app, self.port, self.allowed = app, port, {h.lower() for h in allowed_hosts}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] in ("http", "websocket"):
            header = first_header(scope, b"host").decode("latin-1")
            name = _host_name(header).lower().removesuffix(".")  # "localhost." is the same name, fully qualified
            if not _HOST_HEADER.fullmatch(header) or not (is_loopback(name) or name in self.allowed):
                await self._refuse(scope, send, header)
                return
        await self.app(scope, receive, send)

    async def _refuse(self, scope, send, header: str) -> None:
        names = ", ".join(["localhost", "127.0.0.1", "[::1]", *sorted(self.allowed)])
        # The 127.0.0.1 address alone misled a visitor on another machine, where it is their own
        # (helper-72): the message says what works from where.
        message = (f"This app serves this machine only and answers to {names}; the request "
                   f"named the host {header[:100]!r}. On the machine it runs on, open "
                   f"http://127.0.0.1:{self.port}/. From another machine, use an SSH tunnel "
                   f"(ssh -L {self.port}:127.0.0.1:{self.port} HOST) or ask whoever runs it to start it with "
                   f"--host 0.0.0.0; a reverse proxy that passes its own host name needs --allowed-host NAME.")
        await refuse(scope, send, 403, message)
