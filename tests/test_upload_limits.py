"""``--max-upload-mb`` bounds what one uploaded file may be.

Promise (README, flags): ``--max-upload-mb`` is the largest upload Gradio accepts. With
``--max-upload-mb 1`` a 2 MB voice prompt (real speech, valid otherwise) is refused by the server
itself (HTTP 413 from ``/gradio_api/upload``, not only by a polite client), leaves nothing in
Gradio's upload folder, and the server keeps synthesizing requests with a smaller prompt.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import socket
import time
import uuid

import httpx
import numpy as np
import pytest
import soundfile as sf
from gradio_client import Client, handle_file

from . import gradio_http as gh
from . import make_hostile_corpus as corpus
from .conftest import PROMPTS_DIR, serving, small_disk_wrap

LIMIT_BYTES = 2**20  # --max-upload-mb 1: MiB, as Gradio counts


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    temp_dir = tmp_path_factory.mktemp("gradio_tmp")
    with serving("--max-upload-mb", "1", env={"GRADIO_TEMP_DIR": str(temp_dir)}) as app:
        app.temp_dir = temp_dir
        yield app


@pytest.fixture(scope="module")
def big_prompt(tmp_path_factory):
    """5.3 s of the real English prompt as 32-bit float at 96 kHz: about 2 MB, a valid prompt."""
    samples, sr = corpus.read(PROMPTS_DIR / corpus.BASE_PROMPT)
    path = tmp_path_factory.mktemp("big") / "studio_take.wav"
    sf.write(path, corpus.resample_to(samples.astype(np.float32), sr, 96000), 96000, subtype="FLOAT")
    assert 1.9e6 < path.stat().st_size < 2.5e6
    return path


def _big_files(app) -> dict[str, int]:
    return {p: n for p, n in gh.files_under(app.temp_dir).items() if n >= LIMIT_BYTES // 2}


def test_page_config_announces_the_limit(app):
    """The page learns the limit from /config, so the browser refuses before sending."""
    status, body = gh.http_get(app.url + "config")
    assert status == 200 and json.loads(body)["max_file_size"] == LIMIT_BYTES


def test_server_refuses_a_2mb_upload_with_413(app, big_prompt):
    """A raw multipart POST of the 2 MB file to /gradio_api/upload (what a client that ignores
    /config does) gets 413 with the limit in the message; no partial copy is kept."""
    with open(big_prompt, "rb") as f:
        r = httpx.post(app.url + f"gradio_api/upload?upload_id={uuid.uuid4().hex}",
                       files=[("files", (big_prompt.name, f, "audio/wav"))], timeout=30)
    assert r.status_code == 413, (r.status_code, r.text[:300])
    assert "maximum allowed size" in r.text and str(LIMIT_BYTES) in r.text, r.text
    # "Send one file per request" told a single file to do what it did (helper-106).
    assert "upload a shorter clip" in r.text and "Send one file" not in r.text, r.text
    assert not _big_files(app), _big_files(app)


def test_several_files_in_one_request_are_bounded_in_all(app):
    """Gradio's limit is per file: one POST with ten files of 20 MiB was accepted and kept for
    --temp-file-ttl. Three real prompts of 600 kB each (each under the 1 MiB limit) in one request
    are refused with 413, and none is kept."""
    samples, sr = corpus.read(PROMPTS_DIR / corpus.BASE_PROMPT)
    one = io.BytesIO()
    sf.write(one, np.concatenate([samples, samples])[: int(sr * 6)].astype(np.float32), sr, format="WAV", subtype="FLOAT")
    payload = one.getvalue()
    assert LIMIT_BYTES // 2 < len(payload) < LIMIT_BYTES, len(payload)
    files = [("files", (f"take{i}.wav", payload, "audio/wav")) for i in range(3)]
    r = httpx.post(app.url + f"gradio_api/upload?upload_id={uuid.uuid4().hex}", files=files, timeout=30)
    assert r.status_code == 413 and "for one request in all" in r.text, (r.status_code, r.text[:300])
    assert not _big_files(app), _big_files(app)


def _multipart(boundary: bytes, contents: list[bytes]) -> bytes:
    parts = [b"--" + boundary + b'\r\nContent-Disposition: form-data; name="files"; filename="p%d.wav"\r\n'
             b"Content-Type: audio/wav\r\n\r\n" % i + c + b"\r\n" for i, c in enumerate(contents)]
    return b"".join(parts) + b"--" + boundary + b"--\r\n"


def _post_upload(app, content_types: list[str], body: bytes) -> httpx.Response:
    """A raw upload with the given Content-Type header(s), in that order."""
    headers = [("content-type", t) for t in content_types]
    return httpx.post(app.url + f"gradio_api/upload?upload_id={uuid.uuid4().hex}", content=body,
                      headers=headers, timeout=30)


def test_an_upload_of_many_small_files_is_cut_off_at_the_second(app):
    """Gradio opens a temporary file per part at once, up to 1,000: three connections sending
    1,000 one-byte files each used up the web process's file handles, and another visitor's
    request was made but never answered (helper-102). An upload request carries one file: at the
    second the request is cut off with 400, no part is kept, and one file still uploads."""
    before = gh.files_under(app.temp_dir)
    for count in (2, 1000):
        files = [("files", (f"p{i}.wav", b"x", "audio/wav")) for i in range(count)]
        r = httpx.post(app.url + f"gradio_api/upload?upload_id={uuid.uuid4().hex}", files=files, timeout=30)
        assert r.status_code == 400 and "carries one file" in r.text, (count, r.status_code, r.text[:300])
    # The boundary as Gradio's parser reads it: these spellings slipped past a stricter reading
    # while Gradio parsed every part (helper-104).
    for content_type in ("multipart/form-data; BOUNDARY=XyZ123", "multipart/form-data; boundary = XyZ123",
                         "multipart/form-data; boundary=zz; boundary=XyZ123", 'multipart/form-data; boundary="XyZ123"'):
        r = _post_upload(app, [content_type], _multipart(b"XyZ123", [b"x"] * 3))
        assert r.status_code == 400 and "carries one file" in r.text, (content_type, r.status_code, r.text[:300])
    # Two Content-Type headers: Starlette reads the first.
    r = _post_upload(app, ["multipart/form-data; boundary=XyZ123", "multipart/form-data; boundary=zz"],
                     _multipart(b"XyZ123", [b"x"] * 3))
    assert r.status_code == 400 and "carries one file" in r.text, (r.status_code, r.text[:300])
    time.sleep(0.5)
    assert gh.files_under(app.temp_dir) == before, "a part of a refused upload was kept"
    # One file whose content holds the boundary's text, but no delimiter (a bare LF before it, or
    # other text after it), is one file (helper-104).
    content = b"RIFF\n--XyZ123\r\n...\r\n--XyZ123abc..."
    r = _post_upload(app, ["multipart/form-data; boundary=XyZ123"], _multipart(b"XyZ123", [content]))
    assert r.status_code == 200 and len(r.json()) == 1, (r.status_code, r.text[:300])
    with open(PROMPTS_DIR / "f5_basic_ref_en.wav", "rb") as f:  # under half the limit: _big_files stays empty
        r = httpx.post(app.url + f"gradio_api/upload?upload_id={uuid.uuid4().hex}",
                       files=[("files", ("f5_basic_ref_en.wav", f, "audio/wav"))], timeout=30)
    assert r.status_code == 200 and r.json()[0].endswith("f5_basic_ref_en.wav"), r.text[:300]
    log = app.log_path.read_text()
    assert "Too many open files" not in log, log[-3000:]


def test_a_multipart_body_to_another_route_is_cut_off_past_a_few_parts(app):
    """Gradio parses a multipart body at component_server too, opening a file per part: one request
    with 1,000 one-byte files held 1,018 file handles, 22 at once used up 20,000 (helper-108). A
    multipart body to any route but the upload is cut off past 8 parts; none is kept."""
    before = gh.files_under(app.temp_dir)
    fields = [b"session_hash", b"component_id", b"fn_name", b"data"]
    body = b"".join(b'--XyZ\r\nContent-Disposition: form-data; name="%s"\r\n\r\nx\r\n' % f for f in fields)
    body += b"".join(b'--XyZ\r\nContent-Disposition: form-data; name="files"; filename="f%d.bin"\r\n\r\nx\r\n' % i
                     for i in range(1000)) + b"--XyZ--\r\n"
    r = httpx.post(app.url + "gradio_api/component_server", content=body, timeout=30,
                   headers={"Content-Type": "multipart/form-data; boundary=XyZ"})
    assert r.status_code == 400 and "at most 8 parts" in r.text, (r.status_code, r.text[:300])
    time.sleep(0.5)
    assert gh.files_under(app.temp_dir) == before
    assert httpx.get(app.url + "healthz", timeout=10).status_code == 200


def test_upload_ids_are_short_and_the_page_flow_still_shows_progress(app):
    """An upload id 60,000 characters long was kept in memory for good by a progress request, and
    until its progress was read by an upload (helper-107: +126 MiB in 27 s). An id over 64
    characters is refused; the page's flow (a 13-character id, the progress stream opened beside
    the upload and read to its end) still works."""
    import threading

    long_id = "a" * 65
    r = httpx.get(app.url + f"gradio_api/upload_progress?upload_id={long_id}", timeout=10)
    assert r.status_code == 400 and "at most 64 characters" in r.text, (r.status_code, r.text[:300])
    r = httpx.post(app.url + f"gradio_api/upload?upload_id={long_id}", timeout=10,
                   files=[("files", ("a.wav", b"RIFF", "audio/wav"))])
    assert r.status_code == 400 and "at most 64 characters" in r.text, (r.status_code, r.text[:300])
    upload_id = uuid.uuid4().hex[:13]
    events: list[str] = []

    def read_progress() -> None:
        with httpx.stream("GET", app.url + f"gradio_api/upload_progress?upload_id={upload_id}", timeout=30) as stream:
            events.extend(line for line in stream.iter_lines() if line.startswith("data:"))

    reader = threading.Thread(target=read_progress)
    reader.start()
    time.sleep(0.5)  # the page opens the stream as the upload starts; Gradio waits up to 3 s for it
    with open(PROMPTS_DIR / "f5_basic_ref_en.wav", "rb") as f:
        r = httpx.post(app.url + f"gradio_api/upload?upload_id={upload_id}", timeout=30,
                       files=[("files", ("f5_basic_ref_en.wav", f, "audio/wav"))])
    assert r.status_code == 200, r.text[:300]
    reader.join(30)
    assert events and json.loads(events[-1][5:]) == {"msg": "done"}, events


def test_gradio_tracks_a_bounded_number_of_upload_ids():
    """Gradio's ``FileUploadProgress`` as the app installs it: at most 1,000 ids, the oldest
    forgotten first; no event left by a wait for an id never used, or by an id whose progress was
    read (each was kept for good: helper-107, 2,000 uploads under new ids, +116 MiB)."""
    import asyncio

    from gradio.route_utils import FileUploadProgress

    from cosyvoice_ui.guards import upload_progress

    upload_progress.install()
    progress = FileUploadProgress()
    for i in range(1500):
        progress.append(f"id{i}", "a.wav", b"x" * 10)  # what an upload does under ?upload_id=
        progress.set_done(f"id{i}")
    assert len(progress._statuses) == len(progress._signals) == upload_progress.MAX_TRACKED
    assert "id1499" in progress._statuses and "id0" not in progress._statuses and "id0" not in progress._signals

    async def wait_for_an_id_never_used() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(progress.is_tracked("never used"), timeout=0.05)

    asyncio.run(wait_for_an_id_never_used())
    assert "never used" not in progress._signals
    progress.stop_tracking("id1499")  # its progress stream was read to the end
    assert "id1499" not in progress._signals and "id1499" not in progress._statuses


def test_upload_without_a_declared_length_is_refused(app):
    """A chunked upload declares no length, so it could not be bounded before it is read: 411."""
    body = (b"--XX\r\nContent-Disposition: form-data; name=\"files\"; filename=\"voice.wav\"\r\n"
            b"Content-Type: audio/wav\r\n\r\n" + b"\0" * 1000 + b"\r\n--XX--\r\n")
    r = httpx.post(app.url + "gradio_api/upload", content=iter([body]), timeout=30,
                   headers={"content-type": "multipart/form-data; boundary=XX"})
    assert r.status_code == 411 and "Content-Length" in r.text, (r.status_code, r.text[:300])


def _send_with_both_lengths(app, path: str, content_type: str, body: bytes) -> tuple[int, bytes]:
    """POST ``body`` chunked with a small ``Content-Length: 2`` beside it, over a raw socket (HTTP
    clients refuse to send both); returns the status and the answer."""
    host, port = app.url.split("//")[1].rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: {content_type}\r\n"
                     "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
        with contextlib.suppress(OSError):  # a server that refuses at once may close while we send
            for start in range(0, len(body), 65536):
                piece = body[start:start + 65536]
                sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
            sock.sendall(b"0\r\n\r\n")
        answer = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                answer += chunk
                if b"\r\n\r\n" in answer and (b"}" in answer.split(b"\r\n\r\n", 1)[1]):
                    break
    return int(answer.split(b" ", 2)[1]), answer


def test_a_chunked_body_beside_a_content_length_is_refused(app):
    """"Content-Length: 2" beside a chunked body passed the limits, which read the length only: a
    300 MB API body was parsed (2.96 GB RSS), and an upload of five 19 MB files passed the
    per-request total and --temp-reserve-mb (helper-66). Both headers at once: 400."""
    status, answer = _send_with_both_lengths(app, "/gradio_api/call/synthesize", "application/json",
                                             json.dumps({"data": ["a" * 3_000_000, None, "", "", 1.0, -1, None]}).encode())
    assert status == 400 and b"both Content-Length and Transfer-Encoding" in answer, answer[:500]
    payload = b"\0" * (LIMIT_BYTES - 1000)
    body = b"".join(b"--XX\r\nContent-Disposition: form-data; name=\"files\"; filename=\"take%d.wav\"\r\n"
                    b"Content-Type: audio/wav\r\n\r\n" % i + payload + b"\r\n" for i in range(3)) + b"--XX--\r\n"
    status, answer = _send_with_both_lengths(app, "/gradio_api/upload", "multipart/form-data; boundary=XX", body)
    assert status == 400 and b"both Content-Length and Transfer-Encoding" in answer, answer[:500]
    time.sleep(1)
    assert not _big_files(app), _big_files(app)


def test_a_huge_api_body_is_refused_before_it_is_read(app):
    """A /call body with a text of 100 million characters was parsed, held and cleaned: minutes
    of the web process's CPU and hundreds of MiB before the refusal (twenty-first newcomer
    session). A body far over what --max-text-chars allows gets 413 at once, unread."""
    body = json.dumps({"data": ["a" * 3_000_000, None, "", "", 1.0, -1, None]})
    r = httpx.post(app.url + "gradio_api/call/synthesize", content=body, timeout=30,
                   headers={"content-type": "application/json"})
    assert r.status_code == 413 and "Request body too large" in r.text, (r.status_code, r.text[:300])
    assert gh.http_get(app.url + "healthz")[0] == 200


def test_gradio_client_refuses_the_2mb_prompt(app, big_prompt):
    """Through gradio_client, as the README shows the API: the call fails and names the limit."""
    client = Client(app.url, verbose=False)
    with pytest.raises(Exception) as e:
        client.predict(text="Hello there.", prompt_audio=handle_file(str(big_prompt)), api_name="/synthesize")
    assert "maximum file size" in str(e.value) or "413" in str(e.value), str(e.value)
    assert not _big_files(app)


def test_server_keeps_working_with_a_prompt_under_the_limit(app):
    """After the refusals: a 256 kB real prompt is uploaded and synthesized; /healthz is 200."""
    client = Client(app.url, verbose=False)
    path = PROMPTS_DIR / corpus.BASE_PROMPT
    assert path.stat().st_size < LIMIT_BYTES
    audio_path, stats = client.predict(text="Hello there.", prompt_audio=handle_file(str(path)), api_name="/synthesize")
    assert stats["prompt_s"] > 3.0 and stats["audio_s"] > 0.5
    assert gh.http_get(app.url + "healthz")[0] == 200


def test_uploads_are_refused_with_a_message_when_the_temp_folder_has_no_room(tmp_path):
    """A full temporary folder made every upload a bare 500 while /healthz said "ok" (helper-50).
    Below --temp-reserve-mb free (here: more than any disk has) an upload is refused with 507 and
    why; /healthz says degraded, /metrics counts it, and requests without an upload still run."""
    with serving("--engine", "tests.fault_engines:FaultEngine", "--temp-reserve-mb", "100000000",
                 env={"FAULT_ENGINE_DIR": str(tmp_path)}) as app:
        prompt = PROMPTS_DIR / "xtts_male.wav"
        r = httpx.post(app.url + "gradio_api/upload", files={"files": (prompt.name, prompt.read_bytes(), "audio/wav")},
                       timeout=30)
        assert r.status_code == 507, (r.status_code, r.text)
        assert "no room for uploads now" in r.json()["detail"] and "--temp-reserve-mb" in r.json()["detail"]
        health = httpx.get(app.url + "healthz", timeout=10).json()
        assert health["status"] == "degraded" and health["uploads_refused_for_space"] == 1, health
        assert health["temp_folder_free_bytes"] > 0 and "no room" in health["temp_folder_error"]
        assert "cosyvoice_ui_uploads_refused_for_space_total 1.0" in httpx.get(app.url + "metrics", timeout=10).text
        assert Client(app.url, verbose=False).predict(text="no prompt needed", api_name="/synthesize")[1]["audio_s"] > 0
        # A reserve no disk can meet (typed in KB, say) was accepted without a word at start (helper-53).
        assert "every prompt upload will be refused until space is freed" in app.log_path.read_text()
        assert httpx.head(app.url + "healthz", timeout=10).status_code == 200  # HEAD was 404 (helper-53)


def test_an_upload_too_large_for_the_disk_and_the_limit_is_told_too_large_and_figures_need_the_login(tmp_path):
    """A declared 70 GiB upload got 507 "no room ... try again later" (it never can) where 30 MB got
    413, and the free space was told to anyone under --auth (helper-56). The size limit comes
    first; the disk's figures only to a logged-in caller, with one decimal."""
    with serving("--engine", "tests.fault_engines:FaultEngine", "--temp-reserve-mb", "100000000",
                 "--auth", "alice:s3cret", env={"FAULT_ENGINE_DIR": str(tmp_path)}) as app:
        head = (f"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1:{app.port}\r\nContent-Length: {70 * 2**30}\r\n"
                "Content-Type: multipart/form-data; boundary=x\r\nConnection: close\r\n\r\n").encode()
        with socket.create_connection(("127.0.0.1", app.port), timeout=30) as c:
            c.sendall(head)
            answer = _answer(c)
        assert answer.startswith("HTTP/1.1 413") and "too large" in answer.lower(), answer
        prompt = PROMPTS_DIR / "xtts_male.wav"
        files = {"files": (prompt.name, prompt.read_bytes(), "audio/wav")}
        anonymous = httpx.post(app.url + "gradio_api/upload", files=files, timeout=30)
        assert anonymous.status_code == 401 and "MiB" not in anonymous.text, anonymous.text
        with httpx.Client(base_url=app.url, timeout=30) as browser:
            assert browser.post("login", data={"username": "alice", "password": "s3cret"}).status_code == 200
            r = browser.post("gradio_api/upload", files=files)
        assert r.status_code == 507, (r.status_code, r.text)
        detail = r.json()["detail"]
        assert re.search(r"[\d,]+\.\d MiB free", detail) and "this upload needs 0.7 MiB" in detail, detail


