"""Decoding and checking of prompt audio (web process, no torch.cuda).

Files are decoded with soundfile (libsndfile: wav, flac, ogg/vorbis, opus, mp3) and, when
libsndfile does not know the container, with PyAV (its wheels carry FFmpeg's decoders, so m4a/aac
and the webm/opus that browsers record work without a system ffmpeg). The result is one channel at
:data:`PROMPT_SAMPLE_RATE_HZ`, resampled with torchaudio, with leading and trailing silence cut.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import re
import threading

import numpy as np

from ..errors import STOPPING_MESSAGE, BusyError, InputError, ServiceStopping
from ..glibc_heap import return_freed_heap
from .pyav_process import DECODE_MEMORY_MIB, DecoderLimit, decode_in_child, too_much_memory

# 24 kHz is CosyVoice 2/3's output rate and keeps the band up to 12 kHz that timbre lives in;
# 16 kHz (the speech tokenizer's rate) would cut it at 8 kHz.
PROMPT_SAMPLE_RATE_HZ = 24_000
MIN_SOURCE_SAMPLE_RATE_HZ = 16_000  # below this the high band is missing (CosyVoice asserts, #82)
MIN_PROMPT_S = 1.0
RECOMMENDED_MIN_PROMPT_S = 3.0
LONG_PROMPT_S = 12.0  # the page's label asks for 3-10 s; hand-cut recordings run a little over (xtts_female: 10.4 s)
MAX_PROMPT_S = 30.0  # CosyVoice's frontend asserts above 30 s
SILENCE_FLOOR_DBFS = -60.0  # loudest 20 ms frame below this: the recording is silent
_QUIET_PEAK_DBFS = -70.0  # ... or, with sample peaks above this, speech recorded far too quietly
TRIM_BELOW_PEAK_DB = 40.0  # frames this far below the loudest frame count as silence at the ends
_FRAME_S = 0.02
_PAD_S = 0.05
SUPPORTED_FORMATS = "WAV, FLAC, MP3, OGG/Opus, M4A/AAC or WebM"
# Decoding stops here: a prompt longer than this cannot pass the 30 s check after trimming, and a
# few kilobytes of low-bitrate Opus can hold hours of audio (found by a newcomer test: 6 h in 17 MB).
MAX_DECODE_S = 120.0
# And at most this many samples, all channels together (two channels at 48 kHz for 120 s): a
# 5 MB FLAC of 8 channels at 192 kHz for 119.5 s decoded to 734 MB of float32, and the checks'
# copies took the web process 2 GB higher per upload (thirty-second newcomer session).
MAX_DECODE_SAMPLES = int(MAX_DECODE_S * 48_000 * 2)
MAX_SOURCE_SAMPLE_RATE_HZ = 768_000
MAX_WAV_CHANNELS = 1024  # libsndfile's SF_MAX_CHANNELS
# Packets PyAV decodes for one track: 120 s in Opus's shortest (2.5 ms) frames is 48,000; AAC,
# MP3 and Vorbis use 1,024-2,048 samples a packet (a few thousand). A NUT file of 1-sample packets
# (3 MB, 1 M packets) took 164 s and +535 MB of the web process per decode, two at a time, and an
# honest upload waited behind it (helper-113); Python's cost per packet is what grows.
MAX_DECODE_FRAMES = 60_000
# Wall time for PyAV's decode of one file, all tracks, its child process's start included (see
# pyav_process): a 20 MB Matroska file of 4 speech tracks and a subtitle track of 17.85 million
# laced 1-byte packets took 41 s, under every other limit, and was accepted; an honest upload
# waited 105 s behind two of them (helper-115). Real prompts take 0.5-0.8 s here, 0.4 s of it the
# child's start.
MAX_PYAV_DECODE_S = 10.0
# torchaudio's sinc resampler builds a kernel of size (from/gcd) x (to/gcd); for a rate sharing no
# factor with 24 kHz (47999 Hz) that is gigabytes. Such rates are treated as the nearest multiple
# of 50 Hz: a pitch error under 0.2 % at 16 kHz and above, far below what anyone hears.
_MAX_RESAMPLE_RATIO_TERM = 2000
_OVER_FULL_SCALE = 1.001  # float samples past this are scaled down (integer formats cannot exceed 1)
_CODEC_OVERSHOOT = 1.25  # up to here (+1.9 dB) without a note: lossy codecs decode a little past 1
# Samples over this many times full scale and this many times the file's 99th percentile of
# magnitude are a glitch (clicks, a short burst: at most 1 % of the samples by that definition):
# removed, never the scale of the file. Whatever else is past full scale is scaled down, the file
# as a whole.
_GLITCH_RATIO = 10.0
_TONE_WINDOW_S = 0.5
_TONE_BAND_HZ = 10.0
_MIN_TONE_HZ = 20.0
_PEAKS_SHARE = (0.7, 0.8, 0.85)  # a window is tonal when its 1, 2 or 3 highest peaks hold this much
_TONE_WINDOWS = 0.5
# Decoding and resampling run in the web process: at most two at a time, however many uploads arrive.
# A thread lends its slot out while FFmpeg's child decodes for it (the children have two slots of
# their own): slow files held both for up to the child's deadline, and a WAV upload, read in a
# fraction of a second, waited behind them (helper-117: 39 s behind 8 clients).
_DECODE_SLOTS = threading.BoundedSemaphore(2)
_holds_slot = threading.local()
_stopping = threading.Event()  # set by stop_decoding()
_in_decoder_child = False  # set by decode_here()


def stop_decoding() -> None:
    """Refuse every decode that has not begun (the application is shutting down): requests that
    waited for a slot when SIGTERM came were decoded one after another, the exit took 22 s, and
    their clients got "Server stopped unexpectedly" (helper-134). Raised as
    :class:`~cosyvoice_ui.errors.ServiceStopping` by :func:`load_prompt_audio` once its slot is
    free, and before a decode's child starts."""
    _stopping.set()


def decode_here() -> None:
    """Make this process decode every file itself: called in the decoding child
    (:mod:`.pyav_process`), which is the sandbox the web process sends files to."""
    global _in_decoder_child
    _in_decoder_child = True


@dataclasses.dataclass(frozen=True)
class PromptAudio:
    """A decoded, checked voice prompt, ready to cross into the worker.

    Attributes:
        samples: float32, shape ``(n,)``, mono, in [-1, 1], at ``sample_rate_hz``.
        sample_rate_hz: always :data:`PROMPT_SAMPLE_RATE_HZ`.
        source_sample_rate_hz: the file's own rate.
        source_channels: channels in the file before the mix-down.
        trimmed_s: seconds of leading plus trailing silence removed.
        notes: hints for the user (short prompt, clipping) that did not stop the request.
        sha1: digest of the samples, so the worker can cache its analysis of a prompt.
        refusal_hint: a sentence for a later refusal of the prompt (by the engine) that a change
            made here may have caused ("" when nothing was changed that could).
    """

    samples: np.ndarray
    sample_rate_hz: int
    source_sample_rate_hz: int
    source_channels: int
    trimmed_s: float
    notes: tuple[str, ...]
    sha1: str
    refusal_hint: str = ""

    @property
    def seconds(self) -> float:
        return len(self.samples) / self.sample_rate_hz


def decode_audio_file(path: str) -> tuple[np.ndarray, int, str | None, str | None]:
    """Decode any supported audio file.

    Args:
        path: a file on disk.

    Returns:
        ``(samples, sample_rate_hz, note, cut)`` with samples float32 of shape ``(frames, channels)``;
        ``note`` says which track of a file with several audio tracks was used, or that the file
        is cut short or joined from several, else ``None``; ``cut`` is the sentence a later
        refusal adds for a file that is cut: a WAV that ends more than 0.1 s before its header
        says, an MP3, FLAC or Ogg file 5 % and 0.25 s before, or one whose data FFmpeg found
        damaged part way (the part before is decoded), else ``None``.

    Raises:
        InputError: no path, the file is gone (deleted after ``--temp-file-ttl``) or misnamed, not a file,
            empty, truncated, not audio, or in no format that libsndfile or FFmpeg (through PyAV)
            can decode.
    """
    if not path:
        raise InputError("No prompt audio was received. Upload a recording or record one with the microphone.")
    if not os.path.lexists(path):
        # Gradio keeps each upload in a folder named by the file's SHA-256: a path in any other
        # folder (the temporary folder itself too) was never an upload, and was told it had
        # expired, or that its folder had no file of that name (helper-116, helper-118).
        if not re.fullmatch(r"[0-9a-f]{64}", os.path.basename(os.path.dirname(path))):
            raise InputError("The prompt audio is not on the server: no upload has that path. Upload the recording "
                             "first, and send the path the upload answered, unchanged.")
        # An upload's folder that still holds files: the name was mistyped, not expired (helper-56
        # was told "no longer on the server" for "voice.wavx").
        try:
            others = os.listdir(os.path.dirname(path))
        except OSError:
            others = []
        if others:
            raise InputError("The prompt audio is not on the server: its upload folder has no file of that name. "
                             "Send the path the upload answered, unchanged, or upload the recording again.")
        # An upload named by a client after it was deleted: it was received, long ago.
        # The page's user sees no flags: the time is the running app's (forty-fourth newcomer session).
        from ..temp_files import upload_ttl_text

        raise InputError(f"The prompt audio is no longer on the server: uploads are kept for {upload_ttl_text()}. "
                         f"Upload it again.")
    if not os.path.isfile(path):
        raise InputError("The prompt audio is not a file. Upload a recording or record one with the microphone.")
    if os.path.getsize(path) == 0:
        raise InputError("The prompt audio file is empty (0 bytes). Upload the recording again.")
    if not _in_decoder_child and _read_by_libmpg123_path(path):
        # libmpg123 has no deadline, parses tags slowly and logs every damaged frame (helper-140:
        # 75,000 lines per upload): all of this function runs in a child. Tags are counted first,
        # which refuses a tag flood at once, without a child.
        _check_id3_tags(path)
        return _decode_in_child(path, whole=True)
    errors = []
    try:
        data, sr, container, stated_s, by_ffmpeg = _decode_with_soundfile(path)
    except (InputError, BusyError, ServiceStopping):
        raise
    except Exception as e:  # libsndfile raises its own types and RuntimeError; fall through to PyAV
        errors.append(f"soundfile: {e}")
    else:
        data, sr, note = _all_of_joined_file(data, sr, stated_s, by_ffmpeg)
        decoded_s = len(data) / sr
        short = _wav_shortfall(path) if container in _WAVE_FORMATS else None
        if short is not None:
            # libsndfile reads what is there without a word: a third of a WAV was taken as a short
            # prompt, and nothing said the file was cut (helper-59).
            cut = (f"The prompt file ends before its header says ({short[0]:.1f} s declared, {short[1]:.1f} s "
                   "present): it may be an incomplete copy or export; the part present was used.")
            note = f"{note} {cut}" if note else cut
            short = _cut_hint(f"ends before its header says ({short[0]:.1f} s declared, {short[1]:.1f} s present)")
        elif (container not in _WAVE_FORMATS and stated_s is not None
              and stated_s > _STATED_SLACK * decoded_s + _JOINED_EXTRA_S):
            # A clip cut from a longer MP3, FLAC or Ogg file with a byte tool (helper-115).
            short = _cut_hint(f"ends before its header says ({stated_s:.1f} s declared, {decoded_s:.1f} s present)")
            cut = (f"The prompt file's header says it is {stated_s:.1f} s long, but {decoded_s:.1f} s could be "
                   "decoded: it may be cut from a longer file without its header rewritten, or an incomplete copy; "
                   "the part present was used.")
            note = f"{note} {cut}" if note else cut
        return data, sr, note, short
    # Before PyAV: libsndfile refused a file whose first format chunk was damaged, and FFmpeg then
    # read the second and took it (helper-113).
    if problem := _wav_header_problem(path):
        raise InputError(f"The prompt audio file is damaged: {problem}. Export the recording again as 16-bit WAV "
                         "or FLAC.")
    try:
        data, sr, note, damaged_at_s = _decode_in_child(path)
        return data, sr, note, None if damaged_at_s is None else _cut_hint(
            f"is damaged or cut off after {damaged_at_s:.1f} s")
    except (InputError, BusyError, ServiceStopping):
        raise
    except Exception as e:
        errors.append(f"PyAV: {e}")
    if errors == ["soundfile: no samples", "PyAV: no decodable audio frames"] and _wav_shortfall(path) is None:
        # A well-formed file with nothing recorded was called "not an audio file" (helper-106).
        raise InputError("The prompt audio file holds no sound at all (0 samples): it is a valid recording that "
                         "was stopped at once, or exported empty. Record or export it again, 3-10 s of speech.")
    if _is_playlist(path):
        # Refused by FFmpeg's format list, with "Invalid argument ... returned 22" (helper-119).
        raise InputError("The prompt audio file is a playlist or manifest (it names other files), not a recording. "
                         f"Upload the recording itself: {SUPPORTED_FORMATS}.")
    if container := _video_container(path):
        # Valid files of containers left out of FFmpeg's format list were told they were not audio,
        # or damaged (helper-129).
        raise InputError(f"The prompt audio file is {container}, a video or broadcast container this server does not "
                         f"read. Export the sound alone: {SUPPORTED_FORMATS}.")
    detail = "; ".join(errors).replace(path, "the file").replace(os.path.basename(path), "the file")
    # libsndfile says this of a file named .mp3 that is no MP3: the file exists (helper-59).
    detail = detail.replace("File does not exist or is not a regular file (possibly a pipe?).", "Format not recognised.")
    # FFmpeg's error numbers tell a person nothing (helper-78, helper-129)
    detail = re.sub(r"\[Errno -?\d+\] | returned -?\d+", "", detail)
    raise InputError(
        "The prompt audio could not be decoded: it is not an audio file, it is truncated or damaged, or it uses "
        "an encoding this server cannot read. "
        f"Upload a {SUPPORTED_FORMATS} recording. ({detail[:200]})"
    )


