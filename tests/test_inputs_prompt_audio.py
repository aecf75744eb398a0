"""Prompt audio decoding and checks, on the real prompts and variants made from them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from cosyvoice_ui.errors import InputError
from cosyvoice_ui.inputs.prompt_audio import PROMPT_SAMPLE_RATE_HZ, load_prompt_audio

from . import audio_corpus
from .conftest import PROMPTS_DIR, prompt_files


@pytest.mark.parametrize("path", prompt_files(), ids=lambda p: p.name)
def test_every_real_prompt_decodes(path, manifest):
    entry = next(e for e in manifest if e["file"] == path.name)
    prompt = load_prompt_audio(str(path))
    assert prompt.sample_rate_hz == PROMPT_SAMPLE_RATE_HZ
    assert prompt.samples.dtype == np.float32 and prompt.samples.ndim == 1
    assert prompt.source_sample_rate_hz == entry["sample_rate"]
    # Trimming removes silence only: at most a couple of seconds, never speech.
    assert entry["seconds"] - 3.0 < prompt.seconds <= entry["seconds"] + 0.01
    assert np.sqrt(np.mean(prompt.samples ** 2)) > 0.005


@pytest.fixture(scope="module")
def speech():
    return audio_corpus.read(PROMPTS_DIR / "f5_basic_ref_en.wav")


@pytest.mark.parametrize("maker", [audio_corpus.webm_opus, audio_corpus.ogg_opus, audio_corpus.mp3,
                                   audio_corpus.m4a_aac], ids=lambda f: f.__name__)
def test_browser_and_phone_formats_decode(maker, speech, tmp_path):
    samples, sr = speech
    path = maker(samples, sr, tmp_path)
    prompt = load_prompt_audio(str(path))
    assert 4.0 < prompt.seconds < 6.0


def test_stereo_is_mixed_to_mono(speech, tmp_path):
    samples, sr = speech
    path = tmp_path / "stereo.wav"
    sf.write(path, np.stack([samples, 0.5 * samples], axis=1), sr)
    prompt = load_prompt_audio(str(path))
    assert prompt.source_channels == 2 and prompt.samples.ndim == 1


def test_24bit_96k_is_accepted(speech, tmp_path):
    samples, sr = speech
    path = tmp_path / "hires.wav"
    sf.write(path, np.repeat(samples, 4)[: len(samples) * 4], 96000, subtype="PCM_24")
    assert load_prompt_audio(str(path)).source_sample_rate_hz == 96000


def _refused(path, *words):
    with pytest.raises(InputError) as e:
        load_prompt_audio(str(path))
    message = str(e.value)
    for w in words:
        assert w in message, message
    return message


def test_empty_file(tmp_path):
    (tmp_path / "empty.wav").write_bytes(b"")
    _refused(tmp_path / "empty.wav", "empty")


def test_text_renamed_to_wav(tmp_path):
    (tmp_path / "notes.wav").write_text("this is not audio at all\n" * 20)
    _refused(tmp_path / "notes.wav", "could not be decoded", "WAV")


def test_truncated_header(tmp_path):
    data = (PROMPTS_DIR / "f5_basic_ref_en.wav").read_bytes()[:30]
    (tmp_path / "cut.wav").write_bytes(data)
    _refused(tmp_path / "cut.wav", "could not be decoded")


def test_all_nan(tmp_path):
    sf.write(tmp_path / "nan.wav", np.full(48000, np.nan, dtype=np.float32), 24000, subtype="FLOAT")
    _refused(tmp_path / "nan.wav", "NaN")


def test_all_zero_is_silent(tmp_path):
    sf.write(tmp_path / "zero.wav", np.zeros(72000, dtype=np.float32), 24000)
    _refused(tmp_path / "zero.wav", "silent")


def test_a_prompt_longer_than_the_label_asks_for_gets_a_hint():
    """The page's label asks for 3-10 s; a 13.7 s prompt was taken without a word (helper-88)."""
    long = load_prompt_audio(str(PROMPTS_DIR / "cv_cross_lingual_prompt.wav"))
    assert long.seconds > 10 and any("The prompt is long" in n and "3-10 s" in n for n in long.notes), long.notes
    # xtts_female.wav has 10.4 s of sound: a hand-cut recording a little over the label is no news.
    for name in ("xtts_male.wav", "xtts_female.wav"):
        assert not any("is long" in n for n in load_prompt_audio(str(PROMPTS_DIR / name)).notes), name


def test_too_short_after_trim(speech, tmp_path):
    samples, sr = speech
    clip = np.concatenate([np.zeros(sr), samples[sr: sr + int(0.3 * sr)], np.zeros(sr)])
    sf.write(tmp_path / "short.wav", clip, sr)
    _refused(tmp_path / "short.wav", "at least 1 s")


def test_short_prompt_gets_a_hint(speech, tmp_path):
    samples, sr = speech
    sf.write(tmp_path / "two.wav", samples[: int(2.2 * sr)], sr)
    prompt = load_prompt_audio(str(tmp_path / "two.wav"))
    assert any("3-10 s" in n for n in prompt.notes)


def test_too_long(speech, tmp_path):
    samples, sr = speech
    sf.write(tmp_path / "long.wav", np.tile(samples, 9)[: 45 * sr], sr)
    _refused(tmp_path / "long.wav", "30 s")


def test_telephone_codecs_are_refused_before_their_slow_decode(speech, tmp_path):
    """libsndfile decodes G.721/G.723 ADPCM and GSM 6.10 at whatever rate a header states, in the web
    process: 4-6 s of CPU per upload at the sample cap, with no deadline (helper-119). Made for 8 kHz
    calls, they are refused by name before any sample is read, at a rate that passes the rate check."""
    samples, sr = speech  # 24 kHz
    for container, subtype, name in (("AU", "G721_32", "G.721 ADPCM"), ("AU", "G723_40", "G.723 ADPCM"),
                                     ("WAV", "GSM610", "GSM 6.10")):
        path = tmp_path / f"call_{subtype}.{container.lower()}"
        sf.write(path, samples, sr, format=container, subtype=subtype)
        _refused(path, f"encoded as {name}, a telephone codec", "16-bit WAV or FLAC")
    # A codec that is no telephone codec, at the same rate, is used.
    sf.write(tmp_path / "adpcm.wav", samples, sr, format="WAV", subtype="IMA_ADPCM")
    assert load_prompt_audio(str(tmp_path / "adpcm.wav")).seconds > 3


def test_8khz_is_refused_with_what_works(speech, tmp_path):
    samples, sr = speech
    sf.write(tmp_path / "phone.wav", samples[::3], 8000)
    _refused(tmp_path / "phone.wav", "8000 Hz", "16 kHz")


def test_leading_and_trailing_silence_trimmed(speech, tmp_path):
    samples, sr = speech
    padded = np.concatenate([np.zeros(3 * sr, dtype=np.float32), samples, np.zeros(3 * sr, dtype=np.float32)])
    sf.write(tmp_path / "padded.wav", padded, sr)
    prompt = load_prompt_audio(str(tmp_path / "padded.wav"))
    assert prompt.trimmed_s >= 5.5
    assert prompt.seconds < len(samples) / sr + 0.2


def test_sample_rate_sharing_no_factor_with_24k(speech, tmp_path):
    # 47999 Hz and 24 kHz share no factor: a naive sinc resampler needs gigabytes here.
    samples, sr = speech
    sf.write(tmp_path / "odd.wav", np.interp(np.arange(0, len(samples), sr / 47999), np.arange(len(samples)), samples)
             .astype(np.float32), 47999)
    prompt = load_prompt_audio(str(tmp_path / "odd.wav"))
    assert prompt.source_sample_rate_hz == 47999 and 4.0 < prompt.seconds < 6.0


def test_hours_of_compressed_audio_are_refused_without_decoding_it_all(speech, tmp_path):
    samples, sr = speech
    long = np.tile(samples, 30)  # about 160 s
    path = audio_corpus.ogg_opus(long, sr, tmp_path)
    message = _refused(path, "long", "30 s")
    assert "could not be decoded" not in message


@pytest.mark.parametrize("encode", [audio_corpus.ogg_opus, audio_corpus.webm_opus], ids=["ogg", "webm"])
def test_compressed_prompt_past_the_decoding_cap_is_given_its_real_length(speech, tmp_path, encode):
    """Decoding stops at 120 s; the refusal gave that as the file's length ("120.0 s long" for a
    60-minute recording). The container's stated duration is given instead."""
    import re

    samples, sr = speech
    long = np.tile(samples, 30)
    message = _refused(encode(long, sr, tmp_path), "s long")
    stated_s = float(re.search(r"is (?:about )?([0-9.]+) s long", message).group(1))  # Ogg: from libsndfile
    assert abs(stated_s - len(long) / sr) < 2.0, (message, len(long) / sr)


def test_long_wav_refused_from_its_header(tmp_path):
    sf.write(tmp_path / "long.wav", np.zeros(24000 * 200, dtype=np.int16), 24000)
    _refused(tmp_path / "long.wav", "200.0 s long")


def test_truncated_to_a_few_samples_says_truncated(tmp_path):
    data = (PROMPTS_DIR / "f5_basic_ref_en.wav").read_bytes()[:100]
    (tmp_path / "cut.wav").write_bytes(data)
    with pytest.raises(InputError, match="truncated"):
        load_prompt_audio(str(tmp_path / "cut.wav"))


def test_opposite_phase_stereo_uses_one_channel(speech, tmp_path):
    samples, sr = speech
    sf.write(tmp_path / "phase.wav", np.stack([samples, -samples], axis=1), sr)
    prompt = load_prompt_audio(str(tmp_path / "phase.wav"))
    assert any("opposite phase" in n for n in prompt.notes) and prompt.seconds > 4.0


def test_error_does_not_leak_server_paths(tmp_path):
    path = tmp_path / "secret-name.wav"
    path.write_text("not audio\n" * 50)
    message = _refused(path, "could not be decoded")
    assert str(tmp_path) not in message and "secret-name" not in message


def test_an_upload_that_is_gone_is_called_expired_not_missing(tmp_path):
    """A client naming an upload after --temp-file-ttl deleted it was told "No prompt audio was
    received"; it was received, and is gone."""
    message = _refused(tmp_path / ("0" * 64) / "deleted_long_ago.wav", "no longer on the server", "Upload it again")
    assert "No prompt audio was received" not in message and "--temp-file-ttl" not in message
    # A path no upload could have had (Gradio's folders are named by a SHA-256) was told the same
    # (helper-116): it never was on the server.
    message = _refused(tmp_path / "x" / "y.wav", "no upload has that path")
    assert "no longer" not in message and "kept for" not in message, message
    # Nor a path straight in the temporary folder, which holds other files (helper-118).
    (tmp_path / "other.wav").write_bytes(b"RIFF")
    _refused(tmp_path / "made_up.wav", "no upload has that path")


