"""The same request sent twice by one client while the first still runs is synthesized once.

Promise (a double click on Generate queued two full syntheses, third newcomer session): a
request identical to one the same client (browser tab or ``gradio_client.Client``) still has
waiting or running is refused at once with a message saying its result is on the way; the
first one completes; another client sending the same values is served normally.
"""

from __future__ import annotations

import json
import time
import urllib.request

import pytest
from gradio_client import Client

from .conftest import serving

TEXT = "sleep:2 the same words twice"


def _fault_app(tmp_path):
    """The app with the test engine (``tests/fault_engines.py``), healthy inside the block."""
    return serving("--engine", "tests.fault_engines:FaultEngine", env={"FAULT_ENGINE_DIR": str(tmp_path)})


def test_same_client_same_request_is_synthesized_once(tmp_path):
    with _fault_app(tmp_path) as app:
        client, other = Client(app.url, verbose=False), Client(app.url, verbose=False)
        first = client.submit(text=TEXT, api_name="/synthesize")
        again = client.submit(text=TEXT, api_name="/synthesize")
        from_other = other.submit(text=TEXT, api_name="/synthesize")
        results = []
        for job in (first, again, from_other):
            try:
                results.append(job.result(timeout=60)[1])
            except Exception as e:  # noqa: BLE001
                results.append(e)
        refused = [r for r in results if isinstance(r, Exception)]
        served = [r for r in results if isinstance(r, dict)]
        assert len(refused) == 1 and "already being synthesized" in str(refused[0]), results
        # In an API client's words: it has no Generate button (helper-59).
        assert "Generate" not in str(refused[0]) and "first call's result" in str(refused[0]), refused
        assert len(served) == 2 and all(r["audio_s"] > 1.0 for r in served), results
        status = client.predict(api_name="/status")
        assert status["completed"] == 2, status
        # Once it is done, the same client may ask for the same thing again.
        assert client.predict(text=TEXT, api_name="/synthesize")[1]["audio_s"] > 1.0


def test_cancelling_one_job_keeps_the_clients_other_job(tmp_path):
    """``Job.cancel()`` on one of a client's two /synthesize jobs used to cancel both in Gradio
    (every task of that function in the session): the running one's result never arrived and
    the client waited forever. Now only the cancelled job ends."""
    import time

    with _fault_app(tmp_path) as app:
        client = Client(app.url, verbose=False)
        running = client.submit(text="sleep:3 the one that keeps running", api_name="/synthesize")
        time.sleep(1.0)
        queued = client.submit(text="sleep:1 the one that is cancelled", api_name="/synthesize")
        time.sleep(0.5)
        queued.cancel()
        _, stats = running.result(timeout=30)
        assert stats["audio_s"] > 1.0
        status = client.predict(api_name="/status")
        assert status["completed"] == 1 and status["queue_depth"] == 0, status


def test_cancels_in_a_loop_leave_no_tracebacks(tmp_path):
    """Ten cancels of waiting jobs used to log a 37-line "Task exception was never retrieved"
    (KeyError in Gradio's iterator cleanup) each; a client could flood the log with them."""
    import time

    with _fault_app(tmp_path) as app:
        client = Client(app.url, verbose=False)
        running = client.submit(text="sleep:6 the long one", api_name="/synthesize")
        time.sleep(0.5)
        for i in range(10):
            job = client.submit(text=f"sleep:1 short one number {i}", api_name="/synthesize")
            time.sleep(0.4)
            job.cancel()
        assert running.result(timeout=60)[1]["audio_s"] > 1.0
    # Stopped now: tasks whose exception nobody retrieved are reported when they are collected.
    log = app.log_path.read_text()
    assert "Traceback" not in log and "Task exception" not in log, log[-4000:]


def test_the_duplicate_pop_up_is_titled_as_a_result_on_its_way(tmp_path):
    """Gradio titles every refusal "Error", which read as a fault for a second press whose result was
    on its way (helper-49). The page's protocol (queue/join + queue/data) carries the title."""
    from .gradio_http import endpoint_data, queue_calls

    with _fault_app(tmp_path) as app:
        completed = queue_calls(app.url, "synthesize", endpoint_data(app.url, "synthesize", text=TEXT), times=2)
        refused = [m for m in completed if not m["success"]]
        assert len(refused) == 1 and "already being synthesized" in refused[0]["output"]["error"], completed
        assert refused[0]["output"]["title"] == "Already on its way", refused[0]


