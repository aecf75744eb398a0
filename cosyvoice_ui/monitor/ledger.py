"""The per-request memory ledger: one record per finished request, kept in memory (bounded) and
appended to a JSON-lines file when ``--ledger PATH`` is given."""

from __future__ import annotations

import collections
import dataclasses
import errno
import json
import logging
import math
import os
import threading
import time

log = logging.getLogger(__name__)


def _file_id(path: str) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino, stat.st_size


def is_ledger(start: bytes) -> bool:
    """Whether a file whose first bytes are ``start`` is a ``--ledger`` file this app wrote: one of
    its first five lines is a JSON record with ``time_s`` and ``outcome`` (the first may have been
    cut short by a crash). Appending records to any other file damaged it (helper-145: ``--ledger
    README.md`` added a JSON line to the README per request)."""
    for line in start.split(b"\n")[:5]:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: "[" x 70,000 (helper-151)
            continue
        if isinstance(record, dict) and {"time_s", "outcome"} <= record.keys():
            return True
    return False


@dataclasses.dataclass(frozen=True)
class LedgerRecord:
    """What one request cost. Bytes are bytes; ``None`` where a figure does not apply.

    Attributes:
        time_s: Unix time the request finished.
        outcome: "ok", "invalid", "out_of_memory", "bad_output", "error", "crash", "hung",
            "timeout", "shutdown", "failed:load", "cancelled" (withdrawn while queued), "abandoned" (its client
            left while it ran), "refused:input" / "refused:busy" / "refused:memory" /
            "refused:duplicate" (turned away before the worker).
        peak_allocated_bytes / peak_reserved_bytes: torch allocator peaks (CUDA only).
        peak_rss_bytes: the worker's peak resident memory during the request.
        real_time_factor: synthesis_s / audio_s.
    """

    time_s: float
    engine: str
    device: str
    text_chars: int
    segments: int
    max_segment_chars: int
    prompt_s: float | None
    audio_s: float | None
    synthesis_s: float | None
    real_time_factor: float | None
    peak_allocated_bytes: int | None
    peak_reserved_bytes: int | None
    peak_rss_bytes: int | None
    worker_pid: int | None
    outcome: str
    error: str | None = None
    memory_before_bytes: int | None = None  # torch allocated on CUDA, else RSS, before the request
    predicted_peak_bytes: int | None = None  # admission's prediction of the memory it would add


