"""Clients that go away in the middle of a request.

Promise: a client that disconnects (closes its result stream while its request runs or waits)
does not hurt the server: other clients' requests complete, the worker is the same process, and
``/healthz`` stays 200. What happens to the abandoned request is read from the ledger
(``--ledger PATH``):

- a request that is already **running** when its client leaves stops before its next segment
  (ledger outcome ``abandoned``); the segment that runs is not cut short. The next client waits
  for that segment only, not for the rest of the text.
- a request still **waiting in the supervisor's queue** when its client leaves is withdrawn and
  never synthesized (ledger outcome ``cancelled``).

Requests are sent with the raw ``/call`` protocol (see ``tests/gradio_http.py``) because a
disconnect means closing the HTTP stream, which ``gradio_client`` does not expose.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from gradio_client import Client, handle_file

from . import gradio_http as gh
from .conftest import PROMPTS_DIR, serve_with_ledger, wait_for

SENTENCE = "The quick brown fox jumps over the lazy dog near the quiet river bank."
# Distinct lengths identify each request in the ledger (text_chars).
RUNNING_TEXT = " ".join([SENTENCE] * 6)
LONG_TEXT = " ".join([SENTENCE] * 16)
QUEUED_TEXT = " ".join([SENTENCE] * 4)
OTHER_TEXT = "Another client is still served."


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    yield from serve_with_ledger(tmp_path_factory)


@pytest.fixture(scope="module")
def client(app):
    c = Client(app.url, verbose=False)
    c.predict(text="Warm up.", api_name="/synthesize")
    return c


def _ledger(app) -> list[dict]:
    if not app.ledger_path.exists():
        return []
    return [json.loads(line) for line in app.ledger_path.read_text().splitlines() if line.strip()]


def _records_for(app, text: str) -> list[dict]:
    return [r for r in _ledger(app) if r["text_chars"] == len(text)]


def _start_and_listen(app, text: str):
    event_id = gh.start_call(app.url, "synthesize", gh.endpoint_data(app.url, "synthesize", text=text))
    return gh.open_result_stream(app.url, "synthesize", event_id, timeout_s=120)


def _wait_idle(client, timeout_s: float = 90.0) -> dict:
    def idle():
        s = client.predict(api_name="/status")
        return s if s["in_flight"] is None and s["queue_depth"] == 0 else None
    return wait_for(idle, timeout_s, "the worker to be idle")


def test_running_request_whose_client_left_stops_and_others_are_served(app, client):
    """The client of a long running request closes its stream; the request stops after its
    running segment (ledger ``abandoned``, "stopped after k of n segments"), another client's
    request (with a real prompt) gets audio, the worker pid is unchanged and /healthz is 200."""
    before = _wait_idle(client)
    stream = _start_and_listen(app, LONG_TEXT)
    wait_for(lambda: client.predict(api_name="/status")["in_flight"], 30, "the long request to start")
    stream.close()  # the client goes away mid-request
    t0 = time.monotonic()
    _, stats = client.predict(text=OTHER_TEXT, prompt_audio=handle_file(str(PROMPTS_DIR / "f5_main.flac")),
                              api_name="/synthesize")
    waited_s = time.monotonic() - t0
    assert stats["audio_s"] > 1.0 and stats["prompt_s"] > 3.0
    after = _wait_idle(client)
    assert after["pid"] == before["pid"] == stats["worker_pid"] and after["restarts"] == before["restarts"]
    assert gh.http_get(app.url + "healthz")[0] == 200
    records = wait_for(lambda: _records_for(app, LONG_TEXT), 30, "the abandoned request's ledger record")
    assert [r["outcome"] for r in records] == ["abandoned"], records
    done, total = map(int, re.search(r"stopped after (\d+) of (\d+) segments", records[0]["error"]).groups())
    assert total == records[0]["segments"] >= 6 and done <= total - 3, records[0]
    print(f"abandoned request stopped after {done} of {total} segments; the other client waited {waited_s:.1f} s")


def test_queued_request_whose_client_left_is_not_synthesized(app, client):
    """One client's long request runs; a second client's request waits in the queue and that
    client disconnects. The abandoned queued request must not be synthesized (no ``ok`` ledger
    record for it); the running one and a third client's request still complete."""
    _wait_idle(client)
    running = _start_and_listen(app, LONG_TEXT)
    wait_for(lambda: client.predict(api_name="/status")["in_flight"], 30, "the long request to start")
    queued = _start_and_listen(app, QUEUED_TEXT)
    wait_for(lambda: client.predict(api_name="/status")["queue_depth"] >= 1, 30, "the second request to queue")
    queued.close()  # this client goes away while waiting
    wait_for(lambda: _records_for(app, QUEUED_TEXT), 30, "the withdrawn request's ledger record")
    # The queue depth drops with the withdrawal, not when the running request ends (it counted the
    # withdrawn request for as long as the running one took: sixteenth newcomer session).
    status = client.predict(api_name="/status")
    assert status["in_flight"] is not None and status["queue_depth"] == 0, status
    _, stats = client.predict(text=OTHER_TEXT, api_name="/synthesize")
    assert stats["audio_s"] > 1.0
    event, _data = gh.parse_sse(running.read().decode())
    running.close()
    assert event == "complete"
    _wait_idle(client)
    records = _records_for(app, QUEUED_TEXT)
    assert [r["outcome"] for r in records] == ["cancelled"], f"the abandoned queued request: {records}"
    # The record says what the request would have cost: its device and segments.
    assert records[0]["device"] == "cpu" and records[0]["segments"] >= 1, records[0]


CANCELLED_TEXT = "This request is cancelled while its prompt audio is still being decoded."


def test_a_request_cancelled_while_its_prompt_decodes_never_reaches_the_worker(app, client, tmp_path):
    """A cancel that came while the prompt was decoding was lost: Gradio let the handler finish its
    step, the request was queued and ran a segment for no one (ledger ``abandoned``; helper-146,
    3 runs of 3). It is now withdrawn before the worker's queue: ledger ``cancelled``."""
    import psutil

    from .test_shutdown import _slow_to_decode

    slow = _slow_to_decode(tmp_path / "two_tracks.nut")
    _wait_idle(client)
    before = client.predict(api_name="/status")["pid"]
    job = Client(app.url, verbose=False).submit(text=CANCELLED_TEXT, prompt_audio=handle_file(slow),
                                                api_name="/synthesize")

    def decoding() -> bool:
        children = psutil.Process(app.proc.pid).children(recursive=True)
        return any("pyav_process" in " ".join(child.cmdline()) for child in children if child.is_running())

    wait_for(decoding, 60, "the prompt's decode in its child process")
    job.cancel()
    records = wait_for(lambda: _records_for(app, CANCELLED_TEXT), 60, "the cancelled request's ledger record")
    assert [r["outcome"] for r in records] == ["cancelled"], records
    assert "was not synthesized" in records[0]["error"], records[0]
    # The app goes on serving, on the same worker.
    _, stats = client.predict(text=OTHER_TEXT, api_name="/synthesize")
    assert stats["audio_s"] > 1.0 and stats["worker_pid"] == before
    assert [r["outcome"] for r in _records_for(app, CANCELLED_TEXT)] == ["cancelled"]
