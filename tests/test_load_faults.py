"""Under load (4 clients, 40 requests) press Restart twice and SIGKILL the worker once: every
request either completes or gets a clear error that says it may be retried; none is silently
dropped or answered twice."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import threading
import time

import pytest
from gradio_client import Client

from .conftest import RunningApp


def test_nothing_lost_across_restarts_and_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", "--max-queue", "40", "--restart-grace", "2",
                     "--restart-cooldown", "0")
    try:
        app.wait_healthy()
        admin = Client(app.url, verbose=False)
        answers: dict[int, object] = {}
        lock = threading.Lock()

        def one(i: int) -> None:
            client = Client(app.url, verbose=False)
            try:
                _, stats = client.predict(text=f"sleep:0.3 request number {i}", api_name="/synthesize")
                result = stats
            except Exception as e:  # noqa: BLE001
                result = e
            with lock:
                assert i not in answers, f"request {i} answered twice"
                answers[i] = result

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(one, i) for i in range(40)]
            time.sleep(2)
            admin.predict(api_name="/restart")
            time.sleep(2)
            os.kill(admin.predict(api_name="/status")["pid"], signal.SIGKILL)
            time.sleep(2)
            admin.predict(api_name="/restart")
            for f in futures:
                f.result(timeout=300)
        assert sorted(answers) == list(range(40))
        failures = {i: r for i, r in answers.items() if isinstance(r, Exception)}
        for i, e in failures.items():
            assert "again" in str(e) or "retr" in str(e), f"request {i}: unclear error {e!r}"
        assert len(failures) <= 2, failures
        status = admin.predict(api_name="/status")
        assert status["restarts_by_reason"].get("user") == 2 and status["restarts_by_reason"].get("crash") == 1
        assert status["completed"] >= 38
        # A request whose worker dies under it (before any audio) runs again, and its answer says so.
        _, stats = admin.predict(text="crash-once before any audio", api_name="/synthesize")
        assert any("ran again from the start because the worker was replaced" in n for n in stats["notes"]), stats
    finally:
        app.stop()


def test_frozen_worker_is_replaced_busy_or_idle(tmp_path, monkeypatch):
    """A worker that is alive but never answers (SIGSTOP: a frozen cgroup, a stuck driver call)
    used to hold the server for good: sending it a request with prompt audio blocked the
    supervisor before it checked any deadline, and /healthz said "ok". Now its silence is noticed
    within the heartbeat timeout, busy or idle, and the worker is replaced."""
    from gradio_client import handle_file

    from .conftest import PROMPTS_DIR

    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", "--request-timeout", "120")
    try:
        app.wait_healthy()
        client = Client(app.url, verbose=False)
        frozen = client.predict(api_name="/status")["pid"]
        os.kill(frozen, signal.SIGSTOP)
        t0 = time.monotonic()
        # A prompt makes the request larger than a pipe holds.
        _, stats = client.predict(text="hello after a freeze", prompt_audio=handle_file(str(PROMPTS_DIR / "xtts_male.wav")),
                                  api_name="/synthesize")
        waited_s = time.monotonic() - t0
        assert stats["worker_pid"] != frozen and waited_s < 60, (stats, waited_s)
        assert any("ran again" in n for n in stats["notes"]), stats["notes"]

        second = client.predict(api_name="/status")["pid"]
        os.kill(second, signal.SIGSTOP)  # now idle
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status = client.predict(api_name="/status")
            if status["pid"] not in (second, None) and status["state"] == "ready":
                break
            time.sleep(1)
        assert status["pid"] != second and status["state"] == "ready", status
        assert "sent no heartbeat" in app.log_path.read_text()

        # Free cache on a frozen worker gives up when the heartbeat does (it used to wait out its
        # own 30 s deadline and hold every other request meanwhile), and the worker is replaced.
        third = status["pid"]
        os.kill(third, signal.SIGSTOP)
        t0 = time.monotonic()
        with pytest.raises(Exception, match="did not answer the free-cache request"):
            client.predict(api_name="/free_cache")
        assert time.monotonic() - t0 < 25, "Free cache waited past the heartbeat timeout"
        _, stats = client.predict(text="hello after a frozen free cache", api_name="/synthesize")
        assert stats["worker_pid"] not in (frozen, second, third)
        # Counted as hangs, not crashes (the SIGKILL that ended them was the app's own).
        reasons = client.predict(api_name="/status")["restarts_by_reason"]
        assert reasons.get("hung") == 3 and not reasons.get("crash"), reasons
        assert "out-of-memory" not in app.log_path.read_text()
    finally:
        app.stop()


def _unread_rest_calls(port: int, total: int, at_once: int) -> dict[str, int]:
    """``total`` ``POST /gradio_api/call/status`` from ``at_once`` connections at a time, whose
    results are never read. Returns the count of each status code."""
    import asyncio
    import json

    body = json.dumps({"data": []}).encode()
    head = (f"POST /gradio_api/call/status HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    codes: dict[str, int] = {}

    async def one(gate) -> None:
        async with gate:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head + body)
            code = (await reader.readline()).split(b" ")[1].decode()
            await reader.read()
            writer.close()
            codes[code] = codes.get(code, 0) + 1

    async def all_of_them() -> None:
        gate = asyncio.Semaphore(at_once)
        await asyncio.gather(*(one(gate) for _ in range(total)))

    asyncio.run(all_of_them())
    return codes


@pytest.mark.timeout(600)  # about 160 s alone; the calls take longer on a busy machine
def test_unread_rest_calls_neither_stop_the_queue_nor_take_a_waiting_request(tmp_path, monkeypatch):
    """Gradio keeps the messages of 2,000 sessions and forgot the oldest as new ones came, with
    its request still running or not; a REST call is a session of its own. 3,000 unread calls, 30
    at a time, made Gradio's queue raise KeyError and stop: every request of every user got 503
    "Queue is stopped." while /healthz said ok (helper-107, 3 runs of 3; 1 of 1 here). With a
    backlog of more than 2,000 waiting calls, keeping each forgotten session's messages pushed out
    another: no answer for minutes (this session). Here a request running meanwhile gets its
    result, calls past Gradio's bounded queue are told it is full, and the queue goes on."""
    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine")
    try:
        app.wait_healthy()
        visitor = Client(app.url, verbose=False)
        # About as long as the calls take (77 s for 3,000, 8 at a time, on a 2-core machine), so
        # its session is the oldest with a request pending while 2,000 more join. 4,000 calls: the
        # status calls may hold 500 of the queue's places (guards/side_event_places.py).
        running = visitor.submit(text="sleep:110 made while others flood the queue", api_name="/synthesize")
        time.sleep(2)
        codes = _unread_rest_calls(app.port, 4000, 8)
        assert codes.get("200", 0) > 2100 and set(codes) <= {"200", "503"}, codes
        _, stats = running.result(timeout=200)
        assert stats["audio_s"] > 0, stats
        _, stats = Client(app.url, verbose=False).predict(text="after the flood", api_name="/synthesize")
        assert stats["audio_s"] > 0, stats
        assert "Queue is stopped" not in app.log_path.read_text()
    finally:
        app.stop()


