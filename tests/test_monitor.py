"""The memory monitor without a GPU: NVML's reason is kept, host memory is measured, the log
has nvidia-smi dmon's shape."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from cosyvoice_ui.monitor.nvml import NvmlReader
from cosyvoice_ui.monitor.sampler import MemoryMonitor

from .conftest import ROOT


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


def test_unwritable_ledger_is_reported_in_healthz_metrics_and_page(tmp_path, monkeypatch):
    """The ledger file replaced by a folder (or a full disk) lost every record with one ERROR line
    each, while /healthz said "ok" and /metrics showed nothing (twenty-second newcomer session).
    Requests still succeed; the loss is counted where an operator looks, and the log says when the
    file is writable again."""
    import json
    import urllib.request

    from gradio_client import Client

    from cosyvoice_ui.ui.formatting import status_markdown

    from .conftest import RunningApp

    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    ledger = tmp_path / "ledger.jsonl"
    gpu_log = tmp_path / "gpu.log"
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", "--ledger", str(ledger), "--gpu-log", str(gpu_log),
                     "--monitor-interval", "0.2")
    try:
        app.wait_healthy()
        client = Client(app.url, verbose=False)
        client.predict(text="first one", api_name="/synthesize")
        ledger.unlink()
        ledger.mkdir()
        _, stats = client.predict(text="second one", api_name="/synthesize")
        assert stats["audio_s"] > 0, "a ledger that cannot be written must not fail the request"
        with urllib.request.urlopen(app.url + "healthz", timeout=10) as r:
            assert r.status == 200
            health = json.loads(r.read())
        assert health["ledger_write_errors"] == 1 and str(ledger) in health["ledger_error"], health
        assert health["status"] == "degraded", health  # it said "ok" (helper-137)
        with urllib.request.urlopen(app.url + "metrics", timeout=10) as r:
            assert "cosyvoice_ui_ledger_write_errors_total 1.0" in r.read().decode()
        panel = status_markdown(client.predict(api_name="/status"), None, None)
        assert "ledger file cannot be written" in panel and str(tmp_path) not in panel, panel
        ledger.rmdir()
        client.predict(text="third one", api_name="/synthesize")
        assert app.status()["ledger_error"] is None and app.status()["status"] == "ok"
        assert [json.loads(line)["text_chars"] for line in ledger.read_text().splitlines()] == [len("third one")]
        assert "is writable again; 1 record(s) were not written" in app.log_path.read_text()
        # A second outage reports its own loss, not the running total (twenty-third newcomer session).
        ledger.rename(tmp_path / "kept.jsonl")
        ledger.mkdir()
        client.predict(text="fourth one", api_name="/synthesize")
        ledger.rmdir()
        client.predict(text="fifth one", api_name="/synthesize")
        assert "were not written to it (2 since the start)" in app.log_path.read_text()
        assert "is writable again; 1 record(s) were not written to it (2 since" in app.log_path.read_text()
        assert app.status()["ledger_write_errors"] == 2
        # The --gpu-log the same way (a folder in its place), in /healthz and /metrics.
        gpu_log.unlink()
        gpu_log.mkdir()
        time.sleep(1.0)
        health = app.status()
        assert health["gpu_log_write_errors"] > 0 and "Is a directory" in health["gpu_log_error"], health
        assert health["status"] == "degraded", health
        with urllib.request.urlopen(app.url + "metrics", timeout=10) as r:
            assert "cosyvoice_ui_gpu_log_write_errors_total" in r.read().decode()
    finally:
        app.stop()


def test_gpu_log_is_rotated_by_size(tmp_path):
    """--gpu-log grew for as long as the app ran (about 10 MB a day at one sample a second). It is
    rotated at --gpu-log-max-mb, keeping one older file, each with the column header."""
    log_path = tmp_path / "gpu.log"
    info = {"state": "ready", "pid": os.getpid(), "memory": {}}
    monitor = MemoryMonitor(lambda: info, interval_s=0.01, history_s=0.5, gpu_log_path=str(log_path),
                            gpu_log_max_bytes=2000).start()
    time.sleep(1.5)
    monitor.stop()
    files = sorted(tmp_path.iterdir())
    assert [f.name for f in files] == ["gpu.log", "gpu.log.1"], files
    for f in files:
        lines = f.read_text().splitlines()
        assert lines[0].startswith("# Date") and f.stat().st_size <= 2000, (f, lines[:3])
        assert len(lines) > 2 and not lines[-1].startswith("#")


def test_a_full_gpu_log_rotated_at_start_has_its_header_once(tmp_path):
    """A --gpu-log already at its size when the app started was rotated by the start's header
    line, and the new file got the header twice (helper-114). Its units are MiB (it said MB)."""
    from cosyvoice_ui.monitor.gpu_log import GpuLog

    header = "# header\n# MiB\n"
    (tmp_path / "gpu.log").write_text("x" * 3000)
    gpu_log = GpuLog(str(tmp_path / "gpu.log"), 2000, header)
    gpu_log.write("1 2 3\n")
    gpu_log.close()
    assert (tmp_path / "gpu.log").read_text() == header + "1 2 3\n"
    assert (tmp_path / "gpu.log.1").read_text() == "x" * 3000


def test_gpu_log_that_cannot_be_written_is_reported_once(caplog):
    """A full disk (/dev/full here) printed logging's traceback for every sample; now one error."""
    import logging

    from cosyvoice_ui.monitor.gpu_log import GpuLog

    with caplog.at_level(logging.ERROR, logger="cosyvoice_ui.monitor.gpu_log"):
        log = GpuLog("/dev/full", 10_000, "# header\n")
        for _ in range(20):
            log.write("  20261130   10:00:00  - -\n")
        log.close()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "cannot write the GPU log /dev/full" in errors[0].getMessage(), caplog.text