def _multipart_upload_head_and_body(url: str, path) -> tuple[bytes, bytes]:
    """A raw ``POST /gradio_api/upload`` of ``path``: the request head and its body, to send apart."""
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{path.name}\"\r\n"
            f"Content-Type: audio/wav\r\n\r\n").encode() + path.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
    host = url.split("//")[1].rstrip("/")
    head = (f"POST /gradio_api/upload HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nConnection: close\r\n\r\n").encode()
    return head, body


def _answer(connection) -> str:
    """What the server sent on ``connection`` before it closed (a reset after its answer, for a
    body it did not read, keeps the answer), then closes it."""
    received = b""
    with connection:
        try:
            while chunk := connection.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
    return received.decode("utf-8", "replace")


def test_uploads_arriving_together_count_against_the_space_and_a_disk_that_fills_is_a_507(tmp_path):
    """Two uploads that each fit, sent at once, passed the free-space check together and then
    filled the disk while written (helper-60: six at once with 23 MiB free); and a disk that
    filled during an upload was a bare 500 (helper-50). The temporary folder is a 1 MiB tmpfs.
    Two 606 kB real prompts with their heads sent before either body: the second is refused at
    once, the space the first will take counted. Then a head is sent, the disk is filled from the
    app's own mount namespace, and the body follows: 507 "The server's disk is full", counted with
    the refusals; nothing of it stays, a smaller upload and a request go on; no traceback."""
    temp_dir = tmp_path / "gradio_tmp"
    temp_dir.mkdir()
    wrap = small_disk_wrap(temp_dir, 1024)
    with serving("--engine", "tests.fault_engines:FaultEngine", "--temp-reserve-mb", "0", wrap=wrap,
                 env={"GRADIO_TEMP_DIR": str(temp_dir), "FAULT_ENGINE_DIR": str(tmp_path)}) as app:
        head, body = _multipart_upload_head_and_body(app.url, PROMPTS_DIR / "cv_cross_lingual_prompt.wav")
        connections = [socket.create_connection(("127.0.0.1", app.port), timeout=30) for _ in range(2)]
        for c in connections:
            c.sendall(head)
            time.sleep(0.5)  # the first head is in before the second
        for c in connections:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the second is answered at its head
                c.sendall(body)
        answers = [_answer(c) for c in connections]
        assert answers[0].startswith("HTTP/1.1 200") and answers[1].startswith("HTTP/1.1 507"), answers
        assert "more are arriving in other uploads" in answers[1], answers[1]
        # The disk fills while an upload's body is on its way.
        seen_from_app = f"/proc/{app.proc.pid}/root{temp_dir}"
        try:
            filler = open(f"{seen_from_app}/filler", "wb")
        except OSError as e:
            pytest.skip(f"the app's mount namespace cannot be reached from here: {e}")
        small = PROMPTS_DIR / "f5_country.flac"
        head, body = _multipart_upload_head_and_body(app.url, small)
        with socket.create_connection(("127.0.0.1", app.port), timeout=30) as c:
            c.sendall(head)
            time.sleep(0.5)
            with filler:
                with contextlib.suppress(OSError):
                    while True:
                        filler.write(b"\0" * 65536)
                        filler.flush()
            c.sendall(body)
            answer = _answer(c)
        assert answer.startswith("HTTP/1.1 507") and "disk is full" in answer, answer
        health = httpx.get(app.url + "healthz", timeout=10).json()
        assert health["uploads_refused_for_space"] == 2 and health["status"] == "degraded", health
        os.remove(f"{seen_from_app}/filler")
        # What the refused upload had written is gone: a smaller prompt fits again.
        r = httpx.post(app.url + "gradio_api/upload", files={"files": (small.name, small.read_bytes(), "audio/flac")},
                       timeout=30)
        assert r.status_code == 200, (r.status_code, r.text[:300])
        event, data = gh.call(app.url, "synthesize", text="hi")
        assert event == "complete", data
    log_text = app.log_path.read_text()
    assert "Traceback" not in log_text and "could not serve POST /gradio_api/upload" in log_text, log_text[-3000:]