def _video_container(path: str) -> str | None:
    """The name of a video or broadcast container that FFmpeg is not let read here (MPEG-TS as
    cameras and TV captures write it, Blu-ray's M2TS, FLV), from the file's first bytes, else None."""
    try:
        with open(path, "rb") as f:
            start = f.read(400)
    except OSError:
        return None
    if start.startswith(b"FLV\x01"):
        return "Flash video (FLV)"
    for offset, step, name in ((0, 188, "MPEG-TS (.ts, .mts)"), (4, 192, "MPEG-TS (.m2ts, .mts)")):
        if len(start) > offset + step and start[offset] == 0x47 and start[offset + step] == 0x47:
            return name
    return None


_PLAYLIST_STARTS = (b"#extm3u", b"ffconcat", b"[playlist]")  # HLS and M3U, FFmpeg's concat list, PLS
_MANIFEST_TAGS = (b"<mpd", b"<smil", b"<asx")  # DASH, SMIL, ASX (XML, after a declaration)


def _is_playlist(path: str) -> bool:
    """Whether the file is a text playlist or manifest, which names other files."""
    try:
        with open(path, "rb") as f:
            start = f.read(512).lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    except OSError:
        return False
    return start.startswith(_PLAYLIST_STARTS) or (start.startswith(b"<") and any(t in start for t in _MANIFEST_TAGS))


# Formats whose files can be several streams joined one after another (chained Ogg, FLAC or MP3
# files joined with cat), of which libsndfile decodes only the first.
_JOINABLE_FORMATS = frozenset({"OGG", "FLAC", "MP3"})
_JOINED_EXTRA_S = 0.25  # PyAV finding this much more audio means the file goes on after the first stream
_STATED_SLACK = 1.05  # an MP3's Xing frame count may be a little off


def _cut_hint(how: str) -> str:
    """The sentence a refusal of a cut file ends with (the first 30 KB of a WAV were refused as
    "only 0.34 s of sound ... record a full sentence", with no word that the file was cut; helper-94)."""
    return f"The file {how}: it may be an incomplete copy, download or export; upload the whole file."


def _joined_check(path: str) -> tuple[np.ndarray, int, str | None] | InputError | BusyError | None:
    """FFmpeg's decoding of a file libsndfile can read, for :func:`_all_of_joined_file`; None
    when FFmpeg cannot decode it; its refusal (the whole file too long or too slow), returned to
    be raised after libsndfile's own checks, whose words are more precise ("180.0 s long").

    Run before libsndfile's decode, not after: the thread lends its decode slot while the child
    works, and holding libsndfile's samples meanwhile, every upload at once held them (helper-132:
    16 clients of 119 s MP3s, 2.2 GiB); keeping its slot instead, WAV uploads waited behind files
    FFmpeg is slow on (helper-134: 68 s).
    """
    try:
        whole, rate, note, _ = _decode_in_child(path)
    except (InputError, BusyError, ServiceStopping) as e:
        return e
    except Exception:  # a join FFmpeg cannot decode either (a chained Vorbis changing rate)
        return None
    return whole, rate, note


def _all_of_joined_file(data: np.ndarray, sr: int, stated_s: float | None,
                        by_ffmpeg: tuple[np.ndarray, int, str | None] | None) -> tuple[np.ndarray, int, str | None]:
    """libsndfile's decoding, or PyAV's when it finds more in the file: of a chained Ogg or of
    FLAC or MP3 files joined with ``cat``, libsndfile decodes only the first part, and the rest
    (6.6 s of an 8.6 s prompt; once, 11 s of another speaker) was dropped without a word
    (forty-seventh newcomer session). PyAV decodes on through the joins. When what PyAV found
    is no longer than the header's ``stated_s``, it is one recording that libsndfile stopped in
    (damaged data), not a join: a damaged MP3 was called joined, cut and whole at once (helper-120).
    ``by_ffmpeg``: :func:`_joined_check`'s result, None for other formats or when FFmpeg failed."""
    if by_ffmpeg is None:
        return data, sr, None
    whole, rate, note = by_ffmpeg
    if len(whole) / rate < len(data) / sr + _JOINED_EXTRA_S:
        return data, sr, None
    if stated_s is not None and len(whole) / rate <= _STATED_SLACK * stated_s + _JOINED_EXTRA_S:
        damaged = (f"The prompt file has damaged data part way: one decoder stopped at {len(data) / sr:.1f} s, "
                   f"FFmpeg decoded on to {len(whole) / rate:.1f} s, and that was used.")
        return whole, rate, note or damaged
    joined = (f"The prompt file is several recordings joined one after another ({len(whole) / rate:.1f} s in all, "
              f"the first {len(data) / sr:.1f} s); all of it was used.")
    return whole, rate, f"{joined} {note}" if note else joined


def _too_long(seconds: float, at_least: bool = False, stated: bool = False) -> InputError:
    length = (f"is more than {MAX_DECODE_S:.0f} s long (decoding stopped there)" if at_least
              else f"is about {seconds:.0f} s long (as its container states)" if stated
              else f"is {seconds:.1f} s long")
    # About the whole file: it said "at most 30 s (after trimming silence)" for 130 s of silence
    # and 4 s of speech, which trimming would have accepted (thirty-first newcomer session).
    return InputError(
        f"The prompt audio file {length}; files over {MAX_DECODE_S:.0f} s are not read, silence included "
        f"(at most {MAX_PROMPT_S:.0f} s of speech is used). Cut a clean 3-10 s stretch of speech.")


def _too_many_samples(frames: int, channels: int, rate: int, at_least: bool = False) -> InputError:
    return InputError(
        f"The prompt audio file holds {'more than ' if at_least else ''}{frames * channels / 1e6:.1f} million samples "
        f"({channels} channel(s) at {rate} Hz, {frames / rate:.1f} s); at most {MAX_DECODE_SAMPLES / 1e6:.1f} million "
        f"are read (two channels at 48 kHz for {MAX_DECODE_S:.0f} s). Cut a clean 3-10 s stretch of speech, or "
        "export it as mono at 48 kHz or less.")


_WAVE_FORMATS = ("WAV", "WAVEX", "RF64", "W64")  # libsndfile's names of the containers walked below
MAX_WAV_CHUNKS = 10_000  # a recording has a handful: fmt, data, LIST, bext, iXML, JUNK, ...
_W64_RIFF = b"riff\x2e\x91\xcf\x11\xa5\xd6\x28\xdb\x04\xc1\x00\x00"  # Sony Wave64's GUIDs
_W64_WAVE = b"wave\xf3\xac\xd3\x11\x8c\xd1\x00\xc0\x4f\x8e\xdb\x8a"
_TOO_MANY_CHUNKS = b""  # the kind yielded when MAX_WAV_CHUNKS pass with more to come