def test_gpu_log_moved_or_replaced_is_reopened_or_reported(tmp_path, caplog):
    """The GPU log renamed under the app kept receiving samples through its open handle, and a
    folder put in its place went unnoticed (twenty-third newcomer session). The path is opened
    again (as logging's WatchedFileHandler does); a path that cannot be opened is reported, once."""
    import logging

    log_path = tmp_path / "gpu.log"
    info = {"state": "ready", "pid": os.getpid(), "memory": {}}
    monitor = MemoryMonitor(lambda: info, interval_s=0.02, gpu_log_path=str(log_path)).start()
    try:
        time.sleep(0.3)
        log_path.rename(tmp_path / "gpu.old")
        time.sleep(0.3)
        moved_size = (tmp_path / "gpu.old").stat().st_size
        time.sleep(0.3)
        assert (tmp_path / "gpu.old").stat().st_size == moved_size, "still writing to the moved file"
        lines = log_path.read_text().splitlines()
        assert lines[0].startswith("# Date") and len(lines) > 3, lines[:4]
        with caplog.at_level(logging.WARNING, logger="cosyvoice_ui.monitor.gpu_log"):
            log_path.unlink()
            log_path.mkdir()
            time.sleep(0.3)
            status = monitor.gpu_log_status
            assert status["gpu_log_write_errors"] > 3 and "Is a directory" in status["gpu_log_error"], status
            log_path.rmdir()
            time.sleep(0.3)
        assert monitor.gpu_log_status["gpu_log_error"] is None
        messages = [r.getMessage() for r in caplog.records]
        assert len([m for m in messages if "cannot write the GPU log" in m]) == 1, messages
        assert any("is writable again" in m and "sample(s) were not written to it" in m for m in messages), messages
        assert log_path.read_text().startswith("# Date")
    finally:
        monitor.stop()


