"""The ``--auth USER:PASSWORD`` check, given to Gradio as its ``auth`` callable.

Gradio compared the pair itself and said nothing about failures: password guessing left no trace
in the log (twenty-third newcomer session). This check compares in constant time, counts every
failure (``/metrics``: ``cosyvoice_ui_failed_logins_total``) and logs them, at most one line a
minute so that guessing cannot flood the log. Gradio passes no request to the callable, so the
line has no client address; a reverse proxy's access log has it (``POST /login`` answered 400).
"""

from __future__ import annotations

import hmac
import logging
import threading
import time
from typing import Callable

log = logging.getLogger(__name__)


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
        self._unlogged = 0

    def __call__(self, username: str, password: str) -> bool:
        # Both compared every time, so the time taken says nothing about which one was wrong.
        user_ok = hmac.compare_digest(username.encode(), self._user)
        password_ok = hmac.compare_digest(password.encode(), self._password)
        if user_ok and password_ok:
            return True
        self._on_failure()
        now = time.monotonic()
        with self._lock:
            self._unlogged += 1
            if self._last_line_at is not None and now - self._last_line_at < self._every_s:
                return False
            count, self._unlogged, self._last_line_at = self._unlogged, 0, now
        # Neither the user name typed nor the password is logged: either may be the other's secret.
        log.warning("failed login: %s%s", "wrong password" if user_ok else "unknown user name",
                    f" ({count} failed logins since the last such line)" if count > 1 else "")
        return False
