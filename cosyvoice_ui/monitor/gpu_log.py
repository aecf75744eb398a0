"""The ``--gpu-log`` file: one ``nvidia-smi dmon``-style line per memory sample, rotated by size.

At one sample a second a line is about 120 bytes, some 10 MB a day; unrotated it grew for as long
as the app ran. ``logging.handlers.RotatingFileHandler`` keeps the file under ``max_bytes`` and
one older file beside it (``PATH.1``), each starting with the column header.
"""

from __future__ import annotations

import logging
import logging.handlers

log = logging.getLogger(__name__)


class _DmonFile(logging.handlers.RotatingFileHandler):
    def __init__(self, path: str, max_bytes: int, header: str) -> None:
        super().__init__(path, maxBytes=max_bytes, backupCount=1, encoding="utf-8")
        self.terminator = ""  # the lines bring their own newlines
        self._header = header
        self._failed = False
        self._failures = 0

    def doRollover(self) -> None:
        super().doRollover()
        if self.stream:  # the new file starts with the column names too
            self.stream.write(self._header)

    def handleError(self, record) -> None:
        # A full disk would print logging's traceback every sample (every second): say it once.
        self._failures += 1
        if not self._failed:
            self._failed = True
            log.error("cannot write the GPU log %s; samples are dropped until it works again",
                      self.baseFilename, exc_info=True)

    def emit(self, record) -> None:
        failures = self._failures
        super().emit(record)
        if self._failed and self._failures == failures:  # this one went through
            self._failed = False
            log.warning("the GPU log %s is writable again", self.baseFilename)


class GpuLog:
    """Appends sample lines to ``path``; at ``max_bytes`` the file becomes ``path.1`` (replacing
    an older one) and a new one starts.

    Args:
        path: the file (created if missing; appended to otherwise).
        max_bytes: size at which it is rotated (bytes, > 0).
        header: written at the top of each new file and once per start.
    Raises:
        OSError: when the file cannot be opened (settings check this before the app starts).
    """

    def __init__(self, path: str, max_bytes: int, header: str) -> None:
        self._handler = _DmonFile(path, max(1, max_bytes), header)  # 0 would mean "never rotate"
        self.write(header)

    def write(self, lines: str) -> None:
        self._handler.handle(logging.makeLogRecord({"msg": lines, "levelno": logging.INFO, "levelname": "INFO"}))

    def close(self) -> None:
        try:
            self._handler.close()
        except OSError:  # the last lines cannot be flushed either (the disk is still full)
            pass