def test_on_the_page_a_repeat_of_a_request_being_replaced_is_not_a_duplicate(tmp_path):
    """Pressed with texts A, B, then A again, the page's third request was refused as "already being
    synthesized; its result will appear", though that first A was being replaced by B, whose result
    then showed under A's text (helper-90). The newest press runs; a double click is still one."""
    from .gradio_http import endpoint_data, queue_calls, queue_calls_each

    with _fault_app(tmp_path) as app:
        a, b = (endpoint_data(app.url, "synthesize", text=t) for t in (TEXT, "sleep:1 another text"))
        completed = queue_calls_each(app.url, "synthesize_page", [a, b, a])
        assert not [m for m in completed if "already being synthesized" in json.dumps(m)], completed
        newest = next(m for m in completed if m["sent"] == 2)
        assert newest["success"] and newest["output"]["data"][1]["text_chars"] == len(TEXT), newest
        # Its own latest request pressed again (a double click) is still refused.
        completed = queue_calls(app.url, "synthesize_page", a, times=2)
        assert sum("already being synthesized" in json.dumps(m) for m in completed) == 1, completed


def test_one_client_may_hold_only_its_share_of_the_queue(tmp_path):
    """One tab or script sending new texts could fill the whole queue, and every other visitor got
    "busy". Past --max-per-client open requests, that client is refused; others are still served."""
    with serving("--engine", "tests.fault_engines:FaultEngine", "--max-per-client", "2",
                 env={"FAULT_ENGINE_DIR": str(tmp_path)}) as app:
        greedy, other = Client(app.url, verbose=False), Client(app.url, verbose=False)
        jobs = [greedy.submit(text=f"sleep:1.5 request {i}", api_name="/synthesize") for i in range(4)]
        time.sleep(1.0)  # all four reached the service
        served_other = other.predict(text="sleep:0.1 someone else", api_name="/synthesize")[1]
        results = []
        for job in jobs:
            try:
                results.append(job.result(timeout=60)[1])
            except Exception as e:  # noqa: BLE001
                results.append(e)
        refused = [r for r in results if isinstance(r, Exception)]
        assert len(refused) == 2 and all("each visitor may have 2 at a time (--max-per-client)" in str(e)
                                         for e in refused), results
        assert served_other["audio_s"] > 0
        # Its share is free again once its requests are done.
        assert greedy.predict(text="sleep:0.1 later", api_name="/synthesize")[1]["audio_s"] > 0
        status = other.predict(api_name="/status")
        assert status["completed"] == 4, status


def test_a_clients_requests_run_in_the_order_it_sent_them(tmp_path):
    """A tab's third Generate (no prompt to decode) was queued before its second (a prompt to
    decode and check) and ran first; the page then kept the second's result under the third's
    text (helper-52). Sent over the page's protocol, one right after the other."""
    import json
    import urllib.request
    import uuid

    import httpx
    import numpy as np
    import soundfile as sf

    from . import gradio_http as gh
    from .conftest import PROMPTS_DIR

    samples, rate = sf.read(PROMPTS_DIR / "xtts_male.wav", dtype="float32")
    heavy = tmp_path / "heavy.wav"  # 48 kHz stereo: decoding and resampling it takes a while
    x = np.interp(np.arange(0, len(samples), rate / 48000), np.arange(len(samples)), samples)[: 48000 * 9]
    sf.write(heavy, np.stack([x, x], axis=1), 48000, subtype="FLOAT")
    ledger = tmp_path / "ledger.jsonl"
    with serving("--engine", "tests.fault_engines:FaultEngine", "--ledger", str(ledger),
                 env={"FAULT_ENGINE_DIR": str(tmp_path)}) as app:
        path = httpx.post(app.url + "gradio_api/upload", files={"files": ("heavy.wav", heavy.read_bytes())},
                          timeout=30).json()[0]
        with urllib.request.urlopen(app.url + "config", timeout=10) as r:
            config = json.loads(r.read())
        fn_index = next(d["id"] for d in config["dependencies"] if d.get("api_name") == "synthesize")
        session = uuid.uuid4().hex

        def join(text, prompt=None):
            data = gh.endpoint_data(app.url, "synthesize", text=text, prompt_audio=prompt)
            body = json.dumps({"data": data, "fn_index": fn_index, "session_hash": session,
                               "event_data": None, "trigger_id": None}).encode()
            req = urllib.request.Request(app.url + "gradio_api/queue/join", data=body,
                                         headers={"Content-Type": "application/json"})
            return json.loads(urllib.request.urlopen(req, timeout=10).read())["event_id"]

        first = join("sleep:1.5 the first request")
        time.sleep(0.5)
        second = join("the second request, with a prompt", gh.file_data(path))
        third = join("the third request")
        completed = 0
        with urllib.request.urlopen(app.url + f"gradio_api/queue/data?session_hash={session}", timeout=90) as stream:
            for line in stream:
                if line.startswith(b"data:"):
                    message = json.loads(line[len(b"data:"):])
                    if message.get("msg") == "process_completed":
                        assert message["success"], message
                        completed += 1
                        if completed == 3:
                            break
        # The order they ran in (the ledger is written as each ends; one runs at a time). The
        # order of the completion messages is Gradio's and may differ.
        ran = [json.loads(line)["text_chars"] for line in ledger.read_text().splitlines()]
        assert ran == [len("sleep:1.5 the first request"), len("the second request, with a prompt"),
                       len("the third request")], ran
        assert first and second and third


