"""API file parameters reach only files uploaded through Gradio.

Promise: a client of the public API can hand ``/synthesize`` only a file it uploaded. A
``prompt_audio`` that names a path on the server (``{"path": "/etc/passwd", "meta":
{"_type": "gradio.FileData"}}``), a path that climbs out of the upload folder, or a URL (here one on the
server's own network) is refused before anything is read or copied, nothing of such a file comes
back, and the server keeps serving. Uploads (what the page and ``gradio_client`` send) still work.
"""

from __future__ import annotations

import os
import time
import urllib.parse
from pathlib import Path

import pytest
from gradio_client import Client, handle_file

from . import gradio_http as gh
from .conftest import PROMPTS_DIR, ROOT, RunningApp

OUTSIDE_WAV = PROMPTS_DIR / "xtts_male.wav"  # a real prompt, never uploaded

def _start(tmp_path_factory, *flags) -> RunningApp:
    temp_dir = tmp_path_factory.mktemp("gradio_tmp")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRADIO_TEMP_DIR", str(temp_dir))  # Gradio's upload and cache folder, ours alone
        mp.setenv("FAULT_ENGINE_DIR", str(temp_dir.parent))
        app = RunningApp(*flags)
    app.temp_dir = temp_dir
    return app


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    app = _start(tmp_path_factory)
    try:
        app.wait_healthy()
        yield app
    finally:
        app.stop()


def _copies(app, name: str) -> list[str]:
    return [p for p in gh.files_under(app.temp_dir) if Path(p).name == name]


def _passwd_lines() -> list[str]:
    return [line for line in Path("/etc/passwd").read_text().splitlines() if line.strip()][:3]


@pytest.mark.parametrize("path", [
    "/etc/passwd",
    "{temp}/../../../../../../etc/passwd",  # climbing out of the upload folder
    "app.py",  # relative: the server's own source, from its working directory
], ids=["absolute", "traversal", "relative"])
def test_server_path_is_refused_without_reading_it(app, path):
    """A FileData naming a server file is refused by Gradio itself: no copy lands in Gradio's
    cache, the handler never tries to decode it (no 'could not be decoded'), and no line of the
    file comes back."""
    path = path.format(temp=app.temp_dir)
    name = Path(path).name
    event, data = gh.call(app.url, "synthesize", text="Hello there.", prompt_audio=gh.file_data(path))
    assert event == "error", data
    for line in _passwd_lines():
        assert line not in data
    assert not _copies(app, name), f"{name} was copied into Gradio's cache: {_copies(app, name)}"
    assert "could not be decoded" not in data, f"the server opened {path} as prompt audio: {data}"


def test_real_wav_outside_upload_area_is_not_used(app):
    """A real voice prompt elsewhere on the server, named by path, is not read: the call fails
    (no audio is synthesized from it) and no copy of it lands in Gradio's cache."""
    event, data = gh.call(app.url, "synthesize", text="Hello there.", prompt_audio=gh.file_data(str(OUTSIDE_WAV)))
    assert event == "error", f"synthesized from a file the client never uploaded: {data[:300]}"
    assert not _copies(app, OUTSIDE_WAV.name)


def test_a_refused_path_is_titled_as_an_input_refusal(app):
    """The input checks' refusals are titled "Cannot use this input"; the ones made before the
    handler (a path outside the upload area) were titled "Error" (helper-56)."""
    data = gh.endpoint_data(app.url, "synthesize", text="Hello there.", prompt_audio=gh.file_data("/etc/passwd"))
    [completed] = gh.queue_calls(app.url, "synthesize", data)
    assert not completed["success"] and completed["output"]["title"] == "Cannot use this input", completed


def test_url_on_the_servers_own_network_is_not_fetched(app):
    """A prompt given as a URL on loopback (here the app's own /healthz) is refused before
    Gradio would try to fetch it, through gradio_client as a user would send it."""
    client = Client(app.url, verbose=False)
    with pytest.raises(Exception) as e:
        client.predict(text="Hello there.", prompt_audio=handle_file(app.url + "healthz"), api_name="/synthesize")
    assert "does not download files" in str(e.value), str(e.value)
    assert not _copies(app, "healthz")


@pytest.mark.parametrize("target", ["/etc/passwd", str(OUTSIDE_WAV), "app.py", "cosyvoice_ui/settings.py"])
def test_file_route_serves_nothing_outside_gradio_cache(app, target):
    """``GET /gradio_api/file=<path>`` does not serve server files (system, prompts, source)."""
    status, body = gh.http_get(app.url + "gradio_api/file=" + urllib.parse.quote(target))
    assert status in (403, 404), (status, body[:200])
    for line in _passwd_lines():
        assert line.encode() not in body
    assert b"RIFF" not in body[:4] and b"argparse" not in body


def test_the_temp_folders_claim_file_is_not_served(app):
    """The lock that keeps a second copy off the folder lies in the upload area; the file route
    served it, the web process's pid, to anyone (helper-51)."""
    claim = app.temp_dir / ".cosyvoice_ui.lock"
    assert claim.is_file()
    for path in (str(claim), f"{app.temp_dir}/x/../.cosyvoice_ui.lock"):
        status, body = gh.http_get(app.url + "gradio_api/file=" + urllib.parse.quote(path))
        assert status in (403, 404), (path, status, body[:200])
        assert str(app.proc.pid).encode() not in body


