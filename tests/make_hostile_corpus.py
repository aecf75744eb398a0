"""Hostile prompt-audio corpus, built from the real prompts (nothing large is committed).

Every :class:`Case` writes one file and says what the product promises for it: **accepted**
(audio comes out; ``keywords`` then name words that must appear in the result's notes) or
**refused** with a clear message (``keywords`` must appear in it). Encoded formats are written
with PyAV (FFmpeg inside its wheel) and soundfile, the way browsers, phones and editors write them.

Run alone to look at the files::

    .venv/bin/python tests/make_hostile_corpus.py OUTDIR

It writes the files and ``OUTDIR/cases.json`` (name, file, accept, keywords, why). Tests import it
(``from . import make_hostile_corpus``) and call :func:`build_corpus` into a temporary folder.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import struct
import sys
import zipfile
from pathlib import Path
from typing import Callable

import av
import numpy as np
import soundfile as sf

PROMPTS_DIR = Path(os.environ.get("COSYVOICE_UI_PROMPTS",
                                  Path(__file__).resolve().parent.parent.parent / "shared" / "prompts"))
# The prompt most variants are made from: English, 24 kHz, 5.3 s, 16-bit.
BASE_PROMPT = "f5_basic_ref_en.wav"


# --------------------------------------------------------------------------------------------
# Reading and encoding (also used by tests/test_inputs_prompt_audio.py through audio_corpus)
# --------------------------------------------------------------------------------------------

def read(path: Path) -> tuple[np.ndarray, int]:
    """A prompt as float32 samples (``(n,)`` mono or ``(n, channels)``) and its rate."""
    data, sr = sf.read(str(path), dtype="float32")
    return data, sr


def resample_to(samples: np.ndarray, sr: int, rate: int) -> np.ndarray:
    if rate == sr:
        return samples
    import torch
    import torchaudio.functional as F

    return F.resample(torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32)), sr, rate).numpy()


def encode(samples: np.ndarray, sr: int, path: Path, container: str, codec: str, rate: int | None = None,
           video: bool = False, metadata: dict[str, str] | None = None) -> Path:
    """Encode mono float32 samples with PyAV into ``path`` (optionally next to a small video
    stream, as a phone's screen or camera recording has), with the container's ``metadata`` tags."""
    rate = rate or sr
    samples = resample_to(samples, sr, rate)
    with av.open(str(path), mode="w", format=container) as out:
        out.metadata.update(metadata or {})
        vstream = _video_stream(out) if video else None
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
        if vstream is not None:
            _mux_video(out, vstream, int(len(samples) / rate * 10))
    return path


def _video_stream(out):
    """A tiny 10 fps MPEG-4 video stream in container ``out``."""
    vstream = out.add_stream("mpeg4", rate=10)
    vstream.width, vstream.height, vstream.pix_fmt = 64, 48, "yuv420p"
    return vstream


def _mux_video(out, vstream, frames: int) -> None:
    """Encode ``frames`` frames of changing grey into ``vstream`` and flush it."""
    for i in range(frames):
        vframe = av.VideoFrame.from_ndarray(np.full((48, 64, 3), (i * 7) % 255, dtype=np.uint8), format="rgb24")
        vframe.pts = i
        for packet in vstream.encode(vframe):
            out.mux(packet)
    for packet in vstream.encode(None):
        out.mux(packet)


def webm_opus(samples, sr, folder: Path) -> Path:
    return encode(samples, sr, folder / "recording.webm", "webm", "libopus", rate=48000)


def ogg_opus(samples, sr, folder: Path) -> Path:
    return encode(samples, sr, folder / "voice.opus", "ogg", "libopus", rate=48000)


def mp3(samples, sr, folder: Path) -> Path:
    return encode(samples, sr, folder / "voice.mp3", "mp3", "libmp3lame")


def m4a_aac(samples, sr, folder: Path) -> Path:
    return encode(samples, sr, folder / "voice.m4a", "ipod", "aac")


def phone_3gp(samples, sr, folder: Path) -> Path:
    return encode(samples, sr, folder / "voice_memo.3gp", "3gp", "aac")


def apple_caf(samples, sr, folder: Path) -> Path:
    return encode(samples, sr, folder / "voice_memo.caf", "caf", "pcm_s16le")


def camera_avi(samples, sr, folder: Path) -> Path:
    return encode(samples, sr, folder / "camera.avi", "avi", "mp3", video=True)


def video_m4v(samples, sr, folder: Path) -> Path:
    return encode(samples, sr, folder / "clip.m4v", "mp4", "aac", video=True)


def video_only_mp4(path: Path, seconds: float = 2.0) -> Path:
    with av.open(str(path), mode="w", format="mp4") as out:
        _mux_video(out, _video_stream(out), int(seconds * 10))
    return path


# --------------------------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------------------------

class Sources:
    """The real prompts, read once."""

    def __init__(self, prompts_dir: Path = PROMPTS_DIR) -> None:
        self.dir = Path(prompts_dir)
        self._cache: dict[str, tuple[np.ndarray, int]] = {}

    def get(self, name: str = BASE_PROMPT) -> tuple[np.ndarray, int]:
        if name not in self._cache:
            path = self.dir / name
            if not path.is_file():
                raise FileNotFoundError(f"real prompt {path} is missing (set COSYVOICE_UI_PROMPTS)")
            data, sr = read(path)
            if data.ndim > 1:
                data = data.mean(axis=1)
            self._cache[name] = (data.astype(np.float32), sr)
        return self._cache[name]

    def path(self, name: str = BASE_PROMPT) -> Path:
        return self.dir / name


@dataclasses.dataclass(frozen=True)
class Case:
    """One hostile input.

    Attributes:
        name: short id (used as the pytest id).
        filename: the name the file gets (its extension is part of the test).
        accept: True: the app must answer with audio; False: a refusal whose message holds ``keywords``.
        keywords: for a refusal, words its message must contain; for an accepted file, words that
            must appear in the result's ``notes``.
        why: what the case stands for.
        make: writes the file: ``make(path, sources)``.
        bug: set while the product breaks this promise: the reason, for an expected failure.
    """

    name: str
    filename: str
    accept: bool
    keywords: tuple[str, ...]
    why: str
    make: Callable[[Path, Sources], None]
    bug: str | None = None


def _wav(data: np.ndarray, sr: int, subtype: str = "PCM_16", fmt: str = "WAV"):
    def make(path: Path, src: Sources) -> None:
        sf.write(str(path), data, sr, subtype=subtype, format=fmt)
    return make


def _speech_wav(transform: Callable[[np.ndarray, int], tuple[np.ndarray, int]], subtype: str = "PCM_16",
                fmt: str = "WAV", prompt: str = BASE_PROMPT):
    def make(path: Path, src: Sources) -> None:
        data, sr = transform(*src.get(prompt))
        sf.write(str(path), data, sr, subtype=subtype, format=fmt)
    return make


def _encoded(container: str, codec: str, rate: int | None = None, prompt: str = BASE_PROMPT, video: bool = False,
             transform: Callable[[np.ndarray], np.ndarray] = lambda x: x):
    def make(path: Path, src: Sources) -> None:
        data, sr = src.get(prompt)
        encode(transform(data), sr, path, container, codec, rate=rate, video=video)
    return make


def _bytes(fn: Callable[[Sources], bytes]):
    def make(path: Path, src: Sources) -> None:
        path.write_bytes(fn(src))
    return make


def _copy(prompt: str):
    def make(path: Path, src: Sources) -> None:
        shutil.copyfile(src.path(prompt), path)
    return make


def _encoded_bytes(container: str, codec: str, suffix: str, rate: int | None = None):
    """A valid encoded file's bytes, to be written under a misleading name."""
    def fn(src: Sources) -> bytes:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / f"x.{suffix}"
            data, sr = src.get()
            encode(data, sr, p, container, codec, rate=rate)
            return p.read_bytes()
    return fn


def _sf_bytes(fmt: str, subtype: str):
    def fn(src: Sources) -> bytes:
        buf = io.BytesIO()
        data, sr = src.get()
        sf.write(buf, data, sr, format=fmt, subtype=subtype)
        return buf.getvalue()
    return fn


def _flac_without_length(seconds: float | None = None):
    def fn(src: Sources) -> bytes:
        """A FLAC whose STREAMINFO leaves the total sample count at 0 ("unknown"), as encoders
        writing to a pipe do (``ffmpeg ... -f flac pipe:1``)."""
        data, sr = src.get()
        if seconds is not None:
            data, sr = _tile(seconds)(data, sr)
        buf = io.BytesIO()
        sf.write(buf, data, sr, format="FLAC", subtype="PCM_16")
        raw = bytearray(buf.getvalue())
        assert raw[:4] == b"fLaC" and raw[4] & 0x7F == 0  # STREAMINFO first
        # 4 (fLaC) + 4 (block header) + 10: then 20 bits rate, 3 channels, 5 bits per sample, 36 total samples.
        raw[21] &= 0xF0
        raw[22:26] = b"\x00\x00\x00\x00"
        return bytes(raw)
    return fn


def _huge_declared_length(src: Sources) -> bytes:
    """The real prompt with RIFF and data chunk sizes set to ~4 GB (a recorder that crashed
    before fixing its header, or a hostile header)."""
    raw = bytearray(src.path().read_bytes())
    assert raw[:4] == b"RIFF" and raw[8:12] == b"WAVE"
    raw[4:8] = struct.pack("<I", 0xFFFFFFF0)
    pos = 12
    while pos + 8 <= len(raw):
        cid, size = raw[pos:pos + 4], struct.unpack("<I", raw[pos + 4:pos + 8])[0]
        if cid == b"data":
            raw[pos + 4:pos + 8] = struct.pack("<I", 0xFFFFFFF0 - pos)
            return bytes(raw)
        pos += 8 + size + (size & 1)
    raise AssertionError("no data chunk")


def _claimed_sample_rate(rate: int) -> Callable[[Sources], bytes]:
    def make(src: Sources) -> bytes:
        """A 16-bit WAV whose header claims ``rate`` (fmt chunk patched; the samples are speech)."""
        buf = io.BytesIO()
        data, sr = src.get()
        sf.write(buf, data, sr, format="WAV", subtype="PCM_16")
        raw = bytearray(buf.getvalue())
        pos = raw.index(b"fmt ") + 8
        raw[pos + 4:pos + 8] = struct.pack("<I", rate)
        raw[pos + 8:pos + 12] = struct.pack("<I", rate * 2 & 0xFFFFFFFF)
        return bytes(raw)
    return make


def _zip_of_wav(src: Sources) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.write(src.path(), arcname=BASE_PROMPT)
    return buf.getvalue()


def _glitch(x: np.ndarray, sr: int) -> tuple[np.ndarray, int]:
    y = x.astype(np.float32).copy()
    y[len(y) // 2:len(y) // 2 + 100] = 1e6
    return y, sr


def _loud_burst(share: float):
    def t(x: np.ndarray, sr: int) -> tuple[np.ndarray, int]:
        y = x.astype(np.float32).copy()
        n = int(len(y) * share)
        y[:n] = 1e6 * np.sin(2 * np.pi * 1000 * np.arange(n) / sr)
        return y, sr
    return t


def _quiet_with_burst(x: np.ndarray, sr: int) -> tuple[np.ndarray, int]:
    y = (0.01 * x / np.max(np.abs(x))).astype(np.float32)
    start = int(5.0 * sr)
    y[start:start + int(0.05 * sr)] = 50 * _rng().uniform(-1, 1, int(0.05 * sr))
    return y, sr


def _with_rumble(x: np.ndarray, sr: int) -> tuple[np.ndarray, int]:
    y = 0.5 * x / np.max(np.abs(x)) + 0.45 * np.sin(2 * np.pi * 15 * np.arange(len(x)) / sr)
    return (y / max(1.0, float(np.max(np.abs(y))))).astype(np.float32), sr


def _hot_with_click(x: np.ndarray, sr: int) -> tuple[np.ndarray, int]:
    y = (1.5 * x / np.max(np.abs(x))).astype(np.float32)
    y[len(y) // 3:len(y) // 3 + 10] = 20.0
    return y, sr


def _padded_hot(x: np.ndarray, sr: int) -> tuple[np.ndarray, int]:
    pad = np.zeros(12 * sr, dtype=np.float32)
    return np.concatenate([pad, 3.0 * x[:5 * sr] / np.max(np.abs(x[:5 * sr])), pad]).astype(np.float32), sr


def _speech_then_tone(x: np.ndarray, sr: int) -> tuple[np.ndarray, int]:
    tone = 0.5 * np.sin(2 * np.pi * 440 * np.arange(10 * sr) / sr)
    return np.concatenate([x[sr:5 * sr], tone]).astype(np.float32), sr


def _three_tones(sr: int = 24000) -> np.ndarray:
    t = np.arange(4 * sr) / sr
    return sum(0.15 * np.sin(2 * np.pi * hz * t) for hz in (500, 800, 1300)).astype(np.float32)


def _noise_burst(share: float, level: float):
    def t(x: np.ndarray, sr: int) -> tuple[np.ndarray, int]:
        y = x.astype(np.float32).copy()
        start, n = sr, int(len(y) * share)
        y[start:start + n] = level * _rng().uniform(-1, 1, n)
        return y, sr
    return t


def _beep_before(x: np.ndarray, sr: int) -> tuple[np.ndarray, int]:
    beep = 0.9 * np.sin(2 * np.pi * 1000 * np.arange(int(0.5 * sr)) / sr)
    return np.concatenate([beep, np.zeros(int(0.3 * sr)), x]).astype(np.float32), sr


def _hum_over(x: np.ndarray, sr: int) -> tuple[np.ndarray, int]:
    hum = 2 * np.max(np.abs(x)) * np.sin(2 * np.pi * 50 * np.arange(len(x)) / sr)
    y = x + hum
    return (y / np.max(np.abs(y)) * 0.9).astype(np.float32), sr


def under_speech(x: np.ndarray, sr: int, db: float, lines_hz: dict[float, float]) -> tuple[np.ndarray, int]:
    """``x`` with steady sines (frequency -> relative amplitude) ``db`` decibels under the speech's
    level (RMS of its samples over 0.01), as a hum, a beep or rumble would be recorded."""
    t = np.arange(len(x)) / sr
    wave = sum(a * np.sin(2 * np.pi * hz * t) for hz, a in lines_hz.items())
    wave = wave / np.sqrt(np.mean(wave ** 2))
    level = float(np.sqrt(np.mean(x[np.abs(x) > 0.01] ** 2)))
    y = 0.4 * x + 0.4 * level * 10 ** (db / 20) * wave
    return y.astype(np.float32), sr


MAINS_HUM = {60.0: 1.0, 180.0: 0.5, 300.0: 0.3}


def _two_tone_alarm(period_s: float = 0.5, sr: int = 24000) -> np.ndarray:
    t = np.arange(4 * sr) / sr
    hz = np.where((t // period_s).astype(int) % 2 == 0, 400.0, 500.0)
    return (0.3 * np.sin(2 * np.pi * np.cumsum(hz) / sr)).astype(np.float32)


def _busy_signal(sr: int = 24000) -> np.ndarray:
    t = np.arange(4 * sr) / sr
    return ((0.2 * np.sin(2 * np.pi * 480 * t) + 0.2 * np.sin(2 * np.pi * 620 * t)) * ((t % 1.0) < 0.5)).astype(np.float32)


def _tile(seconds: float):
    def t(x: np.ndarray, sr: int) -> tuple[np.ndarray, int]:
        return np.tile(x, int(np.ceil(seconds * sr / len(x))))[: int(seconds * sr)], sr
    return t


def _speech_clip(seconds: float, pad_s: float = 1.0):
    # A piece from inside the speech, with silence around it (so trimming leaves `seconds`).
    def t(x: np.ndarray, sr: int) -> tuple[np.ndarray, int]:
        clip = x[sr: sr + int(seconds * sr)]
        z = np.zeros(int(pad_s * sr), dtype=np.float32)
        return np.concatenate([z, clip, z]), sr
    return t


def _with_inf(x: np.ndarray, sr: int):
    y = x.copy()
    y[sr: sr + 10] = np.inf
    return y, sr


def _stereo_one_silent(x, sr):
    return np.stack([x, np.zeros_like(x)], axis=1), sr


def _eight_channels_one_used(x, sr):
    out = np.zeros((len(x), 8), dtype=np.float32)
    out[:, 3] = x
    return out, sr


def _clipped(x, sr):
    return np.clip(x * 30.0, -1.0, 1.0), sr


def _leading_silence(x, sr):
    return np.concatenate([np.zeros(20 * sr, dtype=np.float32), x]), sr


def _rng():
    return np.random.default_rng(20240229)


CASES: tuple[Case, ...] = (
    # ---- accepted: audio comes out -----------------------------------------------------------
    Case("reference_wav", "f5_basic_ref_en.wav", True, (), "the real prompt itself (control)", _copy(BASE_PROMPT)),
    Case("real_flac", "f5_town.flac", True, (), "a real FLAC prompt as shipped", _copy("f5_town.flac")),
    Case("hires_24bit_96k", "hires.wav", True, (), "studio export: 24-bit PCM at 96 kHz",
         _speech_wav(lambda x, sr: (resample_to(x, sr, 96000), 96000), subtype="PCM_24", prompt="xtts_male.wav")),
    Case("browser_webm_opus", "recording.webm", True, (), "what Chrome/Firefox MediaRecorder uploads",
         _encoded("webm", "libopus", 48000)),
    Case("ogg_opus", "voice.opus", True, (), "Ogg/Opus (WhatsApp/Telegram voice notes)", _encoded("ogg", "libopus", 48000)),
    Case("ogg_vorbis", "voice.ogg", True, (), "Ogg/Vorbis", _speech_wav(lambda x, sr: (x, sr), subtype="VORBIS", fmt="OGG")),
    Case("m4a_aac", "voice.m4a", True, (), "phone voice memo (AAC in MP4)", _encoded("ipod", "aac", prompt="xtts_female.wav")),
    Case("m4a_alac", "lossless.m4a", True, (), "Apple lossless in MP4", _encoded("ipod", "alac")),
    Case("mp3", "voice.mp3", True, (), "MP3", _encoded("mp3", "libmp3lame", prompt="xtts_calm_female.wav")),
    Case("mp4_video_with_audio", "screen_recording.mp4", True, (), "a video with a voice track (first audio stream used)",
         _encoded("mp4", "aac", video=True)),
    Case("flac_without_length", "piped.flac", True, (), "a FLAC written through a pipe: no length in its header "
         "(refused as '209146758205323.7 s long')", _bytes(_flac_without_length())),
    Case("flac_24bit", "voice.flac", True, (), "FLAC 24-bit", _speech_wav(lambda x, sr: (x, sr), subtype="PCM_24", fmt="FLAC")),
    Case("aiff", "voice.aiff", True, (), "AIFF (macOS exports)", _speech_wav(lambda x, sr: (x, sr), fmt="AIFF")),
    Case("pcm_u8", "eightbit.wav", True, (), "8-bit unsigned WAV", _speech_wav(lambda x, sr: (x, sr), subtype="PCM_U8")),
    Case("ulaw_16k", "ulaw.wav", True, (), "mu-law WAV at 16 kHz (lowest accepted rate)",
         _speech_wav(lambda x, sr: (resample_to(x, sr, 16000), 16000), subtype="ULAW")),
    Case("stereo_one_silent_channel", "stereo_left_only.wav", True, (), "a stereo recording with a dead channel",
         _speech_wav(_stereo_one_silent)),
    Case("opposite_phase_stereo", "phase.wav", True, ("opposite phase",), "channels cancel when averaged",
         _speech_wav(lambda x, sr: (np.stack([x, -x], axis=1), sr))),
    Case("eight_channels_one_used", "multitrack.wav", True, (), "an 8-channel file with speech on one channel",
         _speech_wav(_eight_channels_one_used)),
    Case("clipped_saturated", "clipped.wav", True, ("clipped",), "gain x30 then hard clipping", _speech_wav(_clipped)),
    Case("float_over_full_scale", "hot_float.wav", True, ("clipped",), "32-bit float WAV peaking ~20x over full scale",
         _speech_wav(lambda x, sr: (x * 40.0, sr), subtype="FLOAT")),
    Case("quiet_speech", "quiet.wav", True, (), "speech at about -50 dBFS peak-normalized (a far microphone)",
         _speech_wav(lambda x, sr: (x * (10 ** (-50 / 20) / max(1e-9, float(np.max(np.abs(x))))), sr), subtype="FLOAT")),
    Case("long_leading_silence", "late_start.wav", True, (), "20 s of silence before the speech (trimmed away)",
         _speech_wav(_leading_silence)),
    Case("short_2s", "two_seconds.wav", True, ("3-10 s",), "2.2 s of speech: accepted with a hint", _speech_wav(
        lambda x, sr: (x[: int(2.2 * sr)], sr))),
    Case("flac_named_wav", "actually_flac.wav", True, (), "a valid FLAC with a .wav name", _bytes(_sf_bytes("FLAC", "PCM_16"))),
    Case("mp3_named_wav", "actually_mp3.wav", True, (), "a valid MP3 with a .wav name",
         _bytes(_encoded_bytes("mp3", "libmp3lame", "mp3"))),
    Case("webm_named_m4a", "actually_webm.m4a", True, (), "a browser WebM with an .m4a name",
         _bytes(_encoded_bytes("webm", "libopus", "webm", rate=48000))),
    Case("wav_no_extension", "voice", True, (), "a valid WAV with no extension at all", _bytes(_sf_bytes("WAV", "PCM_16"))),
    Case("speech_with_dc_offset", "dc_speech.wav", True, (), "speech riding on a +0.4 DC offset (a bad sound card)",
         _speech_wav(lambda x, sr: (0.5 * x + 0.4, sr), subtype="FLOAT")),
    Case("float64_absurd_scale", "scaled_1e300.wav", True, ("scaled down",),
         "64-bit float speech x1e300, finite (refused as 'invalid samples': it overflowed float32)",
         _speech_wav(lambda x, sr: (x.astype(np.float64) * 1e300, sr), subtype="DOUBLE")),
    Case("glitch_burst", "glitch.wav", True, ("glitch",),
         "speech with 100 samples at 1e6 (scaling by them left 0.12 s above the silence threshold)",
         _speech_wav(_glitch, subtype="FLOAT", prompt="xtts_female.wav")),
    Case("loud_burst_then_speech", "burst.wav", False, ("scaled down", "past full scale"),
         "the first 10 % a tone at 1e6, then speech: scaled with the burst, the speech is too quiet; the refusal "
         "says the file was scaled (it blamed the recording alone)",
         _speech_wav(_loud_burst(0.10), subtype="FLOAT", prompt="xtts_female.wav")),
    Case("quiet_speech_and_a_burst", "quiet_burst.wav", True, ("glitch", "removed"),
         "speech at -40 dBFS with 50 ms of noise at 50 times full scale (clipped, the burst set the level "
         "silence trimming measured from, and the speech was trimmed away)",
         _speech_wav(_quiet_with_burst, subtype="FLOAT", prompt="xtts_female.wav")),
    Case("hot_speech_with_a_click", "hot_click.wav", True, ("10 sample(s)", "removed", "up to 1.5 times"),
         "speech at 1.5 times full scale with 10 samples at 20: only the click is removed, then the speech is "
         "scaled (its own peaks past full scale were zeroed with the click; twenty-ninth newcomer session)",
         _speech_wav(_hot_with_click, subtype="FLOAT", prompt="f5_basic_ref_en.wav")),
    Case("speech_over_infrasound", "rumble.wav", True, (),
         "speech peaking at 0.5 over a 15 Hz rumble of 0.45 (inaudible; refused as 'almost no voiced speech', and "
         "far quieter rumbles moved the cloned pitch; thirtieth newcomer session)",
         _speech_wav(_with_rumble, prompt="xtts_male.wav")),
    Case("loud_speech_in_silence", "padded_hot.wav", True, ("scaled down",),
         "5 s of speech at 3 times full scale with 12 s of silence on each side (its loud syllables were taken "
         "for bursts and silenced; twenty-eighth newcomer session)",
         _speech_wav(_padded_hot, subtype="FLOAT", prompt="xtts_female.wav")),
    Case("noise_burst_a_third", "burst35.wav", False, ("voiced speech", "scaled down"),
         "speech with 35 % of it noise at 100 times full scale: the burst sets the scale, and the engine's "
         "refusal ('almost no voiced speech') did not say the file had been scaled (twenty-seventh)",
         _speech_wav(_noise_burst(0.35, 100.0), subtype="FLOAT", prompt="xtts_female.wav")),
    Case("beep_then_speech", "voicemail.wav", True, (),
         "a 0.5 s 1 kHz beep, 0.3 s of silence, then speech (refused as 'one steady tone' by a whole-clip measure)",
         _speech_wav(_beep_before, prompt="cv_zero_shot_prompt.wav")),
    Case("float_absurd_scale", "scaled_1e30.wav", True, ("scaled down",),
         "32-bit float speech x1e30 (it was refused as 'no voiced speech': the power sums overflowed)",
         _speech_wav(lambda x, sr: (x * np.float32(1e30), sr), subtype="FLOAT")),
    Case("huge_declared_length", "crashed_recorder.wav", True, (),
         "RIFF/data sizes claim ~4 GB, the file holds 5 s (libsndfile reads what is there)", _bytes(_huge_declared_length)),
    # ---- refused with a clear message ------------------------------------------------------------
    Case("empty", "empty.wav", False, ("empty",), "0 bytes", _bytes(lambda s: b"")),
    Case("truncated_header", "cut.wav", False, ("could not be decoded",), "first 30 bytes of a WAV",
         _bytes(lambda s: s.path().read_bytes()[:30])),
    Case("truncated_to_100_bytes", "cut100.wav", False, ("truncated",), "a WAV cut after its header",
         _bytes(lambda s: s.path().read_bytes()[:100])),
    Case("one_sample", "one_sample.wav", False, ("truncated",), "a WAV with a single sample",
         _wav(np.array([0.5], dtype=np.float32), 24000)),
    Case("zero_samples", "stopped_at_once.wav", False, ("holds no sound at all (0 samples)",),
         "a well-formed WAV with no samples (it was called 'not an audio file'; helper-106)",
         _wav(np.zeros(0, dtype=np.float32), 24000)),
    Case("text_renamed_wav", "notes.wav", False, ("could not be decoded", "WAV"), "a text file named .wav",
         _bytes(lambda s: b"this is not audio at all\n" * 20)),
    Case("zip_named_wav", "archive.wav", False, ("could not be decoded",), "a zip (holding a wav) named .wav",
         _bytes(_zip_of_wav)),
    Case("zip_file", "voice.zip", False, ("could not be decoded",), "a zip archive with its own extension",
         _bytes(_zip_of_wav)),
    Case("aiff_dwvw", "tape.aiff", False, ("could not be decoded", "an encoding this server cannot read"),
         "a valid 16-bit DWVW AIFF that libsndfile writes but cannot read back (it was called truncated or "
         "damaged; helper-150)", _speech_wav(lambda x, sr: (x, sr), subtype="DWVW_16", fmt="AIFF")),
    Case("video_without_audio", "silent_video.mp4", False, ("could not be decoded",), "an MP4 with only video",
         lambda path, src: video_only_mp4(path)),
    Case("all_nan", "nan.wav", False, ("NaN",), "32-bit float WAV of NaN",
         _wav(np.full(48000, np.nan, dtype=np.float32), 24000, subtype="FLOAT")),
    Case("some_inf", "inf.wav", False, ("invalid sample(s)",), "speech with 10 infinite samples", _speech_wav(_with_inf, subtype="FLOAT")),
    Case("all_zero", "zero.wav", False, ("silent",), "3 s of digital silence", _wav(np.zeros(72000, dtype=np.float32), 24000)),
    Case("too_short_0_3s", "short.wav", False, ("at least 1 s",), "0.3 s of speech between silences",
         _speech_wav(_speech_clip(0.3))),
    Case("too_long_45s", "long.wav", False, ("30 s",), "45 s of speech", _speech_wav(_tile(45.0))),
    Case("too_long_flac_without_length", "long_piped.flac", False, ("more than 120 s", "30 s"),
         "130 s in a FLAC with no length in its header: decoding stops at 120 s", _bytes(_flac_without_length(130.0))),
    Case("too_long_opus_130s", "long.opus", False, ("30 s",), "130 s of speech in a small Opus file",
         _encoded("ogg", "libopus", 48000, transform=lambda x: np.tile(x, 25))),
    Case("telephone_8k", "phone.wav", False, ("8000 Hz", "16 kHz"), "8 kHz telephone audio",
         _speech_wav(lambda x, sr: (resample_to(x, sr, 8000), 8000))),
    Case("absurd_sample_rate", "fast.wav", False, ("damaged", "a sample rate of 4000000000 Hz"),
         "header claims a 4 GHz sample rate (got the generic 'could not be decoded'; helper-105)",
         _bytes(_claimed_sample_rate(4_000_000_000))),
    Case("one_hz_header", "slow.wav", False, ("sampled at 1 Hz", "16 kHz"),
         "header claims 1 Hz (it was refused as '220500 s long')", _bytes(_claimed_sample_rate(1))),
    Case("pure_tone_220hz", "tone.wav", False, ("steady tone", "220 Hz"),
         "a steady 220 Hz sine: audible and 'voiced', so it was cloned (twenty-third newcomer session)",
         _wav((0.3 * np.sin(2 * np.pi * 220 * np.arange(4 * 24000) / 24000)).astype(np.float32), 24000)),
    Case("hum_over_speech", "hum_over_speech.wav", False, ("steady tone", "50 Hz", "hum"),
         "speech under a 50 Hz hum twice as loud as the speech's peak", _speech_wav(_hum_over)),
    Case("mains_hum_under_speech", "hum_under.wav", True, ("steady tone under the speech", "about 60, 18"),
         "60 Hz mains hum with harmonics 20 dB under the speech (a female voice's pitch was taken as 104 Hz, not "
         "155 Hz; thirty-second newcomer session): filtered out", _speech_wav(
             lambda x, sr: under_speech(x, sr, -20, MAINS_HUM), prompt="xtts_female.wav")),
    Case("tone_under_speech", "tone_under.wav", True, ("steady tone under the speech", "220 Hz"),
         "a 220 Hz tone 6 dB under a male voice (its pitch was taken as 161 Hz, not 101 Hz): filtered out",
         _speech_wav(lambda x, sr: under_speech(x, sr, -6, {220.0: 1.0}), prompt="xtts_male.wav")),
    Case("rumble_45hz_under_speech", "rumble_under.wav", True, ("steady tone under the speech", "45 Hz"),
         "a 45 Hz rumble 6 dB under the speech, above the 30 Hz high-pass (refused as 'no voiced speech')",
         _speech_wav(lambda x, sr: under_speech(x, sr, -6, {45.0: 1.0}), prompt="xtts_male.wav")),
    Case("two_tone_alarm", "alarm.wav", False, ("steady tones", "400 and 500 Hz"),
         "a siren alternating 400 and 500 Hz every 0.5 s (refused as 'about 450 Hz', a tone it does not hold)",
         _wav(_two_tone_alarm(), 24000)),
    Case("fast_two_tone_alarm", "siren.wav", False, ("steady tones", "400 and 500 Hz"),
         "400 and 500 Hz switching every 0.25 s: both in every half second, so the one-peak measure let it "
         "through as a voice (twenty-seventh newcomer session)", _wav(_two_tone_alarm(0.25), 24000)),
    Case("three_tones_at_once", "chord.wav", False, ("steady tones", "500, 800 and 1300 Hz"),
         "three steady tones at once (accepted as a voice; twenty-eighth newcomer session)", _wav(_three_tones(), 24000)),
    Case("speech_then_long_tone", "speech_tone.wav", False, ("steady tone", "440 Hz"),
         "4 s of speech, then 10 s of a 440 Hz tone: under 80 % tonal (the old rule), so it was accepted and "
         "the tone set the cloned pitch (twenty-eighth newcomer session)", _speech_wav(_speech_then_tone, prompt="xtts_female.wav")),
    Case("busy_signal", "busy.wav", False, ("steady tones", "480 and 620 Hz"),
         "a US busy signal, 480 + 620 Hz at once, 0.5 s on and 0.5 s off (accepted as a voice)", _wav(_busy_signal(), 24000)),
    Case("tone_with_hiss", "beep.wav", False, ("steady tone",), "a 1 kHz test tone with a hiss under it",
         _wav((0.3 * np.sin(2 * np.pi * 1000 * np.arange(4 * 24000) / 24000)
               + _rng().normal(0, 0.01, 4 * 24000)).astype(np.float32), 24000)),
    # Named as an offset: "silent" for a file an editor shows at -6 dBFS (helper-59).
    Case("dc_offset_only", "dc.wav", False, ("constant offset (-6 dBFS of DC), no sound",),
         "a constant 0.5: inaudible, no voice at all",
         _wav(np.full(4 * 24000, 0.5, dtype=np.float32), 24000)),
    Case("white_noise_loud", "noise.wav", False, ("voiced speech",), "4 s of full-scale white noise",
         _wav(np.clip(_rng().normal(0, 0.5, 4 * 24000), -1, 1).astype(np.float32), 24000)),
    Case("dc_plus_noise_floor", "hum.wav", False, ("voiced speech",), "DC offset with a faint hiss",
         _wav((0.3 + _rng().normal(0, 0.001, 4 * 24000)).astype(np.float32), 24000)),
)


def build_corpus(outdir: Path | str, prompts_dir: Path | str = PROMPTS_DIR,
                 cases: tuple[Case, ...] = CASES) -> list[tuple[Case, Path]]:
    """Write every case into ``outdir`` (one subfolder per case, so names may repeat) and
    ``outdir/cases.json``. Returns ``[(case, path), ...]``."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    src = Sources(Path(prompts_dir))
    written = []
    for case in cases:
        folder = outdir / case.name
        folder.mkdir(exist_ok=True)
        path = folder / case.filename
        case.make(path, src)
        written.append((case, path))
    (outdir / "cases.json").write_text(json.dumps(
        [{"name": c.name, "file": str(p.relative_to(outdir)), "bytes": p.stat().st_size, "accept": c.accept,
          "keywords": list(c.keywords), "why": c.why} for c, p in written], indent=1, ensure_ascii=False))
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: make_hostile_corpus.py OUTDIR", file=sys.stderr)
        return 2
    for case, path in build_corpus(argv[0]):
        verdict = "accept" if case.accept else "refuse"
        print(f"{verdict:6} {path.stat().st_size:>9} B  {case.name:28} {case.why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
