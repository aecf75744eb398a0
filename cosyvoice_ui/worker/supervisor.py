"""The supervisor: owns the worker process, the request queue, deadlines, restarts and retries.

It lives in the web process. One dispatcher thread does everything that touches the worker
(spawn, send, receive, kill), so there is never a question of who owns the pipe; other threads
only put jobs and commands in and read status out.

Guarantees:
- one request at a time reaches the worker;
- a worker that dies (segfault, SIGKILL, OOM killer) is noticed at once through the process
  sentinel (well inside 2 s), a new one is started, and the request that was running is run
  again once; a request that kills two workers fails with a clear message;
- a request that passes its deadline fails and the worker is replaced;
- restart lets the running request finish (bounded by ``restart_grace_s``), then replaces the
  worker; queued requests wait and none is lost;
- the queue is bounded: a full queue answers "busy" at once.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import logging
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import tempfile
import threading
import time
import uuid
from multiprocessing import resource_tracker
from typing import Callable

import numpy as np
import psutil

from ..duration_text import duration_text
from ..engines.base import SynthesisOutput, SynthesisRequest
from ..engines.long_text import SegmentJoiner
from ..errors import (STOPPING_MESSAGE, BusyError, RequestTimedOut, ServiceStopping, SynthesisFailed,
                      UnusablePromptAudio)
from ..inputs.segments import spoken_chars
from ..monitor.leak import LeakReport, LeakWatchdog
from ..monitor.ledger import Ledger, LedgerRecord
from ..temp_files import remove_folders_of_gone_processes
from . import protocol as msg
from .process import STOP_SIGNALS, worker_main

log = logging.getLogger(__name__)

# States shown in the panel and /status.
STARTING, READY, BUSY, RESTARTING, CRASHED, FAILED, STOPPING, STOPPED, UNLOADED = (
    "loading", "ready", "busy", "restarting", "crashed", "failed", "stopping", "stopped", "unloaded")
HEALTHY_STATES = (READY, BUSY, UNLOADED)  # unloaded: idle by design, loads on the next request
MAX_CRASHES_PER_REQUEST = 2
# A silent worker that used at least this share of one core since its last heartbeat is computing.
_WORKING_CPU_SHARE = 0.05
_MAX_SILENCE_FACTOR = 6
_POLL_S = 0.1
# Inherited by every spawned worker (glibc reads them at process start). A fixed mmap threshold
# stops glibc from raising it after each large free, so big activation buffers keep coming from
# mmap and go back to the system when freed; without it the worker's RSS ratchets up with the
# longest segment seen (bench/memory_vs_length.py: PyTorch engine, 2000/200-char peak ratio 1.92
# without, 1.13 with).
WORKER_ENVIRONMENT = {"MALLOC_MMAP_THRESHOLD_": "262144"}


@dataclasses.dataclass
class _Job:
    id: str
    request: SynthesisRequest
    future: concurrent.futures.Future
    timeout_s: float
    enqueued_at: float
    crashes: int = 0
    attempts: int = 0
    on_progress: Callable[[int, int], None] | None = None
    predicted_peak_bytes: int | None = None
    on_audio: Callable[[np.ndarray, int, bool], None] | None = None
    # The audio so far of the running attempt, joined as it arrives (see _take_chunk).
    joiner: SegmentJoiner | None = None
    pieces: list = dataclasses.field(default_factory=list)
    chunk_attempt: int = 0
    restarted_audio: bool = False
    abandoned: bool = False  # its client left while it ran (see Supervisor.withdraw)
    withdrawn_because: str | None = None  # the ledger's reason, when not "the client left"
    ran_on_pid: int | None = None  # the worker of its last attempt (the ledger's pid once that one is gone)


@dataclasses.dataclass
class _Worker:
    process: multiprocessing.process.BaseProcess
    conn: multiprocessing.connection.Connection
    started_at: float
    ready: msg.Ready | None = None
    load_failed: str | None = None
    last_heartbeat_at: float = 0.0
    cpu_s_at_heartbeat: float | None = None  # the process's CPU time (user + system) then
    killed_because: str | None = None  # set when the app itself ends the worker
    memory: msg.MemorySnapshot | None = None
    scratch: str | None = None  # the worker's temporary folder, removed once the process is gone
    # Several threads send (a request from its own thread, an Abandon, Shutdown): one at a time,
    # or their bytes would interleave in the pipe.
    send_lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)


@dataclasses.dataclass(frozen=True)
class RestartReport:
    """What a restart did. Memory figures are the worker's own (RSS; torch on CUDA)."""

    reason: str
    old_pid: int | None
    new_pid: int | None
    duration_s: float
    memory_before: msg.MemorySnapshot | None
    memory_after: msg.MemorySnapshot | None
    error: str | None = None
    # The id of the request the restart stopped after --restart-grace (it runs again from the start
    # on the new worker): the report said only that the press "waited for the running request" (helper-55).
    rerun_request_id: str | None = None
    # Why earlier workers of this restart failed to load before one did ("exited while loading
    # (exit code -9)"): the report said only "Restarted", the log alone told of a retry (helper-63).
    failed_load_attempts: tuple[str, ...] = ()


