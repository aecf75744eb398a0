"""SIGTERM and Ctrl-C drain: the running request finishes and reaches its client, queued ones get
a retry hint, and no child process is left behind."""

from __future__ import annotations

import signal
import threading
import time

import psutil
import pytest
from gradio_client import Client

from .conftest import RunningApp


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_drains_then_exits_without_leftovers(sig, tmp_path, monkeypatch):
    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine")
    try:
        app.wait_healthy()
        children = psutil.Process(app.proc.pid).children(recursive=True)
        assert children, "the worker should be a child of the app"
        results: dict = {}

        def call(name, text):
            try:
                results[name] = Client(app.url, verbose=False).predict(text=text, api_name="/synthesize")
            except Exception as e:  # noqa: BLE001
                results[name] = e

        running = threading.Thread(target=call, args=("running", "sleep:3 running while we stop"))
        running.start()
        time.sleep(1.5)  # in flight now
        queued = threading.Thread(target=call, args=("queued", "queued behind it"))
        queued.start()
        time.sleep(0.5)
        app.proc.send_signal(sig)
        running.join(30)
        queued.join(30)
        assert not isinstance(results["running"], Exception), results["running"]
        assert results["running"][1]["audio_s"] > 0
        assert isinstance(results["queued"], Exception) and "may be sent again" in str(results["queued"])
        app.proc.wait(timeout=30)
        assert "stopped: the worker has ended" in app.log_path.read_text().splitlines()[-1]
        time.sleep(0.5)
        alive = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
        assert not alive, f"left behind: {[c.pid for c in alive]}"
    finally:
        app.stop()