def _wav_chunks(f):
    """``(kind, offset of its data, declared size, byte order)`` of each chunk of the WAVE file
    ``f`` (opened binary), in file order, found by seeking from one chunk header to the next;
    nothing for another kind of file. Editors put chunks of any size (``bext``, ``iXML``,
    ``JUNK``) before ``fmt ``: reading only the first 4 KiB missed a format chunk after 5,000
    bytes of them (helper-112). After :data:`MAX_WAV_CHUNKS` chunks with more to come it yields
    ``(b"", ...)`` and stops: libsndfile reads on, past any limit a walk stops at (helper-113).

    Layouts: RIFF/RIFX (Microsoft's RIFF specification, 1991) and RF64/BW64 (EBU Tech 3306, the
    same chunks, sizes over 4 GiB in a ``ds64`` chunk): a 12-byte file header, then chunks of a
    4-byte id, a 4-byte size and the data, padded to an even length. Sony Wave64 (libsndfile's
    W64): a 40-byte header, then chunks of a 16-byte GUID (its first 4 bytes name it, ``fmt ``,
    ``data``), an 8-byte size that counts the 24-byte header, and the data, padded to 8 bytes.
    RF64 and W64 files were not walked at all, so their damaged headers went unchecked (helper-113).
    """
    import struct

    f.seek(0)
    head = f.read(40)
    if head[:4] in (b"RIFF", b"RIFX", b"RF64", b"BW64") and head[8:12] == b"WAVE":
        order, at, wave64 = (">" if head[:4] == b"RIFX" else "<"), 12, False
    elif head[:16] == _W64_RIFF and head[24:40] == _W64_WAVE:
        order, at, wave64 = "<", 40, True
    else:
        return
    for _ in range(MAX_WAV_CHUNKS):
        f.seek(at)
        header = f.read(24 if wave64 else 8)
        if len(header) < (24 if wave64 else 8):
            return
        if wave64:
            kind, size = header[:4], struct.unpack("<Q", header[16:24])[0] - 24
            if size < 0:
                return
            yield kind, at + 24, size, order
            at += 24 + size + (-(24 + size) % 8)
        else:
            kind, size = header[:4], struct.unpack(order + "I", header[4:])[0]
            yield kind, at + 8, size, order
            at += 8 + size + (size & 1)
    f.seek(at)
    if f.read(1):
        yield _TOO_MANY_CHUNKS, at, 0, order


