"""A log line that may repeat as often as clients like is written at most once a minute, with a
count: what a client can make happen must not flood the log (a connection flood wrote 16,384
tracebacks and a line per dropped upload in seconds; helper-51; 300 requests for an unknown
endpoint wrote 300 lines; helper-56).

Occurrences counted but not yet written are written within about a minute even when no more
come (a burst that ended was only reported at the next occurrence, maybe days later; helper-56):
a daemon thread looks every few seconds at the throttles that hold some.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref

EVERY_S = 60.0
_FLUSH_CHECK_S = 5.0

_holding: weakref.WeakSet = weakref.WeakSet()  # throttles with occurrences not written yet
_flusher: threading.Thread | None = None
_flusher_lock = threading.Lock()


def _flush_loop() -> None:
    while True:
        time.sleep(_FLUSH_CHECK_S)
        for throttle in list(_holding):
            try:
                throttle.flush()
            except Exception:  # noqa: BLE001 - a logging handler's fault must not end the thread
                pass


def flush_later(throttle) -> None:
    """Have ``throttle.flush()`` called every few seconds until it has written what it holds."""
    global _flusher
    _holding.add(throttle)
    if _flusher is None:
        with _flusher_lock:
            if _flusher is None:
                _flusher = threading.Thread(target=_flush_loop, name="log-throttle-flush", daemon=True)
                _flusher.start()


def printable(text, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters, with control characters written as escapes (``\\n``,
    ``\\x00``): a client's path with a newline wrote a forged log line, and a NUL made the log a
    binary file to grep (helper-60)."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(text)[:limit])


def flush_all() -> None:
    """Write every count not written yet, at once: at shutdown, so that a burst in the last minute
    is not lost with the process (helper-60: four failed logins and two refusals never appeared)."""
    for throttle in list(_holding):
        try:
            throttle.flush(now_anyway=True)
        except Exception:  # noqa: BLE001 - a logging handler's fault must not stop the shutdown
            pass


class OncePerMinute:
    """``note(*args)`` logs ``message % args`` plus "(N since the last such line)" (nothing more for
    N = 1) when a minute has passed since the last line of this kind; otherwise it only counts, and
    the count is written (with the last occurrence's ``args``) once the minute has passed, whether
    or not another occurrence comes. Thread-safe."""

    def __init__(self, logger: logging.Logger, level: int, message: str, every_s: float = EVERY_S) -> None:
        self.logger, self.level, self.message, self.every_s = logger, level, message, every_s
        self.count, self.last_s = 0, -every_s
        self._last_args: tuple = ()
        self._lock = threading.Lock()

    def note(self, *args) -> None:
        with self._lock:
            self.count += 1
            now = time.monotonic()
            if now - self.last_s < self.every_s:
                self._last_args = args
                flush_later(self)  # under the lock: flush() forgets it under the same lock
                return
            count, self.count, self.last_s = self.count, 0, now
        self._write(args, count)

    def _write(self, args: tuple, count: int) -> None:
        # A line that stands for one occurrence says nothing more: "(1 since the last such line)"
        # on the very first line read as if there had been one before (helper-68).
        if count == 1:
            self.logger.log(self.level, self.message, *args)
        else:
            self.logger.log(self.level, self.message + " (%d since the last such line)", *args, count)

    def flush(self, now_anyway: bool = False) -> None:
        """Write the occurrences counted since the last line, if a minute has passed since it (or
        at once, ``now_anyway``: the process is ending)."""
        with self._lock:
            now = time.monotonic()
            if not self.count:
                _holding.discard(self)
                return
            if now - self.last_s < self.every_s and not now_anyway:
                return
            count, self.count, self.last_s, args = self.count, 0, now, self._last_args
            _holding.discard(self)
        self._write(args, count)


class OncePerMinuteByKind:
    """One :class:`OncePerMinute` per kind (a status code, an endpoint), made on first use; at most
    ``max_kinds`` kinds are kept apart, the rest share one. Thread-safe."""

    def __init__(self, logger: logging.Logger, level: int, message: str, max_kinds: int = 100,
                 every_s: float = EVERY_S) -> None:
        self.logger, self.level, self.message, self.every_s, self.max_kinds = logger, level, message, every_s, max_kinds
        self._kinds: dict = {}
        self._lock = threading.Lock()

    def note(self, kind, *args) -> None:
        with self._lock:
            throttle = self._kinds.get(kind)
            if throttle is None:
                key = kind if len(self._kinds) < self.max_kinds else None
                throttle = self._kinds.setdefault(key, OncePerMinute(self.logger, self.level, self.message,
                                                                     self.every_s))
        throttle.note(*args)


class _ThrottledRecords(logging.Filter):
    """Drops a library logger's records and writes them through a :class:`OncePerMinute`."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.throttle = OncePerMinute(logging.getLogger(__name__), logging.WARNING, name + ": %s")

    def filter(self, record: logging.LogRecord) -> bool:
        self.throttle.note(printable(record.getMessage()))
        return False


def throttle_library_logger(name: str) -> None:
    """Let the logger ``name`` (a library's, whose lines follow what clients send; named exactly:
    a filter does not reach a child logger's records) write at most one line a minute, with a
    count: python_multipart wrote "Found invalid character 13 in header" once per broken upload
    (50 uploads, 50 lines; helper-60)."""
    logging.getLogger(name).addFilter(_ThrottledRecords(name))