def test_the_per_client_refusal_counts_in_words():
    """"You already have 1 requests waiting" (helper-68)."""
    from cosyvoice_ui.synthesis import per_client_refusal

    assert per_client_refusal(1, 1).startswith("You already have 1 request waiting or running; each visitor may have 1")
    assert per_client_refusal(2, 2).startswith("You already have 2 requests waiting")


def test_a_cancel_naming_another_sessions_event_is_refused(tmp_path):
    """Gradio dequeues and closes an event by its id alone: a stranger holding another visitor's
    event id ended that visitor's waiting request, whose client was told it completed with no
    audio (helper-69). The cancel is refused (404) and both of the visitor's requests complete."""
    import json
    import urllib.request
    import uuid

    import httpx

    from .gradio_http import endpoint_data

    with _fault_app(tmp_path) as app:
        with urllib.request.urlopen(app.url + "config", timeout=10) as r:
            fn_index = next(d["id"] for d in json.loads(r.read())["dependencies"] if d.get("api_name") == "synthesize")
        visitor = uuid.uuid4().hex

        def join(text):
            body = {"data": endpoint_data(app.url, "synthesize", text=text), "fn_index": fn_index,
                    "session_hash": visitor, "event_data": None, "trigger_id": None}
            return httpx.post(app.url + "gradio_api/queue/join", json=body, timeout=10).json()["event_id"]

        join("sleep:3 the one that runs first")
        waiting = join("sleep:1 the one that waits")
        with httpx.stream("GET", app.url + f"gradio_api/queue/data?session_hash={visitor}", timeout=60) as stream:
            time.sleep(1.0)
            r = httpx.post(app.url + "gradio_api/cancel", timeout=10,
                           json={"session_hash": uuid.uuid4().hex, "fn_index": fn_index, "event_id": waiting})
            assert r.status_code == 404 and "No request with that event id in this session" in r.json()["detail"], r.text
            # An id no one has: the same answer (Gradio's was {"success": true}; helper-73).
            r = httpx.post(app.url + "gradio_api/cancel", timeout=10,
                           json={"session_hash": visitor, "fn_index": fn_index, "event_id": waiting.upper()})
            assert r.status_code == 404, r.text
            completed = []
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    message = json.loads(line[len("data:"):])
                    if message.get("msg") == "process_completed":
                        completed.append(message)
                        if len(completed) == 2:
                            break
        assert all(m["success"] and m["output"]["data"][0] is not None for m in completed), completed
        assert Client(app.url, verbose=False).predict(api_name="/status")["completed"] == 2


def _visitors_join(url: str, text: str) -> tuple[dict, str]:
    """A visitor's ``queue/join`` of /synthesize in a new session: returns its body and event id."""
    import uuid

    import httpx

    from .gradio_http import endpoint_data

    with urllib.request.urlopen(url + "config", timeout=10) as r:
        fn_index = next(d["id"] for d in json.loads(r.read())["dependencies"] if d.get("api_name") == "synthesize")
    body = {"data": endpoint_data(url, "synthesize", text=text), "fn_index": fn_index,
            "session_hash": uuid.uuid4().hex, "event_data": None, "trigger_id": None}
    return body, httpx.post(url + "gradio_api/queue/join", json=body, timeout=10).json()["event_id"]


