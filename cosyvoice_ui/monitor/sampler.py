"""Background sampling of GPU and worker memory, kept for the panel and written to a log.

A daemon thread samples every ``interval_s`` (1 s by default) and keeps the last
``history_s`` (10 minutes). Reading the history never waits for synthesis: the UI's timer reads
the ring buffer under a short lock. This module never imports torch.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading
import time
from typing import Callable

import psutil

from ..log_throttle import OncePerMinute
from .gpu_log import GpuLog
from .nvml import GpuSample, NvmlReader

log = logging.getLogger(__name__)
_sample_failed = OncePerMinute(log, logging.WARNING, "memory sample failed: %s")


@dataclasses.dataclass(frozen=True)
class Sample:
    """One moment. Bytes throughout; ``None`` means not available.

    Attributes:
        time_s: Unix time.
        gpus: every visible GPU (empty without NVML).
        worker_pid: the worker process at that moment (``None`` while none runs).
        worker_gpu_bytes: the worker's device memory summed over GPUs, per NVML.
        worker_rss_bytes: the worker's resident host memory (psutil).
        worker_allocated_bytes / worker_reserved_bytes: torch allocator figures the worker reported.
        web_rss_bytes: this (web) process's resident memory.
        worker_state: the supervisor's state name.
    """

    time_s: float
    gpus: tuple[GpuSample, ...]
    worker_pid: int | None
    worker_gpu_bytes: int | None
    worker_rss_bytes: int | None
    worker_allocated_bytes: int | None
    worker_reserved_bytes: int | None
    web_rss_bytes: int
    worker_state: str


WorkerInfo = Callable[[], dict]  # returns supervisor.status()-like dict: state, pid, memory


class MemoryMonitor:
    """Samples memory in a thread.

    Args:
        worker_info: callable giving ``{"state", "pid", "memory": {...} | None}``.
        interval_s: seconds between samples.
        history_s: how much history to keep.
        gpu_log_path: append an ``nvidia-smi dmon``-style line per sample here, if given.
        gpu_log_max_bytes: the log is rotated at this size (one older file, ``PATH.1``, is kept).
        nvml: reader to use (a new :class:`NvmlReader` by default).
    """

    def __init__(self, worker_info: WorkerInfo, interval_s: float = 1.0, history_s: float = 600.0,
                 gpu_log_path: str | None = None, nvml: NvmlReader | None = None,
                 gpu_log_max_bytes: int = 100 * 2**20) -> None:
        self._worker_info = worker_info
        self.interval_s = interval_s
        self.nvml = nvml or NvmlReader()
        self._samples: collections.deque[Sample] = collections.deque(maxlen=max(2, int(history_s / interval_s) + 1))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="memory-monitor", daemon=True)
        self._web = psutil.Process()
        self._log_path = gpu_log_path
        self._log_max_bytes = gpu_log_max_bytes
        self._log_file: GpuLog | None = None
        self.cpu_time_s = 0.0  # CPU time spent sampling, for the monitor-cost benchmark

    @property
    def nvml_error(self) -> str | None:
        """Why GPU figures are missing, in NVML's words (``None`` when NVML works)."""
        return self.nvml.error if not self.nvml.available else None

    @property
    def gpu_log_status(self) -> dict:
        """``{"gpu_log_write_errors": lines lost since the start, "gpu_log_error": why, while it fails}``."""
        log_file = self._log_file
        return {"gpu_log_write_errors": log_file.write_errors if log_file else 0,
                "gpu_log_error": log_file.error if log_file else None}

    def start(self) -> "MemoryMonitor":
        if self._log_path:
            self._log_file = GpuLog(self._log_path, self._log_max_bytes, _DMON_HEADER)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.nvml.close()
        if self._log_file:
            self._log_file.close()
            self._log_file = None

    def sample_now(self) -> Sample:
        """Take one sample immediately (also used by the loop)."""
        info = self._worker_info() or {}
        pid = info.get("pid")
        mem = info.get("memory") or {}
        gpus = tuple(self.nvml.read())
        worker_gpu = None
        if pid is not None and gpus:
            used = [g.process_used_bytes.get(pid) for g in gpus if pid in g.process_used_bytes]
            worker_gpu = sum(u for u in used if u is not None) if used else 0
        worker_rss = None
        if pid is not None:
            try:
                worker_rss = psutil.Process(pid).memory_info().rss
            except (psutil.Error, OSError):
                worker_rss = None
        return Sample(
            time_s=time.time(), gpus=gpus, worker_pid=pid, worker_gpu_bytes=worker_gpu,
            worker_rss_bytes=worker_rss,
            worker_allocated_bytes=mem.get("allocated_bytes"), worker_reserved_bytes=mem.get("reserved_bytes"),
            web_rss_bytes=self._web.memory_info().rss, worker_state=str(info.get("state", "")),
        )

    def history(self, seconds: float | None = None) -> list[Sample]:
        """Samples of the last ``seconds`` (all kept ones by default), oldest first."""
        with self._lock:
            samples = list(self._samples)
        if seconds is None or not samples:
            return samples
        cutoff = samples[-1].time_s - seconds
        return [s for s in samples if s.time_s >= cutoff]

    def latest(self) -> Sample | None:
        with self._lock:
            return self._samples[-1] if self._samples else None

    def _loop(self) -> None:
        while not self._stop.is_set():
            t0 = time.thread_time()
            try:
                sample = self.sample_now()
                with self._lock:
                    self._samples.append(sample)
                if self._log_file:
                    self._log_file.write(format_dmon_line(sample))
            except OSError as e:
                # Out of file handles (a connection flood) or a process gone: a traceback a second
                # filled the log during a flood (the final CI run of the fourteenth session).
                _sample_failed.note(e)
            except Exception:  # a sampling hiccup must never stop monitoring
                log.exception("memory sample failed")
            self.cpu_time_s += time.thread_time() - t0
            self._stop.wait(self.interval_s)


