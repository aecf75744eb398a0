"""API values of the wrong type or shape, and clients that leave mid-upload.

Promise: whatever JSON a caller puts in a ``/synthesize`` payload, the answer is an error that
names the parameter and says what would work (not Gradio's "Could not preprocess input component
at index 4" or a pydantic report); a seed that is not a whole number is refused, not rounded; a
URL given as prompt audio is refused without being fetched. A refusal writes at most one line
to the server log and never a traceback, so a client sending junk in a loop cannot flood it;
the same holds for a client that drops its connection in the middle of an upload. After all of
it the server still synthesizes.

Payloads are sent with the raw ``/call`` protocol (``tests/gradio_http.py``), since
``gradio_client`` checks some types itself before sending.
"""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest
from gradio_client import Client, handle_file

from . import gradio_http as gh
from .conftest import PROMPTS_DIR, serving

TEXT = "Hello there."


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    ledger = tmp_path_factory.mktemp("ledger") / "ledger.jsonl"
    temp_dir = tmp_path_factory.mktemp("gradio_tmp")
    with serving("--ledger", str(ledger), env={"GRADIO_TEMP_DIR": str(temp_dir)}) as app:
        app.ledger_path, app.temp_dir = ledger, temp_dir
        yield app


def ledger_records(app) -> list[dict]:
    if not app.ledger_path.exists():
        return []
    return [json.loads(line) for line in app.ledger_path.read_text().splitlines()]


class LogWatch:
    """The server log lines written since the last :meth:`new_lines` call."""

    def __init__(self, app) -> None:
        self.path = app.log_path
        self.offset = self.path.stat().st_size

    def new_lines(self) -> list[str]:
        time.sleep(0.3)  # the log is written by another process
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        return data.decode("utf-8", "replace").splitlines()


BAD_VALUES = [
    # (values, fragments the message must contain)
    (dict(speed="fast"), ["speed", "'fast'", "0.5 to 2.0"]),
    (dict(speed=[1]), ["speed", "0.5 to 2.0"]),
    (dict(speed=3.0), ["speed 3", "out of range"]),
    (dict(speed=float("inf")), ["speed", "finite"]),
    (dict(seed=1.5), ["seed 1.5", "whole number"]),
    (dict(seed="abc"), ["seed", "'abc'", "whole number"]),
    (dict(seed=True), ["seed", "got true", "whole number"]),  # as JSON has it (it read True; helper-59)
    (dict(seed=2**31), ["seed 2147483648", "whole number"]),
    (dict(speaker="../../etc/passwd"), ["speaker", "no pretrained speakers"]),
    (dict(speaker=5), ["speaker must be a string"]),
    (dict(text=123), ["text must be a string", "123"]),
    (dict(text={"a": 1}), ["text must be a string"]),
    (dict(text="<p><br></p>"), ["only markup (<p>, <br>, </p>)"]),  # unescaped for API clients (the page's are)
    (dict(instruction=["happy"]), ["instruction must be a string"]),
    (dict(prompt_text=7), ["prompt_text must be a string"]),
    (dict(prompt_audio="/etc/passwd"), ["prompt_audio must be a file", "handle_file"]),
    (dict(prompt_audio=5), ["prompt_audio must be a file", "handle_file"]),
    (dict(prompt_audio={"foo": 1}), ["prompt_audio must be a file"]),
    (dict(prompt_audio=gh.file_data("/etc/passwd")), ["prompt_audio names a file that was not uploaded"]),
    # JSON's spelling, and no "upload the file first" for a number sent as a file (helper-66).
    (dict(prompt_audio=True), ["prompt_audio must be a file object, not true;"]),
    (dict(speed=gh.file_data("/etc/passwd")), ["speed takes a value of its own (a number or text), not a file"]),
    (dict(prompt_audio=gh.file_data("https://example.invalid/voice.wav")), ["prompt_audio is a URL",
                                                                            "does not download"]),
]


@pytest.mark.parametrize("values,fragments", BAD_VALUES, ids=[
    f"{k}={str(v)[:30]}" for values, _ in BAD_VALUES for k, v in values.items()])
