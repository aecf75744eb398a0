"""An ffmpeg executable for Gradio's streamed audio output (``--stream``).

Gradio encodes streamed audio chunks with the ``ffmpeg`` found on ``PATH``. Where the system
has none, the one inside the ``imageio-ffmpeg`` wheel is linked as ``ffmpeg`` into a private
folder put first on ``PATH`` (of the web process only; the worker never needs it).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from ..temp_files import remove_folders_of_gone_processes


_folders: list[str] = []
FOLDER_PREFIX = "cosyvoice-ui-ffmpeg-"  # + the web process's pid


def remove_private_ffmpeg() -> None:
    """Delete the folders :func:`ensure_ffmpeg_on_path` made (one per start piled up in /tmp).
    Called at shutdown; atexit alone misses an exit by a re-raised SIGTERM."""
    while _folders:
        shutil.rmtree(_folders.pop(), ignore_errors=True)


def _check_ffprobe() -> None:
    # Gradio before 6.31 (6.17 is what requirements-cosyvoice.txt installs, see the README) reads
    # each streamed chunk with pydub, which runs ffprobe; the imageio-ffmpeg wheel has none, and
    # without it every streamed request failed in Gradio's queue and the page waited for ever.
    import gradio as gr

    if hasattr(gr.Audio, "_convert_to_adts") and not shutil.which("ffprobe"):
        raise RuntimeError(f"--stream with Gradio {gr.__version__} needs ffprobe on PATH, which the imageio-ffmpeg "
                           "wheel does not carry: install ffmpeg (apt install ffmpeg), or run without --stream")


def ensure_ffmpeg_on_path() -> str:
    """Return the ``ffmpeg`` Gradio will run, providing one when ``PATH`` has none.

    Raises:
        RuntimeError: no ffmpeg on ``PATH`` and ``imageio-ffmpeg`` is not installed; or this
            Gradio also needs ``ffprobe`` and ``PATH`` has none.
    """
    _check_ffprobe()
    remove_folders_of_gone_processes(FOLDER_PREFIX)  # of a web process killed with SIGKILL
    found = shutil.which("ffmpeg")
    if found:
        return found
    try:
        import imageio_ffmpeg
    except ImportError:
        raise RuntimeError("--stream needs ffmpeg: install it (apt install ffmpeg) or pip install imageio-ffmpeg") from None
    # Named after this process, so that a later start removes it if this one is killed with SIGKILL.
    folder = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-")
    _folders.append(folder)
    atexit.register(remove_private_ffmpeg)
    link = os.path.join(folder, "ffmpeg")
    os.symlink(imageio_ffmpeg.get_ffmpeg_exe(), link)
    os.environ["PATH"] = folder + os.pathsep + os.environ.get("PATH", "")
    return link