def test_a_rest_call_cannot_be_cancelled_by_its_event_id_alone(tmp_path):
    """A REST call's session is its event id, so a cancel naming the id as both was taken: anyone
    holding the id ended the call, whose GET then said "complete" with no result (helper-95). And
    5,000 nested brackets in a queue/join body were a 500 and a traceback."""
    import httpx

    from .gradio_http import endpoint_data

    with _fault_app(tmp_path) as app:
        with urllib.request.urlopen(app.url + "config", timeout=10) as r:
            fn_index = next(d["id"] for d in json.loads(r.read())["dependencies"] if d.get("api_name") == "synthesize")
        body = {"data": endpoint_data(app.url, "synthesize", text="sleep:2 the caller's own words")}
        event_id = httpx.post(app.url + "gradio_api/call/synthesize", json=body, timeout=10).json()["event_id"]
        r = httpx.post(app.url + "gradio_api/cancel", timeout=10,
                       json={"session_hash": event_id, "fn_index": fn_index, "event_id": event_id})
        assert r.status_code == 404 and "REST call" in r.json()["detail"], r.text
        result = httpx.get(app.url + f"gradio_api/call/synthesize/{event_id}", timeout=30).text
        assert "event: complete" in result and "speech-" in result, result
        deep = httpx.post(app.url + "gradio_api/queue/join", content=b"[" * 5000 + b"]" * 5000,
                          headers={"Content-Type": "application/json"}, timeout=10)
        assert 400 <= deep.status_code < 500, (deep.status_code, deep.text[:200])
    assert "Traceback" not in app.log_path.read_text()


@pytest.mark.parametrize("route", ["call", "call/v2"])
def test_a_rest_get_cannot_take_another_sessions_result(tmp_path, route):
    """GET /gradio_api/call/synthesize/<event_id> looked the event up by id alone: with another
    visitor's event id (a queue join of the page or gradio_client) it streamed that visitor's
    result, and the visitor waited forever (helper-82). Only a REST call's own event is read, and
    once: Gradio serves the same stream at /call/v2/, which the guard did not know (helper-110)."""
    import httpx

    from .gradio_http import endpoint_data

    with _fault_app(tmp_path) as app:
        own = httpx.post(app.url + "gradio_api/call/synthesize", timeout=10,
                         json={"data": endpoint_data(app.url, "synthesize", text="The caller's own words.")})
        own_id = own.json()["event_id"]
        first = httpx.get(app.url + f"gradio_api/{route}/synthesize/{own_id}", timeout=60).text
        assert "event: complete" in first and "speech-" in first, first
        for again in ("call", "call/v2"):
            second = httpx.get(app.url + f"gradio_api/{again}/synthesize/{own_id}", timeout=10).text
            assert "event: error" in second and "This event has ended" in second, (again, second)
        body, event_id = _visitors_join(app.url, "sleep:2 the visitor's own")
        with httpx.stream("GET", app.url + f"gradio_api/queue/data?session_hash={body['session_hash']}",
                          timeout=60) as stream:
            taken = httpx.get(app.url + f"gradio_api/{route}/synthesize/{event_id}", timeout=30).text
            assert "event: error" in taken and "No call with this event id" in taken and "speech-" not in taken, taken
            completed = None
            for line in stream.iter_lines():
                if line.startswith("data:") and json.loads(line[len("data:"):]).get("msg") == "process_completed":
                    completed = json.loads(line[len("data:"):])
                    break
        assert completed and completed["success"] and completed["output"]["data"][0] is not None, completed


def _first_message(url: str, session_hash: str) -> dict:
    """The first message of ``GET queue/data?session_hash=...``; the stream is closed after it
    (a reader that leaves: Gradio ends that session's requests when its reader disconnects)."""
    import json

    import httpx

    with httpx.stream("GET", url + "gradio_api/queue/data", params={"session_hash": session_hash},
                      timeout=15) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:"):
                return json.loads(line[len("data:"):])
    return {}


