"""Leak watchdog: notices when a worker's memory after each request keeps growing.

After a few warm-up requests (allocators and caches settle), the worker's memory after a request
becomes its baseline. When the median of the last ``window`` after-request figures exceeds the
baseline by more than the threshold (the larger of ``threshold_fraction`` of the baseline and
``threshold_bytes``), a leak is reported. A new worker pid starts over. The figure is torch's
allocated memory on CUDA and the worker's RSS on the CPU.
"""

from __future__ import annotations

import collections
import dataclasses
import statistics
import threading


@dataclasses.dataclass(frozen=True)
class LeakReport:
    pid: int
    baseline_bytes: int
    current_bytes: int
    threshold_bytes: int
    requests: int

    @property
    def growth_bytes(self) -> int:
        return self.current_bytes - self.baseline_bytes

    def describe(self) -> str:
        return (f"worker {self.pid} memory after requests grew by {_mib(self.growth_bytes)} MiB over its "
                f"baseline of {_mib(self.baseline_bytes)} MiB (threshold {_mib(self.threshold_bytes)} MiB, "
                f"{self.requests} requests)")


def _mib(n_bytes: int) -> str:
    """Bytes in MiB, with a decimal under 10 MiB: a --leak-threshold-mb of 0.5 read "threshold 0 MiB" (helper-111)."""
    return f"{n_bytes / 2**20:,.1f}" if abs(n_bytes) < 10 * 2**20 else f"{n_bytes / 2**20:,.0f}"


class LeakWatchdog:
    """Feed it every successful request's after-request memory; it answers with a report on a leak."""

    def __init__(self, threshold_fraction: float = 0.05, threshold_bytes: int = 200 * 2**20,
                 window: int = 10, warmup_requests: int = 3) -> None:
        self.threshold_fraction = threshold_fraction
        self.threshold_bytes = threshold_bytes
        self.window = window
        self.warmup_requests = warmup_requests
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._seen = 0
        self._baseline: int | None = None
        self._recent: collections.deque[int] = collections.deque(maxlen=window)
        self.last_report: LeakReport | None = None

    def observe(self, pid: int, after_bytes: int) -> LeakReport | None:
        """Record one request. Returns a :class:`LeakReport` the first time a leak is seen for a pid."""
        with self._lock:
            if pid != self._pid:
                self._pid, self._seen, self._baseline = pid, 0, None
                self._recent.clear()
                self.last_report = None
            self._seen += 1
            if self._seen <= self.warmup_requests:
                return None
            if self._baseline is None:
                self._baseline = after_bytes
                return None
            self._recent.append(after_bytes)
            if len(self._recent) < self.window or self.last_report is not None:
                return None
            threshold = max(int(self.threshold_fraction * self._baseline), self.threshold_bytes)
            current = int(statistics.median(self._recent))
            if current - self._baseline > threshold:
                self.last_report = LeakReport(pid, self._baseline, current, threshold, self._seen)
                return self.last_report
            return None
