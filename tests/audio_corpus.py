"""Builds prompt-audio variants from the real prompts (nothing large is committed).

Each function writes one file into ``folder`` and returns its path. Encoded formats are written
with PyAV (FFmpeg inside its wheel), the way browsers and phones would produce them.
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import soundfile as sf


def read(path: Path) -> tuple[np.ndarray, int]:
    data, sr = sf.read(str(path), dtype="float32")
    return data, sr


def encode(samples: np.ndarray, sr: int, path: Path, container: str, codec: str, rate: int | None = None) -> Path:
    """Encode mono float32 samples with PyAV into ``path``."""
    rate = rate or sr
    if rate != sr:
        import torch
        import torchaudio.functional as F

        samples = F.resample(torch.from_numpy(samples), sr, rate).numpy()
    with av.open(str(path), mode="w", format=container) as out:
        stream = out.add_stream(codec, rate=rate)
        stream.layout = "mono"
        frame_size = stream.codec_context.frame_size or 1024
        fmt = stream.codec_context.format.name
        pcm16 = (np.clip(samples, -1, 1) * 32767).astype(np.int16)
        for start in range(0, len(pcm16), frame_size):
            chunk = pcm16[start:start + frame_size]
            frame = av.AudioFrame.from_ndarray(chunk[None, :], format="s16", layout="mono")
            frame.sample_rate = rate
            frame.pts = start
            for resampled in av.AudioResampler(format=fmt, layout="mono", rate=rate).resample(frame):
                for packet in stream.encode(resampled):
                    out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


def webm_opus(samples, sr, folder: Path) -> Path:
    return encode(samples, sr, folder / "recording.webm", "webm", "libopus", rate=48000)


def ogg_opus(samples, sr, folder: Path) -> Path:
    return encode(samples, sr, folder / "voice.opus", "ogg", "libopus", rate=48000)


def mp3(samples, sr, folder: Path) -> Path:
    return encode(samples, sr, folder / "voice.mp3", "mp3", "libmp3lame")


def m4a_aac(samples, sr, folder: Path) -> Path:
    return encode(samples, sr, folder / "voice.m4a", "ipod", "aac")
