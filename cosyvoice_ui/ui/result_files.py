"""Each result's WAV file in a folder of its own inside Gradio's cache.

Gradio names an audio result after a hash of its samples and rewrites that file in place for
every result with the same samples (same text, voice and seed; every tone of the test engine).
A client still downloading the first got a short file: "Too little data for declared
Content-Length" in the server log and a read timeout in gradio_client (test_load_faults, under
load, sixth session). A folder per result keeps every download whole; Gradio still deletes the
file after ``--temp-file-ttl`` (it is inside its cache, so it is tracked like its own).
"""

from __future__ import annotations

import os
import uuid

import numpy as np


def write_result_wav(samples: np.ndarray, sample_rate_hz: int) -> str:
    """Write one result as a 16-bit PCM WAV file, ``<GRADIO_TEMP_DIR>/<random hex>/audio.wav``.

    Args:
        samples: int16 PCM, shape ``(n,)`` (mono).
        sample_rate_hz: the samples' rate.

    Returns:
        The file's absolute path, for Gradio's ``Audio`` output (which serves it as is).
    """
    import soundfile as sf
    from gradio.utils import get_upload_folder

    folder = os.path.join(get_upload_folder(), uuid.uuid4().hex)
    os.makedirs(folder)
    path = os.path.join(folder, "audio.wav")
    sf.write(path, samples, int(sample_rate_hz), subtype="PCM_16")
    return os.path.abspath(path)