def test_gpu_log_replaced_by_a_fifo_is_refused_without_waiting(tmp_path):
    """The GPU log moved away and a FIFO made at its path: the reopen waited in open() for a
    reader for good, holding the handler's lock, so sampling stopped with no error counted and the
    shutdown never ended (helper-122). The write now returns at once, counted as a failure, with
    or without a reader; close() returns; a regular file is made again once the FIFO is gone."""
    import threading

    from cosyvoice_ui.monitor.gpu_log import GpuLog

    path = tmp_path / "gpu.log"
    gpu_log = GpuLog(str(path), 10_000, "# header\n")
    gpu_log.write("before\n")
    path.rename(tmp_path / "gpu.moved")
    os.mkfifo(path)

    def in_thread(call) -> threading.Thread:
        thread = threading.Thread(target=call, daemon=True)
        thread.start()
        thread.join(timeout=5)
        return thread

    writes = []
    try:
        writer = in_thread(lambda: writes.append(gpu_log.write("no reader\n")))
        assert not writer.is_alive(), "the write waits in open() for a reader of the FIFO"
        assert gpu_log.write_errors == 1 and "FIFO" in gpu_log.error, (gpu_log.write_errors, gpu_log.error)
        reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            gpu_log.write("with a reader\n")
            assert gpu_log.write_errors == 2 and "FIFO" in gpu_log.error, (gpu_log.write_errors, gpu_log.error)
            assert os.read(reader, 100) == b"", "a line went into the FIFO"
        finally:
            os.close(reader)
        path.unlink()
        gpu_log.write("after\n")
        assert gpu_log.error is None and path.read_text() == "# header\nafter\n"
        closer = in_thread(gpu_log.close)
        assert not closer.is_alive(), "close() waits for the blocked write"
    finally:
        # With the old code a thread is still in open(): a reader lets it go on (and fail).
        for _ in range(50):
            if not any(t.is_alive() for t in threading.enumerate() if t.daemon and t.name.startswith("Thread-")):
                break
            if path.exists() and not path.is_file():
                os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
            time.sleep(0.1)


def test_gpu_log_replaced_by_a_terminal_is_refused_without_waiting(tmp_path):
    """A link to a pty put in the GPU log's place: the character device was written to, and once
    the pty's buffer was full (nobody read its other end) write() waited for good, sampling
    stopped, and /healthz showed no error (helper-125). A terminal is now refused at once, as a
    FIFO is, counted as a failure; and a link put at the path after the start is not followed at
    all (helper-148), so the pty is refused as a link."""
    import threading

    from cosyvoice_ui.monitor.gpu_log import GpuLog

    path = tmp_path / "gpu.log"
    gpu_log = GpuLog(str(path), 10_000, "# header\n")
    gpu_log.write("before\n")
    master, slave = os.openpty()
    os.set_blocking(master, False)
    writer = None
    try:
        path.unlink()
        path.symlink_to(os.ttyname(slave))
        writes = []
        writer = threading.Thread(target=lambda: writes.extend(gpu_log.write(f"{i} line\n") for i in range(2000)),
                                  daemon=True)
        writer.start()
        writer.join(timeout=10)
        assert not writer.is_alive(), "the writes wait on the pty nobody reads"
        assert gpu_log.write_errors == 2000 and "symbolic links" in gpu_log.error, (gpu_log.write_errors,
                                                                                    gpu_log.error)
        try:
            leaked = os.read(master, 100)
        except BlockingIOError:
            leaked = b""
        assert leaked == b"", f"lines went to the terminal: {leaked!r}"
        path.unlink()  # the link gone, the path is started anew
        gpu_log.write("after\n")
        assert gpu_log.error is None and gpu_log.write_errors == 2000 and path.read_text().endswith("after\n")
        gpu_log.close()
    finally:
        # A write stuck on the full pty (the old code) returns once the pty's other end is closed.
        os.close(master)
        if writer is not None:
            writer.join(timeout=10)
        os.close(slave)


