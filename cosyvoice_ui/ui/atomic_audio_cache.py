"""Gradio's audio results are written whole, then moved into place.

Gradio names an audio result after a hash of its samples and rewrote that file in place for every
result with the same samples (same text, voice and seed; every tone of the test engine): a client
still downloading the first got a short file ("Too little data for declared Content-Length" in
the server log, a read timeout in gradio_client; test_load_faults under load, sixth session).
Writing to a temporary name in the same folder and renaming it over the old one (atomic on POSIX)
leaves a reader of the old file its whole file. Writing a result file of our own instead made
Gradio probe it with ffprobe, which the ``--stream`` ffmpeg (imageio-ffmpeg) does not have.

A disk that fills while a result is written (synthesis done, the WAV not) gave the client Gradio's
"Could not postprocess output component ... array([0, 0, ...]) ... OSError: [Errno 28]" and the log
a traceback (helper-54). It is a :class:`gradio.Error` now, which Gradio passes on as it is. A WAV is
encoded in memory and written with one ``write``: pydub's writer, failing midway, left a
``wave.Wave_write`` whose finalizer put another traceback in the log. The bytes are the same as
pydub's (checked: a 1 s int16 result, 32,044 bytes, identical).

Every result was downloaded as ``audio.wav`` (Gradio names the file so; the download takes the
file's name), so a day's results in a Downloads folder were ``audio.wav``, ``audio (1).wav``, ...
(helper-65). Gradio's file is renamed ``speech-<12 hex digits of its hash>.wav`` in its folder,
and that name is the one the page and API give (and the one Gradio deletes at its end). Results
are named one at a time: two identical ones renamed the same ``audio.wav`` (helper-143).
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import os
import threading
import uuid

from ..log_throttle import OncePerMinute

log = logging.getLogger(__name__)
_disk_full = OncePerMinute(log, logging.WARNING, "a result could not be written: %s")
DISK_FULL_MESSAGE = ("The server's disk is full: your audio was made but could not be saved for you. "
                     "Try again later; the server's operator has to free space in its temporary folder.")

_installed = False
# Identical results share Gradio's ``audio.wav`` in their folder until it is renamed: two written at
# once renamed one file twice, and the second rename failed (FileNotFoundError), so one client got
# "Could not postprocess output component" with the server's path while the ledger said ok
# (helper-143: 2 of 30 clients sending one text). A result is written and renamed under this lock;
# it takes milliseconds (a WAV from memory).
_naming = threading.Lock()


def _wav_bytes(sample_rate, data, to_int16) -> bytes:
    """A 16-bit PCM WAV file of ``data`` (shape ``(frames,)`` or ``(frames, channels)``) at
    ``sample_rate`` Hz; ``to_int16`` converts other dtypes as Gradio does."""
    import soundfile as sf

    buffer = io.BytesIO()
    sf.write(buffer, data if data.dtype == "int16" else to_int16(data), int(sample_rate), format="WAV",
             subtype="PCM_16")
    return buffer.getvalue()


@contextlib.contextmanager
def _disk_full_is_said():
    """Turn ENOSPC (and EDQUOT, a quota filled) into a ``gradio.Error`` with
    :data:`DISK_FULL_MESSAGE`, logged one line a minute; other errors pass unchanged."""
    try:
        yield
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        _disk_full.note(e)
        import gradio as gr

        raise gr.Error(DISK_FULL_MESSAGE, title="Server disk full", print_exception=False) from None


def install() -> None:
    """Wrap ``gradio.processing_utils.audio_to_file`` (which ``save_audio_to_cache`` calls for
    every ``(sample_rate, samples)`` result) and ``save_bytes_to_cache`` (the page's combined
    ``--stream`` file, named after a hash of its bytes the same way) so that each file appears
    only once written, and a full disk is said in words (:data:`DISK_FULL_MESSAGE`); and
    ``save_audio_to_cache`` so that a result's file is named ``speech-<hash>.wav``. Idempotent.

    Raises (from the wrapped functions):
        gradio.Error: the disk or quota is full (errno ENOSPC, EDQUOT).
    """
    global _installed
    if _installed:
        return
    from gradio import processing_utils

    write = processing_utils.audio_to_file
    save_bytes = processing_utils.save_bytes_to_cache
    save_audio = processing_utils.save_audio_to_cache

    def audio_to_file(sample_rate, data, filename, format="wav"):
        folder, name = os.path.split(str(filename))
        partial = os.path.join(folder, f".partial-{uuid.uuid4().hex}-{name}")
        try:
            with _disk_full_is_said():
                if format == "wav":
                    with open(partial, "wb") as f:
                        f.write(_wav_bytes(sample_rate, data, processing_utils.convert_to_16_bit_audio))
                else:
                    write(sample_rate, data, partial, format=format)
                os.replace(partial, filename)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)

    def save_bytes_to_cache(data, file_name, cache_dir):
        # Gradio picks the folder (a hash of the bytes) and may add an extension it detects; the
        # partial name keeps both, and only its prefix is dropped by the rename.
        prefix = f".partial-{uuid.uuid4().hex}-"
        with _disk_full_is_said():
            partial = save_bytes(data, prefix + os.path.basename(str(file_name)), cache_dir)
        folder, name = os.path.split(partial)
        final = os.path.join(folder, name.removeprefix(prefix))
        try:
            os.replace(partial, final)
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
        return final

    def save_audio_to_cache(data, sample_rate, format, cache_dir):
        # Gradio's folder is named after a hash of the samples: its start names the download.
        with _naming:
            path = save_audio(data, sample_rate, format, cache_dir)
            folder, name = os.path.split(path)
            named = os.path.join(folder, f"speech-{os.path.basename(folder)[:12]}{os.path.splitext(name)[1]}")
            os.replace(path, named)  # atomic: a reader of an identical earlier result keeps its file
        return named

    processing_utils.audio_to_file = audio_to_file
    processing_utils.save_audio_to_cache = save_audio_to_cache
    processing_utils.save_bytes_to_cache = save_bytes_to_cache
    _installed = True