def _wav_header_problem(path: str) -> str | None:
    """Why a PCM WAV's format chunk cannot be right, or ``None``: its bytes per frame (block
    align) must be the channels times the bytes the declared sample size takes. libsndfile
    decodes what it is given: a header declaring 7 bits per sample in 2-byte frames was read a
    byte at a time, as 17 s of noise from an 8.6 s prompt, and accepted (forty-seventh newcomer
    session). A file with no whole "fmt " chunk passes."""
    import struct

    with open(path, "rb") as f:
        for kind, data_at, _, order in _wav_chunks(f):
            if kind == _TOO_MANY_CHUNKS:
                return f"its header has more than {MAX_WAV_CHUNKS:,} chunks before its format chunk"
            if kind != b"fmt ":
                continue
            f.seek(data_at)
            body = f.read(16)
            if len(body) < 16:
                return None
            tag, channels, rate, _, block_align, bits = struct.unpack(order + "HHIIHH", body)
            # Neither libsndfile ("Too many channels specified", "SF_INFO struct incomplete") nor
            # FFmpeg names the field; the file got the generic "could not be decoded" (helper-105).
            if not 0 < channels <= MAX_WAV_CHANNELS:
                return (f"its header declares {channels} channels, where a recording has 1 or 2 (at most "
                        f"{MAX_WAV_CHANNELS} can be read)")
            if not 0 < rate <= MAX_SOURCE_SAMPLE_RATE_HZ:
                return f"its header declares a sample rate of {rate} Hz, which no recorder uses"
            if tag in (1, 0xFFFE) and channels and bits and block_align != channels * ((bits + 7) // 8):
                return (f"its header declares {bits} bits per sample in frames of {block_align} byte(s) for "
                        f"{channels} channel(s), which do not fit together")
            return None
    return None


def _wav_shortfall(path: str) -> tuple[float, float] | None:
    """``(seconds the data chunk declares, seconds of it in the file)`` for a WAV whose file ends
    more than 0.1 s before its header says, else ``None``. Sizes 0 and 0xFFFFFFFF (writers that
    stream without knowing the length) declare nothing."""
    import struct

    byte_rate = 0
    with open(path, "rb") as f:
        file_bytes = os.fstat(f.fileno()).st_size
        for kind, data_at, size, order in _wav_chunks(f):
            if kind == b"fmt ":
                f.seek(data_at + 8)  # after the format tag, channels and sample rate
                field = f.read(4)
                byte_rate = struct.unpack(order + "I", field)[0] if len(field) == 4 else 0
            elif kind == b"data":
                present = file_bytes - data_at
                if byte_rate <= 0 or size in (0, 0xFFFFFFFF) or size - present <= 0.1 * byte_rate:
                    return None
                return size / byte_rate, present / byte_rate
    return None


# Codecs made for 8 kHz telephone calls. libsndfile decodes them at any rate the header states, in
# the web process and slowly: G.721 at 48 kHz took 2.3 s of CPU per 110 s, up to 6.2 s per upload
# at the sample cap (helper-119; /tmp/s24/subtypes.py, throwaway). At 8 kHz the rate check refuses
# them already; at a higher rate they are a call resampled, or a file made to be slow.
_TELEPHONE_CODECS = {"G721_32": "G.721 ADPCM", "G723_24": "G.723 ADPCM", "G723_40": "G.723 ADPCM",
                     "GSM610": "GSM 6.10", "VOX_ADPCM": "Dialogic VOX ADPCM", "NMS_ADPCM_16": "NMS ADPCM",
                     "NMS_ADPCM_24": "NMS ADPCM", "NMS_ADPCM_32": "NMS ADPCM"}


# Entries a recording's FLAC metadata may carry (Vorbis comments, metadata blocks): a few dozen in
# practice. FFmpeg parses FLAC comments in time that grows with the square of their count (80,000:
# past its 10 s deadline; helper-134); 4.8 million empty padding blocks held a walk of them 2.2 s
# (helper-135). 1,000 take milliseconds.
MAX_TAG_ENTRIES = 1000
# ID3v2 tags and their frames in one file libmpg123 reads (inside libsndfile, in the web process,
# with no deadline). A recording carries one tag, sometimes a second appended by another tagger,
# of a few dozen frames (MusicBrainz Picard writes about 40). libmpg123 parses every tag it meets,
# at the start or between audio frames, in time that grows with the square of the frames (250,000
# in a 4.9 MB MP3: 98 s in sf.info, helper-134; 100,000 behind three audio frames: 66 s,
# helper-138), and writes a log line for each odd tag or frame (1.9 million empty tags: 400 MB of
# log, helper-135; 3.6 million empty frames, helper-138). Counted in all tags together.
MAX_ID3_TAGS = 16
MAX_ID3_FRAMES = 128
_TAGS_HINT = "Export the recording again without its tags (metadata), as WAV, FLAC or MP3."


def _tags_refusal(what: str) -> InputError:
    return InputError(f"The prompt audio file's metadata holds {what}; a recording carries one tag of a few dozen "
                      f"entries, and this many take minutes to read. {_TAGS_HINT}")


def _syncsafe(raw: bytes) -> int:
    """An ID3v2 syncsafe integer: 7 bits per byte, big-endian (id3.org's ID3v2.4 structure, 6.2)."""
    return sum((b & 0x7F) << (7 * (len(raw) - 1 - i)) for i, b in enumerate(raw))


def _check_flac_metadata(path: str) -> None:
    """Refuse a FLAC file with more than :data:`MAX_TAG_ENTRIES` metadata blocks or Vorbis comments
    (xiph.org's FLAC format: 4-byte block headers; the comment count after the vendor string).
    Other files pass; so do unreadable ones (the decoders say what is wrong).

    Raises:
        InputError: naming what the metadata holds and what to upload instead.
    """
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"fLaC":
                return
            for _ in range(MAX_TAG_ENTRIES + 1):
                header = f.read(4)
                if len(header) < 4:
                    return
                kind, size = header[0] & 0x7F, int.from_bytes(header[1:4], "big")
                if kind == 4:
                    vendor = int.from_bytes(f.read(4), "little")
                    f.seek(vendor, os.SEEK_CUR)
                    if int.from_bytes(f.read(4), "little") > MAX_TAG_ENTRIES:
                        raise _tags_refusal(f"more than {MAX_TAG_ENTRIES:,} tag entries (Vorbis comments)")
                    return
                if header[0] & 0x80:
                    return
                f.seek(size, os.SEEK_CUR)
            raise _tags_refusal(f"more than {MAX_TAG_ENTRIES:,} metadata blocks")
    except OSError:
        return


# Where an Ogg stream's comment header starts: Vorbis I's header type 3, Opus's OpusTags.
_OGG_COMMENT_MARKERS = (b"\x03vorbis", b"OpusTags")
_OGG_HEAD_BYTES = 1024 * 1024  # a vendor string is a few dozen bytes ("Lavf60.3.100")


def _ogg_packet_bytes(head: bytes) -> bytes:
    """The packet data of the first logical stream in ``head`` (the start of an Ogg file): page
    bodies joined, page headers dropped (RFC 3533: a 27-byte header, a segment table, the body)."""
    out, pos, serial = bytearray(), 0, None
    while pos + 27 <= len(head) and head[pos:pos + 4] == b"OggS":
        segments = head[pos + 26]
        body_at = pos + 27 + segments
        body_end = body_at + sum(head[pos + 27:body_at])
        serial = serial or head[pos + 14:pos + 18]
        if head[pos + 14:pos + 18] == serial:
            out += head[body_at:body_end]
        pos = body_end
    return bytes(out)


def _check_ogg_comments(path: str) -> None:
    """Refuse an Ogg Vorbis or Opus file whose comment header holds more than
    :data:`MAX_TAG_ENTRIES` comments (Vorbis I spec 5.2.1, RFC 7845 5.2: a vendor string, then the
    32-bit little-endian count), or whose count lies past the first MiB (a vendor string that
    long). FFmpeg's join check ran past its 10 s deadline on 200,000 comments, and the file was
    refused as holding "millions of packets in other tracks" (helper-135). The count is read from
    the stream's packet data, across pages: read from the raw bytes, it was skipped when the
    vendor string held "OggS" or ran past 64 KB (helper-144).

    Raises:
        InputError: naming what the metadata holds and what to upload instead.
    """
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"OggS":
                return
            head = b"OggS" + f.read(_OGG_HEAD_BYTES - 4)
    except OSError:
        return
    packets = _ogg_packet_bytes(head)
    for marker in _OGG_COMMENT_MARKERS:
        at = packets.find(marker)
        if at < 0:
            continue
        vendor_at = at + len(marker)
        count_at = vendor_at + 4 + int.from_bytes(packets[vendor_at:vendor_at + 4], "little")
        if count_at + 4 > len(packets):
            if len(head) == _OGG_HEAD_BYTES:  # the file goes on: a vendor string longer than any encoder's
                raise _tags_refusal("a comment header whose vendor string runs past the first MiB")
            return
        if int.from_bytes(packets[count_at:count_at + 4], "little") > MAX_TAG_ENTRIES:
            raise _tags_refusal(f"more than {MAX_TAG_ENTRIES:,} tag entries (Vorbis comments)")
        return


# WAVE format tags of MPEG audio (Microsoft's mmreg.h: WAVE_FORMAT_MPEG, WAVE_FORMAT_MPEGLAYER3),
# which libsndfile decodes with libmpg123 inside a WAV, RF64 or Wave64 file (helper-138).
_MPEG_WAVE_TAGS = frozenset({0x0050, 0x0055})


def _mpeg_format_anywhere(f, order: str) -> bool:
    """Whether any ``fmt `` in the RIFF/RIFX file ``f`` (opened binary) is followed, as a chunk
    header would be, by an MPEG format tag (or WAVE_FORMAT_EXTENSIBLE with an MPEG subformat).
    libsndfile's chunk walk departs from the declared sizes (it reads 4 bytes of a ``fact`` chunk of
    size 0, does not skip a second ``fmt ``, resyncs on odd markers; helper-142): wherever it lands,
    it can take the MPEG codec only from such bytes. At most ~10 ms for 20 MB (mmap)."""
    import mmap

    try:
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            at = data.find(b"fmt ")
            while at >= 0:
                tag = int.from_bytes(data[at + 8:at + 10], "big" if order == ">" else "little")
                if tag == 0xFFFE:
                    tag = int.from_bytes(data[at + 32:at + 34], "little")
                if tag in _MPEG_WAVE_TAGS:
                    return True
                at = data.find(b"fmt ", at + 4)
    except (OSError, ValueError):
        return True  # unreadable here: let the child read it
    return False


def _read_by_libmpg123(f) -> bool:
    """Whether libsndfile 1.2 may hand the file ``f`` (opened binary) to libmpg123: one starting
    with an ID3v2 tag or an MPEG audio frame's sync bits, a RIFF or RIFX file with an MPEG format
    chunk anywhere (:func:`_mpeg_format_anywhere`; a walk by the declared sizes missed one behind a
    ``fact`` chunk of size 0, helper-142), or another WAV-family file whose ``fmt `` chunk (found
    by :func:`_wav_chunks`) has an MPEG format tag, or more chunks than the walk reads (libsndfile
    reads on). A name ending in ``.mp3`` is the caller's test: libsndfile then reads any content
    as MPEG."""
    f.seek(0)
    head = f.read(4)
    if head[:3] == b"ID3" or (len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return True
    if head in (b"RIFF", b"RIFX"):
        return _mpeg_format_anywhere(f, ">" if head == b"RIFX" else "<")
    for kind, data_at, _, order in _wav_chunks(f):
        if kind == _TOO_MANY_CHUNKS:
            return True
        if kind == b"fmt ":
            f.seek(data_at)
            body = f.read(26)
            tag = int.from_bytes(body[:2], "big" if order == ">" else "little")
            if tag == 0xFFFE:  # WAVE_FORMAT_EXTENSIBLE: the subformat GUID starts with the tag
                tag = int.from_bytes(body[24:26], "little")
            return tag in _MPEG_WAVE_TAGS
    return False


def _read_by_libmpg123_path(path: str) -> bool:
    """:func:`_read_by_libmpg123` for the file at ``path``, or one named ``.mp3`` (any content)."""
    if path.lower().endswith(".mp3"):
        return True
    try:
        with open(path, "rb") as f:
            return _read_by_libmpg123(f)
    except OSError:
        return False


def _id3_frames(data, body: int, end: int, version: int, limit: int) -> int:
    """ID3v2 frames between ``body`` and ``end`` in ``data``, counted up to ``limit`` + 1: 6-byte
    frame headers in v2.2, 10-byte ones in v2.3/2.4 (syncsafe sizes in v2.4), until padding (a
    zero byte) or the end."""
    entries, pos, frame_header = 0, body, 6 if version == 2 else 10
    while pos + frame_header <= end and data[pos] != 0 and entries <= limit:
        raw = data[pos + 3:pos + 6] if version == 2 else data[pos + 4:pos + 8]
        entries += 1
        pos += frame_header + (_syncsafe(raw) if version == 4 else int.from_bytes(raw, "big"))
    return entries


def _check_id3_tags(path: str) -> None:
    """Refuse a file that libmpg123 would read (the caller has asked :func:`_read_by_libmpg123_path`)
    and that holds more than :data:`MAX_ID3_TAGS` ID3v2 tags, or more than :data:`MAX_ID3_FRAMES`
    frames in them all, anywhere in the file: a tag is every ``ID3`` libmpg123 may meet (ID3v2.2-2.4: a
    10-byte header with a syncsafe size, an optional extended header, then frames; id3.org's
    ID3v2.3/2.4 structure documents). The frames of a tag with an extended header are counted
    from its start and from past it as v2.3 and v2.4 size it, the largest kept: an extended header
    hid 100,000 frames from a count that began at it (helper-135). At most ~20 ms for 20 MB.

    Raises:
        InputError: naming what the metadata holds and what to upload instead.
    """
    import mmap

    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            tags = frames = 0
            at = data.find(b"ID3")
            while at >= 0:
                tags += 1
                if tags > MAX_ID3_TAGS:
                    raise _tags_refusal(f"more than {MAX_ID3_TAGS} ID3 tags")
                head = data[at:at + 10]
                if len(head) == 10:
                    version, flags = head[3], head[5]
                    body, end = at + 10, min(len(data), at + 10 + _syncsafe(head[6:10]))
                    starts = {body}
                    if flags & 0x40 and end - body >= 4:
                        size = data[body:body + 4]
                        starts |= {body + 4 + int.from_bytes(size, "big"), body + _syncsafe(size)}
                    frames += max(_id3_frames(data, start, end, version, MAX_ID3_FRAMES - frames) for start in starts)
                    if frames > MAX_ID3_FRAMES:
                        raise _tags_refusal(f"more than {MAX_ID3_FRAMES} tag entries (ID3 frames)")
                at = data.find(b"ID3", at + 3)
    except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
        return


def _decode_with_soundfile(path: str) -> tuple[np.ndarray, int, str, float | None, tuple | None]:
    """Decode with libsndfile; returns ``(samples, rate, container format as sf.info names it,
    seconds its header states or None, FFmpeg's decoding for the join check or None)``; the last
    only for MP3, FLAC and Ogg (:func:`_joined_check`, done before libsndfile reads)."""
    import soundfile as sf

    _check_flac_metadata(path)
    _check_ogg_comments(path)
    # ID3 tags were counted before a file libmpg123 reads came here (decode_audio_file, in the web
    # process, before its child): they matter to libmpg123 only.
    info = sf.info(path)
    if info.format in _WAVE_FORMATS and (problem := _wav_header_problem(path)):
        raise InputError(f"The prompt audio file is damaged: {problem}. Export the recording again as 16-bit WAV "
                         "or FLAC.")
    if info.samplerate > 0:
        _check_sample_rate(info.samplerate)  # before the length, which a 1 Hz header makes days long
    if info.subtype in _TELEPHONE_CODECS:
        raise InputError(f"The prompt audio is encoded as {_TELEPHONE_CODECS[info.subtype]}, a telephone codec: it "
                         "keeps only the 300-3400 Hz band of a call, without the high band that carries a voice's "
                         "timbre. Upload the original recording, or export it again as 16-bit WAV or FLAC at "
                         "16-48 kHz.")
    # A FLAC whose header leaves the length open (written through a pipe) reports 2**63 - 1
    # frames: it was refused as "209146758205323.7 s long" (twenty-fourth newcomer session).
    length_known = 0 < info.frames < 2**62
    channels = max(1, info.channels)
    cap = (min(int(MAX_DECODE_S * info.samplerate), MAX_DECODE_SAMPLES // channels) + 1
           if info.samplerate > 0 else -1)
    # A 64-bit float file can hold finite values past float32's range (x1e300): read as float64,
    # they are scaled down below instead of becoming "infinite samples" (twenty-fifth newcomer session).
    dtype = "float64" if info.subtype == "DOUBLE" else "float32"
    by_ffmpeg = _joined_check(path) if info.format in _JOINABLE_FORMATS else None
    # What FFmpeg's child could not do within its deadline or memory, libsndfile would do here with
    # neither; a stop or a busy decoder is answered at once, not after a read (helper-135).
    if isinstance(by_ffmpeg, (DecoderLimit, BusyError, ServiceStopping)):
        raise by_ffmpeg
    data, sr = sf.read(path, frames=cap, dtype=dtype, always_2d=True)
    if data.size == 0:
        raise ValueError("no samples")
    if cap > 0 and data.shape[0] >= cap:
        # The header's length is believed only once decoding reaches the cap: a clip cut with
        # `head -c` from a 180 s MP3 or FLAC keeps the whole file's length in its header, and was
        # refused as "180.0 s long" without a sample read (helper-115).
        frames = info.frames if length_known and info.frames > data.shape[0] else data.shape[0]
        at_least = frames == data.shape[0]
        if data.shape[0] * channels > MAX_DECODE_SAMPLES:
            raise _too_many_samples(frames, channels, int(sr), at_least=at_least)
        raise _too_long(frames / sr, at_least=at_least)
    if isinstance(by_ffmpeg, Exception):
        raise by_ffmpeg
    stated_s = info.frames / info.samplerate if length_known and info.samplerate > 0 else None
    return data, int(sr), info.format, stated_s, by_ffmpeg


def decode_with_pyav(path: str) -> tuple[np.ndarray, int, str | None, float | None]:
    """Decode with PyAV, in this process: :func:`.pyav_process.decode_in_child` runs it in a child
    process, and nothing else should call it. Returns ``(samples, rate, note, seconds decoded
    before damaged data ended the track used, or None)``. A file with several audio tracks (a
    phone or screen recording with the microphone on the second track) gives its loudest of the
    first :data:`_MAX_TRACKS`: the first alone was a silent track, refused as silent (forty-sixth
    newcomer session). ``note`` names the track used, or is ``None`` for a single track."""
    import av

    with av.open(path, mode="r", options=_OPEN_OPTIONS) as container:
        tracks = sum(1 for s in container.streams if s.type == "audio")
    if not tracks:
        raise ValueError("no audio stream")
    best, failure = None, None
    for index in range(min(tracks, _MAX_TRACKS)):
        try:
            data, rate, damaged_at_s, skipped = _decode_pyav_track(path, index)
        except InputError:
            raise
        except Exception as e:  # a damaged track beside a good one: use the good one
            failure = failure or e
            continue
        power = float(np.mean(np.square(data, dtype=np.float64)))
        if best is None or power > best[2]:
            best = (data, rate, power, index, damaged_at_s, skipped)
    if best is None:
        raise failure
    note = None
    if tracks > 1:
        note = (f"The prompt file has {tracks} audio tracks; the loudest (track {best[3] + 1}) was used."
                + (f" Only the first {_MAX_TRACKS} were read." if tracks > _MAX_TRACKS else ""))
    if best[5]:
        skipped = (f"The prompt file has {best[5]} damaged packet(s) in the middle; they were left out (a gap of a "
                   "fraction of a second each), the rest was used.")
        note = f"{note} {skipped}" if note else skipped
    if best[4] is not None:
        damaged = (f"The prompt file's data is damaged or cut off after {best[4]:.1f} s (a clip cut from a longer "
                   "file without its header rewritten, or an incomplete copy); the part before was used.")
        note = f"{note} {damaged}" if note else damaged
    return best[0], best[1], note, best[4]


_MAX_TRACKS = 4
# The demuxers FFmpeg may use: self-contained audio (and audio-with-video) containers. An upload
# named .m3u8 was read as an HLS playlist, which opened any local MP3, FLAC, M4A or MKV by its
# absolute path and used it as the prompt (its length told whether the file exists), and a live
# playlist of a missing segment held a decode slot for the whole deadline (helper-117); DASH
# manifests, concat lists and image sequences open other files too.
_OPEN_OPTIONS = {"format_whitelist": "mov,matroska,ogg,mp3,flac,wav,w64,aac,aiff,caf,avi,amr,au,nut,asf,wv,ape,tta,ac3",
                 "protocol_whitelist": "file"}


def _decode_pyav_track(path: str, index: int) -> tuple[np.ndarray, int, float | None, int]:
    """One audio track as ``(samples, rate, seconds decoded before damaged data ended it or None,
    damaged packets skipped before the end)``."""
    import av

    with av.open(path, mode="r", options=_OPEN_OPTIONS) as container:
        stream = [s for s in container.streams if s.type == "audio"][index]
        # Planar float keeps channels apart whatever the codec's native sample format is. A stream
        # that changes its rate midway (MP3 or Ogg files joined) is converted to the first frame's
        # rate, one resampler per input setup; one that changes its channel count (ADTS AAC
        # joined from a mono and a stereo file) is mixed down below, instead of failing to join
        # its pieces (forty-sixth newcomer session).
        resampler, setup, first = None, None, True
        chunks = []
        rate = stream.rate or stream.codec_context.sample_rate
        decoded, packets, damaged_at_s, skipped, decoded_at_last_skip = 0, 0, None, 0, None
        demuxing, frames = container.demux(stream), iter(())
        while True:
            try:
                frame = next(frames)
            except StopIteration:
                try:
                    packet = next(demuxing)
                except StopIteration:
                    break
                except av.error.InvalidDataError:
                    if not chunks:
                        raise
                    # A clip cut with `head -c` ends in half a packet: FFmpeg decoded the 8 s before
                    # it and then raised, and the whole file was refused as not audio (helper-115).
                    damaged_at_s = decoded / rate if rate else 0.0
                    break
                packets += 1
                if packets > MAX_DECODE_FRAMES:
                    raise InputError(
                        f"The prompt audio file is cut into more than {MAX_DECODE_FRAMES:,} audio packets "
                        f"({decoded / max(packets - 1, 1):.1f} samples each so far), far more than any recorder "
                        "writes: it cannot be read in reasonable time. Export the recording again as WAV, FLAC or "
                        "MP3.")
                try:
                    frames = iter(packet.decode())
                except av.error.InvalidDataError:
                    # One damaged packet mid-file ended the decode there: 6 s of an 8.7 s M4A were
                    # dropped as "cut off" (helper-119). FFmpeg decodes on after it; so does this.
                    skipped, decoded_at_last_skip = skipped + 1, decoded
                    frames = iter(())
                continue
            if first:
                rate, first = frame.sample_rate or rate, False
            if (frame.format.name, frame.layout.name, frame.sample_rate) != setup:
                if resampler is not None:  # its buffered tail comes before the new setup's samples
                    chunks += [out.to_ndarray() for out in resampler.resample(None)]
                setup = (frame.format.name, frame.layout.name, frame.sample_rate)
                resampler = av.AudioResampler(format="fltp", rate=rate)
            for out in resampler.resample(frame):
                chunks.append(out.to_ndarray())
                decoded += out.samples
            channels = chunks[-1].shape[0] if chunks else 1
            if rate and decoded * channels > MAX_DECODE_SAMPLES and decoded <= MAX_DECODE_S * rate:
                raise _too_many_samples(decoded, channels, rate, at_least=True)
            if rate and decoded > MAX_DECODE_S * rate:
                # Containers often carry no reliable duration; stop decoding instead, and give the
                # length the container states only when it is past where decoding stopped (a
                # 60-minute file was reported as "120.0 s long").
                stated_s = (container.duration or 0) / av.time_base
                if stated_s > decoded / rate:
                    raise _too_long(stated_s, stated=True)
                raise _too_long(decoded / rate, at_least=True)
        if resampler is not None:
            chunks += [out.to_ndarray() for out in resampler.resample(None)]
    if not chunks or not rate:
        raise ValueError("no decodable audio frames")
    if skipped and decoded_at_last_skip == decoded:  # nothing after the last damaged packet: cut off there
        damaged_at_s, skipped = decoded / rate, skipped - 1
    if len({chunk.shape[0] for chunk in chunks}) > 1:
        # Mixed down by the mean, as below for a whole file: FFmpeg's own stereo-to-mono mix is
        # 3 dB louder (the same sound in both channels came out at 1.39 times full scale).
        chunks = [chunk.mean(axis=0, keepdims=True) for chunk in chunks]
    data = np.concatenate(chunks, axis=1).T.astype(np.float32, copy=False)
    if data.size == 0:
        raise ValueError("no samples")
    return np.ascontiguousarray(data), int(rate), damaged_at_s, skipped


RUMBLE_CUTOFF_HZ = 30.0


def remove_rumble(samples: np.ndarray, sample_rate_hz: int) -> np.ndarray:
    """High-pass at :data:`RUMBLE_CUTOFF_HZ` (4th-order Butterworth as two torchaudio biquads,
    Q 0.5412 and 1.3066): nothing of a voice lies that low (the lowest voices' fundamentals are
    near 60 Hz, -0.3 dB here), but an inaudible 15 Hz rumble 33 dB under the speech moved the
    cloned pitch by 3.5 semitones, and a loud one had the prompt refused as "no voiced speech"
    (thirtieth newcomer session; wind and handling noise are like that).

    Args:
        samples: float32, shape ``(n,)``, mono.
    Returns:
        float32, shape ``(n,)``.
    """
    import torch
    import torchaudio.functional as F

    x = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32))
    for q in (0.5412, 1.3066):
        x = F.highpass_biquad(x, sample_rate_hz, RUMBLE_CUTOFF_HZ, Q=q)
    return x.numpy()


def resample(samples: np.ndarray, from_hz: int, to_hz: int) -> np.ndarray:
    """Band-limited resampling of a mono float32 signal with torchaudio (sinc interpolation).

    Args:
        samples: float32, shape ``(n,)``.
        from_hz / to_hz: sample rates in Hz.

    Returns:
        float32, shape ``(round(n * to_hz / from_hz),)`` approximately.
    """
    if from_hz == to_hz:
        return samples.astype(np.float32, copy=False)
    if from_hz // math.gcd(from_hz, to_hz) > _MAX_RESAMPLE_RATIO_TERM:
        from_hz = max(50, int(round(from_hz / 50.0)) * 50)  # see _MAX_RESAMPLE_RATIO_TERM
        if from_hz == to_hz:
            return samples.astype(np.float32, copy=False)
    import torch
    import torchaudio.functional as F

    out = F.resample(torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32)), from_hz, to_hz)
    return out.numpy().astype(np.float32, copy=False)


