"""Checks on what an engine returns, before anything reaches a user as a success.

TensorRT in fp16 has made CosyVoice 3 return NaN audio (CosyVoice issue #1930), and a failed
decode can return silence; both must be errors, not a silent WAV with "ok" in the ledger.
"""

from __future__ import annotations

import numpy as np

SILENCE_PEAK = 1e-4  # -80 dBFS: below any speech after level normalization; digital silence is 0


class BadAudioOutput(RuntimeError):
    """The engine produced audio that must not be returned (NaN, infinite, or all silent)."""


def check_chunk(audio: np.ndarray) -> float:
    """Check one chunk (float ``(n,)``) and return its peak absolute value.

    Raises:
        BadAudioOutput: a sample is NaN or infinite.
    """
    if audio.size == 0:
        return 0.0
    finite = np.isfinite(audio)
    if not finite.all():
        bad = int(audio.size - np.count_nonzero(finite))
        raise BadAudioOutput(
            f"The model produced invalid audio ({bad} of {audio.size} samples are NaN or infinite). "
            "This is known with TensorRT in fp16 (CosyVoice issue #1930): restart without --load-trt "
            "or with --no-fp16.")
    return float(np.max(np.abs(audio)))


def check_not_silent(peak: float, samples: int) -> None:
    """Raise :class:`BadAudioOutput` when a whole request produced no sound.

    Args:
        peak: the highest :func:`check_chunk` value over the request.
        samples: total samples produced.
    """
    if samples == 0 or peak < SILENCE_PEAK:
        raise BadAudioOutput(
            f"The model produced {'no audio' if samples == 0 else 'only silence'} for this text. "
            "Check that the prompt text matches the prompt audio, or try a different prompt.")