def test_wrong_value_is_named_and_logged_in_one_line(app, values, fragments):
    log = LogWatch(app)
    event, data = gh.call(app.url, "synthesize", **{"text": TEXT, **values})
    assert event == "error", data
    for fragment in fragments:
        assert fragment in data, f"{fragment!r} missing from {data}"
    assert "Could not preprocess" not in data and "validation error" not in data
    lines = log.new_lines()
    assert len(lines) <= 1 and not any("Traceback" in line for line in lines), "\n".join(lines[:40])


@pytest.mark.parametrize("values", [[TEXT], [TEXT, None, "", "", 1.0, -1, None, 5, 6, 7]], ids=["1", "10"])
def test_wrong_number_of_values_is_named(app, values):
    """Too few values, or too many (Gradio dropped the extra ones silently and synthesized). The
    ledger counts the text's characters (it had 0)."""
    log = LogWatch(app)
    before = len(ledger_records(app))
    event_id = gh.start_call(app.url, "synthesize", values)
    with gh.open_result_stream(app.url, "synthesize", event_id, 30) as r:
        event, data = gh.parse_sse(r.read().decode())
    assert event == "error" and "takes 7 values" in data and f"got {len(values)}" in data, data
    assert [(r["outcome"], r["text_chars"]) for r in ledger_records(app)[before:]] == [("refused:input", len(TEXT))]
    lines = log.new_lines()
    assert len(lines) <= 1 and not any("Traceback" in line for line in lines), "\n".join(lines[:40])


def test_gradio_client_url_prompt_is_refused_not_fetched(app):
    """``handle_file(url)`` makes the server fetch the URL in plain Gradio (with no size limit,
    around ``--max-upload-mb``); here the server refuses it and says what to do instead."""
    client = Client(app.url, verbose=False)
    before = len(ledger_records(app))
    with pytest.raises(Exception, match="does not download files"):
        client.predict(text=TEXT, prompt_audio=handle_file(app.url + "healthz"), api_name="/synthesize")
    # Like any other refused request, it leaves a ledger record (and so counts in /metrics).
    new = ledger_records(app)[before:]
    assert [r["outcome"] for r in new] == ["refused:input"], new
    assert "does not download files" in new[0]["error"]
    assert new[0]["device"] == "cpu", new  # where it would have run ("" before: ungroupable by device)


def test_a_refused_text_is_recorded_with_the_length_the_limit_counted(app):
    """"e" with a combining accent 2001 times is refused as 2001 characters (NFKC joins each pair);
    the ledger said 4002, the length as sent (forty-fourth newcomer session)."""
    client = Client(app.url, verbose=False)
    before = len(ledger_records(app))
    with pytest.raises(Exception, match="2001 characters long; the limit is 2000"):
        client.predict(text="e\u0301" * 2001, api_name="/synthesize")
    new = ledger_records(app)[before:]
    assert [(r["outcome"], r["text_chars"]) for r in new] == [("refused:input", 2001)], new


@pytest.mark.parametrize("path,twin", [
    ("gradio_api/run/synthesize", "/synthesize"), ("gradio_api/api/synthesize/", "/synthesize"),
    ("gradio_api/run/restart", "/restart"), ("gradio_api/run/synthesize_page", "/synthesize"),
    # The page's private events named /synthesize whatever they were, and /call ran them
    # (call/restart_ui restarted the worker; twenty-first newcomer session).
    ("gradio_api/run/restart_ui", "/restart"), ("gradio_api/call/restart_ui", "/restart"),
    ("gradio_api/call/free_cache_ui", "/free_cache"), ("gradio_api/call/synthesize_page", "/synthesize"),
    ("gradio_api/call/refresh_monitor", "/status"),
])
def test_direct_run_route_is_refused_with_what_works(app, path, twin):
    """Gradio's one-shot ``/run`` route skipped the queue and answered a synthesis with its first
    update, ``[null, null]``, while the worker synthesized the audio nobody received and the
    ledger recorded it as ``ok``. It is refused for the queued endpoints before anything runs,
    naming what works; the page's own unqueued events (the memory monitor) still use it."""
    completed = json.loads(gh.http_get(app.url + "healthz")[1])["completed"]
    before = len(ledger_records(app))
    r = httpx.post(app.url + path, json={"data": [TEXT, None, "", "", 1.0, 0, ""]}, timeout=30)
    assert r.status_code == 404, r.text
    error = r.json()["error"]
    assert "gradio_client" in error and "POST /gradio_api/call/" in error and path in error, error
    assert f'api_name="{twin}")' in error, error  # a page's private event: the API endpoint that does the same
    time.sleep(1.0)
    status = json.loads(gh.http_get(app.url + "healthz")[1])
    assert status["completed"] == completed and status["restarts"] == 0, status
    assert len(ledger_records(app)) == before
    monitor = httpx.post(app.url + "gradio_api/run/refresh_monitor", json={"data": []}, timeout=30)
    assert monitor.status_code == 200 and "Worker" in monitor.json()["data"][0], monitor.text