def frame_rms_dbfs(samples: np.ndarray, sample_rate_hz: int, frame_s: float = _FRAME_S) -> np.ndarray:
    """RMS level of consecutive frames in dB relative to full scale (a full-scale sine is -3 dBFS).

    Args:
        samples: float32, shape ``(n,)``.

    Returns:
        float64, shape ``(ceil(n / frame),)``; silent frames are -inf clipped to -200.
    """
    hop = max(1, int(round(frame_s * sample_rate_hz)))
    n = int(math.ceil(len(samples) / hop))
    padded = np.zeros(n * hop, dtype=np.float64)
    padded[: len(samples)] = samples
    rms = np.sqrt(np.mean(padded.reshape(n, hop) ** 2, axis=1))
    return np.maximum(20.0 * np.log10(np.maximum(rms, 1e-10)), -200.0)


def trim_silence(samples: np.ndarray, sample_rate_hz: int) -> np.ndarray:
    """Cut leading and trailing frames more than :data:`TRIM_BELOW_PEAK_DB` below the loudest
    frame, keeping 50 ms of margin on each side. Silence inside the recording is kept."""
    levels = frame_rms_dbfs(samples, sample_rate_hz)
    loud = np.flatnonzero(levels > levels.max() - TRIM_BELOW_PEAK_DB)
    hop = max(1, int(round(_FRAME_S * sample_rate_hz)))
    pad = int(_PAD_S * sample_rate_hz)
    start = max(0, loud[0] * hop - pad)
    end = min(len(samples), (loud[-1] + 1) * hop + pad)
    return samples[start:end]


def load_prompt_audio(path: str) -> PromptAudio:
    """Decode, check and normalize a voice prompt.

    Steps: decode (:func:`decode_audio_file`), reject non-finite samples, reject rates under
    16 kHz, scale float samples past full scale down to it, mix down to mono (mean of channels),
    resample to 24 kHz with torchaudio, reject silence, trim silent ends, check the remaining
    duration, reject a steady tone, reject telephone-band audio (:func:`high_band_db`).

    Args:
        path: the uploaded or recorded file.

    Returns:
        A :class:`PromptAudio` of 1-30 s; notes carry a hint when it is under 3 s or clipped.

    Raises:
        InputError: with a message naming the problem (not audio, truncated, NaN, too low a
            sample rate, silent, too short, too long, a steady tone, nothing above 4.5 kHz) and
            what would work.
    """
    with _DECODE_SLOTS:
        if _stopping.is_set():
            raise ServiceStopping(STOPPING_MESSAGE)
        _holds_slot.value = True
        try:
            data, sr, decode_note, cut = decode_audio_file(path)
            try:
                return _prompt_from_samples(data, sr, decode_note)
            except InputError as e:
                if cut is None:
                    raise
                raise InputError(f"{e} {cut}") from None  # see _cut_hint
        finally:
            _holds_slot.value = False
            return_freed_heap()  # PyAV's frame buffers stayed as free heap per serving thread


