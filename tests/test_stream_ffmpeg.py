"""``--stream`` finds an ffmpeg for Gradio, and refuses to start where Gradio would need an
ffprobe that is missing (Gradio 6.17, which requirements-cosyvoice.txt installs, reads each
streamed chunk with pydub, which runs ffprobe: every streamed request failed and the page waited)."""

from __future__ import annotations

import os

import gradio as gr
import pytest

from cosyvoice_ui.ui import ffmpeg


@pytest.fixture
def no_system_ffmpeg(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # neither ffmpeg nor ffprobe on it
    yield
    ffmpeg.remove_private_ffmpeg()


def test_wheel_ffmpeg_is_provided_and_removed(no_system_ffmpeg):
    path = ffmpeg.ensure_ffmpeg_on_path()
    assert os.access(path, os.X_OK) and os.path.basename(path) == "ffmpeg"
    folder = os.path.dirname(path)
    ffmpeg.remove_private_ffmpeg()
    assert not os.path.exists(folder)


def test_gradio_that_needs_ffprobe_is_refused_with_what_to_do(no_system_ffmpeg, monkeypatch):
    # Gradio 6.17's streaming path, as found in its gradio/components/audio.py.
    monkeypatch.setattr(gr.Audio, "_convert_to_adts", staticmethod(lambda data: (data, 0.0)), raising=False)
    with pytest.raises(RuntimeError, match="needs ffprobe on PATH.*install ffmpeg"):
        ffmpeg.ensure_ffmpeg_on_path()
