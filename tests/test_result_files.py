"""A result file is never rewritten in place.

Gradio names an audio result after a hash of its samples and rewrote that file in place for each
identical result (same text, voice and seed): a client still downloading the first got a short
file ("Too little data for declared Content-Length", a read timeout in gradio_client), seen in
test_load_faults under load. Each result is now written whole and renamed into place, so the
second identical result replaces the file (a new inode) and a reader of the first keeps it whole.
"""

from __future__ import annotations

import io
import json
import os
import re

import soundfile as sf

from . import gradio_http as gh
from .conftest import serving, small_disk_wrap

TEXT = "the same words twice"


def test_identical_results_replace_the_file_instead_of_rewriting_it(tmp_path):
    temp_dir = tmp_path / "gradio_tmp"
    with serving("--engine", "tests.fault_engines:FaultEngine",
                 env={"GRADIO_TEMP_DIR": str(temp_dir), "FAULT_ENGINE_DIR": str(tmp_path)}) as app:
        event, data = gh.call(app.url, "synthesize", text=TEXT)
        assert event == "complete", data
        path = json.loads(data)[0]["path"]
        # Every download was "audio.wav" (helper-65): a result is named after its hash.
        assert re.fullmatch(r"speech-[0-9a-f]{12}\.wav", os.path.basename(path)), path
        assert json.loads(data)[0]["orig_name"] == os.path.basename(path), data
        size = os.path.getsize(path)
        with open(path, "rb") as first:  # a client still downloading the first result
            inode = os.fstat(first.fileno()).st_ino
            first.read(44)  # the WAV header
            event, data = gh.call(app.url, "synthesize", text=TEXT)  # one after the other: no duplicate
            assert event == "complete" and json.loads(data)[0]["path"] == path, data
            assert os.stat(path).st_ino != inode, "the identical result was rewritten in place"
            assert 44 + len(first.read()) == size  # the first download stays whole
        samples, sample_rate_hz = sf.read(path, dtype="int16")
        assert sample_rate_hz == 16000 and len(samples) == 16000 * len(TEXT) // 10
        assert not [p for p in temp_dir.rglob(".partial-*")]


def test_identical_results_saved_at_once_each_get_the_file(tmp_path):
    """Two identical results saved at the same moment both renamed Gradio's ``audio.wav`` in their
    folder; the second rename failed, and its client got "Could not postprocess output component
    ... FileNotFoundError" with the server's path, while the ledger said ok (helper-143: 2 of 30
    clients sending one text at once). Threads save one result 50 times over here."""
    import threading

    import numpy as np
    from gradio import processing_utils

    from cosyvoice_ui.ui import atomic_audio_cache

    atomic_audio_cache.install()
    samples = (np.sin(np.arange(16000) / 5) * 8000).astype(np.int16)
    paths, errors = [], []
    start = threading.Barrier(8)

    def save() -> None:
        start.wait()
        for _ in range(50):
            try:
                paths.append(processing_utils.save_audio_to_cache(samples, 16000, "wav", str(tmp_path)))
            except Exception as e:  # noqa: BLE001 - the failure is the point
                errors.append(repr(e))

    threads = [threading.Thread(target=save) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, (len(errors), errors[:2])
    assert len(set(paths)) == 1 and len(paths) == 400
    assert np.array_equal(sf.read(paths[0], dtype="int16")[0], samples)


def test_identical_combined_stream_files_are_replaced_too(tmp_path):
    """The page's combined ``--stream`` file goes through Gradio's ``save_bytes_to_cache``, which
    names it after a hash of its bytes and rewrote it in place for an identical stream."""
    from gradio import processing_utils

    from cosyvoice_ui.ui import atomic_audio_cache

    atomic_audio_cache.install()
    data = b"ID3" + os.urandom(50_000)  # an MP3 as Gradio's combine_stream writes it
    path = processing_utils.save_bytes_to_cache(data, "audio.mp3", cache_dir=str(tmp_path))
    assert os.path.basename(path) == "audio.mp3" and open(path, "rb").read() == data
    with open(path, "rb") as first:
        inode = os.fstat(first.fileno()).st_ino
        first.read(10)
        again = processing_utils.save_bytes_to_cache(data, "audio.mp3", cache_dir=str(tmp_path))
        assert again == path and os.stat(path).st_ino != inode, "rewritten in place"
        assert 10 + len(first.read()) == len(data)
    # A name without an extension gets the one Gradio detects, as before.
    wav = processing_utils.save_bytes_to_cache(b"RIFF\x00\x00\x00\x00WAVE" + bytes(100), "audio", str(tmp_path))
    assert os.path.basename(wav) == "audio.wav", wav
    assert not list(tmp_path.rglob(".partial-*"))


def test_a_result_link_past_its_time_says_so_without_the_servers_path(tmp_path):
    """A result downloaded after --temp-file-ttl got 403 "File not allowed: /tmp/.../audio.wav":
    "not allowed" for a file that expired, and the server's path to anyone (helper-50)."""
    temp_dir = tmp_path / "gradio_tmp"
    with serving("--engine", "tests.fault_engines:FaultEngine",
                 env={"GRADIO_TEMP_DIR": str(temp_dir), "FAULT_ENGINE_DIR": str(tmp_path)}) as app:
        event, data = gh.call(app.url, "synthesize", text=TEXT)
        result = json.loads(data)[0]
        assert gh.http_get(result["url"])[0] == 200
        os.remove(result["path"])  # as the sweeper does after --temp-file-ttl
        status, body = gh.http_get(result["url"])
        assert status == 404 and b"not on the server (any more)" in body and b"--temp-file-ttl" in body, body
        assert str(temp_dir).encode() not in body
        # Paths outside the temporary folder keep Gradio's answer.
        assert gh.http_get(app.url + "gradio_api/file=/etc/passwd")[0] == 403


def test_a_full_disk_while_the_result_is_written_is_said_in_words(tmp_path):
    """The result WAV is written after synthesis; a disk full then gave Gradio's raw "Could not
    postprocess output component ... OSError: [Errno 28]" to the client and a traceback to the log
    (helper-54). Here the temporary folder is a 384 KiB tmpfs and the result 1.28 MB."""
    temp_dir = tmp_path / "gradio_tmp"
    temp_dir.mkdir()
    wrap = small_disk_wrap(temp_dir, 384)
    long_text = "a result too big for the disk " * 13  # 390 characters: 16000 * 39 samples of int16
    with serving("--engine", "tests.fault_engines:FaultEngine", wrap=wrap,
                 env={"GRADIO_TEMP_DIR": str(temp_dir), "FAULT_ENGINE_DIR": str(tmp_path)}) as app:
        event, data = gh.call(app.url, "synthesize", text=long_text)
        assert event == "error" and "disk is full" in data, data
        assert "postprocess" not in data and "Errno" not in data and "array(" not in data, data
        event, data = gh.call(app.url, "synthesize", text="short words")  # the server goes on
        assert event == "complete", data
        status, body = gh.http_get(json.loads(data)[0]["url"])  # the file is on the app's tmpfs
        samples, sample_rate_hz = sf.read(io.BytesIO(body), dtype="int16")
        assert status == 200 and len(samples) == 16000 * len("short words") // 10
        assert app.status()["status"] in ("ok", "degraded")
    log_text = app.log_path.read_text()
    assert "Traceback" not in log_text and "a result could not be written" in log_text, log_text[-3000:]