def _decode_in_child(path: str, whole: bool = False) -> tuple[np.ndarray, int, str | None, float | str | None]:
    """:func:`.pyav_process.decode_in_child` (``whole`` passed on) with the deadline
    :data:`MAX_PYAV_DECODE_S`, this thread's decode slot (if it holds one) lent out while the child
    works, and taken back for the samples it returns before the child's slot is freed: taken back
    after, any number of decoded replies waited for a slot in the web process at once (16 clients
    of 119 s stereo files: peak 1.8 GiB against 1.35 before the lending; helper-125). Slots are
    taken in one order (a child's, then the web process's), so no two threads wait on each other.
    A stop is checked inside, once the child's slot comes. In the child itself
    (:func:`decode_here`), PyAV decodes here."""
    if _in_decoder_child:
        try:
            return decode_with_pyav(path)
        except MemoryError:  # the child's own limit, which libsndfile's read shares
            raise too_much_memory(DECODE_MEMORY_MIB) from None
    if not getattr(_holds_slot, "value", False):
        return decode_in_child(path, MAX_PYAV_DECODE_S, stopping=_stopping, whole=whole)
    _DECODE_SLOTS.release()
    taken_back = []

    def take_back() -> None:
        _DECODE_SLOTS.acquire()
        taken_back.append(True)

    try:
        return decode_in_child(path, MAX_PYAV_DECODE_S, before_slot_freed=take_back, stopping=_stopping, whole=whole)
    finally:
        if not taken_back:  # the child's slot was never reached
            _DECODE_SLOTS.acquire()


def _check_sample_rate(sr: int) -> None:
    if sr > MAX_SOURCE_SAMPLE_RATE_HZ:
        raise InputError(f"The prompt audio claims a sample rate of {sr} Hz, which no recorder uses. "
                         "Export it again at 16-48 kHz.")
    if sr < MIN_SOURCE_SAMPLE_RATE_HZ:
        raise InputError(
            f"The prompt audio is sampled at {sr} Hz; at least {MIN_SOURCE_SAMPLE_RATE_HZ} Hz is needed "
            "(telephone-quality audio lacks the high band that carries a voice's timbre). "
            "Record again at 16 kHz or more (44.1 or 48 kHz is best)."
        )


# Telephone-band audio saved at a higher rate passed the sample-rate check: a 300-3400 Hz call
# resampled to 16 kHz made the embedded engine's clone of a man 10 semitones higher (its pitch
# tracker took the second harmonic for the missing fundamental; thirty-eighth newcomer session).
# Measured as the power at 4.5-11 kHz over the power at 2-3.4 kHz (the top of the telephone band,
# which a beep or a hum at lower frequencies does not change; a share of the whole power did: a
# 1 kHz beep before the speech made it -35 dB): -9.3 to +2.1 dB in the real prompts, -31 to -37 dB
# in them band-passed to 300-3400 Hz via 8 kHz, -19 to -29 dB with a gentler 4th-order band-pass
# kept at 48 kHz (/tmp/s10/band4.py, throwaway).
_HIGH_BAND_HZ = (4500.0, 11000.0)
_TELEPHONE_TOP_HZ = (2000.0, 3400.0)
MIN_HIGH_BAND_DB = -16.0
# ... and only where the spectrum above 4.5 kHz falls off as a filter's does. A dark stretch of a
# clean recording (few fricatives) came to -16 and -20 dB and was refused as a phone call
# (helper-64: 4 s and 2 s of xtts_male.wav). Its 6-11 kHz band is within 2.3 dB of its 4.5-6 kHz
# band, as in every 2-4 s stretch of the real prompts under -14 dB; a call via 8 kHz is 12.5 dB or
# more under it, the 4th-order band-pass 5.7 dB or more where the first measure caught it
# (/tmp/s15/band_scan.py, throwaway).
_EDGE_BANDS_HZ = ((6000.0, 11000.0), (4500.0, 6000.0))
MAX_EDGE_SLOPE_DB = -5.0