def test_gradios_session_table_forgets_finished_and_unread_sessions_before_waiting_ones():
    """The session table as the app installs it into Gradio's queue, filled as Gradio's push()
    fills it: a visitor's session with a request running, then 2,000 REST calls and page joins
    (helper-108) whose requests ended unread. A new session forgets the oldest unread one, with its
    entry among Gradio's pending ids (Gradio kept one per unread call for good), not the visitor's;
    an older session with nothing pending goes before either. A message for a session forgotten
    all the same is kept in a new queue (it raised KeyError), and the pending ids of a session no
    longer held read as none (a stream reading it looks them up)."""
    import asyncio
    import types

    from gradio.queueing import Event, Queue

    from cosyvoice_ui.guards import evicted_sessions

    evicted_sessions.install()
    queue = Queue(live_updates=False, concurrency_count=1, update_intervals=1, max_size=None, blocks=None)
    table, pending = queue.pending_messages_per_session, queue.pending_event_ids_session

    def join(session: str | None, running: bool) -> Event:  # what Queue.push does with a new event
        event = Event(session, types.SimpleNamespace(concurrency_id="synthesize"), None, None)
        table[event.session_hash] = asyncio.Queue()
        pending.setdefault(event.session_hash, set()).add(event._id)
        if running:
            queue.event_ids_to_events[event._id] = event
        return event

    visitor = join("visitor", running=True)
    calls = [join(None if i % 2 else f"page-{i}", running=False).session_hash for i in range(table.max_size - 1)]
    assert len(table) == table.max_size
    join(None, running=False)
    assert "visitor" in table and calls[0] not in table and calls[0] not in pending and calls[1] in table
    table["done"] = asyncio.Queue()  # a page session whose requests all ended: nothing pending
    table.move_to_end("done", last=False)
    assert calls[1] not in table  # made room for it
    join(None, running=False)
    assert "done" not in table and calls[2] in table and "visitor" in table

    del table["visitor"]  # forgotten all the same (a table full of waiting requests)
    queue.send_message(visitor, types.SimpleNamespace(event_id=None))
    assert table["visitor"].qsize() == 1
    assert pending[calls[0]] == set() and calls[0] not in pending
