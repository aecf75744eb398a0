"""Gradio's audio results are written whole, then moved into place.

Gradio names an audio result after a hash of its samples and rewrote that file in place for every
result with the same samples (same text, voice and seed; every tone of the test engine): a client
still downloading the first got a short file ("Too little data for declared Content-Length" in
the server log, a read timeout in gradio_client; test_load_faults under load, sixth session).
Writing to a temporary name in the same folder and renaming it over the old one (atomic on POSIX)
leaves a reader of the old file its whole file. Writing a result file of our own instead made
Gradio probe it with ffprobe, which the ``--stream`` ffmpeg (imageio-ffmpeg) does not have.
"""

from __future__ import annotations

import os
import uuid

_installed = False


def install() -> None:
    """Wrap ``gradio.processing_utils.audio_to_file`` (which ``save_audio_to_cache`` calls for
    every ``(sample_rate, samples)`` result) and ``save_bytes_to_cache`` (the page's combined
    ``--stream`` file, named after a hash of its bytes the same way) so that each file appears
    only once written. Idempotent."""
    global _installed
    if _installed:
        return
    from gradio import processing_utils

    write = processing_utils.audio_to_file
    save_bytes = processing_utils.save_bytes_to_cache

    def audio_to_file(sample_rate, data, filename, format="wav"):
        folder, name = os.path.split(str(filename))
        partial = os.path.join(folder, f".partial-{uuid.uuid4().hex}-{name}")
        try:
            write(sample_rate, data, partial, format=format)
            os.replace(partial, filename)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)

    def save_bytes_to_cache(data, file_name, cache_dir):
        # Gradio picks the folder (a hash of the bytes) and may add an extension it detects; the
        # partial name keeps both, and only its prefix is dropped by the rename.
        prefix = f".partial-{uuid.uuid4().hex}-"
        partial = save_bytes(data, prefix + os.path.basename(str(file_name)), cache_dir)
        folder, name = os.path.split(partial)
        final = os.path.join(folder, name.removeprefix(prefix))
        try:
            os.replace(partial, final)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
        return final

    processing_utils.audio_to_file = audio_to_file
    processing_utils.save_bytes_to_cache = save_bytes_to_cache
    _installed = True