def high_band_db(samples: np.ndarray, sample_rate_hz: int, bands_hz=(_HIGH_BAND_HZ, _TELEPHONE_TOP_HZ)) -> float:
    """The power of ``samples`` in ``bands_hz[0]`` relative to their power in ``bands_hz[1]``, in dB
    (Welch's method: the mean power spectrum of Hann-windowed 2048-sample segments, half
    overlapping); by default 4.5-11 kHz over 2-3.4 kHz. Needs ``sample_rate_hz`` of 24 kHz or
    more to see the bands whole (the prompt is checked at 24 kHz); -inf when the first band is
    empty, +inf when the second one is."""
    x = np.asarray(samples, dtype=np.float64)
    size = min(2048, len(x))
    starts = range(0, len(x) - size + 1, size // 2)
    window = np.hanning(size)
    power = np.mean([np.abs(np.fft.rfft(x[i:i + size] * window)) ** 2 for i in starts], axis=0)
    hz = np.fft.rfftfreq(size, 1.0 / sample_rate_hz)
    high = float(power[(hz >= bands_hz[0][0]) & (hz <= bands_hz[0][1])].sum())
    below = float(power[(hz >= bands_hz[1][0]) & (hz <= bands_hz[1][1])].sum())
    if high <= 0 or below <= 0:
        return float("-inf") if high <= 0 else float("inf")
    return 10.0 * np.log10(high / below)


def _steady_tones_hz(samples: np.ndarray, sample_rate_hz: int) -> tuple[float, ...]:
    """The frequencies (Hz, ascending) of the steady tones that hold most of the power in at least
    half of the audible half seconds, else ``()``. An alarm that alternates tones gives them all:
    each frequency that is a peak in at least 15 % of the tonal windows, and in two at least (the
    median of its windows), is listed, up to four; their median was a frequency the file does not
    hold. Without such a frequency there is no tone.

    Per 0.5 s window (Hann) within 30 dB of the loudest one: the window is tonal when over 0.7 of
    its power lies within 10 Hz of its spectral peak, over 0.8 within 10 Hz of its two highest
    peaks, or over 0.85 of its three (a two-tone alarm switching every 0.25 s or faster, a busy
    signal's two tones at once, three tones at once: the one-peak measure gave them 0 %;
    twenty-seventh and twenty-eighth newcomer sessions). In the real prompts at most 17 % of the
    windows pass the first test and 28 % any of them (xtts_calm_female.wav);
    a sine, a sine under hiss, two-tone alarms and speech under a hum louder than itself, 100 %. A
    beep before the speech (14 % here) passes: the whole-clip measure refused it (twenty-fourth
    newcomer session). Half, not 80 %: 3 s of speech and then 10 s of a tone (77 %) passed and the
    tone set the cloned pitch (twenty-eighth). Measured with throwaway scripts on
    ``../shared/prompts`` (seventh and eighth sessions). A square-wave alarm (its fundamentals hold
    0.77) is not caught."""
    n = int(_TONE_WINDOW_S * sample_rate_hz)
    frames = [samples[i:i + n].astype(np.float64) for i in range(0, len(samples) - n + 1, n)]
    if not frames:
        return ()
    rms = np.array([np.sqrt(np.mean(f ** 2)) for f in frames])
    window = np.hanning(n)
    freqs = np.fft.rfftfreq(n, 1.0 / sample_rate_hz)
    peaks, tonal, audible = [], 0, 0
    for frame, level in zip(frames, rms):
        if level <= 0 or level < rms.max() * 10 ** (-30 / 20):
            continue
        audible += 1
        power = np.abs(np.fft.rfft(frame * window)) ** 2
        total = float(power.sum())
        found = []  # (Hz, share of the window's power within the band around it)
        for _ in _PEAKS_SHARE:
            peak_hz = float(freqs[int(np.argmax(power))])
            band = np.abs(freqs - peak_hz) <= _TONE_BAND_HZ
            found.append((peak_hz, float(power[band].sum()) / total))
            power[band] = 0.0
        held = np.cumsum([share for _, share in found])
        # Under 20 Hz is no tone (a step or a DC burst was refused as "about 0 Hz"; twenty-ninth).
        if found[0][0] >= _MIN_TONE_HZ and any(h > limit for h, limit in zip(held, _PEAKS_SHARE)):
            tonal += 1
            # The strongest, and others that are tones of their own rather than its leakage.
            peaks += [hz for i, (hz, share) in enumerate(found) if i == 0 or share > 0.2]
    if not audible or tonal < _TONE_WINDOWS * audible:
        return ()
    groups: list[list[float]] = []  # peaks within one band of each other belong to one tone
    for hz in sorted(peaks):
        if groups and hz - groups[-1][-1] <= _TONE_BAND_HZ:
            groups[-1].append(hz)
        else:
            groups.append([hz])
    # A tone recurs: a frequency peaking in one window only is a voice's vowel. 1.5-3 s stretches of
    # the real prompts were "steady tones (about 180 and 226 Hz) ... not speech" (helper-67: 23 of
    # 1049, every "tone" from a single window; each tone case has 4 or more).
    common = sorted((g for g in groups if len(g) >= max(2.0, 0.15 * tonal)), key=len, reverse=True)[:4]
    return tuple(sorted(float(np.median(g)) for g in common))


_LINE_WINDOW_S = 0.5  # 2 Hz bins
_LINE_PROMINENCE_DB = 12.0  # the real prompts' highest is 9.3 dB (f5_main.flac)
_LINE_NEIGHBOURS_HZ = 30.0
_LINE_BAND_HZ = (25.0, 4000.0)
_MAX_LINES = 8
_HUM_BELOW_HZ = 70.0  # a line this low (mains at 50/60 Hz, rumble) brings its harmonics with it
_HARMONIC_PROMINENCE_DB = 6.0
_HARMONIC_TOLERANCE_HZ = 1.5
_LINE_MAX_WANDER_HZ = 2.5  # see _held_steady
_LINE_WINDOW_PROMINENCE_DB = 10.0
_NOTCH_WIDTH_HZ = 8.0
_NOTCH_PASSES = 3


def _audible_spectra(samples: np.ndarray, sample_rate_hz: int) -> np.ndarray:
    """Power spectra (rows) of the 0.5 s Hann windows, half overlapping, within 40 dB of the
    loudest; 2 Hz bins. Shape ``(windows, bins)``, float64."""
    n = int(_LINE_WINDOW_S * sample_rate_hz)
    frames = np.lib.stride_tricks.sliding_window_view(samples.astype(np.float64), n)[::n // 2] * np.hanning(n)
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    total = power.sum(axis=1)
    return power[total > total.max() * 1e-4]


def steady_lines_hz(samples: np.ndarray, sample_rate_hz: int) -> tuple[float, ...]:
    """Frequencies (Hz, ascending, at most 8) of steady lines under speech: mains hum and its
    harmonics, a beep, an alarm or rumble at a constant frequency. Under 70 Hz a line's harmonics
    (up to the 12th) count from 6 dB of prominence.

    A voice's harmonics move with its pitch, so over many windows no frequency keeps a fixed share
    of the power; a steady tone does. Per 0.5 s Hann window within 40 dB of the loudest, the power
    spectrum is divided by the window's power; the median over the windows at each frequency is
    compared with the median over its neighbours (within 30 Hz): a local peak at least 12 dB above
    them, between 25 Hz and 4 kHz, is a line. In the real prompts no frequency comes within 9.3 dB
    (f5_main.flac); a 150 Hz tone 20 dB under the speech is 13-30 dB, mains hum 30 dB under it
    15-28 dB at 60 Hz (``/tmp/s9/proto.py``, a throwaway script of the ninth session). Each line's
    frequency is refined to 0.1 Hz from the spectrum of the whole signal.

    Args:
        samples: float32, shape ``(n,)``, mono, trimmed prompt.
        sample_rate_hz: its rate.
    """
    n = int(_LINE_WINDOW_S * sample_rate_hz)
    if len(samples) < 4 * n:
        return ()
    power = _audible_spectra(samples, sample_rate_hz)
    if len(power) < 4:
        return ()
    total = power.sum(axis=1)
    shares = power / total[:, None]
    freqs = np.fft.rfftfreq(n, 1.0 / sample_rate_hz)
    half = int(_LINE_NEIGHBOURS_HZ / (freqs[1] - freqs[0]))

    def prominence_of(share: np.ndarray) -> np.ndarray:
        padded = np.pad(share, half, mode="edge")
        return share / np.maximum(np.median(np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1), axis=1), 1e-30)

    share = np.median(shares, axis=0)
    prominence = prominence_of(share)
    # A hum goes on in the pauses; a voice does not. A speaker held near one pitch (a monotone
    # voice, resynthesized at 30 % of its pitch range) had its own fundamental notched as "mains
    # hum" (thirty-fourth newcomer session): a line must also stand out in the quietest third.
    quiet = total <= np.percentile(total, 33)
    in_pauses = prominence_of(np.median(shares[quiet], axis=0))
    candidates = [i for i in np.flatnonzero((freqs >= _LINE_BAND_HZ[0]) & (freqs <= _LINE_BAND_HZ[1]))
                  if prominence[i] >= 10 ** (_LINE_PROMINENCE_DB / 10) and share[i] == share[max(0, i - 3):i + 4].max()
                  and in_pauses[max(0, i - 1):i + 2].max() >= 10 ** (_LINE_PROMINENCE_DB / 10)
                  and _held_steady(power, freqs[1] - freqs[0], i)]
    # Mains hum's harmonics are weaker than its fundamental; left in, they alone moved the pitch
    # WORLD found (a female voice's 155 Hz became 186 Hz with 60 Hz notched and 180 Hz left).
    step = freqs[1] - freqs[0]
    harmonic_of: dict[int, tuple[int, int]] = {}  # harmonic's bin -> (its fundamental's bin, k)
    for i in list(candidates):
        if freqs[i] < _HUM_BELOW_HZ:
            for k in range(2, 13):
                j = int(round(k * freqs[i] / step))
                j = j - 1 + int(np.argmax(prominence[j - 1:j + 2])) if j + 2 <= len(freqs) else j
                if j < len(freqs) and prominence[j] >= 10 ** (_HARMONIC_PROMINENCE_DB / 10) and j not in candidates:
                    candidates.append(j)
                    harmonic_of[j] = (i, k)
    candidates = sorted(candidates, key=lambda i: share[i], reverse=True)[:_MAX_LINES]
    if not candidates:
        return ()
    # 0.1 Hz from the whole signal: a notch 4 Hz wide set 1 Hz off the tone leaves much of it.
    fine = np.abs(np.fft.rfft(samples.astype(np.float64), n=max(len(samples), 10 * sample_rate_hz))) ** 2
    fine_freqs = np.fft.rfftfreq(max(len(samples), 10 * sample_rate_hz), 1.0 / sample_rate_hz)

    def refined(i: int) -> float:
        near = np.flatnonzero(np.abs(fine_freqs - freqs[i]) <= freqs[1] - freqs[0])
        return float(fine_freqs[near[np.argmax(fine[near])]])

    found = []
    for i in candidates:
        hz = refined(i)
        # A harmonic sits at a multiple of its fundamental: under a pure 50 Hz hum, the voice's own
        # 103 Hz was taken for its second harmonic and named and notched (helper-67).
        if i in harmonic_of and abs(hz - harmonic_of[i][1] * refined(harmonic_of[i][0])) > _HARMONIC_TOLERANCE_HZ:
            continue
        found.append(round(hz, 1))
    return tuple(sorted(found))


def _is_mains_harmonic(hz: float) -> bool:
    """Whether ``hz`` is within 1.5 Hz of a multiple of 50 or 60 Hz (mains hum's harmonics)."""
    return any(abs(hz - mains * round(hz / mains)) <= 1.5 for mains in (50.0, 60.0))


def _line_peaks_hz(power: np.ndarray, step_hz: float, hz: float) -> np.ndarray:
    """A line's frequency (Hz) in each window of ``power`` (:func:`_audible_spectra`, bins
    ``step_hz`` apart): the peak within 6 Hz of ``hz``, to a fraction of a bin by parabolic
    interpolation. Shape ``(windows,)``, float64."""
    step = step_hz
    lo, hi = max(1, int((hz - 6) / step)), int((hz + 6) / step) + 1
    peaks = []
    for row in np.log(power[:, lo - 1:hi + 1] + 1e-30):
        k = 1 + int(np.argmax(row[1:-1]))
        a, b, c = row[k - 1], row[k], row[k + 1]
        offset = 0.5 * (a - c) / (a - 2 * b + c) if a - 2 * b + c < 0 else 0.0
        peaks.append((lo - 1 + k + offset) * step)
    return np.array(peaks, dtype=np.float64)


def _line_track_hz(power: np.ndarray, step_hz: float, hz: float) -> tuple[float, float]:
    """The range (5th to 95th percentile, Hz) a line near ``hz`` wanders over (:func:`_line_peaks_hz`)."""
    peaks = _line_peaks_hz(power, step_hz, hz)
    return (float(np.percentile(peaks, 5)), float(np.percentile(peaks, 95))) if len(peaks) else (hz, hz)


def _held_steady(power: np.ndarray, step_hz: float, i: int) -> bool:
    """Whether the line at bin ``i`` is a tone rather than a voice's harmonic held for a while: its
    frequency varies by at most 2.5 Hz (standard deviation over the windows) and it stands at
    least 10 dB above its neighbours (within 30 Hz) in the median window.

    In a 2-4 s stretch a voice near one pitch passed the other tests: xtts_female.wav's first
    2 s had its 188 Hz notched as "mains hum" and the clone came out 2 semitones higher
    (helper-63); f5_town.flac's 101-115 Hz in 13 of its 2-4 s stretches. Those lines wander by
    2.8-8.8 Hz, and the one under 3.5 Hz stands 5.7 dB above its neighbours; tones of 150 and
    220 Hz 6-12 dB under each real prompt, and mains hum at 60 Hz, in 2 and 4 s stretches, by at
    most 2.3 Hz, at 16.7 dB or more (``/tmp/s15/hum_diag2.py``, a throwaway script of the
    fifteenth session). A tone that drifts more than about 8 Hz is missed."""
    sd_hz = float(np.std(_line_peaks_hz(power, step_hz, i * step_hz)))
    half = int(_LINE_NEIGHBOURS_HZ / step_hz)
    near = power[:, max(0, i - 3):i + 4].max(axis=1)
    around = np.median(power[:, max(0, i - half):i + half + 1], axis=1)
    prominence_db = float(np.median(10 * np.log10(near / np.maximum(around, 1e-30))))
    return sd_hz <= _LINE_MAX_WANDER_HZ and prominence_db >= _LINE_WINDOW_PROMINENCE_DB


def remove_steady_lines(samples: np.ndarray, sample_rate_hz: int, lines_hz: tuple[float, ...]) -> np.ndarray:
    """Notch each line out (torchaudio band-reject biquads, three passes), over the range it
    wanders: at least 8 Hz wide, and 8 Hz wider than the range its peak covers across the file.

    Mains hum 20 dB under a female voice (155 Hz) made the voice conversion take 104 Hz for her
    pitch, a 220 Hz tone 6 dB under a male voice (101 Hz) 161 Hz, rumble at 40 Hz 10 dB under it
    137 Hz, and rumble at 45 Hz 6 dB under it left "no voiced speech" (thirty-second newcomer
    session; WORLD's DIO locks onto a steady line). With the line notched they were 162, 102 and
    106 Hz (clean: 155 and 101 Hz). A line that drifts (300 to 302 Hz over the file) or wobbles
    (mains at 50 +- 0.2 Hz) escaped a fixed 8 Hz notch enough to move the pitch 3 semitones
    (thirty-fourth). The notch moves DIO's pitch too, by up to 1.3 semitones on a clean prompt
    (three notches at 60, 180, 300 Hz under xtts_female.wav). Widths and passes were chosen on
    such cases with ``/tmp/s9/dbg3.py`` and ``drift.py`` (throwaway, ninth session).

    Args:
        samples: float32, shape ``(n,)``, mono.
        lines_hz: from :func:`steady_lines_hz`.
    Returns:
        float32, shape ``(n,)``.
    """
    import torch
    import torchaudio.functional as F

    bands = []
    power = _audible_spectra(samples, sample_rate_hz) if lines_hz else None
    for hz in lines_hz:
        low, high = _line_track_hz(power, 1.0 / _LINE_WINDOW_S, hz)
        bands.append(((low + high) / 2, max(_NOTCH_WIDTH_HZ, high - low + _NOTCH_WIDTH_HZ)))
    x = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32))
    for centre, width in bands:
        for _ in range(_NOTCH_PASSES):
            x = F.bandreject_biquad(x, sample_rate_hz, centre, Q=centre / width)
    return x.numpy()


