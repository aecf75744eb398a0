"""The ``--auth USER:PASSWORD`` check, given to Gradio as its ``auth`` callable.

Gradio compared the pair itself and said nothing about failures: password guessing left no trace
in the log (twenty-third newcomer session). This check compares in constant time, counts every
failure (``/metrics``: ``cosyvoice_ui_failed_logins_total``) and logs them, at most one line a
minute so that guessing cannot flood the log. Gradio passes no request to the callable; the
client's address comes from :class:`LoginClientAddress`, middleware that notes it for each
``POST .../login``. uvicorn takes that address from ``X-Forwarded-For`` only on a connection
from a proxy named by ``--forwarded-allow-ips``, so a process connecting from there can write any
address (helper-51).
"""

from __future__ import annotations

import contextvars
import hmac
import logging
import re
import threading
import time
from typing import Callable

from ..log_throttle import flush_later
from .asgi_requests import answer_json, first_header

log = logging.getLogger(__name__)

# The address of the client whose login is being checked (set by LoginClientAddress).
_client_address: contextvars.ContextVar[str | None] = contextvars.ContextVar("login_client_address", default=None)
_MAX_ADDRESSES_LOGGED = 5


class LoginClientAddress:
    """Pure ASGI middleware: notes the client's address for Gradio's login route, where
    :class:`LoginCheck` runs in the same task, so that a failed login's log line can name it
    (it had none: forty-fourth and earlier newcomer sessions)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope.get("path", "").endswith("/login"):
            client = scope.get("client")
            token = _client_address.set(client[0] if client else None)
            try:
                await self.app(scope, receive, send)
            finally:
                _client_address.reset(token)
            return
        await self.app(scope, receive, send)


class SameSiteLoginCookies:
    """Pure ASGI middleware: the login's cookies are ``SameSite=Lax``.

    Gradio sets two login cookies, one of them ``SameSite=None; Secure`` (for a Space shown in a
    frame of huggingface.co). Behind an https proxy browsers that allow third-party cookies then
    sent the login with requests from any site: a frame of the app in a page elsewhere, and loads
    that carry no ``Origin`` (``<audio src=".../file=...">``), which the Origin check cannot see
    (helper-105). ``Lax`` is sent on the app's own requests and on a link followed to it."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or not scope.get("path", "").rstrip("/").endswith("/login"):
            await self.app(scope, receive, send)
            return

        async def send_lax(message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [
                    (name, _SAMESITE_NONE.sub(b"SameSite=lax", value) if name.lower() == b"set-cookie" else value)
                    for name, value in message.get("headers") or ()]}
            await send(message)

        await self.app(scope, receive, send_lax)


_SAMESITE_NONE = re.compile(rb"SameSite=none", re.IGNORECASE)


class LogoutThisSessionOnly:
    """Pure ASGI middleware: ``GET .../logout`` ends only the caller's login, and only when asked
    from the app's own page or typed in.

    Gradio's logout (``all_session=True`` by default) deletes every login of that user name, and
    ``--auth`` has one user: one visitor's logout logged out every other visitor, whose next call
    and result file got 401 (helper-74). The query is rewritten to ``all_session=false``.

    A plain GET carries no ``Origin``, so a page on another port of the same host (whose requests
    carry the ``SameSite=Lax`` cookie) or a link on another site logged the visitor out (helper-97).
    Browsers name where a request comes from in ``Sec-Fetch-Site``: ``same-site`` and
    ``cross-site`` are answered 403; ``same-origin``, ``none`` (typed, a bookmark) and no header
    (scripts, older browsers) log out."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope.get("path", "").rstrip("/").endswith("/logout"):
            site = first_header(scope, b"sec-fetch-site").lower()
            if site in (b"same-site", b"cross-site"):
                await answer_json(send, 403, "A logout is taken only from this app's own page (or typed in the "
                                             "address bar): this one came from a page at another address.")
                return
            kept = [part for part in scope.get("query_string", b"").split(b"&")
                    if part and not part.lower().startswith(b"all_session")]
            scope = {**scope, "query_string": b"&".join([*kept, b"all_session=false"])}
        await self.app(scope, receive, send)


class LoginCheck:
    """``check(username, password) -> bool`` for ``gr.mount_gradio_app(auth=...)``.

    Args:
        user / password: the configured pair (``--auth``); compared as UTF-8 bytes.
        on_failure: called once per failed attempt (the metrics counter).
        log_every_s: the shortest time between two log lines about failures.
    """

    def __init__(self, user: str, password: str, on_failure: Callable[[], None] = lambda: None,
                 log_every_s: float = 60.0) -> None:
        self._user = user.encode()
        self._password = password.encode()
        self._on_failure = on_failure
        self._every_s = log_every_s
        self._lock = threading.Lock()
        self._last_line_at: float | None = None
        self._reasons: dict[str, int] = {}  # of the failures not logged yet: reason -> count
        self._addresses: dict[str, None] = {}  # of the failures not logged yet, in order

    def __call__(self, username: str, password: str) -> bool:
        # Both compared every time, so the time taken says nothing about which one was wrong.
        user_ok = hmac.compare_digest(username.encode(), self._user)
        password_ok = hmac.compare_digest(password.encode(), self._password)
        if user_ok and password_ok:
            return True
        self._on_failure()
        address = _client_address.get()
        reason = "wrong password" if user_ok else "unknown user name"
        with self._lock:
            self._reasons[reason] = self._reasons.get(reason, 0) + 1
            if address and len(self._addresses) <= _MAX_ADDRESSES_LOGGED:
                self._addresses[address] = None
            if self._last_line_at is not None and time.monotonic() - self._last_line_at < self._every_s:
                # Written within the minute even if no failure follows (it waited for the next
                # one, maybe days later; helper-56).
                flush_later(self)
                return False
            line = self._take_line()
        log.warning(line)
        return False

    def flush(self, now_anyway: bool = False) -> None:
        """Write the failures counted since the last line, once ``log_every_s`` has passed since it
        (or at once, ``now_anyway``: the process is ending)."""
        with self._lock:
            if not self._reasons or (time.monotonic() - self._last_line_at < self._every_s and not now_anyway):
                return
            line = self._take_line()
        log.warning(line)

    def _take_line(self) -> str:
        # Called with the lock held. Neither the user name typed nor the password is logged: either
        # may be the other's secret. Each reason is counted: the line named only the last one's
        # reason for a burst of 30 wrong passwords and 2 unknown names (helper-56).
        reasons, self._reasons = self._reasons, {}
        addresses, self._addresses = list(self._addresses), {}
        self._last_line_at = time.monotonic()
        count = sum(reasons.values())
        where = ""
        if addresses:
            shown = ", ".join(addresses[:_MAX_ADDRESSES_LOGGED])
            where = f" from {shown}{' and others' if len(addresses) > _MAX_ADDRESSES_LOGGED else ''}"
        if count == 1:
            return f"failed login{where}: {next(iter(reasons))}"
        what = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
        return f"{count} failed logins{where} since the last such line: {what}"
