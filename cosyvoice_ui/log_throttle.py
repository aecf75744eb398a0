"""A log line that may repeat as often as clients like is written at most once a minute, with a
count: what a client can make happen must not flood the log (a connection flood wrote 16,384
tracebacks and a line per dropped upload in seconds; helper-51)."""

from __future__ import annotations

import logging
import threading
import time

EVERY_S = 60.0


class OncePerMinute:
    """``note(*args)`` logs ``message % args`` plus "(N since the last such line)" when a minute has
    passed since the last line of this kind; otherwise it only counts. Thread-safe."""

    def __init__(self, logger: logging.Logger, level: int, message: str, every_s: float = EVERY_S) -> None:
        self.logger, self.level, self.message, self.every_s = logger, level, message, every_s
        self.count, self.last_s = 0, -every_s
        self._lock = threading.Lock()

    def note(self, *args) -> None:
        with self._lock:
            self.count += 1
            now = time.monotonic()
            if now - self.last_s < self.every_s:
                return
            count, self.count, self.last_s = self.count, 0, now
        self.logger.log(self.level, self.message + " (%d since the last such line)", *args, count)
