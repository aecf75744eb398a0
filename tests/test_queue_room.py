"""Gradio's queue keeps room for speech: the page's other events cannot fill it, and the page's
prompt check decodes one upload once (helper-146)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid

from gradio_client import Client

from .conftest import PROMPTS_DIR, RunningApp, wait_for


def _join(url: str, fn_index: int) -> tuple[int, str]:
    """One raw ``queue/join`` of ``fn_index`` in a new session: (HTTP status, body)."""
    body = json.dumps({"data": [], "fn_index": fn_index, "session_hash": uuid.uuid4().hex, "event_data": None,
                       "trigger_id": None}).encode()
    request = urllib.request.Request(url + "gradio_api/queue/join", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_free_cache_calls_cannot_fill_the_queue_that_speech_needs(tmp_path, monkeypatch):
    """1,020 Free cache calls, each waiting for the running request, filled Gradio's 1000-place
    queue: every Generate, Restart and Free cache then got "Queue is full" (helper-146). Now at most
    32 of them wait; the rest are refused with words, and a speech request still gets in."""
    from cosyvoice_ui.guards.side_event_places import SIDE_WAITING_MAX

    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine")
    try:
        app.wait_healthy()
        with urllib.request.urlopen(app.url + "config", timeout=10) as r:
            config = json.loads(r.read())
        free_cache = next(d["id"] for d in config["dependencies"] if d.get("api_name") == "free_cache")
        running = Client(app.url, verbose=False).submit(text="sleep:12 a long one", api_name="/synthesize")
        wait_for(lambda: app.status().get("in_flight"), 30, "the long request running")
        answers = [_join(app.url, free_cache) for _ in range(SIDE_WAITING_MAX + 12)]
        accepted = sum(code == 200 for code, _ in answers)
        refused = [text for code, text in answers if code == 503]
        # Four run at once (waiting for the request), SIDE_WAITING_MAX wait; a few may have ended.
        assert accepted <= SIDE_WAITING_MAX + 4 + 2 and refused, (accepted, answers[-1])
        assert "Too many Free cache calls are waiting already" in refused[0], refused[0]
        # The REST route goes through the same queue.
        request = urllib.request.Request(app.url + "gradio_api/call/free_cache", data=b'{"data": []}',
                                         headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(request, timeout=30)
            raise AssertionError("a REST Free cache call got a place past the bound")
        except urllib.error.HTTPError as e:
            assert e.code == 503 and "Too many Free cache calls" in e.read().decode()
        # Speech still gets in, and is answered once the long request ends.
        result = Client(app.url, verbose=False).predict(text="Hello there.", api_name="/synthesize")
        assert result[0] and result[1]["audio_s"] > 0.5, result
        running.result(timeout=60)
        assert app.proc.poll() is None
    finally:
        app.stop()


def test_a_repeated_prompt_check_decodes_the_upload_once(tmp_path, monkeypatch):
    """Each page check of an upload decoded it again: helper-146 named one 100 s MP3 1,040 times,
    3 s of decoding each. The answer for a file is now remembered, refusal or not."""
    from cosyvoice_ui.ui import prompt_checks

    real, decoded = prompt_checks.load_prompt_audio, []

    def counted(path):
        decoded.append(path)
        return real(path)

    monkeypatch.setattr(prompt_checks, "load_prompt_audio", counted)
    checks = prompt_checks.CheckedPrompts(remembered=2)
    notes = tmp_path / "notes.wav"
    notes.write_text("shopping list, not a recording")
    prompt = str(PROMPTS_DIR / "xtts_female.wav")
    assert checks.problem(prompt) is None and checks.problem(prompt) is None
    first = checks.problem(str(notes))
    assert first and "could not be decoded" in first, first
    assert checks.problem(str(notes)) == first
    assert decoded == [prompt, str(notes)]
    # A file no longer there is told so each time, not remembered.
    gone = str(tmp_path / "gone.wav")
    for _ in range(2):
        assert "is not on the server" in (checks.problem(gone) or "")
    assert decoded.count(gone) == 2
    # At most `remembered` answers are kept: the oldest is decoded again.
    third = tmp_path / "third.wav"
    third.write_text("another list")
    checks.problem(str(third))
    checks.problem(prompt)
    assert decoded.count(prompt) == 2


def test_unqueued_events_joined_to_the_queue_hold_a_bounded_share_of_it():
    """The page runs the status, the monitor's refresh and the presets outside the queue, but anyone
    can join them to it: 2,500 joins of the monitor's refresh, 32 at a time, refused 20 of 35
    Generates with "Queue is full" (helper-147). Together they hold at most UNQUEUED_WAITING_MAX
    places; the slow side events SIDE_WAITING_MAX each; speech is not bounded here. Gradio's own
    Queue.push, with the app's wrap, on a page of one event of each kind and filled waiting lists."""
    import asyncio
    import types

    import gradio as gr
    from gradio.data_classes import PredictBodyInternal
    from gradio.queueing import EventQueue

    from cosyvoice_ui.guards import side_event_places
    from cosyvoice_ui.guards.side_event_places import SIDE_WAITING_MAX, UNQUEUED_WAITING_MAX

    side_event_places.install()
    with gr.Blocks() as demo:
        button = gr.Button()
        button.click(lambda: None, queue=False, api_name="status")
        button.click(lambda: None, concurrency_id="free_cache", api_name="free_cache")
        button.click(lambda: None, concurrency_id="synthesize", api_name="synthesize")
    demo.queue(max_size=1000)
    queue = demo._queue
    index = {fn.api_name: i for i, fn in demo.fns.items()}

    def fill(api_name: str, waiting: int) -> None:
        fn = demo.fns[index[api_name]]
        queue.event_queue_per_concurrency_id[fn.concurrency_id] = events = EventQueue(fn.concurrency_id, 4)
        events.queue.extend(types.SimpleNamespace(fn=fn, session_hash=f"w{i}", _id=f"w{i}", alive=False)
                            for i in range(waiting))

    def push(api_name: str):
        body = PredictBodyInternal(session_hash="s", fn_index=index[api_name], data=[])
        return asyncio.run(queue.push(body, None, None))

    fill("status", UNQUEUED_WAITING_MAX)
    fill("free_cache", SIDE_WAITING_MAX)
    fill("synthesize", 400)
    for api_name, kind in (("status", "status and monitor calls"), ("free_cache", "Free cache calls")):
        success, message, state = push(api_name)
        assert not success and state == "queue_full" and f"Too many {kind} are waiting already" in message, message
    success, event_id, state = push("synthesize")  # 932 waiting in all: Gradio's own bound (1000) only
    assert success and state == "success", event_id