def test_a_stranger_cannot_read_or_end_another_sessions_stream(tmp_path):
    """Gradio hands a session's messages to whoever reads ``queue/data`` with its session_hash and
    ends its requests when that reader leaves: a stranger with a visitor's session_hash took the
    result (the visitor waited forever), or opened and closed the stream, which cancelled the
    visitor's request (helper-85). A second reader is refused; the visitor gets its audio."""
    with _fault_app(tmp_path) as app:
        visitor = Client(app.url, verbose=False)
        job = visitor.submit(text="sleep:8 the visitor's own words", api_name="/synthesize")
        time.sleep(1.0)  # joined, and its stream is open
        for _ in range(2):  # each is refused after a 2 s wait for the visitor's stream to end
            message = _first_message(app.url, visitor.session_hash)
            assert message.get("msg") == "unexpected_error", message
            assert "Another connection is reading this session's messages" in message["message"], message
        _, stats = job.result(timeout=30)
        assert stats["audio_s"] > 1.0
        # The session's own next stream (a new request after the last one's stream closed) is taken.
        assert visitor.predict(text="sleep:0.5 and once more", api_name="/synthesize")[1]["audio_s"] > 1.0


def test_a_rest_calls_messages_are_read_only_through_its_own_get(tmp_path):
    """A REST call's session is its event id: a stranger reading ``queue/data`` with that id and
    leaving ended the call, whose GET then got only heartbeats (helper-85)."""
    import httpx

    from .gradio_http import endpoint_data

    with _fault_app(tmp_path) as app:
        body = {"data": endpoint_data(app.url, "synthesize", text="sleep:2 the caller's own words")}
        event_id = httpx.post(app.url + "gradio_api/call/synthesize", json=body, timeout=10).json()["event_id"]
        message = _first_message(app.url, event_id)
        assert message.get("msg") == "unexpected_error" and "REST call's event id" in message["message"], message
        result = httpx.get(app.url + f"gradio_api/call/synthesize/{event_id}", timeout=30).text
        assert "event: complete" in result and "speech-" in result, result


def test_a_stranger_cannot_swap_the_inputs_of_a_running_request(tmp_path):
    """Gradio's ``POST /gradio_api/stream/<event_id>`` (streamed input) hands the posted values to
    the event by id alone: a stranger replaced a running request's inputs, after which it never
    answered, or ended with the stranger's error (helper-87). This page has no streamed input."""
    import uuid

    import httpx

    from .gradio_http import endpoint_data

    with _fault_app(tmp_path) as app:
        body, event_id = _visitors_join(app.url, "sleep:2 the visitor's own")
        with httpx.stream("GET", app.url + f"gradio_api/queue/data?session_hash={body['session_hash']}",
                          timeout=60) as stream:
            time.sleep(0.5)
            swap = {**body, "data": endpoint_data(app.url, "synthesize", text="a stranger's words"),
                    "session_hash": uuid.uuid4().hex}
            for path in (f"gradio_api/stream/{event_id}", f"gradio_api/stream/{event_id}/close"):
                r = httpx.post(app.url + path, json=swap, timeout=10)
                assert r.status_code == 404 and "takes no streamed input" in r.json()["detail"], (path, r.text)
            completed = None
            for line in stream.iter_lines():
                if line.startswith("data:") and json.loads(line[len("data:"):]).get("msg") == "process_completed":
                    completed = json.loads(line[len("data:"):])
                    break
        assert completed and completed["success"] and completed["output"]["data"][1]["audio_s"] > 1.0, completed
        assert "stranger" not in json.dumps(completed["output"]["data"][1]), completed


def test_a_stranger_cannot_claim_a_sessions_stream_between_its_requests_or_name_it_twice(tmp_path):
    """Between a visitor's requests Gradio kept a stranger's stream of that session open, which
    then took the visitor's next result; and naming session_hash twice got a second reader past
    the one-reader rule, which read the first while Gradio read the last (helper-89)."""
    import httpx

    with _fault_app(tmp_path) as app:
        visitor = Client(app.url, verbose=False)
        assert visitor.predict(text="sleep:0.2 the first request", api_name="/synthesize")[1]["audio_s"] > 1.0
        time.sleep(0.5)  # its stream has closed
        message = _first_message(app.url, visitor.session_hash)
        assert "No request of this session is waiting or running" in message.get("message", ""), message
        job = visitor.submit(text="sleep:4 the second request", api_name="/synthesize")
        time.sleep(1.0)
        with httpx.stream("GET", app.url + "gradio_api/queue/data",
                          params=[("session_hash", "someone-else"), ("session_hash", visitor.session_hash)],
                          timeout=15) as stream:
            first = next(line for line in stream.iter_lines() if line.startswith("data:"))
        assert "names session_hash more than once" in first, first
        assert job.result(timeout=30)[1]["audio_s"] > 1.0