def test_gpu_log_close_is_bounded_when_a_write_hangs(tmp_path):
    """A write stuck in a hung file system holds the log handler's lock; close() waited for it,
    and so did logging's flush at exit, keeping a stopped app alive with its port held
    (helper-122). A thread holding that lock stands in for the hung write here: close() gives up
    after its timeout with a warning, and the process still exits."""
    import subprocess
    import sys

    script = (
        "import threading, time\n"
        "from cosyvoice_ui.monitor.gpu_log import GpuLog\n"
        f"gpu_log = GpuLog({str(tmp_path / 'gpu.log')!r}, 10_000, '# header\\n')\n"
        "held = threading.Event()\n"
        "def hung_write():\n"
        "    with gpu_log._handler.lock:\n"
        "        held.set()\n"
        "        time.sleep(3600)\n"
        "threading.Thread(target=hung_write, daemon=True).start()\n"
        "held.wait()\n"
        "t0 = time.monotonic()\n"
        "gpu_log.close()\n"
        "print(f'closed after {time.monotonic() - t0:.1f} s', flush=True)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"still running 20 s after close() was called: {out!r}") from None
    assert proc.returncode == 0 and "closed after" in out, out
    assert "a write has not returned" in out, out


def test_gpu_log_whose_rotation_fails_stays_at_its_size(tmp_path, caplog):
    """With PATH.1 a folder the rotation fails; the file was opened again for every sample and got
    a header each time: 620 headers, 7x the limit and growing (twenty-fourth newcomer session).
    Then every sample was dropped (twenty-sixth): the log now starts over in PATH, keeping the
    newest samples, and says so once."""
    import logging

    from cosyvoice_ui.monitor.gpu_log import GpuLog

    (tmp_path / "gpu.log.1").mkdir()
    path = tmp_path / "gpu.log"
    with caplog.at_level(logging.WARNING, logger="cosyvoice_ui.monitor.gpu_log"):
        log = GpuLog(str(path), 2000, "# header\n")
        for i in range(500):
            log.write(f"  20261130   10:00:00  sample {i:04d}\n")
        text = path.read_text()
        assert path.stat().st_size <= 2000 and log.error is None and log.write_errors == 0
        assert text.startswith("# header") and text.count("# header") == 1 and "sample 0499" in text, text[-200:]
        (tmp_path / "gpu.log.1").rmdir()
        for i in range(40):
            log.write(f"  20261130   10:00:01  after {i:02d}\n")
        log.close()
    assert (tmp_path / "gpu.log.1").read_text().startswith("# header")  # rotation works again
    assert "after 39" in path.read_text() or "after 39" in (tmp_path / "gpu.log.1").read_text()
    started_over = [r.getMessage() for r in caplog.records if "started over" in r.getMessage()]
    assert len(started_over) == 1, [r.getMessage() for r in caplog.records]


def test_process_bytes_sums_a_process_over_the_gpus():
    """The one place that adds up a process's GPU memory (six copies of the sum were in the app,
    the benchmarks and the GPU checks)."""
    from cosyvoice_ui.monitor.nvml import GpuSample

    def gpu(index, procs):
        return GpuSample(index=index, name="GPU", used_bytes=0, total_bytes=1, utilization_gpu_pct=None,
                         utilization_memory_pct=None, power_w=None, temperature_c=None, process_used_bytes=procs)

    class TwoGpus(NvmlReader):
        available = True

        def read(self):
            return [gpu(0, {7: 100, 8: None}), gpu(1, {7: 20})]

    reader = TwoGpus()
    assert reader.process_bytes(7) == 120 and reader.process_bytes(8) == 0 and reader.process_bytes(9) == 0
    if not NvmlReader().available:  # this machine: no NVML, so no figure rather than 0
        assert NvmlReader().process_bytes(os.getpid()) is None


def test_plot_times_are_true_instants_and_the_ledger_names_the_server_zone(monkeypatch):
    """On a server east of UTC the plot was off by the server's offset (8 h in UTC+8): Gradio sends
    datetimes as epoch ms via pandas, which reads naive local times as UTC. The ledger table shows
    the server's clock, so its time column says which zone that is."""
    import datetime

    import gradio as gr

    from cosyvoice_ui.monitor.ledger import LedgerRecord
    from cosyvoice_ui.monitor.sampler import Sample
    from cosyvoice_ui.ui import formatting

    monkeypatch.setenv("TZ", "TST-8")  # POSIX form: UTC+8, needs no tz database
    time.tzset()
    try:
        now = 1_764_576_000.0  # 2025-12-01 08:00:00 UTC
        frame = formatting.memory_frame([Sample(now, (), None, None, None, None, None, 100 * 2**20, "ready")])
        sent = gr.LinePlot(x="time", y="MiB", color="series").postprocess(frame)
        assert sent.data[0][0] == now * 1000
        record = LedgerRecord(now, "embedded", "cpu", 5, 1, 5, 4.0, 1.0, 0.5, 0.5, None, None, 10, 1, "ok")
        table = formatting.ledger_frame([record])
        assert table.columns[0] == "time (server, UTC+08:00)"
        # Another day's record (read back from --ledger) carries its date; today's the time alone (helper-114).
        assert table.iloc[0, 0] == "2025-12-01 16:00:00"
        now_record = LedgerRecord(time.time(), "embedded", "cpu", 5, 1, 5, 4.0, 1.0, 0.5, 0.5, None, None, 10, 1, "ok")
        assert re.fullmatch(r"\d\d:\d\d:\d\d", formatting.ledger_frame([now_record]).iloc[0, 0])
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_a_file_put_at_the_ledgers_path_after_the_start_is_not_written_to(tmp_path):
    """The start checks that --ledger names a ledger or no file, but each record opened the path
    again: a link planted there (`ln -s victim.txt ledger.jsonl`), or a file moved there, took the
    records (helper-147). Neither is written now; the records stay in memory and the error shows
    (/healthz degraded). A ledger moved away is still started anew, and a link given at the start
    is followed."""
    from cosyvoice_ui.monitor.ledger import Ledger

    victim = tmp_path / "victim.txt"
    victim.write_text("my notes\n")
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path=str(path))
    ledger.add_event("embedded", "cpu", "refused:input", "first")
    assert ledger.write_error is None and path.read_text().count("\n") == 1
    path.unlink()
    path.symlink_to(victim)
    ledger.add_event("embedded", "cpu", "refused:input", "second")
    assert victim.read_text() == "my notes\n" and ledger.write_error and ledger.write_errors == 1
    path.unlink()
    victim.rename(path)  # moved there
    ledger.add_event("embedded", "cpu", "refused:input", "third")
    assert path.read_text() == "my notes\n" and ledger.write_errors == 2
    path.unlink()  # moved away: the next record starts a new ledger
    ledger.add_event("embedded", "cpu", "refused:input", "fourth")
    assert ledger.write_error is None
    # A file that took the ledger's inode number after it was deleted was taken for it (helper-149):
    # the same file rewritten stands for it here (same inode, another size, not a ledger).
    with open(path, "r+") as f:
        f.write("user's notes, longer than one record of the ledger" * 20)
    ledger.add_event("embedded", "cpu", "refused:input", "not written")
    assert "not written" not in path.read_text() and ledger.write_error
    path.unlink()
    ledger.add_event("embedded", "cpu", "refused:input", "fourth")
    assert ledger.write_error is None and "fourth" in path.read_text()
    assert [r.error for r in ledger.records()] == ["first", "second", "third", "fourth", "not written", "fourth"]
    real = tmp_path / "real.jsonl"
    real.write_bytes(path.read_bytes())
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    linked = Ledger(path=str(link))
    linked.add_event("embedded", "cpu", "refused:input", "fifth")
    assert linked.write_error is None and "fifth" in real.read_text()