class Supervisor:
    """Runs one worker process and feeds it requests one at a time.

    Args:
        engine: engine name or ``module:Class`` for the worker to load.
        device: ``auto|cpu|cuda|cuda:N``, resolved in the worker.
        fp16: half precision on CUDA where supported.
        max_queue: requests that may wait (beyond the one running) before :class:`BusyError`.
        request_timeout_s: deadline of one request inside the worker.
        restart_grace_s: how long a restart waits for the running request.
        start_timeout_s: how long a worker may take to load its model.
        heartbeat_interval_s: the worker's heartbeat period; a worker silent for
            ``max(10 s, 20 periods)`` is taken as hung and replaced.
        ledger: where every finished request leaves a record (a new in-memory one by default).
        idle_unload_after_s: end the worker after this long without requests (``None``: never);
            the next request starts a new one.
        retry_failed_load_after_s: in the ``failed`` state (a load failed 3 times), load again this
            long after the failure, and again after each failure (``None``: only Restart does).
        leak_watchdog: judges after-request memory (default thresholds when ``None``).
        restart_on_leak: replace a leaking worker between requests (never during one).
        engine_options: keyword arguments of the engine class (``--model-dir`` etc. for CosyVoice).
        empty_cache_after_request: ``torch.cuda.empty_cache()`` in the worker after every request.
    """

    def __init__(self, engine: str = "embedded", device: str = "auto", fp16: bool = True, *,
                 max_queue: int = 16, request_timeout_s: float = 120.0, restart_grace_s: float = 30.0,
                 start_timeout_s: float = 180.0, heartbeat_interval_s: float = 0.5,
                 ledger: Ledger | None = None, idle_unload_after_s: float | None = None,
                 retry_failed_load_after_s: float | None = None,
                 leak_watchdog: LeakWatchdog | None = None, restart_on_leak: bool = True,
                 engine_options: dict | None = None, empty_cache_after_request: bool = False) -> None:
        self.engine = engine
        self.engine_options = dict(engine_options or {})
        self.empty_cache_after_request = empty_cache_after_request
        self.device = device
        # The device the last worker resolved ("auto" -> "cpu"): while no worker is loaded (idle
        # unload), refusals were ledgered as "auto", which the next start's read-back counted as
        # another device (helper-50).
        self.last_device: str | None = None
        self.fp16 = fp16
        self.max_queue = max_queue
        self.request_timeout_s = request_timeout_s
        self.restart_grace_s = restart_grace_s
        self.start_timeout_s = start_timeout_s
        self.heartbeat_timeout_s = max(10.0, 20 * heartbeat_interval_s)
        self.heartbeat_interval_s = heartbeat_interval_s
        self.ledger = ledger if ledger is not None else Ledger()
        self.idle_unload_after_s = idle_unload_after_s
        self.retry_failed_load_after_s = retry_failed_load_after_s
        self._failed_at: float | None = None  # when the last load failed for good (the failed state)
        self._last_activity = time.monotonic()
        self._cache_waiters: list[concurrent.futures.Future] = []
        self.leak_watchdog = leak_watchdog or LeakWatchdog()
        self.restart_on_leak = restart_on_leak
        self._leak: LeakReport | None = None
        self._last_outcome: str | None = None
        self._last_leak: LeakReport | None = None
        self._ctx = multiprocessing.get_context("spawn")  # never fork: CUDA cannot live in a forked child
        for key, value in WORKER_ENVIRONMENT.items():
            os.environ.setdefault(key, value)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._pending: collections.deque[_Job] = collections.deque()
        self._restart_waiters: list[tuple[str, concurrent.futures.Future]] = []
        # Restarts pressed while the model loads again after an idle unload join that load: a
        # restart after it loaded the model a second time (twenty-fifth newcomer session).
        self._reloading = False
        self._load_joiners: list[concurrent.futures.Future] = []
        self._stopping = False
        self._grace_on_stop = restart_grace_s
        self._worker: _Worker | None = None
        self._inflight: _Job | None = None
        # Each unfinished future's job, for withdraw(): a job may be between the queue and the
        # worker. Entries leave when the future is done. (A WeakKeyDictionary kept them all: the
        # job, its value, refers to the future, its key, so none was ever collected and the web
        # process grew by each request's prompt and audio, 1.5 MiB a request in bench/soak.py.)
        self._jobs: dict[concurrent.futures.Future, _Job] = {}
        self._state = STARTING
        self._restarts: collections.Counter[str] = collections.Counter()
        self._last_error: str | None = None
        self._failed_load_attempts: list[str] = []  # see _spawn_until_ready
        self._last_restart: RestartReport | None = None
        self._rerun_for_restart: str | None = None  # a request stopped after the grace, for the report
        self._completed = 0
        self._with_audio = 0  # of those, the ones whose audio went to a client (ledger "ok")
        self._thread = threading.Thread(target=self._run, name="supervisor", daemon=True)

    # -- public API (any thread) -----------------------------------------------------------

    def start(self) -> "Supervisor":
        """Start the dispatcher thread, which spawns the first worker. Returns at once."""
        if remove_stale_scratch():
            log.info("removed worker temporary folders left by earlier runs that were killed")
        self._thread.start()
        return self

    def wait_ready(self, timeout_s: float | None = None) -> bool:
        """Block until a worker has loaded its model (True) or loading failed / timed out (False).

        An idle unload that came first counts as loaded: with an ``--idle-unload-after`` shorter
        than the rest of the start, the app waited here for a READY that never came again and
        never started serving (seen in a test of the seventh session: --idle-unload-after 1)."""
        deadline = time.monotonic() + (timeout_s if timeout_s is not None else self.start_timeout_s)
        while time.monotonic() < deadline:
            with self._lock:
                if self._state in (READY, BUSY, UNLOADED):
                    return True
                if self._state in (FAILED, STOPPED):
                    return False
            time.sleep(0.05)
        return False

    def submit(self, request: SynthesisRequest, timeout_s: float | None = None,
               on_progress: Callable[[int, int], None] | None = None,
               predicted_peak_bytes: int | None = None,
               on_audio: Callable[[np.ndarray, int, bool], None] | None = None) -> concurrent.futures.Future:
        """Queue a request.

        Args:
            timeout_s: this request's deadline in the worker (default ``request_timeout_s``, plus a
                quarter of it for every segment after the first).
            on_progress: called from the supervisor thread with ``(done, total)`` segments.
            predicted_peak_bytes: admission's prediction, kept in the ledger beside the actual peak.
            on_audio: called from the supervisor thread with ``(samples, sample_rate_hz, restarted)``
                as joined audio becomes ready to play (float32 ``(n,)``); ``restarted`` is True on the
                first piece of a new attempt (after a worker crash or an out-of-memory retry), whose
                audio starts again from the beginning. The future's output holds all of it.

        Returns:
            A future resolving to ``(SynthesisOutput, RequestStats)``, or raising
            :class:`SynthesisFailed` / :class:`RequestTimedOut` / :class:`ServiceStopping`.

        Raises:
            BusyError: ``max_queue`` requests are already waiting.
            ServiceStopping: the supervisor is shutting down.
        """
        future: concurrent.futures.Future = concurrent.futures.Future()
        job = _Job(id=uuid.uuid4().hex[:12], request=request, future=future,
                   timeout_s=timeout_s or self.request_timeout_s * (1 + 0.25 * max(0, len(request.segments) - 1)),
                   enqueued_at=time.monotonic(),
                   on_progress=on_progress, predicted_peak_bytes=predicted_peak_bytes, on_audio=on_audio)
        # A waiting request is withdrawn by cancelling its future (its client left); it still
        # gets a ledger record with its device and segments, like every request.
        future.add_done_callback(lambda f: f.cancelled() and self._record(
            job, "cancelled", error="the client left while the request was queued"))
        with self._lock:
            if self._stopping:
                raise ServiceStopping(STOPPING_MESSAGE)
            if self._thread.ident is not None and not self._thread.is_alive():
                # The dispatcher crashed (a bug; logged): nothing would ever run this request, and
                # every later one waited for its deadline in the client (helper-151).
                raise SynthesisFailed("The server hit an internal error and cannot run requests until the "
                                      "application is restarted (see the server log).")
            # Requests withdrawn by clients that left hold no slot.
            self._pending = collections.deque(j for j in self._pending if not j.future.cancelled())
            # While no worker is ready (loading at start, after a restart or an idle unload), the
            # request that runs next waits in the queue rather than in flight; it takes no waiting
            # slot, or a burst got one fewer accepted than with the model loaded (eighteenth newcomer session).
            next_to_run = 1 if self._inflight is None and self._state not in (READY, BUSY) else 0
            waiting = len(self._pending) - min(next_to_run, len(self._pending))
            if waiting >= self.max_queue:
                raise BusyError(
                    f"The server is busy: {waiting} request{'s are' if waiting != 1 else ' is'} "
                    f"already waiting (limit {self.max_queue}). "
                    "Try again in a moment."
                )
            self._pending.append(job)
            self._jobs[future] = job
            self._wake.notify_all()
        future.add_done_callback(self._forget)
        return future

    def _forget(self, future: concurrent.futures.Future) -> None:
        # No lock: a future may be completed by a thread holding it, and a dict's pop is atomic.
        self._jobs.pop(future, None)

    def withdraw(self, future: concurrent.futures.Future, because: str | None = None) -> None:
        """The client of the request behind ``future`` (from :meth:`submit`) has left, or no longer
        wants its result (``because``: the ledger's words for why, in place of "the client left").

        A waiting request is cancelled (ledger outcome ``cancelled``). A running one is told to
        stop before its next segment (a segment already started runs to its end), so a long text
        whose client left does not hold the worker; its ledger outcome is ``abandoned``, also when
        its last segment was already running. It is not run again after a restart or crash.
        """
        if because:
            with self._lock:
                job = self._jobs.get(future)
                if job is not None:
                    job.withdrawn_because = because
        if future.cancel():
            return
        with self._lock:
            job = self._jobs.get(future)
            if job is None or future.done():
                return
            job.abandoned = True  # seen by _run_job if the job is not on a worker now
            w = self._worker if self._inflight is job else None
        if w is not None:
            log.info("the client of request %s left while it ran: stopping it before its next segment", job.id)
            threading.Thread(target=_send_quietly, args=(w, msg.Abandon(request_id=job.id)),
                             name=f"abandon-{job.id}", daemon=True).start()

    def synthesize(self, request: SynthesisRequest, timeout_s: float | None = None,
                   on_progress: Callable[[int, int], None] | None = None,
                   predicted_peak_bytes: int | None = None) -> tuple[SynthesisOutput, msg.RequestStats]:
        """:meth:`submit` and wait for the result (same errors as the future)."""
        return self.submit(request, timeout_s, on_progress, predicted_peak_bytes).result()

    def restart(self, reason: str = "user", wait: bool = True, timeout_s: float | None = None) -> RestartReport | concurrent.futures.Future:
        """Replace the worker with a fresh process.

        The running request may finish within ``restart_grace_s``; after that the worker is killed
        and the request runs again on the new worker. Queued requests wait. Restarts asked for
        while one is pending are served by the same restart.

        Returns:
            The :class:`RestartReport` (``wait=True``) or a future of it. A restart whose new
            worker could not be loaded (three tries) returns a report with ``error`` set.

        Raises:
            ServiceStopping: the application is shutting down.
            SynthesisFailed: ``wait=True`` and the restart has not ended within ``timeout_s``
                (default: the grace, three tries to load and their pauses); it goes on.
        """
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if self._stopping:
                raise ServiceStopping("The application is shutting down; press Restart again once the server is "
                                      "back, if still needed.")
            if self._reloading:
                self._load_joiners.append(future)
            else:
                self._restart_waiters.append((reason, future))
            self._wake.notify_all()
        if not wait:
            return future
        # The whole restart: the grace, the old worker's end, three tries to load with their pauses.
        # One try's worth (grace + start timeout + 10 s) gave the caller a bare TimeoutError, no
        # report, while the restart went on to its second and third tries (helper-122).
        limit = timeout_s if timeout_s is not None else self.restart_grace_s + 3 * (self.start_timeout_s + 10) + 30
        try:
            return future.result(timeout=limit)
        except concurrent.futures.TimeoutError:
            raise SynthesisFailed(f"The restart has not finished within {limit:.0f} s; it goes on, and /healthz "
                                  "shows its state. See the server log for why the model loads slowly.") from None

    def free_cache(self, timeout_s: float = 60.0) -> dict:
        """Ask the worker to return its allocator's cached memory (``torch.cuda.empty_cache()``
        and ``gc.collect()``), between requests. Unlike :meth:`restart`, the process and the
        model stay.

        Returns:
            ``{"reserved_before_bytes", "reserved_after_bytes", "allocated_bytes", "rss_before_bytes",
            "rss_after_bytes", "pid"}`` (torch figures ``None`` on the CPU), or ``{"state": "unloaded"}``
            when no worker is loaded. ``"replaced_pid"`` is added when the worker of the press was
            replaced (it hung, crashed or was restarted) before its turn: the figures are then the
            new worker's.

        Waits for the running request to end (its own deadline bounds it) and for a worker being
        started or replaced to be ready, then at most ``timeout_s`` for the worker's answer.

        Raises:
            ServiceStopping: the application is shutting down.
            SynthesisFailed: the worker is not ready (failed, stopping), or gave no answer within
                ``timeout_s``.
        """
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if self._stopping:
                raise ServiceStopping("The application is shutting down; the worker's memory is returned when it "
                                      "ends.")
            pid_at_press = self._worker.process.pid if self._worker else None
            self._cache_waiters.append(future)
            self._wake.notify_all()
        # Freed between requests: a press waits for the running one to end, however long its own
        # deadline lets it run (waiting 60 s + the grace gave a bare TimeoutError when it ran on,
        # helper-122), and then at most ``timeout_s``.
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                report = future.result(timeout=_POLL_S)
                break
            except concurrent.futures.TimeoutError:
                pass
            with self._lock:
                behind_a_request = future in self._cache_waiters and (self._inflight is not None
                                                                      or self._state in (STARTING, RESTARTING))
                late = not behind_a_request and time.monotonic() > deadline
                if late and future in self._cache_waiters:
                    self._cache_waiters.remove(future)
            if behind_a_request:
                deadline = time.monotonic() + timeout_s
            elif late:
                if future.done():
                    continue
                raise SynthesisFailed(f"The worker did not answer the free-cache request within {timeout_s:.0f} s "
                                      "(it may be hung; a hung worker is replaced on its own). Try again in a moment.")
        if pid_at_press is not None and report.get("pid") not in (None, pid_at_press):
            # It reported the new worker's figures as if nothing had happened (twenty-second newcomer session).
            report = {**report, "replaced_pid": pid_at_press}
        return report

    def status(self) -> dict:
        """A JSON-serializable snapshot: state, pid, device, restarts, queue, memory figures."""
        with self._lock:
            w = self._worker
            if self._state in (FAILED, STOPPED) and w is not None and w.process.exitcode is not None:
                # No worker runs: the last one's pid and memory read as a live 40 MB worker on
                # /healthz and /metrics while the model could not be loaded (helper-118).
                w = None
            ready = w.ready if w else None
            memory = w.memory if w else None
            hb_age = (time.monotonic() - w.last_heartbeat_at) if (w and w.last_heartbeat_at) else None
            last = self._last_restart
            state = self._state
            # A drain or a restart waiting for the running request: still busy, but a load
            # balancer should send new requests elsewhere (/healthz answers 503 for these).
            if self._stopping and state != STOPPED:
                state = STOPPING
            elif self._restart_waiters and state in (READY, BUSY):
                state = RESTARTING
            return {
                "state": state,
                "pid": w.process.pid if w else None,
                "engine": self.engine,
                "device": (ready.facts.get("device") if ready else None) or self.last_device or self.device,
                "dtype": ready.facts.get("dtype") if ready else None,
                "engine_facts": dict(ready.facts) if ready else {},
                "load_s": round(ready.load_s, 3) if ready else None,
                "restarts": sum(self._restarts.values()),
                "restarts_by_reason": dict(self._restarts),
                # Withdrawn requests stay in the deque until the dispatcher or submit() drops them.
                "queue_depth": sum(1 for j in self._pending if not j.future.cancelled()),
                "max_queue": self.max_queue,
                "in_flight": self._inflight.id if self._inflight else None,
                "completed": self._completed,  # every run the worker ended: ok, failed, stopped
                "completed_with_audio": self._with_audio,
                "heartbeat_age_s": round(hb_age, 2) if hb_age is not None else None,
                "memory": dataclasses.asdict(memory) if memory else None,
                "last_error": self._last_error,
                "next_load_retry_s": (round(retry, 1) if (retry := self._next_load_retry_s_unlocked()) is not None
                                      else None),
                "last_restart": report_to_dict(last) if last else None,
                "leak": ({**dataclasses.asdict(self._leak), "message": self._leak.describe()}
                         if self._leak else None),
                "last_leak": self._last_leak.describe() if self._last_leak else None,
                "degraded": bool(self._leak) or self._last_outcome == "out_of_memory",
                "last_outcome": self._last_outcome,
                "ledger_write_errors": self.ledger.write_errors,
                "ledger_error": self.ledger.write_error,
            }

    @property
    def stopping(self) -> bool:
        """True from the first stop on (a drain): no new requests are taken."""
        return self._stopping

    @property
    def worker_pid(self) -> int | None:
        with self._lock:
            return self._worker.process.pid if self._worker else None

    def stop(self, grace_s: float | None = None) -> None:
        """Stop taking requests, let the running one finish (bounded), end the worker.

        Queued requests fail at once with :class:`ServiceStopping` (not when the running one has
        finished: their clients may retry elsewhere meanwhile).
        """
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
            self._grace_on_stop = self.restart_grace_s if grace_s is None else grace_s
            self._wake.notify_all()
        self._turn_away_pending()
        if self._thread.is_alive():
            self._thread.join(timeout=(self._grace_on_stop + 15))
        self.kill_worker("ended by the app at the end of a stop")  # if the dispatcher could not finish

    # -- dispatcher thread ---------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._spawn_until_ready(reason=None)
            while True:
                with self._lock:
                    while (not self._pending and not self._restart_waiters and not self._cache_waiters
                           and not self._stopping and not self._idle_expired_unlocked()
                           and not self._load_retry_due_unlocked()
                           and (self._worker_alive_unlocked() or self._state in (FAILED, UNLOADED))):
                        self._wake.wait(timeout=_POLL_S)
                        self._pump_unlocked_safe()
                    stopping = self._stopping
                    restart = bool(self._restart_waiters)
                    free_cache = bool(self._cache_waiters)
                    unload = self._idle_expired_unlocked()
                    retry_load = self._load_retry_due_unlocked()
                    reload = self._state == UNLOADED and bool(self._pending)
                    job = self._pending.popleft() if (self._pending and not stopping and not restart
                                                      and not free_cache and self._state == READY) else None
                if stopping:
                    self._shutdown()
                    return
                if restart:
                    self._do_restart()
                    continue
                if free_cache:
                    self._free_cache()
                    continue
                if unload:
                    self._unload()
                    continue
                if reload:
                    log.info("a request arrived while unloaded: loading the model again")
                    self._reload()
                    continue
                if retry_load:
                    log.info("loading the model again: it could not be loaded %s ago (--retry-failed-load-after)",
                             duration_text(self.retry_failed_load_after_s))
                    self._reload()
                    continue
                if not self._worker_alive():
                    if job is not None:
                        with self._lock:
                            self._pending.appendleft(job)  # the worker died just now: keep the job
                    with self._lock:
                        w = self._worker
                        silent = w is not None and w.process.is_alive() and self._silent_unlocked(w)
                    self._handle_death(job=None, silent_s=(time.monotonic() - w.last_heartbeat_at) if silent else None)
                    continue
                if job is None:
                    if self._state == FAILED:
                        self._fail_pending_load_error()
                        with self._lock:
                            self._wake.wait(timeout=_POLL_S)
                    continue
                self._run_job(job)
        except Exception:  # pragma: no cover - a bug here must not leave requests hanging
            log.exception("supervisor dispatcher crashed")
            with self._lock:
                self._state = FAILED
                self._last_error = "internal supervisor error; see the server log"
                jobs = list(self._pending)
                self._pending.clear()
            for j in jobs:
                _fail(j, SynthesisFailed("The server hit an internal error. Please try again."))

    def _pump_unlocked_safe(self) -> None:
        # Called with the lock held while idle: read heartbeats so status stays fresh.
        w = self._worker
        if w is None:
            return
        try:
            while w.conn.poll():
                self._handle_message(w, w.conn.recv())
        except (EOFError, OSError):
            pass

    def _worker_alive_unlocked(self) -> bool:
        w = self._worker
        if w is None or not w.process.is_alive() or w.load_failed is not None:
            return False
        # Alive but silent (SIGSTOPped, stuck in a driver call) is as good as dead: /healthz
        # said "ok" for minutes while such a worker held every request (sixth newcomer session).
        return not self._silent_unlocked(w)

    def _silent_unlocked(self, w, after_s: float | None = None) -> bool:
        """Hung: no heartbeat for ``heartbeat_timeout_s`` and no CPU used meanwhile (stopped, or
        stuck waiting in a driver call). A worker that computes through the silence is busy, not
        hung: a C call that holds the GIL (WORLD analysis) on a loaded host kept the heartbeat
        thread from running for 10.5 s, and a healthy worker was killed (thirteenth newcomer
        session). The request deadline still bounds that; past ``_MAX_SILENCE_FACTOR`` times the
        timeout, silence alone counts. ``after_s``: silent for this long instead of
        ``heartbeat_timeout_s`` (at a request's deadline)."""
        if not (w.ready and w.last_heartbeat_at):
            return False
        silent_s = time.monotonic() - w.last_heartbeat_at
        if silent_s <= (self.heartbeat_timeout_s if after_s is None else after_s):
            return False
        if silent_s > _MAX_SILENCE_FACTOR * self.heartbeat_timeout_s or w.cpu_s_at_heartbeat is None:
            return True
        cpu_s = _cpu_seconds(w.process.pid)
        return cpu_s is None or cpu_s - w.cpu_s_at_heartbeat < _WORKING_CPU_SHARE * silent_s

    def _stopped_while_loading(self, w) -> bool:
        # Loading may keep the heartbeat silent for long (a TensorRT build holding the GIL, a
        # slow disk), so only a process the kernel has stopped is given up on before
        # --worker-start-timeout; it waited the whole 180 s (fourteenth newcomer session). Before its
        # first heartbeat the time counts from the spawn: one stopped within 0.1 s of it also waited
        # the whole 180 s (helper-56).
        if time.monotonic() - (w.last_heartbeat_at or w.started_at) <= self.heartbeat_timeout_s:
            return False
        try:
            return psutil.Process(w.process.pid).status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
        except (psutil.Error, OSError):
            return False

    def _silent(self, w, after_s: float | None = None) -> bool:
        with self._lock:
            return self._silent_unlocked(w, after_s)

    def _worker_alive(self) -> bool:
        with self._lock:
            return self._worker_alive_unlocked() or self._state in (FAILED, UNLOADED)

    def _idle_expired_unlocked(self) -> bool:
        return (self.idle_unload_after_s is not None and self._state == READY and not self._pending
                and time.monotonic() - self._last_activity > self.idle_unload_after_s)

    def _load_retry_due_unlocked(self) -> bool:
        return (self.retry_failed_load_after_s is not None and self._state == FAILED and self._failed_at is not None
                and not self._stopping and time.monotonic() - self._failed_at >= self.retry_failed_load_after_s)

    def _next_load_retry_s_unlocked(self) -> float | None:
        """Seconds until the failed state's next load (:meth:`_load_retry_due_unlocked`), or ``None``."""
        if self.retry_failed_load_after_s is None or self._state != FAILED or self._failed_at is None:
            return None
        return max(0.0, self._failed_at + self.retry_failed_load_after_s - time.monotonic())

    def _unload(self) -> None:
        with self._lock:
            w = self._worker
        log.info("no request for %.0f s: ending worker %s to free its memory (--idle-unload-after)",
                 self.idle_unload_after_s, w.process.pid if w else None)
        self._end_gracefully(w)
        with self._lock:
            self._worker = None
            self._state = UNLOADED

    def _end_gracefully(self, w: _Worker | None) -> None:
        if w is not None and w.process.is_alive():
            try:
                _send(w, msg.Shutdown())
            except (OSError, EOFError, ValueError):
                pass
            w.process.join(timeout=5)
        self._kill(w)

    def _free_cache(self) -> None:
        with self._lock:
            waiters, self._cache_waiters = self._cache_waiters, []
            w = self._worker
            state = self._state
        result: dict | Exception
        if state == UNLOADED or w is None:
            result = {"state": UNLOADED, "pid": None}
        elif state != READY:
            result = SynthesisFailed(f"The worker is {state}; try again when it is ready.")
        else:
            result = SynthesisFailed("The worker did not answer the free-cache request (it may be hung; a hung worker "
                                     "is replaced on its own). Try again in a moment.")
            try:
                _send(w, msg.FreeCache())
                deadline = time.monotonic() + 30
                # A silent (stopped, hung) worker ends the wait at once: the dispatcher then replaces
                # it, instead of everyone waiting out this deadline (eleventh newcomer session).
                while time.monotonic() < deadline and w.process.is_alive() and not self._silent(w):
                    replies = [m for m in self._receive(w, _POLL_S) if isinstance(m, msg.CacheFreed)]
                    if replies:
                        result = dataclasses.asdict(replies[0])
                        break
            except (OSError, EOFError, ValueError):
                pass
        for f in waiters:
            if isinstance(result, Exception):
                f.set_exception(result)
            else:
                f.set_result(result)

    def _handle_message(self, w: _Worker, m) -> object | None:
        """Apply a message from the worker to the state; return it if the caller must act."""
        if isinstance(m, msg.Heartbeat):
            w.last_heartbeat_at = time.monotonic()
            w.cpu_s_at_heartbeat = _cpu_seconds(w.process.pid)
            w.memory = m.memory
            return None
        if isinstance(m, msg.Ready):
            w.ready = m
            self.last_device = m.facts.get("device") or self.last_device
            w.memory = m.memory
            w.last_heartbeat_at = time.monotonic()
            w.cpu_s_at_heartbeat = _cpu_seconds(w.process.pid)
            return m
        if isinstance(m, msg.LoadFailed):
            w.load_failed = m.error
            return m
        return m

    def _receive(self, w: _Worker, timeout_s: float) -> list:
        """Wait up to ``timeout_s`` for messages or the worker's death; return actionable messages."""
        out = []
        try:
            ready = multiprocessing.connection.wait([w.conn, w.process.sentinel], timeout=timeout_s)
        except OSError:
            return out
        if w.conn in ready:
            try:
                while w.conn.poll():
                    m = w.conn.recv()
                    with self._lock:
                        act = self._handle_message(w, m)
                    if act is not None:
                        out.append(act)
            except (EOFError, OSError):
                pass
        return out

    def _spawn(self) -> _Worker:
        parent_conn, child_conn = self._ctx.Pipe(duplex=True)
        # The worker's temporary files (Piper's split ONNX graphs, 61 MB; CosyVoice's prompt WAVs)
        # go to a folder of its own, removed here once the process is gone: a worker killed while
        # loading left them in /tmp for good (eighteenth newcomer session).
        try:
            scratch = tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-")
        except OSError:
            parent_conn.close()
            child_conn.close()
            raise
        process = self._ctx.Process(
            target=worker_main, name="cosyvoice-ui-worker", daemon=True,
            args=(child_conn, self.engine, self.device, self.fp16, self.heartbeat_interval_s),
            kwargs={"engine_options": self.engine_options,
                    "empty_cache_after_request": self.empty_cache_after_request, "scratch_dir": scratch},
        )
        # Ctrl-C and SIGTERM reach the whole process group. Until worker_main ignores them, the new
        # Python (the spawn bootstrap importing modules) died of them: a KeyboardInterrupt
        # traceback, or exit -2 and a load retry (helper-102). A signal mask is inherited across
        # fork and exec: blocked in this thread while the child starts, they stay pending in it
        # until worker_main has them ignored and unblocks them; here they are delivered at once.
        # The resource tracker is started first: starting it (in the first start()) unblocks
        # SIGINT and SIGTERM in this thread whatever they were before.
        resource_tracker.ensure_running()
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            process.start()
        except OSError:  # no process could be made (EAGAIN, ENOMEM, file handles)
            parent_conn.close()
            child_conn.close()
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        child_conn.close()
        return _Worker(process=process, conn=parent_conn, started_at=time.monotonic(), scratch=scratch)

    def _spawn_until_ready(self, reason: str | None) -> bool:
        """Start a worker and wait for Ready. Retries a worker that dies while loading (3 tries);
        a LoadFailed is final until the next restart. Why the tries before the last failed is left
        in ``self._failed_load_attempts`` for the restart's report."""
        self._failed_load_attempts = []
        for attempt in range(3):
            with self._lock:
                if self._stopping:  # never start a worker during shutdown
                    return False
            try:
                w = self._spawn()
            except OSError as e:
                # The worker's temporary folder could not be made (TMPDIR full, or gone), or no
                # process or pipe could be (file handles, EAGAIN/ENOMEM): the dispatcher died of it,
                # and the app hung for good, every request and Restart press unanswered (helper-109).
                # Tried again as a worker that died loading; the path stays in the log.
                log.error("the worker process could not be started: %r", e)
                with self._lock:
                    self._restarts["load_crash"] += 1
                    self._last_error = (f"The worker process could not be started ({e.strerror or type(e).__name__}): "
                                        "the temporary folder (TMPDIR) may be full or missing, or the system out "
                                        "of processes or file handles; see the server log")
                    self._failed_load_attempts.append(self._last_error)
                log.error("%s; attempt %d of 3", self._last_error, attempt + 1)
                time.sleep(min(2.0 * (attempt + 1), 5.0))
                continue
            with self._lock:
                self._worker = w
                self._state = STARTING if reason is None else RESTARTING
            # Logged once status() shows the new worker: a SIGTERM sent on this line, before, was
            # told "during a restart" with the old worker's figures (CI of stop 27).
            log.info("worker started: pid %s (engine %s, device %s)", w.process.pid, self.engine, self.device)
            deadline = time.monotonic() + self.start_timeout_s
            while time.monotonic() < deadline:
                # Whether it lives is asked before reading: a worker that sends LoadFailed and exits
                # between a read that timed out and the check was logged as "exited while loading
                # (exit code 0)" and started again (thirty-fifth newcomer session).
                alive = w.process.is_alive()
                for m in self._receive(w, 0.2 if alive else 0.0):
                    if isinstance(m, msg.Ready):
                        with self._lock:
                            self._state = READY
                            self._last_error = None
                            self._last_activity = time.monotonic()
                            if self._leak is not None:  # the leaking process is gone
                                self._last_leak, self._leak = self._leak, None
                        log.info("worker %s ready in %.2f s (%s)", w.process.pid, m.load_s, m.facts)
                        return True
                    if isinstance(m, msg.LoadFailed):
                        with self._lock:
                            self._state = FAILED
                            self._failed_at = time.monotonic()
                            self._last_error = f"The model could not be loaded: {m.error}"
                        log.error("worker %s failed to load: %s", w.process.pid, m.error)
                        w.process.join(5)
                        return False
                if not alive:
                    break
                if self._stopped_while_loading(w):
                    break
                with self._lock:
                    if self._stopping:
                        return False
            code = w.process.exitcode
            stopped = code is None and self._stopped_while_loading(w)
            self._kill(w)
            with self._lock:
                # Counted like any lost worker, so /metrics shows workers dying at load time too.
                self._restarts["load_crash" if code is not None else "load_hung" if stopped else "load_timeout"] += 1
                self._last_error = (f"The worker exited while loading the model (exit code {code})" if code is not None
                                    else "The worker was stopped (SIGSTOP) while loading the model" if stopped else
                                    f"The worker did not finish loading the model within {self.start_timeout_s:g} s "
                                    "(--worker-start-timeout; a large model on a slow disk needs more)")
                self._failed_load_attempts.append(self._last_error)
            log.error("%s; attempt %d of 3", self._last_error, attempt + 1)
            time.sleep(min(2.0 * (attempt + 1), 5.0))
        with self._lock:
            self._state = FAILED
            self._failed_at = time.monotonic()
        return False

    def _kill(self, w: _Worker | None) -> None:
        if w is None:
            return
        if w.process.is_alive():
            w.process.kill()
        w.process.join(timeout=10)
        try:
            w.conn.close()
        except OSError:
            pass
        if w.scratch and not w.process.is_alive():
            shutil.rmtree(w.scratch, ignore_errors=True)

    def kill_worker(self, because: str = "ended by the app") -> None:
        """End the worker process at once (SIGKILL), for "exit now" during a stop: its request
        then fails with :class:`ServiceStopping` (a request is not run again while stopping).
        Outside a stop, the worker is replaced as after a crash."""
        with self._lock:
            w = self._worker
            if w is not None:
                w.killed_because = because  # logged instead of "SIGKILL - perhaps the out-of-memory killer"
        self._kill(w)

    def _run_job(self, job: _Job) -> None:
        with self._lock:  # the same lock as withdraw(): a withdrawal either sees the job in flight or is seen here
            abandoned = job.abandoned
            if not abandoned:
                w = self._worker
                self._inflight = job
                self._state = BUSY
        if abandoned:  # its client left while it ran on a worker that was since replaced
            self._record(job, "abandoned", error="the client left; not run again after the worker was replaced")
            _fail(job, SynthesisFailed("The client left while this request ran."))
            return
        job.attempts += 1
        job.ran_on_pid = w.process.pid
        self._reset_audio(job, attempt=0)
        if not job.future.running() and not job.future.set_running_or_notify_cancel():
            with self._lock:
                self._inflight = None
                self._state = READY
            return
        # Sent from another thread: the request (with its prompt audio) is larger than a pipe
        # holds, so sending blocks until the worker reads it, and a worker that never reads
        # (stopped, hung) would keep this loop from ever checking the deadline and the heartbeat.
        # Every way out of the loop below that does not wait for the answer kills the worker,
        # which ends a blocked send.
        threading.Thread(target=_send_quietly, args=(w, msg.Synthesize(request_id=job.id, request=job.request)),
                         name=f"send-{job.id}", daemon=True).start()
        segments = len(job.request.segments or ())
        if job.on_progress and segments > 1:  # "0/n" while the first segment runs, not a blank page
            try:
                job.on_progress(0, segments)
            except Exception:  # a UI callback must not stop the dispatcher
                log.exception("progress callback failed")
        deadline = time.monotonic() + job.timeout_s
        grace_deadline = None
        while True:
            for m in self._receive(w, _POLL_S):
                if isinstance(m, (msg.Done, msg.Failed)) and m.request_id == job.id:
                    self._finish(job, m)
                    return
                if isinstance(m, msg.AudioChunk) and m.request_id == job.id:
                    self._take_chunk(job, m)
                if isinstance(m, msg.Progress) and m.request_id == job.id and job.on_progress:
                    try:
                        job.on_progress(m.done, m.total)
                    except Exception:  # a UI callback must not stop the dispatcher
                        log.exception("progress callback failed")
            now = time.monotonic()
            if not w.process.is_alive():
                self._handle_death(job)
                return
            if now > deadline:
                # A worker stopped (SIGSTOP, a frozen driver call) within a deadline shorter than
                # the heartbeat timeout was told "took longer than its deadline, try a shorter
                # text", and its request was not run again (helper-93): silent and idle, it hung.
                if self._silent(w, after_s=max(2.0, 4 * self.heartbeat_interval_s)):
                    self._handle_death(job, silent_s=now - w.last_heartbeat_at)
                else:
                    self._timeout(job)
                return
            if self._silent(w):
                self._handle_death(job, silent_s=now - w.last_heartbeat_at)
                return
            with self._lock:
                wants_restart = bool(self._restart_waiters) or self._stopping
                stop_grace = self._grace_on_stop
            if wants_restart and grace_deadline is None:
                grace_deadline = now + (stop_grace if self._stopping else self.restart_grace_s)
            if grace_deadline is not None and now > grace_deadline:
                # Restart (or stop) could not wait any longer: kill, and run the request again.
                log.warning("request %s did not finish within the grace period; killing worker %s", job.id, w.process.pid)
                self._kill(w)
                with self._lock:
                    self._inflight = None
                    if self._stopping:
                        job_to_fail = job
                    else:
                        self._pending.appendleft(job)
                        self._rerun_for_restart = job.id
                        job_to_fail = None
                if job_to_fail:
                    self._record(job_to_fail, "shutdown", error="killed at shutdown after the grace period")
                    _fail(job_to_fail, ServiceStopping("The application shut down before this request finished. "
                                                       "It may be sent again once the server is back."))
                return

    def _reset_audio(self, job: _Job, attempt: int) -> None:
        # A new attempt says the audio again from its start: what came before is dropped.
        job.restarted_audio = bool(job.pieces) or job.joiner is not None
        job.joiner, job.pieces, job.chunk_attempt = None, [], attempt

    def _take_chunk(self, job: _Job, m: msg.AudioChunk) -> None:
        if m.attempt != job.chunk_attempt:
            self._reset_audio(job, m.attempt)
        if job.joiner is None:
            job.joiner = SegmentJoiner(m.sample_rate_hz)
        self._deliver(job, job.joiner.push(m.segment, m.audio))

    def _deliver(self, job: _Job, ready: np.ndarray) -> None:
        job.pieces.append(ready)
        if job.on_audio is not None and (len(ready) or job.restarted_audio):
            try:
                job.on_audio(ready, job.joiner.sample_rate_hz, job.restarted_audio)
            except Exception:  # a UI callback must not stop the dispatcher
                log.exception("audio callback failed")
            job.restarted_audio = False

    def _joined_output(self, job: _Job, m: msg.Done) -> tuple[SynthesisOutput, msg.RequestStats]:
        if job.joiner is not None:
            self._deliver(job, job.joiner.finish())
        audio = np.concatenate(job.pieces) if job.pieces else np.zeros(0, dtype=np.float32)
        job.joiner, job.pieces = None, []
        output = dataclasses.replace(m.output, audio=audio)
        stats = m.stats
        if output.sample_rate_hz:  # the worker counted samples before the cross-fades removed some
            audio_s = len(audio) / output.sample_rate_hz
            stats = dataclasses.replace(stats, audio_s=audio_s, real_time_factor=(
                stats.synthesis_s / audio_s if audio_s > 0 else float("inf")))
        return output, stats

    def _finish(self, job: _Job, m) -> None:
        with self._lock:
            self._inflight = None
            self._state = READY
            self._completed += 1
            self._last_activity = time.monotonic()
        if isinstance(m, msg.Done):
            output, stats = self._joined_output(job, m)
            stats = dataclasses.replace(stats, runs=job.attempts)
            if job.abandoned:  # the stop came during the last segment: made, but for no one
                self._record(job, "abandoned", stats=stats, error="the client left during the last segment")
            else:
                with self._lock:
                    self._with_audio += 1
                self._record(job, "ok", stats=stats)
            job.future.set_result((output, stats))
            if stats.memory_after_bytes is not None:
                self._watch_for_leak(stats.pid, stats.memory_after_bytes)
            return
        job.joiner, job.pieces = None, []
        self._record(job, m.kind, error=m.message)
        if m.kind in ("invalid", "abandoned"):
            job.future.set_exception((UnusablePromptAudio if m.about_prompt_audio else SynthesisFailed)(m.message))
        elif m.kind in ("out_of_memory", "bad_output"):
            job.future.set_exception(SynthesisFailed(f"{m.message} The worker is still running."))
        else:
            job.future.set_exception(SynthesisFailed(
                f"Synthesis failed inside the worker ({m.message}). The worker is still running; you may try again."))

    def _watch_for_leak(self, pid: int, after_bytes: int) -> None:
        report = self.leak_watchdog.observe(pid, after_bytes)
        if report is None:
            return
        log.warning("leak suspected: %s", report.describe())
        with self._lock:
            self._leak = report
            if self.restart_on_leak:
                # Served by the dispatcher before the next request, never in the middle of one.
                self._restart_waiters.append(("leak", concurrent.futures.Future()))
        self.ledger.add_event(self.engine, self.device, "restart:leak" if self.restart_on_leak else "leak",
                              report.describe(), worker_pid=pid)

    def _timeout(self, job: _Job) -> None:
        # To 0.01 s: a 6.25 s deadline (--request-timeout 5, two segments) was said to be "6 s" (helper-98);
        # under 0.1 s to two significant digits: --request-timeout 1e-9 was said to be "0 s" (helper-136).
        deadline = f"{round(job.timeout_s, 2):g} s" if job.timeout_s >= 0.1 else f"{job.timeout_s:.2g} s"
        with self._lock:
            w = self._worker
            self._inflight = None
            self._state = RESTARTING
            self._restarts["timeout"] += 1
            self._last_error = f"A request passed its {deadline} deadline; the worker was restarted."
        log.error("request %s passed its %s deadline; restarting worker %s", job.id, deadline, w.process.pid)
        self._kill(w)
        self._record(job, "timeout", error=f"deadline {deadline}")
        _fail(job, RequestTimedOut(
            f"The request took longer than its {deadline} deadline, so the worker was restarted. "
            "Try a shorter text; you may send it again."))
        self._serve_waiting_restarts(self._replace_worker("timeout"))

    def _handle_death(self, job: _Job | None, silent_s: float | None = None) -> None:
        """Replace a dead worker, or (``silent_s``: seconds without a heartbeat) a hung one, which
        is killed here and counted as ``hung``, not ``crash``: its SIGKILL is ours, not the
        out-of-memory killer's."""
        reason = "crash" if silent_s is None else "hung"
        with self._lock:
            w = self._worker
            self._inflight = None
            self._state = CRASHED
            self._restarts[reason] += 1
        during = (f" while running request {job.id}" if job else " while idle")
        if silent_s is not None:
            how = f"it stopped answering: no heartbeat for {silent_s:.0f} s, so it was killed"
            log.error("worker %s sent no heartbeat for %.1f s%s: taking it as hung and killing it",
                      w.process.pid, silent_s, during)
            self._kill(w)
            with self._lock:
                self._last_error = f"The worker hung ({how})."
        else:
            if w is not None:
                w.process.join(timeout=5)
            how = (w.killed_because if w and w.killed_because else None) or _describe_exit(w.process.exitcode if w else None)
            # Ended by the app itself (a second Ctrl-C) is what was asked for: a warning, not an error (helper-114).
            (log.warning if w and w.killed_because else log.error)(
                "worker %s died (%s)%s", w.process.pid if w else None, how, during if job else "")
            with self._lock:
                self._last_error = f"The worker died ({how})."
        if job is not None:
            job.crashes += 1
            if job.crashes >= MAX_CRASHES_PER_REQUEST:
                self._record(job, reason, error=how)
                _fail(job, SynthesisFailed(
                    f"This request stopped the worker {job.crashes} times (last: {how}), so it is not retried again. "
                    "Try a shorter text or a different prompt audio."))
            else:
                with self._lock:
                    self._pending.appendleft(job)  # run again, first, on the new worker
        self._kill(w)
        self._serve_waiting_restarts(self._replace_worker(reason))

    def _serve_waiting_restarts(self, report: RestartReport) -> None:
        # A Restart pressed while the running request finished (within --restart-grace) is
        # served by a replacement the worker's death forced meanwhile: the new worker is as fresh
        # as the restart would make it, and replacing it again at once only reloaded the model
        # (twelfth newcomer session).
        if report.new_pid is None:
            return
        with self._lock:
            waiters, self._restart_waiters = self._restart_waiters, []
        for _, f in waiters:
            if not f.done():
                f.set_result(report)

    def _replace_worker(self, reason: str) -> RestartReport:
        """Kill the current worker (if alive) and start a new one. Callers count the restart."""
        with self._lock:
            old = self._worker
            # A worker that never loaded (the failed state) had no memory worth naming: its figures
            # from the load were reported as "before" by a Restart after it (helper-97). One that
            # served has its last figures, also when a graceful restart has already ended it.
            before = old.memory if old is not None and old.ready is not None else None
        t0 = time.monotonic()
        self._kill(old)
        ok = self._spawn_until_ready(reason=reason)
        with self._lock:
            new = self._worker
            # A worker started and then ended by the stop was reported as "no new worker was
            # started", while the log named it (helper-139).
            started = new.process.pid if new is not None and new is not old else None
            stopped = ("The application is shutting down; no new worker was started." if started is None else
                       f"The application is shutting down; the new worker (pid {started}) was ended before its "
                       "model loaded.")
            report = RestartReport(
                reason=reason, old_pid=old.process.pid if old else None,
                new_pid=new.process.pid if (new and ok) else None,
                duration_s=time.monotonic() - t0, memory_before=before,
                memory_after=new.memory if (new and ok) else None,
                failed_load_attempts=tuple(self._failed_load_attempts) if ok else (),
                # A stop ends the tries: the last error may be an earlier failure's (helper-122).
                error=None if ok else (stopped if self._stopping else self._last_error or "No new worker was started."))
            self._last_restart = report
        return report

    def _reload(self) -> None:
        """Load the model again after an idle unload; Restart presses meanwhile get its report."""
        t0 = time.monotonic()
        ok = False
        with self._lock:
            self._reloading = True
        try:
            ok = self._spawn_until_ready(reason=None)
        finally:
            with self._lock:
                self._reloading = False
                joiners, self._load_joiners = self._load_joiners, []
                w = self._worker
                ok = ok and w is not None and w.ready is not None
                report = RestartReport(
                    reason="user", old_pid=None, new_pid=w.process.pid if ok else None,
                    duration_s=time.monotonic() - t0, memory_before=None, memory_after=w.memory if ok else None,
                    error=None if ok else ("The application is shutting down; the model was not loaded."
                                           if self._stopping else (self._last_error or "The model could not be loaded.")),
                    # A worker that hung or crashed while loading made the load look slow (helper-143).
                    failed_load_attempts=tuple(self._failed_load_attempts) if ok else ())
                if joiners:
                    self._last_restart = report
        if joiners:
            log.info("%d Restart press(es) during the load joined it", len(joiners))
        for f in joiners:
            if not f.done():
                f.set_result(report)

    def _do_restart(self) -> None:
        with self._lock:
            waiters, self._restart_waiters = self._restart_waiters, []
        reason = waiters[0][0] if waiters else "user"
        # Presses of Restart that join one under way are logged by the page's handler; several
        # waiters here are restarts asked for by different causes at once.
        with self._lock:
            unloaded = self._state == UNLOADED
            self._state = RESTARTING
            if not unloaded:  # loading an unloaded model replaces no worker (it was counted as a restart)
                self._restarts[reason] += 1
            w = self._worker
        log.info("%s (reason: %s%s)", "loading the unloaded model" if unloaded else "restarting the worker", reason,
                 f"; {len(waiters)} callers waiting for it" if len(waiters) > 1 else "")
        # The running request (if any) has already finished or been requeued by _run_job.
        self._end_gracefully(w)
        report = self._replace_worker(reason)
        with self._lock:
            rerun, self._rerun_for_restart = self._rerun_for_restart, None
        if rerun is not None:
            report = dataclasses.replace(report, rerun_request_id=rerun)
            with self._lock:
                self._last_restart = report
        for _, f in waiters:
            if not f.done():
                f.set_result(report)

    def _fail_pending_load_error(self) -> None:
        with self._lock:
            jobs = list(self._pending)
            self._pending.clear()
            error = (self._last_error or "The model could not be loaded.").rstrip(".") + "."
            retry_s = self._next_load_retry_s_unlocked()
        then = ("" if retry_s is None else
                f" The app loads it again by itself in {duration_text(retry_s)} (--retry-failed-load-after).")
        for j in jobs:
            self._record(j, "failed:load", error=error)
            _fail(j, SynthesisFailed(f"{error} Fix the cause and press Restart (see the server log).{then}"))

    def _turn_away_pending(self) -> None:
        with self._lock:
            jobs = list(self._pending)
            self._pending.clear()
        for j in jobs:  # every request leaves a ledger record, also one turned away by a shutdown
            # attempts: a request that had started is back in the queue after its worker died.
            message = (f"The application shut down {'while this request ran' if j.attempts else 'before this request ran'}. "
                       "It may be sent again once the server is back.")
            self._record(j, "shutdown", error=message)
            _fail(j, ServiceStopping(message))

    def _shutdown(self) -> None:
        self._turn_away_pending()
        with self._lock:
            waiters, self._restart_waiters = self._restart_waiters, []
            cache_waiters, self._cache_waiters = self._cache_waiters, []
            w = self._worker
            self._state = STOPPED
        # A press that waited for the running request learned only "shutting down" (helper-56).
        for f in [f for _, f in waiters]:
            f.set_exception(ServiceStopping("The application is shutting down, so the worker was not restarted; "
                                            "it ends with the application. Press Restart again once the server "
                                            "is back, if still needed."))
        for f in cache_waiters:
            f.set_exception(ServiceStopping("The application is shutting down, so the cache was not freed; the "
                                            "worker's memory is returned when it ends."))
        self._end_gracefully(w)

    def _record(self, job: _Job, outcome: str, stats: msg.RequestStats | None = None, error: str | None = None) -> None:
        if job.withdrawn_because and outcome in ("cancelled", "abandoned"):
            error = (error or "the client left").replace("the client left", job.withdrawn_because)
        with self._lock:
            w = self._worker
            device = (w.ready.facts.get("device") if (w and w.ready) else None) or self.last_device or self.device
        with self._lock:
            self._last_outcome = outcome
        try:
            self._add_record(job, outcome, stats, error, device, w)
        except Exception:  # noqa: BLE001 - bookkeeping must never keep a request from its answer
            # A ledger error escaped here once and killed the dispatcher and the shutdown's drain
            # (a file of 70,000 "[" at the --ledger path; helper-151).
            log.exception("the ledger record of request %s (%s) could not be made", job.id, outcome)

    def _add_record(self, job: _Job, outcome: str, stats: msg.RequestStats | None, error: str | None,
                    device: str | None, w) -> None:
        request = job.request
        segments = request.segments or (request.text,)
        self.ledger.add(LedgerRecord(
            time_s=time.time(), engine=self.engine, device=stats.device if stats else device,
            text_chars=len(request.text), segments=len(segments), max_segment_chars=max(spoken_chars(s) for s in segments),
            prompt_s=round(len(request.prompt.samples) / request.prompt.sample_rate_hz, 3) if request.prompt else None,
            audio_s=round(stats.audio_s, 3) if stats else None,
            synthesis_s=round(stats.synthesis_s, 3) if stats else None,
            real_time_factor=round(stats.real_time_factor, 4) if stats else None,
            peak_allocated_bytes=stats.peak_allocated_bytes if stats else None,
            peak_reserved_bytes=stats.peak_reserved_bytes if stats else None,
            peak_rss_bytes=stats.peak_rss_bytes if stats else None,
            # The worker it last ran on: a request withdrawn after a crash named the replacement,
            # on which it never ran (helper-96).
            worker_pid=stats.pid if stats else (job.ran_on_pid or (w.process.pid if w else None)),
            outcome=outcome, error=error,
            memory_before_bytes=stats.memory_before_bytes if stats else None,
            predicted_peak_bytes=job.predicted_peak_bytes))


