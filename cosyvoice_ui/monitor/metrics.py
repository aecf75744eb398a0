"""Prometheus metrics for ``GET /metrics`` (``prometheus_client``), in base units.

Request figures are observed as ledger records arrive; state figures (memory, queue, restarts)
are read from the supervisor and the memory monitor at scrape time.
"""

from __future__ import annotations

from typing import Callable

from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from .ledger import LedgerRecord
from .sampler import MemoryMonitor

PREFIX = "cosyvoice_ui"
NOT_REQUESTS = {"restart:leak", "leak"}  # ledger rows of the leak watchdog


class Metrics:
    """One registry per application (so tests can build several)."""

    def __init__(self, status: Callable[[], dict], monitor: MemoryMonitor) -> None:
        self.registry = CollectorRegistry()
        self._status = status
        self._monitor = monitor
        self.request_duration = Histogram(
            f"{PREFIX}_request_duration_seconds", "Synthesis time of finished requests in the worker (not "
            "the time queued or loading)",
            buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 60, 120, 300), registry=self.registry)
        self.real_time_factor = Histogram(
            f"{PREFIX}_real_time_factor", "Synthesis seconds per second of audio",
            buckets=(0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 5), registry=self.registry)
        self.requests = Counter(f"{PREFIX}_requests", "Finished requests by outcome", ["outcome"],
                                registry=self.registry)
        self.failed_logins = Counter(f"{PREFIX}_failed_logins", "Logins refused under --auth (wrong user or password)",
                                     registry=self.registry)
        self.oom = Counter(f"{PREFIX}_out_of_memory", "Requests that ran out of device or host memory",
                           registry=self.registry)
        self.registry.register(_StateCollector(self))
        # The web process's own memory, CPU, open files and start time (process_*): the part a
        # Restart does not replace, and the one to watch over days; /metrics had none (helper-114).
        ProcessCollector(registry=self.registry)

    def observe(self, record: LedgerRecord) -> None:
        """Count a finished request (a :class:`~.ledger.Ledger` listener). The ledger's leak rows
        are events, not requests: they were counted in ``requests_total`` (a dashboard summing it
        overcounted; twenty-second newcomer session) and are in ``worker_restarts_total``."""
        if record.outcome in NOT_REQUESTS:
            return
        self.requests.labels(outcome=record.outcome).inc()
        if record.outcome == "out_of_memory":
            self.oom.inc()
        if record.synthesis_s is not None:
            self.request_duration.observe(record.synthesis_s)
        if record.real_time_factor is not None:
            self.real_time_factor.observe(record.real_time_factor)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _StateCollector:
    def __init__(self, metrics: Metrics) -> None:
        self._m = metrics

    def describe(self):
        return []

    def collect(self):
        status = self._m._status()
        sample = self._m._monitor.latest()
        used = GaugeMetricFamily(f"{PREFIX}_device_memory_used_bytes", "GPU memory in use (NVML)", labels=["gpu"])
        total = GaugeMetricFamily(f"{PREFIX}_device_memory_total_bytes", "GPU memory (NVML)", labels=["gpu"])
        if sample is not None:
            for g in sample.gpus:
                used.add_metric([str(g.index)], g.used_bytes)
                total.add_metric([str(g.index)], g.total_bytes)
        yield used
        yield total
        mem = status.get("memory") or {}
        for name, key, doc in (("worker_allocated_bytes", "allocated_bytes", "torch memory_allocated in the worker"),
                               ("worker_reserved_bytes", "reserved_bytes", "torch memory_reserved in the worker"),
                               ("worker_rss_bytes", "rss_bytes", "Resident memory of the worker process")):
            g = GaugeMetricFamily(f"{PREFIX}_{name}", doc)
            if mem.get(key) is not None:
                g.add_metric([], mem[key])
            yield g
        if sample is not None and sample.worker_gpu_bytes is not None:
            g = GaugeMetricFamily(f"{PREFIX}_worker_device_memory_bytes", "GPU memory of the worker process (NVML)")
            g.add_metric([], sample.worker_gpu_bytes)
            yield g
        q = GaugeMetricFamily(f"{PREFIX}_queue_depth", "Requests waiting for the worker")
        q.add_metric([], status.get("queue_depth", 0))
        yield q
        restarts = CounterMetricFamily(f"{PREFIX}_worker_restarts", "Worker restarts by reason", labels=["reason"])
        for reason, n in (status.get("restarts_by_reason") or {}).items():
            restarts.add_metric([reason], n)
        yield restarts
        lost = CounterMetricFamily(f"{PREFIX}_ledger_write_errors", "Ledger records that could not be appended to --ledger")
        lost.add_metric([], status.get("ledger_write_errors", 0))
        yield lost
        lost = CounterMetricFamily(f"{PREFIX}_gpu_log_write_errors", "Memory samples that could not be written to --gpu-log")
        lost.add_metric([], status.get("gpu_log_write_errors", 0))
        yield lost
        if status.get("temp_folder_free_bytes") is not None:
            free = GaugeMetricFamily(f"{PREFIX}_temp_folder_free_bytes", "Free space in the temporary folder (uploads, "
                                                                          "results)")
            free.add_metric([], status["temp_folder_free_bytes"])
            yield free
        refused = CounterMetricFamily(f"{PREFIX}_uploads_refused_for_space", "Uploads refused because the temporary "
                                                                             "folder had no room (--temp-reserve-mb)")
        refused.add_metric([], status.get("uploads_refused_for_space", 0))
        yield refused
        state = GaugeMetricFamily(f"{PREFIX}_worker_state", "1 for the worker's current state", labels=["state"])
        state.add_metric([status.get("state", "unknown")], 1)
        yield state