class Ledger:
    """Thread-safe bounded list of :class:`LedgerRecord`, optionally mirrored to a file."""

    def __init__(self, max_records: int = 1000, path: str | None = None) -> None:
        self._records: collections.deque[LedgerRecord] = collections.deque(maxlen=max_records)
        self._lock = threading.Lock()
        # A link given at the start is followed then, once: a link planted at the path later is
        # not followed (see _open_for_append).
        self._path = os.path.realpath(path) if path and os.path.islink(path) else path
        self._listeners: list = []
        self.write_errors = 0  # records the file lost since the start (in memory they are kept)
        self.write_error: str | None = None  # the latest, while writing fails; None once it works again
        self._lost_in_outage = 0  # since the file was last writable: what "writable again" reports
        # What earlier runs wrote ends here; read_back() reads no further (not this run's records).
        self._earlier_bytes = os.path.getsize(path) if path and os.path.isfile(path) else 0
        # The file written to (st_dev, st_ino, size): the one the start checked, then each one
        # written. Its size too: a file made after the ledger's was deleted may get its inode
        # number, and was taken for it (helper-149).
        self._file_id = _file_id(self._path) if self._path else None

    def _open_for_append(self):
        """The ledger file, opened to append (made if missing).

        Raises:
            OSError: also when a link stands at the path (ELOOP), or when the file there is not the
                one written before and holds no ledger records: a file moved or linked there after
                the start's check took the records (helper-147: ``ln -s victim.txt ledger.jsonl``).
        """
        fd = os.open(self._path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)
        f = os.fdopen(fd, "ab+")
        try:
            stat = os.fstat(fd)
            known = self._file_id is not None and (stat.st_dev, stat.st_ino) == self._file_id[:2] \
                and stat.st_size in (self._file_id[2], 0)  # or emptied (by logrotate's copytruncate)
            if not known and stat.st_size > 0:
                f.seek(0)
                if not is_ledger(f.read(64 * 1024)):
                    raise OSError(errno.EEXIST, "the file now there was put in its place after the start and is "
                                                "not a ledger; nothing was written to it")
            self._file_id = (stat.st_dev, stat.st_ino, stat.st_size)
        except BaseException:
            f.close()
            raise
        return f

    def subscribe(self, listener) -> None:
        """Call ``listener(record)`` for every record added from now on."""
        self._listeners.append(listener)

    def add(self, record: LedgerRecord) -> None:
        with self._lock:
            self._records.append(record)
            if self._path:
                try:
                    with self._open_for_append() as f:
                        # A line cut short (a crash mid-write, a full disk) would swallow this record.
                        cut_short = False
                        if f.seek(0, os.SEEK_END) > 0:
                            f.seek(-1, os.SEEK_END)
                            cut_short = f.read(1) != b"\n"
                        line = json.dumps(dataclasses.asdict(record), ensure_ascii=False) + "\n"
                        f.write((("\n" if cut_short else "") + line).encode("utf-8"))
                        f.flush()
                        self._file_id = self._file_id[:2] + (os.fstat(f.fileno()).st_size,)
                    if self.write_error:
                        log.warning("ledger %s is writable again; %d record(s) were not written to it (%d since "
                                    "the start)", self._path, self._lost_in_outage, self.write_errors)
                        self.write_error = None
                        self._lost_in_outage = 0
                except Exception as e:  # noqa: BLE001 - nothing in or about the file may fail a request
                    # Not OSError alone: a file of 70,000 "[" moved to the path made the check's
                    # json.loads raise RecursionError, which killed the supervisor's dispatcher
                    # (every later request hung, SIGTERM no longer ended the app; helper-151).
                    # Also in /healthz and /metrics: an ERROR line alone went unseen (twenty-second
                    # newcomer session: the file replaced by a folder, health "ok" throughout).
                    self.write_errors += 1
                    self._lost_in_outage += 1
                    self.write_error = f"cannot append to ledger {self._path}: {e}"
                    log.error("%s", self.write_error)
        for listener in self._listeners:
            try:
                listener(record)
            except Exception:
                log.exception("ledger listener failed")

    def add_event(self, engine: str, device: str, outcome: str, error: str, text_chars: int = 0,
                  worker_pid: int | None = None) -> None:
        """Record something that is not a synthesized request: a refusal in the web process (bad
        input, busy, not enough memory) or a restart for a suspected leak."""
        self.add(LedgerRecord(time_s=time.time(), engine=engine, device=device, text_chars=text_chars, segments=0,
                              max_segment_chars=0, prompt_s=None, audio_s=None, synthesis_s=None,
                              real_time_factor=None, peak_allocated_bytes=None, peak_reserved_bytes=None,
                              peak_rss_bytes=None, worker_pid=worker_pid, outcome=outcome, error=error[:300]))

    def read_back(self, engine: str, device: str, tail_bytes: int = 8 * 2**20) -> int:
        """Load the ``--ledger`` file's latest records of this engine and device into memory, so
        that admission's fit (and the page's table) goes on from the last run instead of starting
        from its conservative prior after every start. Listeners are not called: ``/metrics``
        counts this run's requests only.

        Args:
            engine / device: only records with both equal are kept (device as the worker reports
                it, e.g. ``cpu`` or ``cuda:0``).
            tail_bytes: at most this much of the file's end is read (a file of days stays quick).

        Returns:
            The number of records loaded (0 without a file). Only what the file held when this
            ledger was made is read (not this run's records); lines that are not records (cut
            short, edited, another version's) are skipped.
        """
        self.read_back_others = 0  # records of other engines or devices, left out
        if not self._earlier_bytes:
            return 0
        fields = {f.name for f in dataclasses.fields(LedgerRecord)}
        required = {f.name for f in dataclasses.fields(LedgerRecord) if f.default is dataclasses.MISSING}
        loaded = []
        try:
            with open(self._path, "rb") as f:
                size = self._earlier_bytes
                f.seek(max(0, size - tail_bytes))
                lines = f.read(min(size, tail_bytes)).split(b"\n")
        except OSError as e:
            log.warning("cannot read ledger %s back: %s", self._path, e)
            return 0
        if size > tail_bytes:
            lines = lines[1:]  # the first is cut by the seek
        skipped = 0
        for line in lines:
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict) or not required <= row.keys() or not _plausible(row):
                    raise ValueError("not a record")
                record = LedgerRecord(**{k: v for k, v in row.items() if k in fields})
            except (ValueError, TypeError, RecursionError):  # RecursionError: "[" x 3000 (forty-seventh session)
                skipped += 1
                continue
            if record.engine == engine and record.device == device:
                loaded.append(record)
            else:
                self.read_back_others += 1
        if skipped:
            log.warning("ledger %s: %d line(s) that are not records were skipped while reading it back",
                        self._path, skipped)
        with self._lock:
            room = self._records.maxlen - len(self._records)  # never push out this run's records
            older = loaded[-room:] if room > 0 else []
            self._records.extendleft(reversed(older))  # before anything this run added already
        return len(older)

    def records(self) -> list[LedgerRecord]:
        """All kept records, oldest first."""
        with self._lock:
            return list(self._records)


# What a read-back record must hold: an edited or damaged field ("peak_rss_bytes": "lots", a
# null length, 1e308) failed every request in admission's fit, with a traceback and /healthz
# "ok" (twenty-fifth newcomer session).
_MAX_PLAUSIBLE_BYTES = 2**44  # 16 TiB: no device or host comes near it
_MAX_PLAUSIBLE_CHARS = 10**6
_MAX_PLAUSIBLE_PID = 2**31 - 1  # Linux's pid_t


def _plausible(row: dict) -> bool:
    """True when every field of a ledger line has its type and a sane range."""
    def number(value, maximum, optional=True, integer=False) -> bool:
        if value is None:
            return optional
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
            return False
        # An int is compared as it is: math.isfinite(1e400 written as digits) raised OverflowError
        # and stopped the start (helper-152).
        return (isinstance(value, int) or math.isfinite(value)) and 0 <= value <= maximum
    return (all(isinstance(row.get(k), str) for k in ("engine", "device", "outcome"))
            and number(row.get("time_s"), 1e11, optional=False)
            and all(number(row.get(k), _MAX_PLAUSIBLE_CHARS, optional=False, integer=True)
                    for k in ("text_chars", "segments", "max_segment_chars"))
            and all(number(row.get(k), _MAX_PLAUSIBLE_BYTES, integer=True)
                    for k in ("peak_allocated_bytes", "peak_reserved_bytes", "peak_rss_bytes", "memory_before_bytes",
                              "predicted_peak_bytes"))
            and all(number(row.get(k), 1e7) for k in ("prompt_s", "audio_s", "synthesis_s", "real_time_factor"))
            # A pid of 31 digits reached the page's ledger table, which Gradio could not send
            # ("Integer exceeds 64-bit range"): every monitor refresh failed (helper-152).
            and number(row.get("worker_pid"), _MAX_PLAUSIBLE_PID, integer=True))


def now_s() -> float:
    return time.time()