def test_a_file_put_at_the_gpu_logs_path_after_the_start_is_not_written_to(tmp_path):
    """The GPU log opens its path again when the file there changes (logrotate): a link to a file
    of the user's, or such a file moved there, got the samples (helper-148). Neither is written
    now, the error shows, and a path left empty is started anew."""
    from cosyvoice_ui.monitor.gpu_log import GpuLog

    victim = tmp_path / "victim.txt"
    victim.write_text("my notes\n")
    path = tmp_path / "gpu.log"
    log = GpuLog(str(path), 2**20, "# Date header\n")
    log.write("1 first\n")
    assert path.read_text() == "# Date header\n1 first\n"
    path.unlink()
    path.symlink_to(victim)
    log.write("2 second\n")
    assert victim.read_text() == "my notes\n" and log.write_errors == 1, log.error
    path.unlink()
    victim.rename(path)
    log.write("3 third\n")
    assert path.read_text() == "my notes\n" and log.write_errors == 2 and "did not write" in log.error
    path.unlink()
    log.write("4 fourth\n")
    assert path.read_text() == "# Date header\n4 fourth\n"
    log.close()
    real = tmp_path / "real.log"
    real.write_text("# Date header\n")
    link = tmp_path / "link.log"
    link.symlink_to(real)
    linked = GpuLog(str(link), 2**20, "# Date header\n")
    linked.write("5 fifth\n")
    linked.close()
    assert "5 fifth" in real.read_text() and linked.write_errors == 0


