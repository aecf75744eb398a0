"""The ``--gpu-log`` file: one ``nvidia-smi dmon``-style line per memory sample, rotated by size.

At one sample a second a line is about 110 bytes (one GPU), some 10 MB a day; unrotated it grew for as long
as the app ran. ``logging.handlers.RotatingFileHandler`` keeps the file under ``max_bytes`` and
one older file beside it (``PATH.1``), each starting with the column header.
"""

from __future__ import annotations

import errno
import logging
import logging.handlers
import os
import re
import stat
import sys

log = logging.getLogger(__name__)

HEADER_START = "# Date "  # every file this module writes starts so (sampler's column header)


# A sample line (sampler.format_dmon_line): date and time, then the columns. A file may start
# with one: logrotate's copytruncate can empty the log between the header check and a write.
_SAMPLE_LINE = re.compile(rb"  \d{8}   \d\d:\d\d:\d\d  ")


def is_gpu_log(start: bytes) -> bool:
    """Whether a file whose first bytes are ``start`` is a ``--gpu-log`` file this app wrote: it
    starts with the column header (:data:`HEADER_START`) or a sample line. Appending samples to any
    other file damaged it (helper-145: ``--gpu-log /etc/passwd`` added a line a second to the
    system's user list)."""
    return start.startswith(HEADER_START.encode()) or _SAMPLE_LINE.match(start) is not None