def test_only_the_apps_own_files_in_its_temporary_folder_are_served(app):
    """With GRADIO_TEMP_DIR pointed at a folder that held other files, each could be downloaded by
    anyone (helper-97). Only uploads and results (``<folder>/<hash>/<name>``) are served: through
    Gradio's older route ``/gradio_api/file/<path>`` too (helper-107 read them there), and by a path
    relative to the app's working folder, which Gradio resolves from there."""
    (app.temp_dir / "notes.txt").write_text("an operator's notes")
    (app.temp_dir / "sub").mkdir(exist_ok=True)
    (app.temp_dir / "sub" / "data.wav").write_bytes(OUTSIDE_WAV.read_bytes())
    deep = app.temp_dir / ("a" * 64) / "deeper"
    deep.mkdir(parents=True, exist_ok=True)
    (deep / "x.wav").write_bytes(OUTSIDE_WAV.read_bytes())
    relative = os.path.relpath(app.temp_dir, ROOT)  # the app runs in the repository's folder
    for path in ("notes.txt", "sub/data.wav", f"{'a' * 64}/deeper/x.wav"):
        for link in (f"file={app.temp_dir}/{path}", f"file/{app.temp_dir}/{path}", f"file={relative}/{path}",
                     f"file/{relative}/{path}"):
            status, body = gh.http_get(app.url + "gradio_api/" + urllib.parse.quote(link, safe="=/"))
            assert status == 404 and b"only its own uploads and results" in body, (link, status, body[:200])
    client = Client(app.url, verbose=False)
    audio_path, _ = client.predict(text="Hello there.", prompt_audio=handle_file(str(PROMPTS_DIR / "xtts_female.wav")),
                                   api_name="/synthesize")
    served = next(p for p in gh.files_under(app.temp_dir) if Path(p).name.startswith("speech-"))
    status, body = gh.http_get(app.url + "gradio_api/file=" + urllib.parse.quote(f"{app.temp_dir}/{served}"))
    assert status == 200 and body[:4] == b"RIFF", (served, status)


def test_uploads_still_work_and_server_keeps_serving(app):
    """After the attempts above: an uploaded real prompt is synthesized, /healthz is 200."""
    client = Client(app.url, verbose=False)
    audio_path, stats = client.predict(text="Hello there.", prompt_audio=handle_file(str(PROMPTS_DIR / "f5_main.flac")),
                                       api_name="/synthesize")
    assert stats["prompt_s"] > 3.0 and stats["audio_s"] > 0.5 and Path(audio_path).stat().st_size > 10_000
    status, body = gh.http_get(app.url + "healthz")
    assert status == 200, body


def test_folder_in_the_upload_area_is_refused_and_the_shutdown_stays_clean(tmp_path_factory):
    """The upload folder itself (or one of its subfolders) as prompt_audio passed Gradio's path
    check and joined the files Gradio deletes: the answer was "No prompt audio was received",
    and every later shutdown logged a traceback (IsADirectoryError) and "Application shutdown
    failed". Now it is refused as a folder, and the shutdown log has neither."""
    app = _start(tmp_path_factory, "--engine", "tests.fault_engines:FaultEngine")
    try:
        app.wait_healthy()
        for folder in (app.temp_dir, next((p for p in app.temp_dir.iterdir() if p.is_dir()), app.temp_dir)):
            event, data = gh.call(app.url, "synthesize", text="Hello there.", prompt_audio=gh.file_data(str(folder)))
            assert event == "error" and "prompt_audio names a folder, not a file" in data, data
        client = Client(app.url, verbose=False)
        _, stats = client.predict(text="still serving", api_name="/synthesize")
        assert stats["audio_s"] > 0
    finally:
        app.stop()
    log = app.log_path.read_text()
    assert "Traceback" not in log and "shutdown failed" not in log, log[-3000:]
    assert app.temp_dir.is_dir()


def test_endless_device_file_does_not_freeze_the_server(tmp_path_factory):
    """``/dev/zero`` as a FileData path: the server keeps answering /healthz and the call is
    refused within seconds (a file without end must never be read). Own app: when this fails the
    web process's event loop is stuck, so it is killed at the end."""
    app = _start(tmp_path_factory, "--engine", "tests.fault_engines:FaultEngine")
    try:
        app.wait_healthy()
        event_id = gh.start_call(app.url, "synthesize",
                                 gh.endpoint_data(app.url, "synthesize", text="hello",
                                                  prompt_audio=gh.file_data("/dev/zero")))
        time.sleep(2.0)
        status, body = gh.http_get(app.url + "healthz", timeout_s=5)
        assert status == 200, body
        with gh.open_result_stream(app.url, "synthesize", event_id, timeout_s=10) as r:
            event, data = gh.parse_sse(r.read().decode())
        assert event == "error", data
    finally:
        if app.proc.poll() is None:
            app.proc.terminate()  # drains: the supervisor ends the worker even with the loop stuck
            try:
                app.proc.wait(timeout=8)
            except Exception:
                app.proc.kill()
                app.proc.wait()
        app.stop()


def test_the_file_route_fetches_no_other_address(app):
    """``/gradio_api/file=<URL>`` made the server fetch any public address for anyone and stream it
    back, with no size limit (helper-108; this machine has no internet, so the refusal is what is
    checked)."""
    for link in ("file=https://example.com/voice.wav", "file=http://93.184.216.34/x.wav", "file/HTTPS://example.com/x"):
        status, body = gh.http_get(app.url + "gradio_api/" + link)
        assert status == 404 and b"does not fetch other addresses" in body, (link, status, body[:200])
