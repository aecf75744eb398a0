"""Moving a synthetic voice toward a prompt's pitch and timbre with the WORLD vocoder.

WORLD (Morise et al., "WORLD: a vocoder-based high-quality speech synthesis system", IEICE 2016;
``pyworld``) splits speech into F0, a smooth spectral envelope and aperiodicity, and puts them
back together. Here:

- pitch: log-F0 is shifted and scaled so that its mean and standard deviation over voiced frames
  match the prompt's (the usual Gaussian log-F0 transform of voice-conversion baselines, e.g.
  Toda et al., IEEE TASLP 15(8), 2007);
- timbre: the envelope's frequency axis is warped (a vocal-tract-length style warp, Eide & Gish,
  ICASSP 1996) by a factor that follows the pitch ratio, ``(F0_prompt / F0_source) ** 0.1``
  within [0.9, 1.12], then the remaining smoothed difference of the long-term average
  envelopes is added to every frame.

Why the warp follows pitch instead of being fitted to the envelopes: a grid-search fit of the
warp to the long-term envelopes picked the edges of the range for three of the ten prompts in
``../shared/prompts`` (0.80 for two female voices), which lowered speaker similarity; the pitch
rule with a fine-detail envelope correction raised resemblyzer similarity for all ten in the same
run (mean +0.048 over the unconverted voice; /tmp experiment recorded in NOTES.md).
"""

from __future__ import annotations

import dataclasses

import numpy as np

FRAME_PERIOD_MS = 5.0
F0_FLOOR_HZ = 60.0
F0_CEIL_HZ = 600.0
MIN_VOICED_FRAMES = 100  # 0.5 s at 5 ms frames
MIN_VOICED_FRACTION = 0.15
_SPEECH_LEVEL_RANGE_DB = 25.0
WARP_EXPONENT = 0.1  # formant ratio ~ F0 ratio ** 0.1 (measured choice, see module docstring)
WARP_RANGE = (0.9, 1.12)
_MAX_CORRECTION_LN = 3.0  # about 26 dB: beyond this a difference is a recording artefact
_LIFTER = 120  # cepstral coefficients kept when smoothing the envelope difference (~ 5.5 ms)


@dataclasses.dataclass(frozen=True)
class VoiceProfile:
    """What is kept of a voice: log-F0 statistics and the long-term average envelope.

    Attributes:
        sample_rate_hz: rate the profile was measured at (envelopes depend on it).
        log_f0_mean / log_f0_std: over voiced frames, natural log of Hz.
        mean_log_envelope: float64, shape ``(fft_size // 2 + 1,)``, natural log of power,
            averaged over voiced frames.
        voiced_frames: how many frames the statistics came from.
    """

    sample_rate_hz: int
    log_f0_mean: float
    log_f0_std: float
    mean_log_envelope: np.ndarray
    voiced_frames: int


@dataclasses.dataclass(frozen=True)
class WorldFeatures:
    f0_hz: np.ndarray  # (frames,), 0 where unvoiced
    envelope: np.ndarray  # (frames, bins) power spectral envelope
    aperiodicity: np.ndarray  # (frames, bins) in [0, 1]
    sample_rate_hz: int


def analyze(samples: np.ndarray, sample_rate_hz: int, accurate_f0: bool = False) -> WorldFeatures:
    """WORLD analysis of a mono float signal.

    Args:
        samples: float32 or float64, shape ``(n,)``.
        sample_rate_hz: its sample rate.
        accurate_f0: use Harvest (slower, fewer voicing errors) instead of DIO + StoneMask.

    Returns:
        :class:`WorldFeatures` at :data:`FRAME_PERIOD_MS` frames.
    """
    import pyworld

    x = np.ascontiguousarray(samples, dtype=np.float64)
    if accurate_f0:
        f0, t = pyworld.harvest(x, sample_rate_hz, f0_floor=F0_FLOOR_HZ, f0_ceil=F0_CEIL_HZ,
                                frame_period=FRAME_PERIOD_MS)
    else:
        f0, t = pyworld.dio(x, sample_rate_hz, f0_floor=F0_FLOOR_HZ, f0_ceil=F0_CEIL_HZ,
                            frame_period=FRAME_PERIOD_MS)
        f0 = pyworld.stonemask(x, f0, t, sample_rate_hz)
    sp = pyworld.cheaptrick(x, f0, t, sample_rate_hz)
    ap = pyworld.d4c(x, f0, t, sample_rate_hz)
    return WorldFeatures(f0_hz=f0, envelope=sp, aperiodicity=ap, sample_rate_hz=sample_rate_hz)


def profile_from_features(features: WorldFeatures, strict: bool = True) -> VoiceProfile:
    """Summarize analysed speech as a :class:`VoiceProfile`.

    Raises:
        ValueError: when under 0.5 s or under 15 % of the frames are voiced: there is no voice
            to measure (the real prompts are 36-81 % voiced; white noise is about 6 %).
            With ``strict=False`` (synthetic speech of any length) only 20 voiced frames are needed.
    """
    voiced = features.f0_hz > 0
    n = int(voiced.sum())
    if strict and (n < MIN_VOICED_FRAMES or n < MIN_VOICED_FRACTION * len(voiced)):
        raise ValueError(f"only {n} of {len(voiced)} frames are voiced: no voice to measure")
    if n < 20:
        raise ValueError(f"only {n} voiced frames: no voice to measure")
    # The pitch and timbre are measured where the speech is: DIO also calls quiet frames voiced, on
    # whatever is periodic there -- the rest of a hum or tone in the pauses (a notched line that
    # drifted moved the cloned pitch 3 semitones; thirty-fourth newcomer session), or an octave
    # below the voice. Frames over 25 dB under the loudest (99th percentile) are left out.
    level_db = 10 * np.log10(features.envelope.sum(axis=1) + 1e-30)
    loud = voiced & (level_db > np.percentile(level_db, 99) - _SPEECH_LEVEL_RANGE_DB)
    if loud.sum() >= 20:
        voiced = loud
    lf0 = np.log(features.f0_hz[voiced])
    mean_env = np.log(features.envelope[voiced] + 1e-16).mean(axis=0)
    return VoiceProfile(
        sample_rate_hz=features.sample_rate_hz,
        log_f0_mean=float(lf0.mean()),
        log_f0_std=float(max(lf0.std(), 1e-3)),
        mean_log_envelope=mean_env,
        voiced_frames=n,
    )


