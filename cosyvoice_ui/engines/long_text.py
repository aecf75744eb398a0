"""Synthesizing a request segment by segment and joining the pieces (runs in the worker).

Peak memory then depends on the longest segment, not on the whole text: each segment's
activations are freed before the next starts.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from .base import Engine, SynthesisOutput, SynthesisRequest

CROSSFADE_S = 0.05


def crossfade_join(pieces: list[np.ndarray], sample_rate_hz: int, crossfade_s: float = CROSSFADE_S) -> np.ndarray:
    """Concatenate mono float32 pieces, overlapping neighbours by ``crossfade_s`` with an
    equal-power (sine/cosine) fade so the joins neither click nor dip in level.

    Returns:
        float32 of shape ``(sum(len) - (len(pieces) - 1) * overlap,)``; pieces shorter than
        twice the overlap are joined with a shorter fade.
    """
    if not pieces:
        return np.zeros(0, dtype=np.float32)
    overlaps = [min(int(crossfade_s * sample_rate_hz), len(a) // 2, len(b) // 2) for a, b in zip(pieces, pieces[1:])]
    out = np.empty(sum(len(p) for p in pieces) - sum(overlaps), dtype=np.float32)  # one allocation
    pos = 0
    for i, piece in enumerate(pieces):
        n = overlaps[i - 1] if i > 0 else 0
        if n > 0:
            t = np.linspace(0.0, np.pi / 2, n, dtype=np.float32)
            out[pos - n:pos] = out[pos - n:pos] * np.cos(t) + piece[:n] * np.sin(t)
        out[pos:pos + len(piece) - n] = piece[n:]
        pos += len(piece) - n
    return out


def synthesize_segments(engine: Engine, request: SynthesisRequest,
                        on_progress: Callable[[int, int], None] | None = None) -> SynthesisOutput:
    """Run ``engine`` on each of ``request.segments`` (or the whole text) and join the audio.

    Args:
        on_progress: called with ``(done, total)`` after each segment.

    Returns:
        One :class:`SynthesisOutput`: joined audio, notes without repeats, the first segment's
        details plus ``segments``.
    """
    segments = request.segments or (request.text,)
    outputs = []
    for i, text in enumerate(segments):
        seed = request.seed + 1000 * i if request.seed >= 0 else -1
        outputs.append(engine.synthesize(dataclasses.replace(request, text=text, segments=(), seed=seed)))
        if on_progress is not None:
            on_progress(i + 1, len(segments))
    rate = outputs[0].sample_rate_hz
    notes: list[str] = []
    for out in outputs:
        notes.extend(n for n in out.notes if n not in notes)
    details = dict(outputs[0].details)
    details["segments"] = len(segments)
    audio = crossfade_join([o.audio for o in outputs], rate)
    del outputs  # the pieces are no longer needed while the joined audio is sent
    return SynthesisOutput(audio=audio, sample_rate_hz=rate, notes=notes, details=details)