def test_client_leaving_mid_upload_is_one_log_line(app):
    log = LogWatch(app)
    head = (b"--XX\r\nContent-Disposition: form-data; name=\"files\"; filename=\"voice.wav\"\r\n"
            b"Content-Type: audio/wav\r\n\r\n" + b"\0" * 100_000)
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", app.port)) as s:
            s.sendall(b"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      b"Content-Type: multipart/form-data; boundary=XX\r\nContent-Length: 5000000\r\n\r\n" + head)
            time.sleep(0.3)
    lines = log.new_lines()
    assert not any("Traceback" in line for line in lines), "\n".join(lines[:40])
    assert len(lines) <= 3, "\n".join(lines)


def test_server_still_synthesizes_with_a_prompt_after_all_that(app):
    client = Client(app.url, verbose=False)
    _, stats = client.predict(text=TEXT, prompt_audio=handle_file(str(PROMPTS_DIR / "xtts_male.wav")),
                              seed=7, speed=1.25, api_name="/synthesize")
    assert stats["audio_s"] > 0.3 and stats["prompt_s"] > 3.0


def test_reading_a_result_stream_gradio_no_longer_knows_is_one_log_line(app):
    """Gradio answers a result stream for an event id it does not know (a result read twice, or
    after it expired) with an error event, then raises 404 after the response started: that
    logged a 90-line traceback; the client was already told, so it is one line."""
    log = LogWatch(app)
    with httpx.Client(timeout=20) as http:
        r = http.get(app.url + "gradio_api/call/synthesize/0123456789abcdef0123456789abcdef")
    assert "event: error" in r.text, r.text
    lines = log.new_lines()
    assert len(lines) <= 1 and not any("Traceback" in line for line in lines), "\n".join(lines[:40])


def test_wrong_keyword_on_the_v2_route_is_named(app):
    """Gradio's keyword-argument route (its "Use via API" cURL example) answered a parameter name
    it does not know with a bare 500; the client gets Gradio's message naming it."""
    log = LogWatch(app)
    r = httpx.post(app.url + "gradio_api/call/v2/synthesize", json={"txt": "hi"}, timeout=30)
    assert r.status_code == 422 and "Parameter `txt` is not a valid key-word argument" in r.json()["error"], r.text
    lines = log.new_lines()
    assert len(lines) <= 1 and not any("Traceback" in line for line in lines), "\n".join(lines[:40])


# Requests Gradio itself fails on with an exception (a ~100-line traceback from uvicorn each).
JUNK_REQUESTS = [
    ("POST", "gradio_api/queue/join", {"json": {"data": [], "fn_index": 999, "session_hash": "x"}}),
    ("POST", "gradio_api/run/predict", {"json": {"data": ["x"]}}),
    ("POST", "gradio_api/call/nonexistent", {"json": {"data": []}}),
    ("GET", "gradio_api/call/synthesize/not-an-event-id", {}),
    ("GET", "gradio_api/queue/data?session_hash=unknown", {}),
    ("POST", "gradio_api/component_server", {"json": {"component_id": 99999, "fn_name": "x", "data": 1,
                                                      "session_hash": "s"}}),
]


# Requests Gradio refuses with a line each (helper-56: 300 requests, 300 lines).
REFUSED_REQUESTS = [
    ("POST", "gradio_api/call/status", {"json": {"data": [1, 2, 3]}}),
    ("POST", "gradio_api/call/synthesise", {"json": {"data": ["x"]}}),
    ("GET", "gradio_api/queue/data?session_hash=nope", {}),
]


def _garbage(app) -> bytes:
    with socket.create_connection(("127.0.0.1", app.port), timeout=10) as s:
        s.sendall(b"GARBAGE\r\n\r\n")
        return s.recv(1000)


def test_repeated_junk_requests_are_counted_not_logged_each_time(app):
    """The first of each kind of error may log its traceback (a real bug must stay visible) and
    each kind of refusal a line; repeating the same junk within the minute adds no line (it is
    counted, and the count written a minute on; helper-56 got a line per request), and the
    server keeps answering."""
    junk = JUNK_REQUESTS + REFUSED_REQUESTS
    with httpx.Client(timeout=20) as http:
        for method, path, kwargs in junk:  # first round: a line (or a traceback) each
            http.request(method, app.url + path, **kwargs)
        _garbage(app)
        time.sleep(0.5)  # the server logs after it has answered
        log = LogWatch(app)
        for _ in range(10):
            for method, path, kwargs in junk:
                r = http.request(method, app.url + path, **kwargs)
                assert r.status_code < 600
            assert _garbage(app).startswith(b"HTTP/1.1 400")
        lines = log.new_lines()
    # Kinds seen once before this minute began may write their count now: one line each at most.
    assert len(lines) <= len(junk) + 1, "\n".join(lines[:60])
    assert not any("Traceback" in line for line in lines), "\n".join(lines[:60])
    assert gh.http_get(app.url + "healthz")[0] == 200


def test_a_rest_result_is_read_once_and_a_second_reader_is_told_so(app):
    """A second GET of a two-step REST call's result answered 200 and then nothing, forever, and
    two GETs at once split the messages so that one waited forever (forty-eighth newcomer
    session). The second reader now gets an error event at once; the first gets the result."""
    import threading

    data = gh.endpoint_data(app.url, "synthesize", text="Hello there. " * 8)
    event_id = gh.start_call(app.url, "synthesize", data)
    with gh.open_result_stream(app.url, "synthesize", event_id, 60) as r:
        assert gh.parse_sse(r.read().decode())[0] == "complete"
    t0 = time.monotonic()
    with gh.open_result_stream(app.url, "synthesize", event_id, 10) as r:
        event, message = gh.parse_sse(r.read().decode())
    assert event == "error" and "its result was sent to an earlier GET" in message, message
    assert time.monotonic() - t0 < 5

    event_id = gh.start_call(app.url, "synthesize", data)
    first = gh.open_result_stream(app.url, "synthesize", event_id, 60)
    try:
        time.sleep(0.3)
        answers = []
        second = threading.Thread(target=lambda: answers.append(
            gh.parse_sse(gh.open_result_stream(app.url, "synthesize", event_id, 10).read().decode())))
        second.start()
        second.join(15)
        assert answers and answers[0][0] == "error" and "Another connection is reading" in answers[0][1], answers
        assert gh.parse_sse(first.read().decode())[0] == "complete"
    finally:
        first.close()
    # An unknown event id gets Gradio's error event, in words.
    with gh.open_result_stream(app.url, "synthesize", "0123abcd", 10) as r:
        event, data = gh.parse_sse(r.read().decode())
    # In words: Gradio's bare "404: Not Found" said nothing of why or what to do (helper-56).
    assert event == "error" and "No call with this event id is waiting here" in data, data
    assert "Send the call again" in data


@pytest.mark.parametrize("path", ["gradio_api/call/synthesise", "gradio_api/call/v2/nonexistent"])
def test_a_misspelled_endpoint_is_named_not_a_bare_500(app, path):
    """A call to an endpoint that does not exist answered a bare 500 "Internal Server Error" with a
    traceback in the log (forty-ninth newcomer session); it is a 404 naming the endpoints."""
    r = httpx.post(app.url + path, json={"data": ["Hello."]}, timeout=30)
    assert r.status_code == 404, (r.status_code, r.text)
    assert "No API endpoint is named" in r.text and "/synthesize" in r.text, r.text


@pytest.mark.parametrize("path,body", [
    ("gradio_api/queue/join", {"data": [], "fn_index": 999, "session_hash": "x"}),
    ("gradio_api/queue/join", {"data": [], "fn_index": -1, "session_hash": "x"}),
    ("gradio_api/run/status", {"data": [], "fn_index": 99}),
])
def test_an_unknown_fn_index_is_named_not_a_bare_500(app, path, body):
    """Gradio's dict lookup of an fn_index no event has answered a bare 500 (helper-51)."""
    r = httpx.post(app.url + path, json=body, timeout=30)
    assert r.status_code == 404, (r.status_code, r.text)
    assert f"No event has fn_index {body['fn_index']}" in r.text and "/synthesize" in r.text, r.text


def test_a_join_with_an_empty_session_hash_is_told_so_and_the_server_goes_on(app):
    """An empty session_hash got "404 No event has fn_index '<random id>'" and a traceback in the
    log (Gradio filed the event under its own id; helper-76): a 400 that says what the field needs."""
    log = LogWatch(app)
    fn_index = next(d["id"] for d in httpx.get(app.url + "config", timeout=30).json()["dependencies"]
                    if d.get("api_name") == "synthesize")
    body = {"data": gh.endpoint_data(app.url, "synthesize", text="Hi."), "fn_index": fn_index, "session_hash": ""}
    r = httpx.post(app.url + "gradio_api/queue/join", json=body, timeout=30)
    assert r.status_code == 400 and "The session_hash is empty" in r.text, (r.status_code, r.text)
    time.sleep(1.0)
    assert not any("Traceback" in line for line in log.new_lines())
    assert Client(app.url, verbose=False).predict(api_name="/status")["state"] in ("ready", "busy")


def test_a_join_with_a_huge_session_hash_or_a_browser_only_event_is_refused(app):
    """Unread joins with 1 MB session hashes grew the web process by 1.1 GB for good (Gradio keys
    its lists of unanswered events by the hash); a join of a browser-only event logged a 14-line
    traceback each time (helper-82)."""
    log = LogWatch(app)
    config = httpx.get(app.url + "config", timeout=30).json()
    fn_index = next(d["id"] for d in config["dependencies"] if d.get("api_name") == "synthesize")
    body = {"data": gh.endpoint_data(app.url, "synthesize", text="Hi."), "fn_index": fn_index,
            "session_hash": "x" * 200_000}
    r = httpx.post(app.url + "gradio_api/queue/join", json=body, timeout=30)
    assert r.status_code == 400 and "longer than 128 characters" in r.text, (r.status_code, r.text[:300])
    browser_only = [d["id"] for d in config["dependencies"] if d.get("backend_fn") is False]
    assert browser_only, "the page has a browser-only event (Restart clears the free-cache report)"
    # Gradio reads "5" and 5.0 as 5: as strings they slipped past this check (helper-82).
    for index in (browser_only[0], str(browser_only[0]), float(browser_only[0])):
        r = httpx.post(app.url + "gradio_api/queue/join", timeout=30,
                       json={"data": [], "fn_index": index, "session_hash": "s1"})
        assert r.status_code == 404 and "runs in the browser only" in r.text, (r.status_code, r.text)
    time.sleep(1.0)
    assert not any("Traceback" in line for line in log.new_lines())


def test_a_component_server_call_for_no_function_is_a_404_with_words(app):
    """An unknown component_id was a bare 500 and a 100-line KeyError traceback (helper-85)."""
    log = LogWatch(app)
    config = httpx.get(app.url + "config", timeout=30).json()
    real_id = config["components"][0]["id"]
    for component_id, fn_name in ((9999, "ls"), (-1, "ls"), (real_id, "ls"), (str(real_id), "__init__")):
        r = httpx.post(app.url + "gradio_api/component_server", timeout=30,
                       json={"session_hash": "s1", "component_id": component_id, "fn_name": fn_name, "data": []})
        assert r.status_code == 404 and "has no server function" in r.json()["detail"], (component_id, r.text)
    time.sleep(1.0)
    assert not any("Traceback" in line for line in log.new_lines())
    assert gh.http_get(app.url + "healthz")[0] == 200


def test_unreadable_sessions_are_forgotten():
    """Gradio's lists of unanswered events of sessions whose messages its LRU dropped were never
    emptied: they grew with every session that joined and never read (helper-82)."""
    from types import SimpleNamespace

    from gradio.utils import LRUCache

    from cosyvoice_ui.server import _forget_unreadable_sessions

    messages = LRUCache(2)
    pending = {}
    for session in ("a", "b", "c"):  # "a" falls out of the LRU
        messages[session] = []
        pending[session] = {session + "-event"}
    _forget_unreadable_sessions(SimpleNamespace(_queue=SimpleNamespace(
        pending_event_ids_session=pending, pending_messages_per_session=messages)))
    assert sorted(pending) == ["b", "c"]


def test_a_page_event_without_an_api_twin_is_not_offered_as_the_way(app):
    """"POST /gradio_api/call/lambda is not served ... use POST /gradio_api/call/lambda" (helper-51)."""
    private = [name for name in _private_event_names(app) if name not in ("synthesize_page", "restart_ui",
                                                                          "free_cache_ui", "refresh_monitor")]
    assert private, "the page has events without an API twin (the memory timer's)"
    r = httpx.post(app.url + f"gradio_api/call/{private[0]}", json={"data": []}, timeout=30)
    assert r.status_code == 404 and "one of the page's own events, not an API endpoint" in r.text, r.text
    assert f"/gradio_api/call/{private[0]} with" not in r.text and "/synthesize" in r.text, r.text


def test_a_page_event_through_call_is_not_called_a_direct_call(app):
    """/call/synthesize_page was "a direct call that skips the queue, or one of the page's own
    events": /call/ goes through the queue (helper-68)."""
    r = httpx.post(app.url + "gradio_api/call/synthesize_page", json={"data": []}, timeout=30)
    assert r.status_code == 404 and "is not served: it is one of the page's own events. Use" in r.text, r.text
    assert "skips the queue" not in r.text and "/gradio_api/call/synthesize with" in r.text, r.text


def _private_event_names(app) -> list[str]:
    config = httpx.get(app.url + "config", timeout=30).json()
    return [d["api_name"] for d in config["dependencies"] if d.get("api_name") and d.get("api_visibility") == "private"]


def test_the_api_pages_prompt_audio_example_is_a_local_file_not_a_url(app):
    """The "Use via API" example was Gradio's sample on GitHub, a URL this server refuses (helper-51)."""
    info = httpx.get(app.url + "gradio_api/info", timeout=30).json()
    params = {p["parameter_name"]: p for p in info["named_endpoints"]["/synthesize"]["parameters"]}
    example = params["prompt_audio"]["example_input"]
    assert example["path"] == "voice.wav" and "url" not in example, example


def test_a_path_with_a_newline_or_nul_cannot_forge_log_lines(app):
    """A file= path with "%0a" and a made-up log line after it wrote that line into the log as if
    the server had, and "%00" got a bare 500 with a traceback and put a NUL byte in the log
    (helper-60). The NUL is a 400; whatever is logged of a path is escaped."""
    log = LogWatch(app)
    forged = "%0a2000-01-01%2000:00:00,000%20CRITICAL%20cosyvoice_ui:%20FORGED%20line"
    with httpx.Client(timeout=10) as http:
        nul = http.get(app.url + f"gradio_api/file=/tmp/a{forged}%00")
        assert nul.status_code == 400 and "NUL" in nul.json()["detail"], nul.text
        for _ in range(3):  # the first of a kind may log a traceback; the repeats log the path
            http.get(app.url + f"gradio_api/file=/tmp/a{forged}")
            http.get(app.url + f"gradio_api/call/synthesize/x{forged}")
            http.post(app.url + f"gradio_api/call/synthesise{forged}", json={"data": []})
    lines = log.new_lines()
    assert not any(line.startswith("2000-01-01") for line in lines), "\n".join(lines)
    assert "\x00" not in app.log_path.read_text(errors="replace")
    assert not any("Traceback" in line for line in lines), "\n".join(lines)
    assert gh.http_get(app.url + "healthz")[0] == 200


def test_a_broken_multipart_upload_is_a_400_and_one_log_line(app):
    """A 17-byte body with a broken part header got "413 Headers exceeded maximum allowed size",
    and python_multipart logged a line for each (50 uploads, 50 lines; helper-60)."""
    log = LogWatch(app)
    with httpx.Client(timeout=10) as http:
        for _ in range(20):
            r = http.post(app.url + "gradio_api/upload", content=b"--x\r\nnonsense\r\n\r\n",
                          headers={"Content-Type": "multipart/form-data; boundary=x"})
            assert r.status_code == 400 and "not a well-formed multipart form" in r.text, (r.status_code, r.text)
        # A 5,000-character file name was told "Headers exceeded maximum allowed size." (helper-74).
        body, headers = _multipart(('name="files"; filename="' + "a" * 5000 + '.wav"', b"RIFF"))
        r = http.post(app.url + "gradio_api/upload", content=body, headers=headers)
        assert r.status_code == 413 and "Rename the file to a shorter name" in r.text, (r.status_code, r.text)
    lines = [line for line in log.new_lines() if "python_multipart" in line]
    assert len(lines) <= 1, "\n".join(lines)


def _multipart(*parts: tuple[str, bytes]) -> tuple[bytes, dict]:
    body = b"".join(b"--x\r\nContent-Disposition: form-data; " + head.encode() + b"\r\n\r\n" + data + b"\r\n"
                    for head, data in parts) + b"--x--\r\n"
    return body, {"Content-Type": "multipart/form-data; boundary=x"}


def test_an_upload_part_that_is_not_a_file_is_a_400_and_unused_parts_leave_no_file(app):
    """A part named 'files' with no filename got a bare 500 and a traceback (Gradio's TypeError
    "File is not an instance of GradioUploadFile"); the files of parts under other names stayed
    in the temporary folder until the sweep, as did the file of a part named "../.." (helper-69)."""
    wav = (PROMPTS_DIR / "xtts_female.wav").read_bytes()
    log = LogWatch(app)
    with httpx.Client(timeout=10) as http:
        body, headers = _multipart(('name="files"', b"just a field"))
        r = http.post(app.url + "gradio_api/upload", content=body, headers=headers)
        assert r.status_code == 400 and "needs a filename" in r.text and "files=@prompt.wav" in r.text, (r.status_code, r.text)
        body, headers = _multipart(('name="other"; filename="a.wav"', wav), ('name="files"; filename="b.wav"', wav),
                                   ('name="files"', b"and a field"))
        r = http.post(app.url + "gradio_api/upload", content=body, headers=headers)
        assert r.status_code == 400, (r.status_code, r.text)
        # A file under another name was answered 200 [] (helper-73).
        body, headers = _multipart(('name="file"; filename="a.wav"', wav))
        r = http.post(app.url + "gradio_api/upload", content=body, headers=headers)
        assert r.status_code == 400 and "No file in the field 'files'" in r.text and "'file'" in r.text, r.text
        body, headers = _multipart(('name="files"; filename="../.."', wav))
        r = http.post(app.url + "gradio_api/upload", content=body, headers=headers)
        assert r.status_code == 400 and "is not a file name" in r.text, (r.status_code, r.text)
        # A file under another name beside the real one: an upload request carries one file and
        # nothing else (helper-102), so it is cut off at the second part, and neither is kept.
        body, headers = _multipart(('name="other"; filename="a.wav"', wav), ('name="files"; filename="b.wav"', wav))
        r = http.post(app.url + "gradio_api/upload", content=body, headers=headers)
        assert r.status_code == 400 and "carries one file and nothing else" in r.text, (r.status_code, r.text)
        body, headers = _multipart(('name="files"; filename="b.wav"', wav))
        r = http.post(app.url + "gradio_api/upload", content=body, headers=headers)
        assert r.status_code == 200 and len(r.json()) == 1 and r.json()[0].endswith("b.wav"), r.text
    time.sleep(1.0)  # Gradio moves the used file into its hashed folder in a background task
    left = [p.name for p in app.temp_dir.iterdir() if p.is_file() and p.name.startswith("tmp")]
    assert not left, left
    assert not [line for line in log.new_lines() if "Traceback" in line or "TypeError" in line]