def test_a_cut_wav_is_used_with_a_note_that_it_is_cut(tmp_path):
    """A third of a real WAV (its header still declares 8.64 s) was taken as a short prompt with no
    word that the file was cut (helper-59)."""
    from cosyvoice_ui.inputs.prompt_audio import load_prompt_audio

    whole = (PROMPTS_DIR / "xtts_male.wav").read_bytes()
    (tmp_path / "cut.wav").write_bytes(whole[: len(whole) // 3])
    prompt = load_prompt_audio(str(tmp_path / "cut.wav"))
    assert any("ends before its header says (8.6 s declared, 2.9 s present)" in n for n in prompt.notes), prompt.notes
    assert 2.5 < prompt.seconds < 3.0
    assert not any("header says" in n for n in load_prompt_audio(str(PROMPTS_DIR / "xtts_male.wav")).notes)
    # Cut so short that it is refused: the refusal says the file is cut too (helper-94).
    (tmp_path / "cut_short.wav").write_bytes(whole[:30_000])
    message = _refused(tmp_path / "cut_short.wav", "s of sound", "ends before its header says (8.6 s declared, 0.3 s present)")
    assert "upload the whole file" in message, message
    # With 5,000 bytes of JUNK before the format chunk (helper-112: only the first 4 KiB were read).
    padded = bytes(_junk_before_fmt(bytearray(whole), 5000))
    (tmp_path / "cut_padded.wav").write_bytes(padded[: len(whole) // 3 + 5008])
    prompt = load_prompt_audio(str(tmp_path / "cut_padded.wav"))
    assert any("ends before its header says (8.6 s declared, 2.9 s present)" in n for n in prompt.notes), prompt.notes


def test_text_named_mp3_is_not_called_missing(tmp_path):
    """libsndfile's "File does not exist or is not a regular file (possibly a pipe?)" was quoted for
    a text file named .mp3, which exists (helper-59)."""
    (tmp_path / "plain.mp3").write_text("hello\n")
    message = _refused(tmp_path / "plain.mp3", "could not be decoded", "Format not recognised")
    assert "does not exist" not in message and "pipe" not in message, message


def test_a_misnamed_upload_is_not_called_expired(tmp_path):
    """"voice.wavx" next to the real "voice.wav" was "no longer on the server: uploads are kept for
    1 hour" (helper-56): it never was. Its folder still holds the upload, so the name is wrong."""
    upload_folder = tmp_path / ("0f3a9c" * 11)[:64]
    upload_folder.mkdir()
    (upload_folder / "voice.wav").write_bytes(b"RIFF")
    message = _refused(upload_folder / "voice.wavx", "its upload folder has no file of that name")
    assert "no longer" not in message and "kept for" not in message and str(tmp_path) not in message


def test_the_expired_upload_message_gives_the_running_apps_time(monkeypatch, tmp_path):
    """With --temp-file-ttl 60 the page said "(default 1 hour)" and named a flag its user cannot
    see (forty-fourth newcomer session)."""
    from cosyvoice_ui import temp_files

    for ttl, shown in ((60, "60 s"), (3600, "1 hour"), (1800, "30 minutes"), (86400, "24 hours")):
        monkeypatch.setattr(temp_files, "_upload_ttl_s", ttl)
        _refused(tmp_path / ("a" * 64) / "gone.wav", f"uploads are kept for {shown}. Upload it again.")


def test_hot_speech_after_long_silence_is_scaled_not_cut(speech, tmp_path):
    """In a file mostly silent the 99th percentile is the silence: speech peaks at 1.35 times full
    scale were removed as a "glitch" (thirty-first newcomer session)."""
    samples, sr = speech
    hot = 1.35 * samples[: 3 * sr] / np.max(np.abs(samples[: 3 * sr]))
    sf.write(tmp_path / "late.wav", np.concatenate([np.zeros(110 * sr, dtype=np.float32), hot]).astype(np.float32),
             sr, subtype="FLOAT")
    prompt = load_prompt_audio(str(tmp_path / "late.wav"))
    assert any("scaled down" in n for n in prompt.notes) and not any("removed" in n for n in prompt.notes), prompt.notes


def test_a_file_too_long_to_read_is_refused_for_its_length_as_a_file(speech, tmp_path):
    """130 s of silence and 4 s of speech was refused as "134.0 s long; at most 30 s (after
    trimming silence)", though trimming would have left 4 s (thirty-first newcomer session)."""
    samples, sr = speech
    sf.write(tmp_path / "late.wav", np.concatenate([np.zeros(130 * sr, dtype=np.float32), samples[: 4 * sr]]), sr)
    _refused(tmp_path / "late.wav", "file is 134.0 s long", "files over 120 s are not read, silence included")


def test_a_clip_cut_from_a_long_mp3_or_flac_with_a_byte_tool_is_used_with_a_note(tmp_path):
    """The first ~8 s of a 180 s MP3 or FLAC cut with `head -c` keep the whole file's length in the
    header: both were refused as "180.0 s long" without a sample read, and the FLAC's half packet
    at the end made FFmpeg refuse it as not audio (helper-115). The part present is used, with a
    note; the whole files are still refused for their length."""
    import io

    import av

    samples, sr = audio_corpus.read(PROMPTS_DIR / "f5_main.flac")
    long = np.tile(np.concatenate([samples, np.zeros(sr // 2, np.float32)]), 40)[: 180 * sr].astype(np.float32)
    sf.write(tmp_path / "long.flac", long, sr, subtype="PCM_16")
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp3") as container:
        stream = container.add_stream("libmp3lame", rate=sr)
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(long[None, :], format="flt", layout="mono")
        frame.sample_rate = sr
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            container.mux(packet)
    (tmp_path / "long.mp3").write_bytes(buffer.getvalue())
    for name, note in (("long.flac", "data is damaged or cut off after"), ("long.mp3", "header says it is 180.0 s long")):
        _refused(tmp_path / name, "file is 180.0 s long")
        whole = (tmp_path / name).read_bytes()
        (tmp_path / f"cut_{name}").write_bytes(whole[: len(whole) * 8 // 180])
        prompt = load_prompt_audio(str(tmp_path / f"cut_{name}"))
        assert prompt.seconds > 4 and any(note in n and "the part" in n for n in prompt.notes), (name, prompt.notes)
    # Cut so short that it is refused: the refusal says the file is cut too (helper-117: the FLAC's
    # note, from FFmpeg's decode, was lost).
    for name, said in (("long.flac", "The file is damaged or cut off after"), ("long.mp3", "ends before its header")):
        whole = (tmp_path / name).read_bytes()
        (tmp_path / f"stub_{name}").write_bytes(whole[: len(whole) * 6 // 1800])
        _refused(tmp_path / f"stub_{name}", said, "upload the whole file")


def test_a_damaged_mp3_gets_one_consistent_note(tmp_path):
    """An MP3 with bytes damaged part way: libsndfile stopped at 3.1 s, FFmpeg decoded 8.5 s, and the
    notes said joined ("all of it was used"), damaged packets left out and cut ("the part present
    was used") at once (helper-120). It is one recording, decoded past its damage."""
    import io
    import random

    import av

    samples, sr = audio_corpus.read(PROMPTS_DIR / "xtts_male.wav")
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp3") as container:
        stream = container.add_stream("libmp3lame", rate=sr)
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(samples.astype(np.float32)[None, :], format="flt", layout="mono")
        frame.sample_rate = sr
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            container.mux(packet)
    whole = buffer.getvalue()
    for seed in range(200):  # damage that stops libsndfile well before the end
        damaged = bytearray(whole)
        rng = random.Random(seed)
        for _ in range(60):
            damaged[rng.randrange(1000, len(damaged) - 4)] = rng.randrange(256)
        path = tmp_path / f"damaged_{seed}.mp3"
        path.write_bytes(bytes(damaged))
        try:
            stopped = len(sf.read(path)[0]) / sr < 0.6 * len(samples) / sr
        except Exception:  # noqa: BLE001 - libsndfile refusing it is not the case sought
            stopped = False
        if stopped:
            break
    else:
        pytest.skip("no damage pattern here stops libsndfile early")
    prompt = load_prompt_audio(str(path))
    assert prompt.seconds > 6, (prompt.seconds, prompt.notes)
    assert not any("joined" in n or "header says" in n for n in prompt.notes), prompt.notes


def test_many_channels_at_a_high_rate_are_refused_before_decoding(speech, tmp_path):
    """A 5 MB FLAC of 8 channels at 192 kHz (119.5 s, mostly silence) decoded to 734 MB of
    float32 and took the web process 2 GB higher per upload (thirty-second newcomer session)."""
    from cosyvoice_ui.inputs.prompt_audio import resample

    samples, sr = speech
    high = resample(samples, sr, 192000).astype(np.float32)
    data = np.zeros((10 * 192000, 8), np.float32)
    data[:len(high)] = 0.5 * high[:, None]
    sf.write(tmp_path / "surround.flac", data, 192000, subtype="PCM_16")
    _refused(tmp_path / "surround.flac", "15.4 million samples", "8 channel(s) at 192000 Hz", "mono at 48 kHz")
    # Two channels at 48 kHz for nearly the whole 120 s is within the cap.
    data = np.zeros((119 * 48000, 2), np.float32)
    at_48k = resample(samples, sr, 48000).astype(np.float32)
    data[:len(at_48k)] = 0.5 * at_48k[:, None]
    sf.write(tmp_path / "stereo_long.flac", data, 48000, subtype="PCM_16")
    assert 4.0 < load_prompt_audio(str(tmp_path / "stereo_long.flac")).seconds < 6.0


def test_many_channels_are_refused_while_decoding_a_compressed_file(speech, tmp_path):
    """Compressed files are counted as they decode (PyAV): 6 channels of AAC at 96 kHz for 22 s."""
    import av
    from cosyvoice_ui.inputs.prompt_audio import resample

    samples, sr = speech
    high = resample(samples, sr, 96000).astype(np.float32)
    pcm = np.zeros(22 * 96000, np.float32)
    pcm[:len(high)] = 0.5 * high
    path = tmp_path / "surround.m4a"
    with av.open(str(path), mode="w", format="ipod") as out:
        stream = out.add_stream("aac", rate=96000, layout="5.1")
        size = stream.codec_context.frame_size or 1024
        for start in range(0, len(pcm) - size + 1, size):
            frame = av.AudioFrame.from_ndarray(np.repeat(pcm[None, start:start + size], 6, axis=0), format="fltp",
                                               layout="5.1")
            frame.sample_rate, frame.pts = 96000, start
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    _refused(path, "more than 11.5 million samples", "6 channel(s) at 96000 Hz", "mono at 48 kHz")


@pytest.mark.parametrize("prompt, db, lines_hz", [
    ("xtts_female.wav", -20, "mains"), ("xtts_female.wav", -6, "mains"), ("xtts_male.wav", -6, {220.0: 1.0}),
    ("xtts_male.wav", -12, {150.0: 1.0}), ("xtts_male.wav", -6, {45.0: 1.0}), ("xtts_female.wav", -10, {40.0: 1.0}),
])
def test_a_steady_tone_under_the_speech_does_not_become_its_pitch(prompt, db, lines_hz, tmp_path):
    """WORLD's pitch tracker, which the embedded engine clones the pitch with, locks onto a steady
    line: mains hum 20 dB under a female voice gave 104 Hz for her 155 Hz, a 220 Hz tone 6 dB under
    a male voice 161 Hz for his 101 Hz, a 45 Hz rumble "no voiced speech" (thirty-second newcomer
    session). The lines are found and notched; the pitch stays within 1.5 semitones."""
    from cosyvoice_ui.engines.embedded import voice_conversion as vc

    from .make_hostile_corpus import MAINS_HUM, under_speech

    def pitch_hz(samples):
        return float(np.exp(vc.profile_from_features(vc.analyze(samples, PROMPT_SAMPLE_RATE_HZ)).log_f0_mean))

    clean = load_prompt_audio(str(PROMPTS_DIR / prompt))
    assert not any("steady tone" in n for n in clean.notes)
    samples, sr = audio_corpus.read(PROMPTS_DIR / prompt)
    sf.write(tmp_path / "noisy.wav", under_speech(samples, sr, db, MAINS_HUM if lines_hz == "mains" else lines_hz)[0],
             sr, subtype="PCM_16")
    noisy = load_prompt_audio(str(tmp_path / "noisy.wav"))
    assert any("steady tone under the speech" in n for n in noisy.notes), noisy.notes
    semitones = 12 * np.log2(pitch_hz(noisy.samples) / pitch_hz(clean.samples))
    assert abs(semitones) < 1.5, semitones


def test_no_real_prompt_has_a_steady_line():
    """The notch takes a little of the voice: it must not run on clean recordings."""
    from cosyvoice_ui.inputs.prompt_audio import steady_lines_hz

    for path in prompt_files():
        assert steady_lines_hz(load_prompt_audio(str(path)).samples, PROMPT_SAMPLE_RATE_HZ) == (), path.name


def test_no_stretch_of_a_real_prompt_has_a_steady_line():
    """A voice held near one pitch for 2-4 s passed for a tone: xtts_female.wav's first 2 s had
    its own 188 Hz notched as "mains hum" and came out 2 semitones higher (helper-63), and 19 of
    537 stretches of 1.5-4 s of the real prompts had a "line". Every half-second offset is tried."""
    from cosyvoice_ui.inputs.prompt_audio import steady_lines_hz

    for name, seconds, start_s, clip in _stretches_of_real_prompts((2.0, 3.0, 4.0), step_s=0.5):
        assert steady_lines_hz(clip, PROMPT_SAMPLE_RATE_HZ) == (), (name, seconds, start_s)


def _stretches_of_real_prompts(lengths_s, step_s: float):
    """``(file name, seconds, start s, samples)`` for every stretch of each real prompt (as
    load_prompt_audio gives it) of each length, one every ``step_s``."""
    sr = PROMPT_SAMPLE_RATE_HZ
    for path in prompt_files():
        x = load_prompt_audio(str(path)).samples
        for seconds in lengths_s:
            n = int(seconds * sr)
            for start in range(0, len(x) - n, int(step_s * sr)):
                yield path.name, seconds, start / sr, x[start:start + n]


@pytest.mark.parametrize("lines_hz, db", [({150.0: 1.0}, -12), ({220.0: 1.0}, -6), ({60.0: 1.0, 180.0: 0.5}, -20)])
def test_a_tone_under_a_short_stretch_of_speech_is_still_found(lines_hz, db):
    """The test that keeps a held voice from passing for a tone must not lose real tones in
    stretches as short as 2 s."""
    from cosyvoice_ui.inputs.prompt_audio import steady_lines_hz

    from .make_hostile_corpus import under_speech

    sr = PROMPT_SAMPLE_RATE_HZ
    for name in ("xtts_female.wav", "f5_town.flac"):
        noisy, _ = under_speech(load_prompt_audio(str(PROMPTS_DIR / name)).samples, sr, db, lines_hz)
        for start in range(0, len(noisy) - 2 * sr, 3 * sr // 2):
            found = steady_lines_hz(noisy[start:start + 2 * sr], sr)
            assert any(abs(hz - min(lines_hz)) < 3 for hz in found), (name, start / sr, found)


def test_codec_overshoot_is_scaled_without_blaming_the_file(tmp_path):
    """xtts_male.wav peaks at 0.986; as Opus it decodes to 1.02, and the note said the file was
    "written at the wrong scale, clipped, or with a loud burst" (thirty-fifth newcomer session)."""
    samples, sr = audio_corpus.read(PROMPTS_DIR / "xtts_male.wav")
    prompt = load_prompt_audio(str(audio_corpus.ogg_opus(samples, sr, tmp_path)))
    assert not any("full scale" in n for n in prompt.notes), prompt.notes
    assert np.max(np.abs(prompt.samples)) <= 1.0
    sf.write(tmp_path / "hot.wav", 1.6 * samples, sr, subtype="FLOAT")  # well past: still said
    assert any("full scale" in n for n in load_prompt_audio(str(tmp_path / "hot.wav")).notes)


@pytest.mark.parametrize("prompt, kind", [("xtts_female.wav", "drift"), ("xtts_male.wav", "drift"),
                                          ("xtts_female.wav", "wobble"), ("xtts_male.wav", "wobble")])
def test_a_drifting_tone_under_the_speech_does_not_become_its_pitch(prompt, kind, tmp_path):
    """A tone rising 300 -> 305 Hz over the file, 6 dB under the speech, or mains hum wobbling
    50 +- 0.5 Hz with its harmonics: notched with a fixed 8 Hz band, the cloned pitch still moved
    3-6 semitones, and the note said the tone was filtered out (thirty-fourth newcomer session).
    The notch now follows the line's range, and the voice's pitch is measured where the speech is
    loud (DIO had taken the tone's rest in the pauses for voice)."""
    from cosyvoice_ui.engines.embedded import voice_conversion as vc

    def pitch_hz(samples):
        return float(np.exp(vc.profile_from_features(vc.analyze(samples, PROMPT_SAMPLE_RATE_HZ)).log_f0_mean))

    samples, sr = audio_corpus.read(PROMPTS_DIR / prompt)
    t = np.arange(len(samples)) / sr
    if kind == "drift":
        phase = 2 * np.pi * np.cumsum(300 + 5 * t / t[-1]) / sr
        line = np.sin(phase)
    else:
        phase = 2 * np.pi * np.cumsum(50 + 0.5 * np.sin(2 * np.pi * 0.2 * t)) / sr
        line = (np.sin(phase) + 0.5 * np.sin(2 * phase) + 0.4 * np.sin(3 * phase) + 0.3 * np.sin(4 * phase)) / 1.22
    level = float(np.sqrt(np.mean(samples[np.abs(samples) > 0.01] ** 2)))
    sf.write(tmp_path / "noisy.wav", 0.4 * samples + 0.4 * np.sqrt(2) * level * 10 ** (-6 / 20) * line, sr,
             subtype="PCM_16")
    noisy = load_prompt_audio(str(tmp_path / "noisy.wav"))
    assert any("steady tone under the speech" in n for n in noisy.notes), noisy.notes
    clean = load_prompt_audio(str(PROMPTS_DIR / prompt))
    semitones = 12 * np.log2(pitch_hz(noisy.samples) / pitch_hz(clean.samples))
    assert abs(semitones) < 1.5, semitones


def test_a_monotone_voice_is_not_taken_for_a_hum(tmp_path):
    """A voice held near one pitch (xtts_male.wav resynthesized with 30 % of its pitch range) had
    its own fundamental notched as "mains hum" (thirty-fourth newcomer session): a line must go on
    in the pauses too."""
    import pyworld

    from cosyvoice_ui.engines.embedded import voice_conversion as vc

    samples, sr = audio_corpus.read(PROMPTS_DIR / "xtts_male.wav")
    features = vc.analyze(samples, sr)
    f0 = features.f0_hz.copy()
    voiced = f0 > 0
    log_f0 = np.log(f0[voiced])
    f0[voiced] = np.exp(log_f0.mean() + 0.3 * (log_f0 - log_f0.mean()))
    flat = pyworld.synthesize(f0, features.envelope, features.aperiodicity, sr, vc.FRAME_PERIOD_MS)
    sf.write(tmp_path / "monotone.wav", 0.4 * flat, sr, subtype="PCM_16")
    prompt = load_prompt_audio(str(tmp_path / "monotone.wav"))
    assert not any("steady tone" in n for n in prompt.notes), prompt.notes


def _butterworth(samples: np.ndarray, sr: int, order: int, band_hz, kind: str) -> np.ndarray:
    """A Butterworth filter applied with torchaudio's biquads (second-order sections, so any order
    is stable): ``order`` per edge, even."""
    import torch
    import torchaudio.functional as AF

    x = torch.tensor(samples, dtype=torch.float64)
    for k in range(order // 2):
        q = 1.0 / (2.0 * np.sin((2 * k + 1) * np.pi / (2 * order)))  # the k-th pole pair's Q
        if kind in ("band", "high"):
            x = AF.highpass_biquad(x, sr, band_hz[0], Q=q)
        if kind in ("band", "low"):
            x = AF.lowpass_biquad(x, sr, band_hz[-1], Q=q)
    return x.numpy().astype(np.float32)


@pytest.mark.parametrize("path", prompt_files()[:10:3], ids=lambda p: p.name)
def test_telephone_band_audio_at_a_higher_rate_is_refused(path, tmp_path):
    """A phone call band-passed to 300-3400 Hz and saved at 16 kHz passed the 16 kHz check, and the
    embedded engine's clone of a man came out 10 semitones higher (thirty-eighth newcomer session).
    A laptop microphone's high-pass at 250 Hz is no telephone."""
    from cosyvoice_ui.inputs.prompt_audio import resample

    samples, sr = audio_corpus.read(path)
    call = resample(_butterworth(samples, sr, 6, (300.0, 3400.0), "band"), sr, 8000)
    for audio, rate in ((resample(call, 8000, 16000), 16000), (_butterworth(samples, sr, 4, (300.0, 3400.0), "band"), sr)):
        sf.write(tmp_path / "call.wav", audio, rate)
        with pytest.raises(InputError, match=r"almost nothing above 4.5 kHz .* phone call"):
            load_prompt_audio(str(tmp_path / "call.wav"))
    sf.write(tmp_path / "laptop.wav", _butterworth(samples, sr, 2, (250.0,), "high"), sr)
    assert load_prompt_audio(str(tmp_path / "laptop.wav")).seconds > 2


def _pcm16_frames(samples: np.ndarray, sr: int, layout: str, frame_size: int = 1024):
    import av

    pcm = (np.clip(samples, -1, 1) * 32767).astype(np.int16)
    channels = 1 if layout == "mono" else 2
    for start in range(0, len(pcm), frame_size):
        chunk = np.repeat(pcm[None, start:start + frame_size], channels, axis=0).T.reshape(1, -1)
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(chunk), format="s16", layout=layout)
        frame.sample_rate, frame.pts = sr, start
        yield frame


def _mux(path, tracks: list[tuple[np.ndarray, str]], sr: int, container: str, codec: str) -> None:
    """Write each ``(samples, layout)`` as its own audio track of one file (PyAV)."""
    import av

    with av.open(str(path), mode="w", format=container) as out:
        streams = []
        for _, layout in tracks:  # all streams before the first packet (the header lists them)
            streams.append(out.add_stream(codec, rate=sr))
            streams[-1].layout = layout
        for stream, (samples, layout) in zip(streams, tracks):
            resampler = av.AudioResampler(format=stream.codec_context.format.name, layout=layout, rate=sr)
            size = stream.codec_context.frame_size or 1024
            for frame in _pcm16_frames(samples, sr, layout, size):
                for r in resampler.resample(frame):
                    for packet in stream.encode(r):
                        out.mux(packet)
            for packet in stream.encode(None):
                out.mux(packet)


def test_the_loudest_of_several_audio_tracks_is_used(speech, tmp_path):
    """A recording whose first audio track is silent and whose second holds the speech (a screen
    recording with the microphone on track 2) was refused as silent: only the first track was read
    (forty-sixth newcomer session)."""
    samples, sr = speech
    path = tmp_path / "screen_recording.mka"
    _mux(path, [(np.zeros_like(samples), "mono"), (samples, "mono")], sr, "matroska", "aac")
    prompt = load_prompt_audio(str(path))
    assert 4.0 < prompt.seconds < 6.0
    assert any("2 audio tracks" in n and "track 2" in n for n in prompt.notes), prompt.notes


def test_adts_aac_that_changes_channel_count_midway_decodes(speech, tmp_path):
    """Two ADTS AAC files joined (mono, then stereo): the decoder's pieces had different shapes and
    the refusal ended in a cut-off numpy error ("all the input array dimensions ...", forty-sixth
    newcomer session). The stream is converted to its first frame's layout and decodes whole."""
    samples, sr = speech
    half = len(samples) // 2
    first, second = tmp_path / "a.aac", tmp_path / "b.aac"
    _mux(first, [(samples[:half], "mono")], sr, "adts", "aac")
    _mux(second, [(samples[half:], "stereo")], sr, "adts", "aac")
    joined = tmp_path / "joined.aac"
    joined.write_bytes(first.read_bytes() + second.read_bytes())
    prompt = load_prompt_audio(str(joined))
    assert prompt.source_channels == 1
    assert len(samples) / sr - 0.6 < prompt.seconds + prompt.trimmed_s < len(samples) / sr + 0.3, prompt


@pytest.mark.parametrize("level_db", [-40.0, -46.0])
def test_speech_in_one_channel_is_as_loud_as_the_same_speech_in_mono(speech, tmp_path, level_db):
    """Quiet speech in only one channel of a stereo file (a mono microphone on a stereo input) was
    refused as silent after the mix-down halved it, while the same speech as mono passed
    (forty-sixth newcomer session). The louder channel is used when the other is nearly empty."""
    samples, sr = speech
    quiet = samples * (10 ** (level_db / 20) / np.max(np.abs(samples)))
    sf.write(tmp_path / "mono.wav", quiet, sr, subtype="FLOAT")
    sf.write(tmp_path / "left_only.wav", np.stack([quiet, np.zeros_like(quiet)], axis=1), sr, subtype="FLOAT")
    mono = load_prompt_audio(str(tmp_path / "mono.wav"))
    left = load_prompt_audio(str(tmp_path / "left_only.wav"))
    assert left.source_channels == 2
    assert np.isclose(np.sqrt(np.mean(left.samples ** 2)), np.sqrt(np.mean(mono.samples ** 2)), rtol=0.05)


def _joined(tmp_path, name: str, parts) -> str:
    path = tmp_path / name
    path.write_bytes(b"".join(p.read_bytes() for p in parts))
    return str(path)


@pytest.mark.parametrize("kind", ["ogg_opus", "ogg_vorbis", "flac", "mp3_mono_then_stereo"])
def test_files_joined_one_after_another_are_used_whole(speech, tmp_path, kind):
    """libsndfile decodes only the first stream of a chained Ogg, or of FLAC or MP3 files joined
    with cat: 2 s of a 5.3 s prompt were used and the rest dropped without a word (forty-seventh
    newcomer session). The whole file is used, with a note, at the level of its parts."""
    samples, sr = speech
    cut = 2 * sr
    first, rest = samples[:cut], samples[cut:]
    if kind == "ogg_opus":
        parts = [audio_corpus.encode(first, sr, tmp_path / "a.ogg", "ogg", "libopus", rate=48000),
                 audio_corpus.encode(rest, sr, tmp_path / "b.ogg", "ogg", "libopus", rate=48000)]
    else:
        fmt, subtype, ext = {"ogg_vorbis": ("OGG", "VORBIS", "ogg"), "flac": ("FLAC", None, "flac"),
                             "mp3_mono_then_stereo": ("MP3", None, "mp3")}[kind]
        parts = [tmp_path / f"a.{ext}", tmp_path / f"b.{ext}"]
        sf.write(parts[0], first, sr, format=fmt, subtype=subtype)
        second = np.stack([rest, rest], axis=1) if kind == "mp3_mono_then_stereo" else rest
        sf.write(parts[1], second, sr, format=fmt, subtype=subtype)
    whole = load_prompt_audio(_joined(tmp_path, f"joined.{parts[0].suffix[1:]}", parts))
    single = load_prompt_audio(str(parts[0]))
    assert single.seconds < 2.2
    assert whole.seconds + whole.trimmed_s > len(samples) / sr - 0.3, whole
    assert any("joined one after another" in n for n in whole.notes), whole.notes
    assert not any("full scale" in n for n in whole.notes), whole.notes  # no 3 dB louder mix-down
    level = lambda p: np.sqrt(np.mean(p.samples[: len(single.samples)] ** 2))  # noqa: E731
    assert np.isclose(level(whole), level(single), rtol=0.15)


def _junk_before_fmt(data: bytearray, junk_bytes: int) -> bytearray:
    """``data`` (a WAV whose fmt chunk comes first) with a JUNK chunk of ``junk_bytes`` before it,
    as editors write bext/iXML/JUNK chunks; the RIFF size grows with it."""
    if not junk_bytes:
        return data
    out = data[:12] + b"JUNK" + junk_bytes.to_bytes(4, "little") + bytes(junk_bytes) + data[12:]
    out[4:8] = (int.from_bytes(data[4:8], "little") + 8 + junk_bytes).to_bytes(4, "little")
    return out


# 5,000 bytes of JUNK before "fmt ": the checks read only the first 4 KiB and missed it there (helper-112).
@pytest.mark.parametrize("junk_bytes", [0, 5000])
def test_a_wav_header_whose_sample_size_does_not_fit_its_frames_is_refused(tmp_path, junk_bytes):
    """A WAV whose header declares 7 bits per sample in 2-byte frames was read a byte at a time:
    17 s of noise from an 8.6 s prompt, accepted (forty-seventh newcomer session)."""
    data = bytearray((PROMPTS_DIR / "xtts_male.wav").read_bytes())
    assert data[34:36] == (16).to_bytes(2, "little")  # the fmt chunk's bits per sample
    data[34] = 7
    path = tmp_path / "damaged.wav"
    path.write_bytes(bytes(_junk_before_fmt(data, junk_bytes)))
    with pytest.raises(InputError, match="damaged: its header declares 7 bits per sample in frames of 2 byte"):
        load_prompt_audio(str(path))


@pytest.mark.parametrize("junk_bytes", [0, 5000])
@pytest.mark.parametrize("offset, value, size, message", [
    (22, 65535, 2, "its header declares 65535 channels, where a recording has 1 or 2"),
    (22, 0, 2, "its header declares 0 channels"),
    (24, 4_000_000_000, 4, "its header declares a sample rate of 4000000000 Hz, which no recorder uses")])
def test_a_wav_header_with_an_impossible_field_names_it(offset, value, size, message, junk_bytes, tmp_path):
    """A WAV header claiming 65535 channels or a 4 GHz rate got the generic "could not be decoded"
    (libsndfile: "Too many channels specified", "SF_INFO struct incomplete"; helper-105)."""
    data = bytearray((PROMPTS_DIR / "xtts_male.wav").read_bytes())
    assert data[12:16] == b"fmt " and data[22:24] == (1).to_bytes(2, "little")  # mono PCM, fmt chunk first
    data[offset:offset + size] = value.to_bytes(size, "little")
    path = tmp_path / "damaged.wav"
    path.write_bytes(bytes(_junk_before_fmt(data, junk_bytes)))
    with pytest.raises(InputError, match=f"damaged: {message}"):
        load_prompt_audio(str(path))


def _wav_variant(tmp_path, name: str, chunks: bytes) -> str:
    """A RIFF WAVE file of ``chunks`` (id, size, data each) written to ``tmp_path / name``."""
    import struct

    path = tmp_path / name
    path.write_bytes(b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WAVE" + chunks)
    return str(path)


def test_a_damaged_format_chunk_is_found_behind_many_chunks_and_before_a_good_one(tmp_path):
    """The chunk walk stopped after 64 chunks (libsndfile reads on), and a damaged format chunk
    before a good one made libsndfile fail and FFmpeg take the second: both "7-bit" files were
    read as 17 s of noise and accepted (helper-113)."""
    import struct

    samples, sr = sf.read(PROMPTS_DIR / "xtts_male.wav", dtype="int16")
    pcm = samples.tobytes()

    def fmt(bits=16):
        return b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, sr, sr * 2, 2, bits)

    data = b"data" + struct.pack("<I", len(pcm)) + pcm
    empty_junk = b"JUNK" + struct.pack("<I", 0)
    for name, chunks in (("after_65_chunks.wav", empty_junk * 65 + fmt(7) + data),
                         ("bad_first.wav", fmt(7) + fmt() + data)):
        with pytest.raises(InputError, match="damaged: its header declares 7 bits per sample"):
            load_prompt_audio(_wav_variant(tmp_path, name, chunks))
    with pytest.raises(InputError, match="damaged: its header has more than 10,000 chunks before its format chunk"):
        load_prompt_audio(_wav_variant(tmp_path, "after_10001.wav", empty_junk * 10_001 + fmt(7) + data))
    assert load_prompt_audio(_wav_variant(tmp_path, "after_200.wav", empty_junk * 200 + fmt() + data)).seconds > 8


@pytest.mark.parametrize("container, fmt_data_at", [("RF64", None), ("W64", 64)])
@pytest.mark.parametrize("field_at, value, size, message", [
    (14, 7, 2, "7 bits per sample in frames of 2 byte"), (2, 0, 2, "0 channels"),
    (4, 0, 4, "a sample rate of 0 Hz")])
def test_rf64_and_wave64_headers_are_checked_as_wav_ones(container, fmt_data_at, field_at, value, size, message,
                                                        tmp_path):
    """RF64 (EBU) and Sony Wave64 files were not walked: a "7-bit" RF64 was read as noise and
    accepted, and 0 channels or 0 Hz got the generic "could not be decoded" (helper-113)."""
    samples, sr = sf.read(PROMPTS_DIR / "xtts_male.wav", dtype="int16")
    good = tmp_path / f"good.{container.lower()}"
    sf.write(good, samples, sr, format=container, subtype="PCM_16")
    assert load_prompt_audio(str(good)).seconds > 7.5 and sf.info(good).format == container
    data = bytearray(good.read_bytes())
    at = fmt_data_at if fmt_data_at is not None else data.find(b"fmt ") + 8
    assert data[at + 2:at + 4] == (1).to_bytes(2, "little")  # mono: the format chunk's channels
    data[at + field_at:at + field_at + size] = value.to_bytes(size, "little")
    damaged = tmp_path / f"damaged.{container.lower()}"
    damaged.write_bytes(bytes(data))
    with pytest.raises(InputError, match=f"damaged: its header declares {message}"):
        load_prompt_audio(str(damaged))


def test_a_file_of_countless_tiny_packets_is_refused_while_decoding(tmp_path):
    """A 3 MB NUT file of 1-sample packets (1 M of them) took 164 s and +535 MB of the web process
    per decode, two at a time, and an honest upload waited behind it (helper-113). Decoding stops
    past 60,000 packets."""
    import av

    path = tmp_path / "tiny_packets.nut"
    samples, sr = sf.read(PROMPTS_DIR / "xtts_male.wav", dtype="int16")
    with av.open(str(path), "w", format="nut") as container:
        stream = container.add_stream("pcm_s16le", rate=sr)
        stream.layout = "mono"
        for i in range(61_000):
            frame = av.AudioFrame.from_ndarray(samples[i:i + 1].reshape(1, 1), format="s16", layout="mono")
            frame.sample_rate, frame.pts = sr, i
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    with pytest.raises(InputError, match="cut into more than 60,000 audio packets .1.0 samples each so far."):
        load_prompt_audio(str(path))


def _speech_m4a(path) -> None:
    """xtts_male.wav as AAC in an M4A (8.64 s, about 400 packets of 1,024 samples)."""
    import av

    samples, sr = sf.read(PROMPTS_DIR / "xtts_male.wav", dtype="float32")
    with av.open(str(path), "w", format="ipod") as container:
        stream = container.add_stream("aac", rate=sr)
        stream.layout = "mono"
        for i in range(0, len(samples), 1024):
            frame = av.AudioFrame.from_ndarray(samples[i:i + 1024].reshape(1, -1), format="flt", layout="mono")
            frame.sample_rate, frame.pts = sr, i
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


def _m4a_variants(good: bytes):
    """``(name, bytes)``: the speech M4A with its tables made to claim what FFmpeg indexes at open
    (helper-113, helper-115)."""
    import struct

    def patched(data: bytes, box: bytes, offset: int, value: bytes) -> bytes:
        out = bytearray(data)
        at = out.find(box) + 4 + offset  # the box's data starts 4 bytes after its type
        out[at:at + len(value)] = value
        return bytes(out)

    # One chunk of 20 million packets of 100 bytes each: a constant size needs no table of sizes.
    # Patched in place: the tables' old entries stay as bytes no one reads.
    millions = 20_000_000
    listed = patched(good, b"stts", 4, struct.pack(">III", 1, millions, 1024))
    listed = patched(listed, b"stsc", 4, struct.pack(">IIII", 1, 1, millions, 1))
    listed = patched(listed, b"stsz", 4, struct.pack(">II", 100, millions))
    listed = patched(listed, b"stco", 4, struct.pack(">I", 1))
    yield "listed.m4a", listed
    yield "vide_track.m4a", patched(listed, b"hdlr", 8, b"vide")
    yield "unknown_first.m4a", b"\0\0\0\x08abcd" + listed
    yield "cmov.m4a", patched(good, b"mvhd", -4, b"cmov")
    ftyp_end = struct.unpack(">I", good[:4])[0]
    yield "many_boxes.m4a", good[:ftyp_end] + b"\0\0\0\x08free" * 10_001 + good[ftyp_end:]
    if b"elst" in good:
        yield "edits.m4a", patched(good, b"elst", 4, struct.pack(">I", 100_000))


# Decodes the files named in argv in a fresh interpreter, then prints its own peak RSS in KiB
# (VmHWM, which exec resets; getrusage's ru_maxrss keeps the peak of the forked pytest process).
_PEAK_SCRIPT = """
import sys
from cosyvoice_ui.errors import InputError
from cosyvoice_ui.inputs.prompt_audio import decode_audio_file
for path in sys.argv[1:]:
    try:
        decode_audio_file(path)
        print("read", path)
    except InputError as e:
        print("refused", path, e)
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


def test_files_built_to_make_ffmpeg_index_millions_of_packets_leave_the_web_process_as_it_was(tmp_path):
    """FFmpeg indexes every packet an MP4 lists when it opens it: an 18 KB M4A whose stsz box listed
    20 million took the web process up 1.1 GB per upload (helper-113); a walk of the boxes in front
    of FFmpeg was got past through a video track's table, stz2, an unknown first box, a compressed
    header, 10,000 boxes and 100,000 edits (+693 MB; helper-115). FFmpeg now runs in a child
    process under a memory limit (inputs/pyav_process.py): each file is read or refused, and the
    process that asked (a fresh interpreter, so that the peak is its own) stays far under that."""
    good = tmp_path / "speech.m4a"
    _speech_m4a(good)
    paths = [str(good)]
    for name, data in _m4a_variants(good.read_bytes()):
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))
    assert len(paths) >= 7, paths
    done = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, *paths], capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    *outcomes, peak_kib = done.stdout.strip().splitlines()
    assert outcomes[0] == f"read {good}", outcomes
    assert [line.split()[1] for line in outcomes] == paths, outcomes
    # Here it peaked at 37 MiB; with PyAV's decode in the same process, at 757 MiB (listed.m4a).
    assert int(peak_kib) / 1024 < 300, (int(peak_kib) / 1024, outcomes)


def test_a_decode_past_its_memory_limit_is_refused_with_a_message(tmp_path):
    """The child that decodes with FFmpeg may add inputs.pyav_process.DECODE_MEMORY_MIB of address
    space; past it the file is refused, saying so (here a limit of 1 MiB for an honest M4A)."""
    from cosyvoice_ui.inputs.pyav_process import decode_in_child

    good = tmp_path / "speech.m4a"
    _speech_m4a(good)
    samples, rate, note, damaged_at_s = decode_in_child(str(good), 30)
    assert samples.dtype == np.float32 and samples.shape[1] == 1 and samples.shape[0] / rate > 8.5
    assert note is None and damaged_at_s is None
    with pytest.raises(InputError, match="needs more than 1 MiB of memory to decode"):
        decode_in_child(str(good), 30, memory_mib=1)


def test_a_playlist_cannot_make_ffmpeg_read_another_file(tmp_path):
    """An upload named .m3u8 was read by FFmpeg as an HLS playlist: it opened a local FLAC by its
    absolute path and used it as the prompt, and a live playlist of a missing segment held a
    decode slot for the whole deadline (helper-117). Only self-contained formats are demuxed."""
    (tmp_path / "steal.m3u8").write_text("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:20\n"
                                        "#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:10.0,\n"
                                        f"{PROMPTS_DIR / 'f5_main.flac'}\n#EXT-X-ENDLIST\n")
    (tmp_path / "live.m3u8").write_text("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:3600\n"
                                       "#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:3600.0,\nnothere.mp3\n")
    for name in ("steal.m3u8", "live.m3u8"):  # refused at once, not at the deadline ("took more than")
        _refused(tmp_path / name, "is a playlist or manifest (it names other files), not a recording")


def test_the_decoding_child_ends_with_the_process_that_started_it(tmp_path):
    """Children decoding prompts for an app that was SIGKILLed lived on for good, reparented to
    init (helper-117). A process that decodes a slow file is killed mid-decode here; its child ends
    with it (the kernel's parent-death signal)."""
    import signal

    import psutil

    from .test_shutdown import _slow_to_decode

    slow = _slow_to_decode(tmp_path / "two_tracks.nut")
    parent = subprocess.Popen([sys.executable, "-c", "import sys; from cosyvoice_ui.inputs.pyav_process import "
                               "decode_in_child; decode_in_child(sys.argv[1], 60)", slow],
                              cwd=Path(__file__).resolve().parent.parent)
    try:
        deadline = time.monotonic() + 60
        while not (children := psutil.Process(parent.pid).children()):
            assert time.monotonic() < deadline and parent.poll() is None, "the decode's child never started"
            time.sleep(0.05)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        def alive() -> list:  # a zombie has ended (its new parent, init, reaps it in its own time)
            return [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]

        ends = time.monotonic() + 1.5  # its decode alone would take seconds more
        while alive() and time.monotonic() < ends:
            time.sleep(0.05)
        assert not alive(), [(c.pid, c.status()) for c in alive()]
    finally:
        parent.kill()
        parent.wait()


# Loads the files named in argv at once, one thread each, in a fresh interpreter; prints each
# outcome, then its own peak RSS in KiB (VmHWM).
_FLOOD_SCRIPT = """
import sys, threading
from cosyvoice_ui.inputs.prompt_audio import load_prompt_audio
def one(path):
    try:
        load_prompt_audio(path)
        print("read", flush=True)
    except Exception as e:
        print(type(e).__name__, str(e)[:60], flush=True)
threads = [threading.Thread(target=one, args=(path,)) for path in sys.argv[1:]]
[t.start() for t in threads]
[t.join() for t in threads]
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


def test_many_long_mp3_uploads_at_once_stay_within_the_decode_slots(speech, tmp_path):
    """libsndfile decoded an MP3 (FLAC, Ogg) in the web process, then FFmpeg's child decoded it
    again to find joined recordings; the thread lent its decode slot out while the child worked,
    holding libsndfile's samples, so every upload at once held them (helper-132: 16 clients of
    119 s MP3s, 2.2 GiB; here 12 threads peaked 1.40x two threads' peak). FFmpeg's decode now
    comes first, before libsndfile's samples exist: the peak of 12 uploads stays near that of 2.
    With M4A uploads among them, all end (keeping the slot while waiting for a child's slot, a
    first fix, could deadlock)."""
    samples, sr = speech
    import torch
    import torchaudio

    mono = torchaudio.functional.resample(torch.from_numpy(samples), sr, 48_000).numpy()
    mono = np.tile(mono, 100 * 48_000 // len(mono) + 1)[:100 * 48_000]  # 100 s: decoded whole, refused after
    mp3, m4a = tmp_path / "long.mp3", tmp_path / "long.m4a"
    sf.write(mp3, np.stack([mono, mono[::-1]], axis=1), 48_000, format="MP3")
    _mux(m4a, [(mono, "stereo")], 48_000, "ipod", "aac")

    def peak_mib(*paths) -> float:
        done = subprocess.run([sys.executable, "-c", _FLOOD_SCRIPT, *map(str, paths)], capture_output=True,
                              text=True, timeout=240, cwd=Path(__file__).resolve().parent.parent)
        assert done.returncode == 0, done.stderr[-2000:]
        *outcomes, peak_kib = done.stdout.strip().splitlines()
        assert len(outcomes) == len(paths) and all("100.0 s long" in o for o in outcomes), outcomes
        return int(peak_kib) / 1024

    two = peak_mib(mp3, mp3)
    twelve = peak_mib(*[mp3] * 12)
    # 1.14x here (two children's replies wait to be taken back beside the two slots' work); 1.40x
    # with libsndfile's samples held while waiting.
    assert twelve < 1.25 * two, (twelve, two)
    peak_mib(*[mp3, m4a] * 5)  # ends (within the timeout), each told its length


def _syncsafe(n: int) -> bytes:
    return bytes((n >> shift) & 0x7F for shift in (21, 14, 7, 0))


def _with_id3_frames(mp3: bytes, count: int, extended_header: bool = False) -> bytes:
    """``mp3`` behind an ID3v2.4 tag of ``count`` TXXX frames (id3.org's ID3v2.4 structure), with
    an extended header (flag 0x40; 6 bytes, its size syncsafe and counting itself) if asked."""
    frames = b"".join(b"TXXX" + _syncsafe(len(body)) + b"\0\0" + body
                      for body in (b"\x03k%d\x00v" % i for i in range(count)))
    extended = _syncsafe(6) + b"\x01\x00" if extended_header else b""
    return b"ID3\x04" + (b"\x00\x40" if extended_header else b"\x00\x00") + _syncsafe(len(extended) + len(frames)) \
        + extended + frames + mp3


def _with_flac_comments(flac: bytes, count: int) -> bytes:
    """``flac`` with its Vorbis comment block replaced by one of ``count`` comments (xiph.org's
    FLAC format: 4-byte metadata block headers, the comment block little-endian)."""
    import struct

    pos, blocks = 4, []
    while True:
        last, kind, size = flac[pos] & 0x80, flac[pos] & 0x7F, int.from_bytes(flac[pos + 1:pos + 4], "big")
        blocks.append((kind, flac[pos + 4:pos + 4 + size]))
        pos += 4 + size
        if last:
            break
    comments = struct.pack("<I", 1) + b"x" + struct.pack("<I", count) + b"".join(
        struct.pack("<I", len(c)) + c for c in (b"K%d=v" % i for i in range(count)))
    blocks = [b for b in blocks if b[0] != 4] + [(4, comments)]
    out = b"fLaC" + b"".join(bytes([kind | (0x80 if i == len(blocks) - 1 else 0)]) + len(data).to_bytes(3, "big") + data
                             for i, (kind, data) in enumerate(blocks))
    return out + flac[pos:]


def test_files_whose_tags_hold_thousands_of_entries_are_refused_before_they_are_parsed(speech, tmp_path):
    """libsndfile parses an MP3's ID3v2 frames in time that grows with the square of their count,
    in the web process with no deadline: 250,000 frames (4.9 MB) took 98 s in sf.info alone and
    held a decode slot, every WAV upload waiting (helper-134); FFmpeg's join check is as slow on a
    FLAC of 80,000 comments. Files whose tags hold more than MAX_TAG_ENTRIES are refused naming
    the tags; a recording with a few tags is read."""
    from cosyvoice_ui.inputs.prompt_audio import MAX_ID3_FRAMES, MAX_TAG_ENTRIES

    samples, sr = speech
    sf.write(tmp_path / "plain.mp3", samples, sr, format="MP3")
    sf.write(tmp_path / "plain.flac", samples, sr, format="FLAC")
    mp3, flac = (tmp_path / "plain.mp3").read_bytes(), (tmp_path / "plain.flac").read_bytes()
    for name, data in (("tagged.mp3", _with_id3_frames(mp3, 20)), ("tagged.flac", _with_flac_comments(flac, 20))):
        (tmp_path / name).write_bytes(data)
        assert load_prompt_audio(str(tmp_path / name)).seconds > 3
    count = 5 * MAX_TAG_ENTRIES
    for name, data, limit, kind in (("many_frames.mp3", _with_id3_frames(mp3, count), MAX_ID3_FRAMES, "ID3 frames"),
                                    ("many_comments.flac", _with_flac_comments(flac, count), MAX_TAG_ENTRIES,
                                     "Vorbis comments")):
        (tmp_path / name).write_bytes(data)
        _refused(tmp_path / name, f"metadata holds more than {limit:,} tag entries ({kind}", "without its tags")


def _mp3_in_wav(mp3: bytes) -> bytes:
    """``mp3`` as the data of a WAV file of format tag 0x55 (WAVE_FORMAT_MPEGLAYER3, mmreg.h),
    which libsndfile decodes with libmpg123 as it does an MP3."""
    import struct

    fmt = struct.pack("<HHIIHHH", 0x55, 1, 24000, 4000, 1, 0, 12) + struct.pack("<HIHHH", 1, 2, 576, 1, 1393)
    riff = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(mp3)) + mp3
    return b"RIFF" + struct.pack("<I", len(riff)) + riff


def test_tags_hidden_from_the_count_or_repeated_are_refused_without_a_log_flood(speech, tmp_path):
    """What helper-135 and helper-138 got past the count of tags at the start of an MP3, each
    parsed by libmpg123 in the web process with no deadline: an extended header (flag 0x40) hid an
    ID3v2.4 tag's 100,000 frames from a count that started at it (a WAV waited 77 s behind two);
    1.9 million empty ID3 tags took 30 s per open and a log line each (400 MB); the same tags,
    or one tag of 100,000 frames, between audio frames (66 s) or in an MP3 inside a WAV (62 s);
    a FLAC of millions of empty padding blocks held the count 2 s. Each is refused at once with
    nothing written to stderr; a real MP3 with one tag behind an extended header and an empty
    one appended is read."""
    import subprocess
    import sys

    from cosyvoice_ui.inputs.prompt_audio import MAX_ID3_FRAMES

    samples, sr = speech
    sf.write(tmp_path / "plain.mp3", samples, sr, format="MP3")
    sf.write(tmp_path / "plain.flac", samples, sr, format="FLAC")
    mp3, flac = (tmp_path / "plain.mp3").read_bytes(), (tmp_path / "plain.flac").read_bytes()
    empty_tag = b"ID3\x04\x00\x00\x00\x00\x00\x00"
    many_frames = _with_id3_frames(b"", 20_000)
    middle = len(mp3) // 3
    too_many_frames = f"more than {MAX_ID3_FRAMES} tag entries (ID3 frames)"
    cases = {
        "hidden_frames.mp3": (_with_id3_frames(mp3, 20_000, extended_header=True), too_many_frames),
        "empty_tags.mp3": (empty_tag * 200_000 + mp3, "more than 16 ID3 tags"),
        "tags_inside.mp3": (mp3[:middle] + empty_tag * 200_000 + mp3[middle:], "more than 16 ID3 tags"),
        "frames_inside.mp3": (mp3[:middle] + many_frames + mp3[middle:], too_many_frames),
        "frames_inside.bin": (mp3[:middle] + many_frames + mp3[middle:], too_many_frames),  # no .mp3 in the name
        "mp3_in.wav": (_mp3_in_wav(many_frames + mp3), too_many_frames),
        "padding.flac": (flac[:4] + bytes([1, 0, 0, 0]) * 100_000 + flac[4:], "more than 1,000 metadata blocks"),
    }
    for name, (data, _) in cases.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "fine.mp3").write_bytes(_with_id3_frames(mp3, 20, extended_header=True) + empty_tag)
    # In a fresh interpreter, to see what libmpg123 writes to stderr.
    code = ("import sys, time; from cosyvoice_ui.inputs.prompt_audio import load_prompt_audio\n"
            "from cosyvoice_ui.errors import InputError\n"
            "for path in sys.argv[1:]:\n"
            "    started = time.monotonic()\n"
            "    try: print(round(load_prompt_audio(path).seconds, 1), end=' ')\n"
            "    except InputError as e: print(e, end=' ')\n"
            "    print(f'{time.monotonic() - started:.2f}', flush=True)\n")
    from .conftest import ROOT

    done = subprocess.run([sys.executable, "-c", code, *(str(tmp_path / n) for n in [*cases, "fine.mp3"])],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    answers = done.stdout.strip().splitlines()
    wrong = [(name, answer) for (name, (_, words)), answer in zip(cases.items(), answers)
             if words not in answer or "without its tags" not in answer
             or float(answer.rsplit(" ", 1)[1]) > 5]  # helper-135, helper-138: 6-234 s
    assert not wrong, wrong
    assert float(answers[-1].split()[0]) > 3, answers[-1]
    assert len(done.stderr.splitlines()) < 20, done.stderr[-2000:]


def test_an_ogg_file_of_thousands_of_comments_is_refused_for_its_tags(speech, tmp_path):
    """An Ogg Vorbis file of 200,000 comments held FFmpeg's join check past its 10 s deadline and
    was refused as holding "millions of packets in other tracks" (helper-135). Its comments are
    counted first, as a FLAC's are; a file with a few dozen is read."""
    samples, sr = speech
    many = audio_corpus.encode(samples, sr, tmp_path / "many.opus", "ogg", "libopus", rate=48000,
                               metadata={f"NOTE{i}": "x" for i in range(2000)})
    few = audio_corpus.encode(samples, sr, tmp_path / "few.opus", "ogg", "libopus", rate=48000,
                              metadata={"TITLE": "take 3", "ARTIST": "me"})
    _refused(many, "more than 1,000 tag entries (Vorbis comments)", "without its tags")
    assert 4.0 < load_prompt_audio(str(few)).seconds < 6.0
    # The count is read across pages: a vendor string holding "OggS", or running past 64 KB, hid it
    # from a read of the raw bytes, and such a file held FFmpeg's join check 8-10 s (helper-144).
    def page(body: bytes, sequence: int) -> bytes:
        lacing = bytes([255] * (len(body) // 255) + [len(body) % 255])
        return (b"OggS\x00\x00" + bytes(8) + b"\x01\x00\x00\x00" + sequence.to_bytes(4, "little") + bytes(4)
                + bytes([len(lacing)]) + lacing + body)

    ident = b"\x01vorbis" + bytes(22) + b"\x01"
    for vendor in (b"OggS" * 100, b"v" * 70_000):
        comments = b"\x03vorbis" + len(vendor).to_bytes(4, "little") + vendor + (200_000).to_bytes(4, "little")
        pages = page(ident, 0) + b"".join(page(comments[i:i + 60_000], 1 + i // 60_000)
                                          for i in range(0, len(comments), 60_000))
        (tmp_path / "vendor.ogg").write_bytes(pages + bytes(100))
        _refused(tmp_path / "vendor.ogg", "more than 1,000 tag entries (Vorbis comments)")


def test_damaged_mpeg_frames_do_not_flood_the_log(tmp_path):
    """libmpg123 writes lines for each damaged MPEG frame: a 576 KB upload of Layer I frames whose
    bit allocation overruns them, each followed by 4 junk bytes, wrote about 75,000 lines (4.4 MB)
    to the web process's stderr (helper-140). MPEG is decoded in a child whose stderr goes to a
    file: the web process writes nothing, and the file gets an answer. The same frames in a WAV
    whose MPEG format chunk only libsndfile's walk finds (past a ``fact`` chunk of size 0, of which
    libsndfile reads 4 bytes anyway) wrote 74,997 lines (helper-142)."""
    import struct
    import subprocess
    import sys

    from .conftest import ROOT

    plain = b"\xff\xff\x14\x00" + b"\xee" * 28  # MPEG-1 Layer I, 48 kHz stereo, bit allocation past the frame
    frames = plain * 8 + (plain + b"junk") * 4000
    for name in ("damaged.mp3", "damaged.bin"):  # named MP3 or not: libsndfile hands both to libmpg123
        (tmp_path / name).write_bytes(frames)
    fmt = struct.pack("<HHIIHH", 0x55, 2, 48000, 16000, 1, 0) + struct.pack("<HHIHHH", 12, 1, 2, 417, 1, 1393)
    chunks = (b"fact" + struct.pack("<I", 0) + b"JUNK"  # JUNK's size, for a walk by declared sizes: b"fmt "
              + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(frames)) + frames)
    (tmp_path / "hidden.wav").write_bytes(b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WAVE" + chunks)
    code = ("import sys; from cosyvoice_ui.inputs.prompt_audio import load_prompt_audio\n"
            "from cosyvoice_ui.errors import InputError\n"
            "for path in sys.argv[1:]:\n"
            "    try: print(round(load_prompt_audio(path).seconds, 1), flush=True)\n"
            "    except InputError as e: print(e, flush=True)\n")
    names = ("damaged.mp3", "damaged.bin", "hidden.wav")
    done = subprocess.run([sys.executable, "-c", code, *(str(tmp_path / n) for n in names)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout.strip().splitlines()) == 3, done.stdout
    assert len(done.stderr.splitlines()) < 20, (len(done.stderr.splitlines()), done.stderr[-2000:])


def test_a_wav_upload_does_not_wait_behind_files_ffmpeg_is_slow_to_decode(tmp_path):
    """Two slow files held both decode slots for their whole FFmpeg decode, up to the 10 s deadline,
    and a WAV, read by libsndfile in a fraction of a second, waited behind them (helper-117: 39 s
    behind 8 clients). A thread lends its slot out while FFmpeg's child decodes for it: the WAV is
    done while both slow files are still decoding."""
    import threading

    from .test_shutdown import _slow_to_decode

    from cosyvoice_ui.inputs.pyav_process import DecoderLimit

    slow = _slow_to_decode(tmp_path / "two_tracks.nut")
    outcomes = []

    def load() -> None:
        try:
            outcomes.append(load_prompt_audio(slow))
        except DecoderLimit as e:  # past the 10 s deadline on a loaded machine (4.8 s alone)
            outcomes.append(e)

    threads = [threading.Thread(target=load) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        import psutil

        deadline = time.monotonic() + 30
        def decoding() -> int:
            count = 0
            for child in psutil.Process().children():
                try:
                    count += "child_main" in " ".join(child.cmdline())
                except psutil.Error:  # ended while being looked at
                    pass
            return count

        while decoding() < 2:  # both children started: both slots were taken
            assert time.monotonic() < deadline and all(t.is_alive() for t in threads), "the slow decodes never began"
            time.sleep(0.02)
        prompt = load_prompt_audio(str(PROMPTS_DIR / "xtts_male.wav"))
        assert prompt.seconds > 3
        # A broadcast WAV (a field recorder's: "bext" before "fmt ") too: a first guard against MPEG
        # hidden in a WAV sent it to a child, and it waited 20.7 s behind MP3 uploads (helper-144).
        plain = (PROMPTS_DIR / "xtts_male.wav").read_bytes()
        bext = b"bext" + (602).to_bytes(4, "little") + bytes(602)
        (tmp_path / "broadcast.wav").write_bytes(
            b"RIFF" + (len(plain) - 8 + len(bext)).to_bytes(4, "little") + b"WAVE" + bext + plain[12:])
        assert load_prompt_audio(str(tmp_path / "broadcast.wav")).seconds == pytest.approx(prompt.seconds, abs=0.01)
        assert all(thread.is_alive() for thread in threads), "the WAV waited for a slow decode to end"
    finally:
        for thread in threads:
            thread.join(60)
    assert len(outcomes) == 2, "a slow decode failed"


def test_decodes_waiting_for_a_slot_at_shutdown_start_no_child(tmp_path, monkeypatch):
    """Requests that waited for a decode slot when SIGTERM came were decoded one after another
    after it: the exit took 22 s and their clients got "Server stopped unexpectedly" (helper-134).
    Once stop_decoding() is called, a decode whose slot comes starts no child and is refused as
    the shutdown; the ones running end as they would. An MP3 whose join check (FFmpeg's) was so
    refused was then read by libsndfile in the web process before the refusal was raised, with
    no deadline (helper-135); it is not read."""
    import threading

    import soundfile

    from cosyvoice_ui.errors import ServiceStopping
    from cosyvoice_ui.inputs import prompt_audio

    from .test_shutdown import _slow_to_decode

    monkeypatch.setattr(prompt_audio, "_stopping", threading.Event())
    slow = _slow_to_decode(tmp_path / "two_tracks.nut")
    samples, sr = soundfile.read(PROMPTS_DIR / "xtts_male.wav")
    soundfile.write(tmp_path / "prompt.mp3", samples, sr, format="MP3")
    read_by_libsndfile = []
    real_read = soundfile.read
    monkeypatch.setattr(soundfile, "read", lambda path, *a, **k: read_by_libsndfile.append(path) or real_read(path, *a, **k))
    files = [slow, slow, slow, str(tmp_path / "prompt.mp3")]
    outcomes: dict[int, object] = {}

    def load(i: int) -> None:
        try:
            outcomes[i] = load_prompt_audio(files[i])
        except Exception as e:  # noqa: BLE001 - the outcome is the point
            outcomes[i] = e

    import psutil

    def decoding() -> int:
        count = 0
        for child in psutil.Process().children():
            try:
                count += "child_main" in " ".join(child.cmdline())
            except psutil.Error:
                pass
        return count

    threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
    threads[0].start()
    threads[1].start()
    deadline = time.monotonic() + 30
    while decoding() < 2:  # both child slots taken: the third and fourth wait for one
        assert time.monotonic() < deadline, "the slow decodes never began"
        time.sleep(0.02)
    threads[2].start()
    threads[3].start()
    time.sleep(0.5)
    prompt_audio.stop_decoding()
    for thread in threads:
        thread.join(60)
    assert isinstance(outcomes[2], ServiceStopping), outcomes[2]
    assert isinstance(outcomes[3], ServiceStopping), outcomes[3]
    assert not any(str(path).endswith(".mp3") for path in read_by_libsndfile), read_by_libsndfile
    # Read, or refused past the decode's deadline on a loaded machine: not stopped midway.
    assert all(i in outcomes and not isinstance(outcomes[i], ServiceStopping) for i in (0, 1)), outcomes
    with pytest.raises(ServiceStopping):
        load_prompt_audio(str(PROMPTS_DIR / "xtts_male.wav"))


def test_video_containers_the_server_does_not_read_are_named(speech, tmp_path):
    """MPEG-TS (camcorders, TV captures) and FLV are left out of the containers FFmpeg may read
    here; valid files were told they were not audio or damaged, ending in "returned 22"
    (helper-129). They are named, with what to send instead."""
    from .make_hostile_corpus import encode

    samples, sr = speech
    for name, container, codec, said in (("camera.ts", "mpegts", "aac", "MPEG-TS"),
                                         ("clip.flv", "flv", "adpcm_swf", "Flash video (FLV)")):
        path = encode(samples, sr, tmp_path / name, container, codec, rate=44100)
        _refused(path, f"is {said}", "a video or broadcast container this server does not read", "Export the sound")
    (tmp_path / "noise.bin").write_bytes(np.random.default_rng(0).bytes(200_000))
    with pytest.raises(InputError) as e:
        load_prompt_audio(str(tmp_path / "noise.bin"))
    assert "returned" not in str(e.value) and "not an audio file" in str(e.value), str(e.value)


@pytest.mark.parametrize("outside", ["SIGKILL", "SIGTERM", "SIGSTOP", "SIGALRM"])
def test_a_decoder_ended_or_stopped_from_outside_decodes_again_not_blaming_the_file(tmp_path, outside):
    """FFmpeg's child for an honest file, SIGKILLed from outside, was told "took more than 10 s to
    decode ... millions of packets" after 0.3 s; SIGTERMed, "a damaged file"; SIGSTOPped, the
    request waited the whole deadline; each ledgered as bad input (helper-130). SIGALRM, the
    child's own alarm's signal, sent long before the alarm is due was told the same as SIGKILL
    (helper-132). The first child is signalled here; the file is decoded again and used."""
    import signal
    import threading

    import psutil

    from .test_shutdown import _slow_to_decode

    slow = _slow_to_decode(tmp_path / "two_tracks.nut")  # seconds to decode: the signal lands mid-decode
    signalled = []

    def signal_the_first_child() -> None:
        deadline = time.monotonic() + 60
        while not signalled and time.monotonic() < deadline:
            for child in psutil.Process().children():
                try:
                    if "child_main" in " ".join(child.cmdline()):
                        child.send_signal(getattr(signal, outside))
                        signalled.append(child.pid)
                        return
                except psutil.Error:
                    pass
            time.sleep(0.01)

    watcher = threading.Thread(target=signal_the_first_child)
    watcher.start()
    prompt = load_prompt_audio(slow)
    watcher.join()
    assert signalled and prompt.seconds > 1  # the file holds 1.34 s


def test_one_damaged_packet_mid_file_costs_only_that_packet(tmp_path):
    """64 damaged bytes at 30 % of an M4A ended FFmpeg's decode there: 2.7 s of the 8.7 s used, and
    the note said the file was cut (helper-119). The damaged packet is left out and named."""
    good = tmp_path / "speech.m4a"
    _speech_m4a(good)
    data = bytearray(good.read_bytes())
    at = len(data) * 3 // 10
    data[at:at + 64] = bytes(b ^ 0xFF for b in data[at:at + 64])
    (tmp_path / "damaged.m4a").write_bytes(bytes(data))
    prompt = load_prompt_audio(str(tmp_path / "damaged.m4a"))
    assert prompt.seconds > 7.5 and any("damaged packet(s) in the middle" in n for n in prompt.notes), \
        (prompt.seconds, prompt.notes)
    assert not any("cut off" in n for n in prompt.notes), prompt.notes


def test_a_decode_past_its_time_is_stopped_with_a_message(tmp_path, monkeypatch):
    """A 20 MB Matroska file of 4 speech tracks and 17.85 million laced subtitle packets took 41 s
    to decode, under every other limit, and was accepted; an honest upload waited 105 s behind two
    (helper-115). PyAV's decode of one file, in its child process, is stopped after MAX_PYAV_DECODE_S
    (here set to 0)."""
    from cosyvoice_ui.inputs import prompt_audio

    good = tmp_path / "speech.m4a"
    _speech_m4a(good)
    monkeypatch.setattr(prompt_audio, "MAX_PYAV_DECODE_S", 0.0)
    with pytest.raises(InputError, match="took more than 0 s to decode"):
        load_prompt_audio(str(good))
    # Read as MP3 by its name: a 20 MB AVI named .mp3 took libmpg123 15 s, and was told of "millions
    # of packets in other tracks" (helper-142).
    (tmp_path / "speech.mp3").write_bytes(good.read_bytes())
    with pytest.raises(InputError, match="took more than 0 s to decode .* It was read as MP3, as its name or"):
        load_prompt_audio(str(tmp_path / "speech.mp3"))


def test_speech_recorded_too_quietly_is_called_quiet_with_its_levels(tmp_path):
    """xtts_male.wav at -53 dBFS (sample peak) was refused as "silent (its loudest moment is below
    -60 dBFS)" while a level meter showed speech: the figure is a 20 ms RMS level (helper-64)."""
    samples, sr = audio_corpus.read(PROMPTS_DIR / "xtts_male.wav")
    sf.write(tmp_path / "quiet.wav", samples / np.abs(samples).max() * 10 ** (-53 / 20), sr, subtype="PCM_16")
    _refused(tmp_path / "quiet.wav", "is too quiet to use: its loudest 20 ms reaches -62 dBFS (RMS; sample peak -52 dBFS)",
             "Raise the recording level")
    sf.write(tmp_path / "zero.wav", np.zeros(3 * sr), sr, subtype="PCM_16")
    _refused(tmp_path / "zero.wav", "is silent (every sample is zero)", "Check the microphone")


@pytest.mark.parametrize("start_s, end_s", [(1.5, 5.5), (1.0, 3.0)])
def test_a_dark_stretch_of_a_clean_recording_is_no_phone_call(start_s, end_s, tmp_path):
    """Stretches of xtts_male.wav with few fricatives came to -16 and -17 dB at 4.5-11 kHz and were
    refused as "a phone call ... a low-bitrate file or a muffled recording" (helper-64). Their
    spectrum above 4.5 kHz falls off gently; a filter's does not (the telephone test above)."""
    samples, sr = audio_corpus.read(PROMPTS_DIR / "xtts_male.wav")
    sf.write(tmp_path / "stretch.wav", samples[int(start_s * sr):int(end_s * sr)], sr, subtype="PCM_16")
    assert load_prompt_audio(str(tmp_path / "stretch.wav")).seconds > 1.5


def test_background_music_is_named_as_music(tmp_path):
    """Chords under the voice were "a steady tone (about 262, 523, ... and 1046 Hz: mains hum, a
    beep, an alarm or rumble)" (helper-64)."""
    from cosyvoice_ui.inputs.prompt_audio import resample

    samples, sr = audio_corpus.read(PROMPTS_DIR / "xtts_male.wav")
    x = resample(samples, sr, PROMPT_SAMPLE_RATE_HZ)
    t = np.arange(len(x)) / PROMPT_SAMPLE_RATE_HZ
    chords = [(261.63, 329.63, 392.0), (220.0, 261.63, 329.63), (174.61, 220.0, 261.63), (196.0, 246.94, 293.66)]
    music = np.zeros_like(x)
    for second in range(int(np.ceil(t[-1]))):
        now = (t >= second) & (t < second + 1)
        for hz in chords[second % 4]:
            for k in range(1, 5):
                music[now] += np.sin(2 * np.pi * hz * k * t[now]) / k
    level = np.sqrt(np.mean(x[np.abs(x) > 0.01] ** 2))
    sf.write(tmp_path / "music.wav", 0.4 * x + 0.4 * level * music / np.sqrt(np.mean(music ** 2)),
             PROMPT_SAMPLE_RATE_HZ, subtype="PCM_16")
    notes = load_prompt_audio(str(tmp_path / "music.wav")).notes
    assert any(n.startswith("The prompt has steady notes under the speech (about 262, ") and "background music" in n
               for n in notes), notes
    assert not any("mains hum" in n for n in notes), notes


def test_the_short_prompt_note_says_its_figure_is_after_trimming():
    """"The prompt is short (2.9 s)" for a 3.5 s file read as a contradiction (helper-65)."""
    prompt = load_prompt_audio(str(PROMPTS_DIR / "cv_zero_shot_prompt.wav"))
    assert any(n.startswith(f"The prompt is short ({prompt.seconds:.1f} s of sound once the silence at its ends is "
                            "trimmed)") for n in prompt.notes), prompt.notes


def test_no_short_stretch_of_a_real_prompt_is_refused_as_a_tone():
    """A vowel held in one of a short stretch's few windows passed for "steady tones (about 180 and
    226 Hz) ... not speech": xtts_female.wav at 8-11 s (helper-67), 23 of 1049 stretches of
    1.5-4 s. A tone must peak in two windows at least."""
    from cosyvoice_ui.inputs.prompt_audio import _steady_tones_hz

    for name, seconds, start_s, clip in _stretches_of_real_prompts((1.5, 2.0, 3.0), step_s=0.25):
        assert _steady_tones_hz(clip, PROMPT_SAMPLE_RATE_HZ) == (), (name, seconds, start_s)


def test_a_voice_near_a_hum_harmonic_is_not_named_or_notched_as_one():
    """Under a pure 50 Hz hum, f5_basic_ref_en.wav's own voice near 103 Hz was taken for the hum's
    second harmonic: "about 50 and 103 Hz", notched (helper-67). A harmonic must sit at a multiple."""
    from cosyvoice_ui.inputs.prompt_audio import steady_lines_hz

    from .make_hostile_corpus import under_speech

    x = load_prompt_audio(str(PROMPTS_DIR / "f5_basic_ref_en.wav")).samples
    noisy, _ = under_speech(x, PROMPT_SAMPLE_RATE_HZ, -10, {50.0: 1.0})
    assert steady_lines_hz(noisy, PROMPT_SAMPLE_RATE_HZ) == (50.0,)
    harmonics, _ = under_speech(x, PROMPT_SAMPLE_RATE_HZ, -15, {50.0: 1.0, 100.0: 0.5, 150.0: 0.3})
    assert steady_lines_hz(harmonics, PROMPT_SAMPLE_RATE_HZ) == (50.0, 100.0, 150.0)


def test_a_full_scale_offset_is_said_as_0_dbfs(tmp_path):
    """A constant full-scale offset (helper-145's dc_clip.wav) was "-0 dBFS of DC"."""
    path = tmp_path / "dc_clip.wav"
    sf.write(path, np.full(48_000, 0.99999, dtype=np.float32), 16_000, subtype="FLOAT")
    with pytest.raises(InputError, match=r"holds only a constant offset \(0 dBFS of DC\)"):
        load_prompt_audio(str(path))