SCRATCH_PREFIX = "cosyvoice-ui-worker-"  # + the web process's pid


def remove_stale_scratch(folder: str | None = None) -> int:
    """Remove the workers' temporary folders left by web processes that are gone (killed with
    SIGKILL, so their supervisor never cleaned up). Returns how many were removed."""
    return remove_folders_of_gone_processes(SCRATCH_PREFIX, folder)


def _send(w: _Worker, message) -> None:
    with w.send_lock:
        w.conn.send(message)


def _send_quietly(w: _Worker, message) -> None:
    try:
        _send(w, message)
    except (OSError, EOFError, ValueError):
        pass  # the worker died (or was killed); the dispatcher's checks say so


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of ``pid`` in seconds, ``None`` if it is gone."""
    try:
        t = psutil.Process(pid).cpu_times()
    except (psutil.Error, OSError):
        return None
    return t.user + t.system


def _fail(job: _Job, error: Exception) -> None:
    if not job.future.done():
        if job.future.running() or job.future.set_running_or_notify_cancel():
            job.future.set_exception(error)


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "no exit code"
    if code < 0:
        import signal

        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " - killed, perhaps by the out-of-memory killer" if name == "SIGKILL" else ""
        return f"{name}{hint}"
    return f"exit code {code}"


def report_to_dict(r: RestartReport) -> dict:
    d = dataclasses.asdict(r)
    d["duration_s"] = round(r.duration_s, 3)
    return d
