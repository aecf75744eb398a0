"""The leak watchdog with real workers: a leaking engine is caught and restarted between requests,
a healthy one is left alone for 100 requests."""

from __future__ import annotations

import pytest

from cosyvoice_ui.engines.base import SynthesisRequest
from cosyvoice_ui.monitor.leak import LeakWatchdog
from cosyvoice_ui.monitor.metrics import Metrics
from cosyvoice_ui.worker.supervisor import Supervisor


def _supervisor(engine, tmp_path, monkeypatch, **kw):
    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    sup = Supervisor(engine, "cpu", False, heartbeat_interval_s=0.2, **kw).start()
    assert sup.wait_ready(60)
    return sup


def test_leaking_engine_is_detected_and_restart_clears_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LEAK_MB", "40")
    watchdog = LeakWatchdog(threshold_fraction=0.05, threshold_bytes=100 * 2**20, window=3, warmup_requests=1)
    sup = _supervisor("tests.fault_engines:LeakyEngine", tmp_path, monkeypatch, leak_watchdog=watchdog)
    metrics = Metrics(sup.status, monitor=None)
    sup.ledger.subscribe(metrics.observe)
    try:
        first_pid = sup.worker_pid
        stats_seen = []
        for i in range(12):
            _, stats = sup.synthesize(SynthesisRequest(text=f"request {i}"))
            stats_seen.append(stats)
            if stats.pid != first_pid:
                break  # the first request on the new worker (which leaks too, given time)
        assert sup.status()["restarts_by_reason"].get("leak", 0) >= 1
        records = [r for r in sup.ledger.records() if r.outcome == "restart:leak"]
        assert records and "grew by" in records[0].error
        on_leaky = [s for s in stats_seen if s.pid == first_pid]
        on_new = [s for s in stats_seen if s.pid != first_pid]
        assert on_new, "every request ran on the leaking worker"
        # The restart cleared it: the new worker's first after-request memory is back near the
        # leaking worker's early figures, far below its last ones.
        assert on_new[0].memory_after_bytes < on_leaky[-1].memory_after_bytes - 100 * 2**20
        assert sup.status()["last_leak"] and not sup.status()["degraded"]
        # The leak row is an event, not a request: requests_total counts the requests only.
        counted = {s.labels["outcome"]: s.value for m in metrics.requests.collect() for s in m.samples
                   if s.name.endswith("_total")}
        assert counted == {"ok": float(len(stats_seen))}, counted
    finally:
        sup.stop(grace_s=1)


def test_healthy_engine_never_triggers_over_100_requests(tmp_path, monkeypatch):
    watchdog = LeakWatchdog(window=10, warmup_requests=3)
    sup = _supervisor("tests.fault_engines:FaultEngine", tmp_path, monkeypatch, leak_watchdog=watchdog)
    try:
        pid = sup.worker_pid
        for i in range(100):
            sup.synthesize(SynthesisRequest(text=f"healthy request number {i}"))
        status = sup.status()
        assert status["restarts"] == 0 and status["leak"] is None and not status["degraded"]
        assert sup.worker_pid == pid
    finally:
        sup.stop(grace_s=1)


def test_watchdog_logic_on_figures():
    w = LeakWatchdog(threshold_fraction=0.05, threshold_bytes=10, window=3, warmup_requests=1)
    assert [w.observe(1, v) for v in (500, 1000, 1001, 1002, 1003)] == [None] * 5  # flat after warm-up
    reports = [w.observe(1, v) for v in (1100, 1200, 1300)]
    found = [r for r in reports if r is not None]
    assert len(found) == 1 and found[0].baseline_bytes == 1000 and found[0].growth_bytes == 100
    assert w.observe(2, 5000) is None  # a new worker starts over


def test_a_threshold_under_a_mebibyte_is_said_with_its_decimal():
    """A --leak-threshold-mb of 0.5 was said as "threshold 0 MiB" in the log and the status (helper-111)."""
    from cosyvoice_ui.monitor.leak import LeakReport

    report = LeakReport(pid=7, baseline_bytes=300 * 2**20, current_bytes=300 * 2**20 + 3 * 2**19,
                        threshold_bytes=2**19, requests=12)
    text = report.describe()
    assert "grew by 1.5 MiB over its baseline of 300 MiB (threshold 0.5 MiB, 12 requests)" in text, text