def _milliseconds(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms in all" if seconds >= 0.001 else "under 1 ms in all"


def _prompt_from_samples(data: np.ndarray, sr: int, decode_note: str | None) -> PromptAudio:
    """The checks and normalization of :func:`load_prompt_audio` after decoding."""
    frames, channels = data.shape
    if not np.all(np.isfinite(data)):
        bad = int(np.count_nonzero(~np.isfinite(data)))
        raise InputError(
            f"The prompt audio contains {bad} invalid sample(s) (NaN or infinite), so the file is damaged. "
            "Export the recording again as 16-bit WAV or FLAC."
        )
    _check_sample_rate(sr)
    notes = [decode_note] if decode_note else []
    scaled_hint = ""  # added to a later refusal that the scaling may have caused
    magnitude = np.abs(data)
    peak = float(np.max(magnitude))
    if peak > _OVER_FULL_SCALE:
        # Float files can hold any value. Far past 1 the power sums overflowed (a file written at
        # the wrong scale, x1e30, was refused as "no voiced speech"), so such a file is scaled down
        # as a whole. Heuristics that told "bursts" from loud speech by 50 ms levels silenced real
        # speech (a loud prompt padded with silence; twenty-eighth newcomer session). A glitch --
        # few samples far above the rest -- is removed instead, set to zero, so it sets neither the
        # scale (the speech was scaled into silence; twenty-fifth) nor, clipped, the level silence
        # trimming measures from (quiet speech was trimmed away; twenty-seventh). Only those
        # samples: speech peaks past full scale beside a click were zeroed too (twenty-ninth).
        # Over 10 times full scale as well: in a file mostly silent the 99th percentile is the
        # silence, and speech peaks at 1.35 were removed as a glitch (thirty-first session).
        glitch = (magnitude > _GLITCH_RATIO * float(np.percentile(magnitude, 99))) & (magnitude > _GLITCH_RATIO)
        if glitch.any():
            # With the samples of the same burst (past full scale, within 5 ms of a glitch sample).
            near = np.convolve(glitch.any(axis=1), np.ones(2 * int(0.005 * sr) + 1), mode="same") > 0
            glitch = near[:, None] & (magnitude > _OVER_FULL_SCALE)
        removed = int(np.count_nonzero(glitch.any(axis=1)))
        if removed:
            data = np.where(glitch, 0.0, data)
            notes.append(f"{removed} sample(s) of the prompt went far past full scale (up to {peak:.3g} times: a glitch "
                         f"or short burst in the file, {_milliseconds(removed / sr)}); they were removed.")
            peak = float(np.max(np.abs(data)))
        if _OVER_FULL_SCALE < peak <= _CODEC_OVERSHOOT:
            # Lossy codecs overshoot a little (a prompt peaking at 0.986 decoded from Opus at 1.02):
            # scaled without a note, which blamed the file ("written at the wrong scale, clipped, or
            # with a loud burst") for nothing wrong with it (thirty-fifth newcomer session).
            data = data * (0.99 / peak)
        elif peak > _OVER_FULL_SCALE:
            data = data * (0.99 / peak)
            # A loud burst in the file sets the scale too, maybe pushing the speech into silence: a
            # refusal then says so, here or from the engine (twenty-sixth and twenty-seventh sessions).
            scaled_hint = (f" The file was scaled down {peak:.3g} times because some of its samples went that far "
                           "past full scale, which may have made the speech too quiet: export the recording "
                           "again (16-bit WAV or FLAC).")
            notes.append(f"The prompt's samples went up to {peak:.3g} times full scale (a float file written at the "
                         "wrong scale, clipped, or with a loud burst); it was scaled down to fit.")
        data = np.clip(data, -1.0, 1.0)  # rounding of the scale may leave a sample a hair over
    data = data.astype(np.float32, copy=False)
    clipped = float(np.mean(np.abs(data) >= 0.999))
    # A DC offset is not sound: without removing it a file of constant value passes as loud, and
    # WORLD finds a "voice" in it.
    offset = float(np.abs(data.mean(axis=0)).max()) if len(data) else 0.0
    data = data - data.mean(axis=0, keepdims=True)
    raw_seconds = frames / sr
    if raw_seconds > MAX_DECODE_S:
        raise _too_long(raw_seconds)
    if raw_seconds < 0.1:
        raise InputError(f"The prompt audio holds only {raw_seconds * 1000:.0f} ms of sound: the file is probably "
                         "truncated. Upload the whole recording (3-10 s of speech).")
    mono = data.mean(axis=1) if channels > 1 else data[:, 0]
    if channels > 1:
        # Channels in opposite phase cancel in the mean; then one channel is the better mix-down.
        channel_power = float(np.mean(data ** 2))
        powers = np.mean(np.square(data, dtype=np.float64), axis=0)
        mono_power = float(np.mean(np.square(mono, dtype=np.float64)))
        if channel_power > 0 and mono_power < 0.01 * channel_power:
            mono = data[:, int(np.argmax(powers))]
            notes.append("The prompt's channels cancel each other when mixed (opposite phase); one channel was used.")
        elif mono_power < 0.3 * float(powers.max()):
            # Sound in one channel only (a mono microphone on a stereo input): the mean is 6 dB
            # quieter than that channel (more with more channels), and quiet speech was refused as
            # silent that passed as mono (forty-sixth newcomer session). Two channels of the same
            # sound keep their mean (power ratio 1), two different sounds too (0.5).
            mono = data[:, int(np.argmax(powers))]
    mono = remove_rumble(resample(mono, sr, PROMPT_SAMPLE_RATE_HZ), PROMPT_SAMPLE_RATE_HZ)
    peak_dbfs = float(frame_rms_dbfs(mono, PROMPT_SAMPLE_RATE_HZ).max())
    if peak_dbfs < SILENCE_FLOOR_DBFS:
        # A constant offset reads loud in an editor: "silent" for a file at -6 dBFS (helper-59).
        offset_dbfs = 20 * math.log10(offset) if offset > 0 else -math.inf
        advice = "Check the microphone and record 3-10 s of clear speech."
        if offset_dbfs >= SILENCE_FLOOR_DBFS:
            # Rounded first: a full-scale offset (-0.0003 dB) read "-0 dBFS" (helper-145).
            what = (f"holds only a constant offset ({round(offset_dbfs) + 0:d} dBFS of DC), no sound: nothing rises above "
                    f"{SILENCE_FLOOR_DBFS:.0f} dBFS")
        elif (sample_peak_dbfs := 20 * math.log10(max(float(np.abs(mono).max()), 1e-12))) >= _QUIET_PEAK_DBFS:
            # Speech at -53 dBFS (sample peak) was called "silent (its loudest moment is below -60
            # dBFS)": the figure is a 20 ms RMS level, and a level meter showed speech (helper-64).
            what = (f"is too quiet to use: its loudest 20 ms reaches {peak_dbfs:.0f} dBFS (RMS; sample peak "
                    f"{sample_peak_dbfs:.0f} dBFS), and at least {SILENCE_FLOOR_DBFS:.0f} dBFS RMS (about -50 dBFS at "
                    "the peaks) is needed")
            advice = "Raise the recording level and record again, or normalize the file in an audio editor."
        elif not np.any(mono):
            what = "is silent (every sample is zero)"
        else:
            what = (f"is silent (its loudest 20 ms reaches {peak_dbfs:.0f} dBFS RMS, sample peak "
                    f"{sample_peak_dbfs:.0f} dBFS; speech needs at least {SILENCE_FLOOR_DBFS:.0f} dBFS RMS)")
        raise InputError(f"The prompt audio {what}. {advice}" + scaled_hint)
    trimmed = trim_silence(mono, PROMPT_SAMPLE_RATE_HZ)
    seconds = len(trimmed) / PROMPT_SAMPLE_RATE_HZ
    if seconds < MIN_PROMPT_S:
        raise InputError(
            f"The prompt audio has only {seconds:.2f} s of sound after trimming silence; at least "
            f"{MIN_PROMPT_S:.0f} s is needed and {RECOMMENDED_MIN_PROMPT_S:.0f}-10 s works best. Record a full sentence."
            + scaled_hint
        )
    if seconds > MAX_PROMPT_S:
        raise InputError(
            f"The prompt audio is {seconds:.1f} s long after trimming silence; at most {MAX_PROMPT_S:.0f} s is "
            "accepted. Cut a clean 3-10 s stretch of speech."
        )
    tones_hz = _steady_tones_hz(trimmed, PROMPT_SAMPLE_RATE_HZ)
    if tones_hz:
        what = (f"one steady tone (about {tones_hz[0]:.0f} Hz)" if len(tones_hz) == 1 else
                "steady tones (about " + ", ".join(f"{hz:.0f}" for hz in tones_hz[:-1]) + f" and {tones_hz[-1]:.0f} Hz)")
        raise InputError(f"The prompt audio is {what} for most of its length: a test "
                         "tone, a beep, an alarm or mains hum, not speech. Upload 3-10 s of someone speaking (speech under a "
                         "hum as loud as itself or louder: filter the hum out first)." + scaled_hint)
    high_db = high_band_db(trimmed, PROMPT_SAMPLE_RATE_HZ)
    if high_db < MIN_HIGH_BAND_DB and high_band_db(trimmed, PROMPT_SAMPLE_RATE_HZ, _EDGE_BANDS_HZ) < MAX_EDGE_SLOPE_DB:
        raise InputError(
            f"The prompt audio has almost nothing above {_HIGH_BAND_HZ[0] / 1000:g} kHz ({-high_db:.0f} dB under its "
            f"2-3.4 kHz band; microphone recordings: within about 10 dB): it sounds like a phone call, a headset in "
            f"call mode, a low-bitrate file or a muffled recording, saved at a higher sample rate ({sr} Hz). That "
            "band carries a voice's timbre, and the low band that telephone audio also lacks misleads the pitch (a man's "
            "voice came out nearly an octave higher). Record again with a microphone at 16 kHz or more." + scaled_hint)
    lines_hz = steady_lines_hz(trimmed, PROMPT_SAMPLE_RATE_HZ)
    if lines_hz:
        trimmed = remove_steady_lines(trimmed, PROMPT_SAMPLE_RATE_HZ, lines_hz)
        named = (f"about {lines_hz[0]:.0f} Hz" if len(lines_hz) == 1 else
                 "about " + ", ".join(f"{hz:.0f}" for hz in lines_hz[:-1]) + f" and {lines_hz[-1]:.0f} Hz")
        if len(lines_hz) >= 2 and min(lines_hz) >= _HUM_BELOW_HZ and not all(_is_mains_harmonic(hz) for hz in lines_hz):
            # Chords under the voice: "mains hum, a beep, an alarm" for seven notes (helper-64).
            notes.append(f"The prompt has steady notes under the speech ({named}: background music, or several "
                         "tones); they were filtered out, since they would have been taken for the voice's pitch. "
                         "A recording without music clones better.")
        else:
            notes.append(f"The prompt has a steady tone under the speech ({named}: mains hum, a beep, an alarm or "
                         "rumble); it was filtered out, since it would have been taken for the voice's pitch.")
    if seconds < RECOMMENDED_MIN_PROMPT_S:
        # "short (2.9 s)" for a 3.5 s file read as a contradiction (helper-65): the figure is the speech.
        notes.append(f"The prompt is short ({seconds:.1f} s of sound once the silence at its ends is trimmed); "
                     "3-10 s of speech clones a voice better.")
    elif seconds > LONG_PROMPT_S:
        # The label asks for 3-10 s; a 13.7 s prompt was taken without a word (helper-88).
        # "of sound" for a prompt with 8 s of silence inside read as untrue (helper-94).
        notes.append(f"The prompt is long ({seconds:.1f} s once the silence at its ends is trimmed, pauses included); "
                     "3-10 s of speech is enough to clone a voice, and the model reads the whole prompt for every "
                     "request.")
    if clipped > 0.001:
        notes.append(f"The prompt is clipped ({clipped:.1%} of samples at full scale); a quieter recording clones better.")
    trimmed = np.ascontiguousarray(trimmed, dtype=np.float32)
    return PromptAudio(
        samples=trimmed,
        sample_rate_hz=PROMPT_SAMPLE_RATE_HZ,
        source_sample_rate_hz=sr,
        source_channels=channels,
        trimmed_s=round(raw_seconds - seconds, 3),
        notes=tuple(notes),
        sha1=hashlib.sha1(trimmed.tobytes()).hexdigest(),
        refusal_hint=scaled_hint.strip(),
    )
