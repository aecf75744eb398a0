"""Each result is a file of its own on the server.

Gradio named an audio result after a hash of its samples and rewrote that file in place for each
identical result (same text, voice and seed): a client still downloading the first got a short
file ("Too little data for declared Content-Length", a read timeout in gradio_client), seen in
test_load_faults under load. Identical results now have files of their own, each whole.
"""

from __future__ import annotations

import json

import soundfile as sf

from . import gradio_http as gh
from .conftest import serving


def test_identical_results_do_not_share_a_file(tmp_path):
    temp_dir = tmp_path / "gradio_tmp"
    with serving("--engine", "tests.fault_engines:FaultEngine",
                 env={"GRADIO_TEMP_DIR": str(temp_dir), "FAULT_ENGINE_DIR": str(tmp_path)}) as app:
        paths = []
        for _ in range(2):  # one after the other: not a duplicate of a running request
            event, data = gh.call(app.url, "synthesize", text="the same words twice")
            assert event == "complete", data
            paths.append(json.loads(data)[0]["path"])
        assert paths[0] != paths[1], paths
        for path in paths:
            samples, sample_rate_hz = sf.read(path, dtype="int16")
            assert sample_rate_hz == 16000 and len(samples) == 16000 * len("the same words twice") // 10
