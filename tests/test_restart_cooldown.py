"""Restart cannot be pressed in a loop.

Promise (README, ``--restart-cooldown``): presses that arrive while a restart is under way join
it (one restart, one new pid for all of them); a press within the cooldown after it ended is
refused with a message saying when to try again, and the log says who asked for what; after the
cooldown Restart works again.
"""

from __future__ import annotations

import concurrent.futures
import json
import time

import pytest
from gradio_client import Client

from cosyvoice_ui.ui.formatting import restart_markdown

from . import gradio_http as gh
from .conftest import RunningApp

COOLDOWN_S = 4


def test_restart_presses_join_then_cool_down(tmp_path, monkeypatch):
    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    # A 2 s model load keeps the first restart under way while the other presses arrive.
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", "--restart-cooldown", str(COOLDOWN_S),
                     env={"FAULT_ENGINE_LOAD_S": "2"})
    try:
        app.wait_healthy()
        clients = [Client(app.url, verbose=False) for _ in range(3)]
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            reports = list(pool.map(lambda c: c.predict(api_name="/restart"), clients))
        assert len({r["new_pid"] for r in reports}) == 1, reports  # joined: one restart
        status = clients[0].predict(api_name="/status")
        assert status["restarts_by_reason"] == {"user": 1}, status

        with pytest.raises(Exception, match=rf"allowed once every {COOLDOWN_S} s \(--restart-cooldown\)"):
            clients[0].predict(api_name="/restart")
        # The pop-up closes when Restart is allowed again ("Try again in 9 s" stayed up past that).
        event, data = gh.call(app.url, "restart")
        assert event == "error" and 1 <= json.loads(data)["duration"] <= COOLDOWN_S, data
        assert clients[0].predict(api_name="/status")["pid"] == status["pid"]

        time.sleep(COOLDOWN_S + 0.5)
        # Pressed while a 3 s request runs: the report counts the wait from the press as well.
        running = clients[1].submit(text="sleep:3 running while Restart is pressed", api_name="/synthesize")
        deadline = time.monotonic() + 30
        while clients[0].predict(api_name="/status")["in_flight"] is None and time.monotonic() < deadline:
            time.sleep(0.05)
        report = clients[0].predict(api_name="/restart")
        assert report["old_pid"] == status["pid"] and running.result(timeout=30)[1]["worker_pid"] == status["pid"]
        assert report["since_press_s"] > report["duration_s"] + 1.5, report
        text = restart_markdown(report, None)
        assert f"{report['since_press_s']:.2f} s after the press, which waited for the running request" in text, text
        # A slow end of the old worker alone is not called a wait for a request (a user run).
        text = restart_markdown({**report, "waited_for_request": False, "since_press_s": report["duration_s"] + 1.3}, None)
        assert "after the press, with the old worker's end" in text and "running request" not in text, text
        log = app.log_path.read_text()
        assert "restarting the worker (reason: user" in log and "refused a restart" in log, log[-2000:]
        # The supervisor sees one request for the first restart; the presses that joined it are logged.
        assert log.count("a Restart press joined the restart under way") == 2, log[-2000:]
    finally:
        app.stop()


def test_a_restart_that_only_loaded_the_model_says_so_in_the_cooldown(tmp_path, monkeypatch):
    """After an idle unload there is no worker to replace: Restart loads the model. The cooldown's
    refusal said "The worker was restarted 29 s ago" (thirty-third newcomer session)."""
    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", "--restart-cooldown", "60",
                     "--idle-unload-after", "1")
    try:
        app.wait_healthy()
        deadline = time.monotonic() + 30
        while app.status()["state"] != "unloaded" and time.monotonic() < deadline:
            time.sleep(0.2)
        client = Client(app.url, verbose=False)
        report = client.predict(api_name="/restart")
        assert report["old_pid"] is None and report["new_pid"], report
        with pytest.raises(Exception, match=r"The model was loaded by a Restart \d+ s ago; Restart is allowed once"):
            client.predict(api_name="/restart")
    finally:
        app.stop()


def test_free_cache_presses_do_not_hold_off_restart(tmp_path, monkeypatch):
    """Free cache waits for the running request however long it runs; four presses of it filled the
    lane Restart shared with them, and a Restart waited in Gradio's queue until that request ended
    (150 s instead of the 30 s grace; helper-125). Here a 20 s request, four Free cache calls, then
    Restart: it stops the request after its 2 s grace and runs it again (rerun_request_id)."""
    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", "--restart-grace", "2", "--restart-cooldown", "0",
                     "--request-timeout", "120")
    try:
        app.wait_healthy()
        client = Client(app.url, verbose=False)
        running = client.submit(text="sleep:20 a long one", api_name="/synthesize")
        deadline = time.monotonic() + 30
        while app.status()["in_flight"] is None:
            assert time.monotonic() < deadline, "the long request never ran"
            time.sleep(0.05)
        presses = [Client(app.url, verbose=False).submit(api_name="/free_cache") for _ in range(4)]
        time.sleep(1.0)  # the four are waiting in their lane
        report = client.predict(api_name="/restart")
        assert report["rerun_request_id"] is not None and report["error"] is None, report
        for press in presses:
            assert press.result(timeout=120)["pid"] == report["new_pid"]
        running.result(timeout=120)
    finally:
        app.stop()