class _DmonFile(logging.handlers.RotatingFileHandler):
    def __init__(self, path: str, max_bytes: int, header: str) -> None:
        # A link given at the start is followed then, once: one planted later is not (_open).
        path = os.path.realpath(path) if os.path.islink(path) else path
        # The file last opened (st_dev, st_ino): at first the one the start's check accepted.
        try:
            on_disk = os.stat(path)
            self._file_id: tuple[int, int] | None = (on_disk.st_dev, on_disk.st_ino)
        except OSError:
            self._file_id = None
        super().__init__(path, maxBytes=max_bytes, backupCount=1, encoding="utf-8")
        self.terminator = ""  # the lines bring their own newlines
        self._header = header
        self._failures = 0
        self._failures_before_outage = 0
        self._rotation_failed = False
        self._writing_header = False  # the record being written is the header itself
        self.error: str | None = None  # the latest, while writing fails

    def _open(self, mode: str | None = None):
        """The log's path opened for writing (``mode`` "a" or "w"; the handler's own by default).

        Raises:
            OSError: the path cannot be opened, is a link, a FIFO, socket or terminal, or is a
                file other than the one opened before that holds no GPU log (put there while the
                app ran: helper-148 linked the path to a file of its own and got samples in it).
        """
        # A FIFO put in the log's place made the reopen wait in open() for a reader for good,
        # holding the handler's lock: sampling stopped, no error was counted, and the shutdown
        # waited on that lock (helper-122). O_NONBLOCK makes such an open return at once (ENXIO
        # without a reader). A FIFO or socket is refused even with a reader: its writes wait on
        # that process. So is a terminal: a pty whose other end nobody read stopped sampling in
        # write() the same way (helper-125); O_NOCTTY keeps it from becoming the app's terminal.
        # Other character devices (/dev/null, /dev/full in the tests) never wait on anyone.
        mode = mode or self.mode
        # Read and write: a file not opened before is read first; truncated ("w") only after that.
        # Appending also when started over ("w", truncated below): written at its own offset, a log
        # that logrotate's copytruncate emptied got that many NUL bytes first (helper-152).
        flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_APPEND
        try:
            fd = os.open(self.baseFilename, flags, 0o666)
        except OSError as e:
            if e.errno == errno.ENXIO:
                raise OSError(e.errno, "a FIFO with no reader is in its place, not a regular file",
                              self.baseFilename) from None
            raise
        try:
            kind = os.fstat(fd).st_mode
            if not (stat.S_ISREG(kind) or stat.S_ISCHR(kind)):
                raise OSError(errno.EINVAL, "a FIFO or socket is in its place, not a regular file", self.baseFilename)
            if os.isatty(fd):
                raise OSError(errno.EINVAL, "a terminal is in its place, not a regular file", self.baseFilename)
            held = os.fstat(fd)
            if (stat.S_ISREG(kind) and held.st_size and (held.st_dev, held.st_ino) != self._file_id
                    and not is_gpu_log(os.pread(fd, 64 * 1024, 0))):
                raise OSError(errno.EEXIST, "a file the app did not write is in its place; nothing was written "
                                            "to it", self.baseFilename)
            self._file_id = (held.st_dev, held.st_ino)
            if mode == "w" and stat.S_ISREG(kind):
                os.ftruncate(fd, 0)
            os.set_blocking(fd, True)
            return open(fd, mode, encoding=self.encoding, errors=self.errors)
        except BaseException:
            os.close(fd)
            raise

    def doRollover(self) -> None:
        try:
            self._refuse_a_foreign_rotation_file()
            super().doRollover()
        except OSError as e:
            # PATH.1 cannot be replaced (a folder, no permission): every later sample was dropped
            # (twenty-sixth newcomer session). The log starts over in PATH instead, so the newest
            # samples are kept and the size stays bounded; said once per failure in a row.
            if self.stream is not None:
                self.stream.close()
            self.stream = None
            self.stream = self._open("w")
            if not self._rotation_failed:
                self._rotation_failed = True
                log.warning("cannot rotate the GPU log to %s.1 (%s); %s is started over instead",
                            self.baseFilename, e, self.baseFilename)
        else:
            self._rotation_failed = False
        # The new file starts with the column names too, unless they are what is being written: a
        # full file rotated at start had them twice (helper-114).
        if self.stream and self.stream.tell() == 0 and not self._writing_header:
            self.stream.write(self._header)

    def _refuse_a_foreign_rotation_file(self) -> None:
        """Raise OSError when ``PATH.1`` is a file the app did not write: the rotation renamed the
        log over it, and a file put there while the app ran was lost (helper-149; the start
        refuses one that is there already). A link there is replaced, not followed."""
        rotated = self.baseFilename + ".1"
        if os.path.islink(rotated) or not os.path.isfile(rotated):
            return  # nothing there, or what the rename itself then says is wrong (a folder)
        try:
            with open(rotated, "rb") as f:
                start = f.read(64 * 1024)
        except OSError as e:
            # The app reads what it wrote; a file it cannot read is not its own. The rename needs
            # no read permission, and replaced a mode-000 file of another user's (helper-151).
            raise OSError(errno.EEXIST, f"a file the app cannot read ({e.strerror}) is there; it is left as it is",
                          rotated) from None
        if start and not is_gpu_log(start):
            raise OSError(errno.EEXIST, "a file the app did not write is there; it is left as it is", rotated)

    def _reopen_if_moved(self) -> None:
        # The path renamed or deleted under the app (by hand, by logrotate): the open handle kept
        # writing to the old file and the path got nothing, without a word (twenty-third newcomer
        # session). As logging's WatchedFileHandler does, the path is opened again; a folder or
        # an unwritable path in its place then fails here, and is reported.
        try:
            on_disk = os.stat(self.baseFilename)
        except FileNotFoundError:
            on_disk = None
        if self.stream is not None and on_disk is not None:
            held = os.fstat(self.stream.fileno())
            if (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino):
                # Emptied in place (logrotate's copytruncate): the samples went on with no column
                # names, and the next start refused the file as not a GPU log (helper-151).
                if on_disk.st_size == 0 and not self._writing_header:
                    self.stream.write(self._header)
                return
        if self.stream is not None:
            stream, self.stream = self.stream, None
            try:
                stream.close()
            except OSError:  # its last lines cannot be flushed (a full disk)
                pass
        self.stream = self._open()
        # Only a new file gets the column names: after a failed rotation (the stream closed, the
        # file still full) the same file is opened again for every sample, and a header each time
        # grew it past the limit without end (twenty-fourth newcomer session).
        if self.stream.tell() == 0 and not self._writing_header:
            self.stream.write(self._header)

    def handleError(self, record) -> None:
        # A full disk would print logging's traceback every sample (every second): say it once.
        first = self.error is None  # the first failure of an outage is logged, the rest counted
        if first:
            self._failures_before_outage = self._failures
        self._failures += 1
        self.error = f"cannot write the GPU log {self.baseFilename}: {sys.exc_info()[1]}"
        if first:
            log.error("%s; samples are dropped until it works again", self.error)

    def emit(self, record) -> None:
        self._writing_header = record.msg == self._header
        failures = self._failures
        try:
            self._reopen_if_moved()
        except OSError:
            self.handleError(record)
            return
        super().emit(record)
        if self.error is not None and self._failures == failures:  # this one went through
            self.error = None
            log.warning("the GPU log %s is writable again; %d sample(s) were not written to it (%d since the "
                        "start)", self.baseFilename, self._failures - self._failures_before_outage, self._failures)


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

    @property
    def write_errors(self) -> int:
        """Writes (sample lines) that failed since the start."""
        return self._handler._failures

    @property
    def error(self) -> str | None:
        """Why writing fails, while it does; ``None`` once it works (again)."""
        return self._handler.error

    def close(self, timeout_s: float = 2.0) -> None:
        """Flush and close the file, waiting at most ``timeout_s`` for a write in progress.

        A write stuck in the file system (a hung network mount) holds the handler's lock; waiting
        for it kept a stopped app running, its port held, for as long as the write hung
        (helper-122). The file is then left open (logged), and left out of logging's flush at
        exit, which would wait on the same lock. Errors are not raised: lines that cannot be
        flushed are lost.
        """
        handler = self._handler
        if not handler.lock.acquire(timeout=timeout_s):
            log.warning("the GPU log %s: a write has not returned for %.0f s (a hung file system?); it is left open",
                        handler.baseFilename, timeout_s)
            with logging._lock:  # private, but the only way out of logging.shutdown()'s wait at exit
                logging._handlerList[:] = [ref for ref in logging._handlerList if ref() is not handler]
            return
        try:
            handler.close()
        except OSError:  # the last lines cannot be flushed either (the disk is still full)
            pass
        finally:
            handler.lock.release()
