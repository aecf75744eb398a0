"""The memory monitor without a GPU: NVML's reason is kept, host memory is measured, the log
has nvidia-smi dmon's shape."""

from __future__ import annotations

import os
import time

from cosyvoice_ui.monitor.nvml import NvmlReader
from cosyvoice_ui.monitor.sampler import MemoryMonitor


def test_nvml_absence_is_explained_not_raised():
    reader = NvmlReader()
    if reader.available:
        assert reader.read()[0].total_bytes > 0
    else:
        assert reader.error and reader.read() == []


def test_samples_history_and_dmon_log(tmp_path):
    log_path = tmp_path / "gpu.log"
    info = {"state": "ready", "pid": os.getpid(), "memory": {"allocated_bytes": None, "reserved_bytes": None}}
    monitor = MemoryMonitor(lambda: info, interval_s=0.05, history_s=0.5, gpu_log_path=str(log_path)).start()
    time.sleep(1.0)
    monitor.stop()
    history = monitor.history()
    assert 5 <= len(history) <= 12  # bounded by history_s / interval_s
    latest = history[-1]
    assert latest.worker_pid == os.getpid() and latest.worker_rss_bytes > 10 * 2**20
    assert latest.web_rss_bytes > 10 * 2**20
    lines = log_path.read_text().splitlines()
    assert lines[0].startswith("#") and lines[1].startswith("#")
    names = lines[0].lstrip("# ").split()
    row = lines[-1].split()
    assert len(row) == len(names), (names, row)
    assert row[names.index("wpid")] == str(os.getpid())
    assert int(row[names.index("wrss")]) > 10
    assert monitor.cpu_time_s < 0.5


def test_history_is_readable_while_sampling():
    monitor = MemoryMonitor(lambda: {"state": "x", "pid": None}, interval_s=0.01).start()
    t0 = time.perf_counter()
    for _ in range(200):
        monitor.history()
    monitor.stop()
    assert time.perf_counter() - t0 < 1.0


def test_ledger_line_cut_short_does_not_swallow_the_next_record(tmp_path):
    """A ledger file ending in a partial line (a crash mid-write, a full disk, an edit) got the
    next record written onto it, so a JSON-lines reader lost a valid record."""
    import json

    from cosyvoice_ui.monitor.ledger import Ledger

    path = tmp_path / "ledger.jsonl"
    path.write_text('{"time_s": 1, "outcome": "ok"}\n{"time_s": 2, "outcome": "ok", "trunc')
    Ledger(path=str(path)).add_event("embedded", "", "refused:input", "The text is empty.")
    lines = path.read_text().splitlines()
    assert json.loads(lines[-1])["outcome"] == "refused:input", lines
    assert len(lines) == 3