def test_a_file_put_at_the_gpu_logs_rotation_path_is_left_as_it_is(tmp_path):
    """The rotation renamed the log over PATH.1: a file put there while the app ran was lost
    (helper-149; the start refuses one already there). Now the log starts over in PATH instead."""
    from cosyvoice_ui.monitor.gpu_log import GpuLog

    path = tmp_path / "gpu.log"
    log = GpuLog(str(path), 200, "# Date header\n")
    (tmp_path / "gpu.log.1").write_text("my thesis notes\n")
    for i in range(20):
        log.write(f"{i} a sample line of about forty characters\n")
    log.close()
    assert (tmp_path / "gpu.log.1").read_text() == "my thesis notes\n"
    assert path.read_text().startswith("# Date header\n") and len(path.read_bytes()) <= 200


def test_a_rotation_path_the_app_cannot_read_is_left_as_it_is(tmp_path):
    """The rotation's check of PATH.1 gave up on a file it could not read, and the rename (which
    needs no read permission) replaced a mode-000 file of another user's (helper-151, run as
    nobody). Root reads every file, so as root the log runs here without the capabilities that
    let it (util-linux's setpriv), as the app runs under a user of its own."""
    script = f"""
import os, sys
sys.path.insert(0, {str(ROOT)!r})
from cosyvoice_ui.monitor.gpu_log import GpuLog
path = os.path.join({str(tmp_path)!r}, "gpu.log")
log = GpuLog(path, 200, "# Date header\\n")
with open(path + ".1", "w") as f:
    f.write("private notes\\n")
os.chmod(path + ".1", 0)
try:
    open(path + ".1").close()
    print("this user reads a mode-000 file")
    sys.exit(3)
except PermissionError:
    pass
for i in range(20):
    log.write(f"{{i}} a sample line of about forty characters\\n")
log.close()
"""
    command = [sys.executable, "-c", script]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without util-linux's setpriv: a mode-000 file cannot be made unreadable")
        drop = "-dac_override,-dac_read_search"
        command = ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}"] + command
    out = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    os.chmod(tmp_path / "gpu.log.1", 0o600)
    assert (tmp_path / "gpu.log.1").read_text() == "private notes\n"
    assert (tmp_path / "gpu.log").read_text().startswith("# Date header\n")


def test_a_log_started_over_after_a_failed_rotation_survives_copytruncate(tmp_path):
    """After a failed rotation the log was opened again without O_APPEND: emptied by logrotate's
    copytruncate, it was written at its old offset, so it began with that many NUL bytes and the
    next start refused it (helper-152)."""
    from cosyvoice_ui.monitor.gpu_log import GpuLog, is_gpu_log

    path = tmp_path / "gpu.log"
    (tmp_path / "gpu.log.1").mkdir()  # the rotation cannot replace a folder: the log starts over
    log = GpuLog(str(path), 300, "# Date header\n")
    for i in range(12):
        log.write(f"{i} a sample line of about forty characters\n")
    with open(path, "r+") as f:
        f.truncate(0)
        # A line that lands between the truncation and the log's next check (the sampler races
        # logrotate): the file is then not empty, and the log's own offset was used.
        f.write("# Date header\n")
    log.write("after the truncation\n")
    log.close()
    data = path.read_bytes()
    assert b"\0" not in data and is_gpu_log(data) and data.endswith(b"after the truncation\n"), data[:80]