def warp_envelope(log_envelope: np.ndarray, factor: float) -> np.ndarray:
    """Warp the frequency axis of log envelopes: output(f) = input(f / factor).

    A factor above 1 moves formants up (a shorter vocal tract), below 1 down.

    Args:
        log_envelope: shape ``(bins,)`` or ``(frames, bins)``.
        factor: warp factor, around 0.8-1.25 for real speakers.

    Returns:
        Same shape; bins beyond the source's top edge repeat its last value.
    """
    bins = log_envelope.shape[-1]
    src = np.arange(bins) / factor
    lo = np.clip(np.floor(src).astype(int), 0, bins - 1)
    hi = np.clip(lo + 1, 0, bins - 1)
    frac = np.clip(src - lo, 0.0, 1.0)
    return log_envelope[..., lo] * (1.0 - frac) + log_envelope[..., hi] * frac


def warp_factor_for(source: VoiceProfile, target: VoiceProfile) -> float:
    """Frequency-warp factor from the ratio of mean pitches: ``(F0_t / F0_s) ** WARP_EXPONENT``,
    clipped to :data:`WARP_RANGE` (higher voices have shorter vocal tracts, higher formants)."""
    factor = np.exp(WARP_EXPONENT * (target.log_f0_mean - source.log_f0_mean))
    return float(np.clip(factor, *WARP_RANGE))


def smooth_envelope_difference(diff_ln: np.ndarray, lifter: int = _LIFTER) -> np.ndarray:
    """Low-quefrency part of a log-spectral difference (cepstral liftering), mean removed and
    clipped to +-:data:`_MAX_CORRECTION_LN`, so only the broad shape of timbre is moved."""
    cep = np.fft.irfft(diff_ln)
    cep[lifter:-lifter] = 0.0
    smooth = np.fft.rfft(cep).real[: len(diff_ln)]
    smooth -= smooth.mean()
    return np.clip(smooth, -_MAX_CORRECTION_LN, _MAX_CORRECTION_LN)


@dataclasses.dataclass(frozen=True)
class ConversionReport:
    warp_factor: float
    f0_source_hz: float
    f0_target_hz: float


def convert(
    features: WorldFeatures,
    target: VoiceProfile | None,
    *,
    pitch_shift_semitones: float = 0.0,
    pitch_range_scale: float = 1.0,
    whisper: bool = False,
) -> tuple[np.ndarray, ConversionReport | None]:
    """Resynthesize analysed speech with the target's pitch statistics and timbre.

    Args:
        features: WORLD analysis of the speech to convert (e.g. Piper's output).
        target: the prompt's profile at the same sample rate, or ``None`` to keep the voice
            (prosody changes still apply).
        pitch_shift_semitones: added after the statistics transform.
        pitch_range_scale: multiplies the log-F0 spread after the transform.
        whisper: remove voicing (F0 = 0, aperiodicity = 1).

    Returns:
        ``(samples, report)``: float64 shape ``(n,)`` at ``features.sample_rate_hz``, and what
        was done (``None`` when there was no target).

    Raises:
        ValueError: if ``target`` was measured at another sample rate.
    """
    import pyworld

    f0 = features.f0_hz.copy()
    voiced = f0 > 0
    log_env = np.log(features.envelope + 1e-16)
    ap = features.aperiodicity
    report = None
    if voiced.sum() >= 20:  # Piper's own output: even a short word has this much voicing
        lf0 = np.log(f0[voiced])
        mu_s, sd_s = float(lf0.mean()), float(max(lf0.std(), 1e-3))
        mu_t, sd_t = (target.log_f0_mean, target.log_f0_std) if target else (mu_s, sd_s)
        lf0 = (lf0 - mu_s) * (sd_t / sd_s) * pitch_range_scale + mu_t + pitch_shift_semitones * np.log(2.0) / 12.0
        f0[voiced] = np.exp(np.clip(lf0, np.log(F0_FLOOR_HZ / 1.5), np.log(F0_CEIL_HZ * 1.5)))
        if target is not None:
            if target.sample_rate_hz != features.sample_rate_hz:
                raise ValueError(
                    f"profile at {target.sample_rate_hz} Hz cannot convert speech at {features.sample_rate_hz} Hz"
                )
            source = profile_from_features(features, strict=False)
            factor = warp_factor_for(source, target)
            log_env = warp_envelope(log_env, factor)
            ap = np.clip(warp_envelope(ap, factor), 0.0, 1.0)
            warped_mean = log_env[voiced].mean(axis=0)
            log_env = log_env + smooth_envelope_difference(target.mean_log_envelope - warped_mean)
            report = ConversionReport(warp_factor=round(factor, 3), f0_source_hz=float(np.exp(mu_s)),
                                      f0_target_hz=float(np.exp(mu_t)))
    if whisper:
        f0 = np.zeros_like(f0)
        ap = np.ones_like(ap)
    y = pyworld.synthesize(np.ascontiguousarray(f0), np.ascontiguousarray(np.exp(log_env)),
                           np.ascontiguousarray(ap), features.sample_rate_hz, FRAME_PERIOD_MS)
    return y, report