_DMON_HEADER = (  # starts with gpu_log.HEADER_START, by which an earlier run's log is known
    "# Date       Time      gpu     fb  total     sm    mem    pwr   temp   wpid  wgpu   wrss  walloc  wres  webrss\n"
    "# YYYYMMDD   HH:MM:SS  Idx    MiB    MiB      %      %      W      C    pid   MiB    MiB     MiB   MiB     MiB\n"
)


def _mb(value: int | None) -> str:
    return "-" if value is None else str(int(round(value / 2**20)))


def format_dmon_line(sample: Sample) -> str:
    """One log line per GPU (or one with ``-`` GPU columns without NVML), whitespace-separated
    like ``nvidia-smi dmon -s um -o DT``, plus the worker's and the web process's memory in MiB."""
    stamp = time.strftime("%Y%m%d   %H:%M:%S", time.localtime(sample.time_s))
    worker = (f"{sample.worker_pid if sample.worker_pid is not None else '-':>6} {_mb(sample.worker_gpu_bytes):>5} "
              f"{_mb(sample.worker_rss_bytes):>6} {_mb(sample.worker_allocated_bytes):>7} "
              f"{_mb(sample.worker_reserved_bytes):>5} {_mb(sample.web_rss_bytes):>7}")
    if not sample.gpus:
        return f"  {stamp}  {'-':>3} {'-':>6} {'-':>6} {'-':>6} {'-':>6} {'-':>6} {'-':>6} {worker}\n"
    lines = []
    for g in sample.gpus:
        def opt(v):
            return "-" if v is None else str(int(round(v)))
        lines.append(f"  {stamp}  {g.index:>3} {_mb(g.used_bytes):>6} {_mb(g.total_bytes):>6} "
                     f"{opt(g.utilization_gpu_pct):>6} {opt(g.utilization_memory_pct):>6} {opt(g.power_w):>6} "
                     f"{opt(g.temperature_c):>6} {worker}\n")
    return "".join(lines)
