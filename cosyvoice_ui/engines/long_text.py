"""Long text: synthesize segment by segment in the worker, join the pieces in the web process.

The worker sends each segment's audio away as soon as it exists (``on_chunk``) and keeps none of
it, so its peak memory depends on the longest segment, not on the whole text
(``bench/memory_vs_length.py``). The web process joins the pieces with :class:`SegmentJoiner`,
the same way whether it streams them to the browser or returns one file.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Callable

import numpy as np

from .base import Engine, NoSpeechSounds, SynthesisRequest
from .output_check import check_chunk, check_not_silent

CROSSFADE_S = 0.05
MAX_DRAWN_SEED = 2**31 - 1  # the largest seed a user may send (inputs/request.py), so a drawn one can be sent back


@dataclasses.dataclass
class SegmentsSummary:
    """What the worker knows after the last segment: everything but the audio, which it sent away.

    Attributes:
        sample_rate_hz: rate of every chunk.
        samples: total samples sent (before joining; joining removes the cross-fade overlaps).
        notes: the segments' notes without repeats.
        details: the first chunk's details plus ``segments`` and ``seed``: the seed the request
            ran with (drawn here when it asked for a random one, so a result can be reproduced),
            or ``None`` when the engine cannot apply seeds.
    """

    sample_rate_hz: int
    samples: int
    notes: list[str]
    details: dict


class RequestAbandoned(Exception):
    """The request's client left, so the rest of its segments were not synthesized."""


def synthesize_segments(engine: Engine, request: SynthesisRequest,
                        on_chunk: Callable[[int, np.ndarray, int], None],
                        on_progress: Callable[[int, int], None] | None = None,
                        abandoned: Callable[[], bool] | None = None) -> SegmentsSummary:
    """Run ``engine`` on each of ``request.segments`` (or the whole text), one after another.

    Args:
        on_chunk: called with ``(segment_index, audio, sample_rate_hz)`` for every chunk the
            engine yields (float32 ``(n,)`` mono); the caller owns the audio from then on.
        on_progress: called with ``(done, total)`` after each segment.
        abandoned: asked before each segment after the first; True stops the request there.

    Raises:
        RequestAbandoned: ``abandoned()`` said so; the message says how many segments were done.
        BadAudioOutput: a chunk holds NaN or infinite samples, or the whole request is silent
            (:mod:`.output_check`); nothing of such a chunk is passed on.
        Whatever the engine raises (``ValueError`` for a request it refuses, MemoryError /
        ``torch.OutOfMemoryError``).
    """
    segments = request.segments or (request.text,)
    if request.seed < 0 and engine.applies_seed:
        # Drawn once per request rather than per segment by the engine, so that one number
        # reproduces the whole result (segment i uses seed + 1000 * i).
        request = dataclasses.replace(request, seed=random.SystemRandom().randrange(MAX_DRAWN_SEED + 1))
    notes: list[str] = []
    skipped: list[str] = []  # segments that had nothing to say
    details: dict = {}
    rate = 0
    samples = 0
    peak = 0.0
    for i, text in enumerate(segments):
        if i and abandoned is not None and abandoned():
            raise RequestAbandoned(f"the client left; stopped after {i} of {len(segments)} segments")
        seed = request.seed + 1000 * i if request.seed >= 0 else -1
        try:
            for out in engine.synthesize_stream(dataclasses.replace(request, text=text, segments=(), seed=seed)):
                rate = rate or out.sample_rate_hz
                if out.sample_rate_hz != rate:
                    raise RuntimeError(f"engine changed sample rate mid-request ({rate} -> {out.sample_rate_hz} Hz)")
                notes.extend(n for n in out.notes if n not in notes)
                if not details:
                    details = dict(out.details)
                audio = np.asarray(out.audio, dtype=np.float32).reshape(-1)
                peak = max(peak, check_chunk(audio))
                samples += len(audio)
                on_chunk(i, audio, rate)
        except NoSpeechSounds:
            # A line of "─" or "⇒" between paragraphs is a segment of its own and says nothing: it
            # failed the whole request as "no speech sounds" (thirty-fourth newcomer session).
            if len(segments) == 1:
                raise
            skipped.append(text)
        if on_progress is not None:
            on_progress(i + 1, len(segments))
    if skipped:
        if len(skipped) == len(segments):
            raise NoSpeechSounds("The text produced no speech sounds. Type words rather than only symbols.")
        shown = ", ".join(repr(t if len(t) <= 20 else t[:20] + "…") for t in skipped[:3])
        were = "was" if len(skipped) == 1 else "were"
        notes.append(f"{len(skipped)} of {len(segments)} segments had nothing the voice can say (only symbols "
                     f"it does not read: {shown}{', …' if len(skipped) > 3 else ''}) and {were} skipped.")
    check_not_silent(peak, samples)
    details["segments"] = len(segments)
    details["seed"] = request.seed if engine.applies_seed else None
    return SegmentsSummary(sample_rate_hz=rate, samples=samples, notes=notes, details=details)


class SegmentJoiner:
    """Joins audio arriving chunk by chunk: chunks of one segment follow each other directly,
    neighbouring segments overlap by up to ``crossfade_s`` with an equal-power (sine/cosine) fade,
    so the joins neither click nor dip in level. The overlap is at most half of either segment.

    It holds back the end of each segment until it knows whether another follows, and the start
    of the next until the fade can be computed, so what :meth:`push` returns can be played at
    once. How a segment is cut into chunks does not change the result (a test checks it).

    Args:
        sample_rate_hz: rate of every chunk.
    """

    def __init__(self, sample_rate_hz: int, crossfade_s: float = CROSSFADE_S) -> None:
        self.sample_rate_hz = sample_rate_hz
        self._fade = int(crossfade_s * sample_rate_hz)
        self._segment: int | None = None
        self._segment_samples = 0
        self._held = np.zeros(0, dtype=np.float32)  # end of the audio so far, kept for a fade
        self._fading: np.ndarray | None = None  # previous segment's end, waiting for this one's start
        self._head = np.zeros(0, dtype=np.float32)  # this segment's start, waiting to fade in

    def push(self, segment: int, audio: np.ndarray) -> np.ndarray:
        """Add one chunk (float32 ``(n,)``) of segment number ``segment``; returns float32 samples
        ready to play (possibly empty)."""
        audio = np.asarray(audio, dtype=np.float32)
        out = []
        if self._segment is not None and segment != self._segment:
            out.extend(self._end_segment())
            self._fading, self._held, self._segment_samples = self._held, np.zeros(0, dtype=np.float32), 0
        self._segment = segment
        self._segment_samples += len(audio)
        if self._fading is not None:
            self._head = np.concatenate([self._head, audio])
            if len(self._head) < 2 * len(self._fading):
                return _joined(out)
            out.extend(self._fade_in())
        else:
            out.extend(self._hold(audio))
        return _joined(out)

    def finish(self) -> np.ndarray:
        """Everything still held back; the joiner is empty afterwards."""
        out = self._end_segment() + [self._held]
        self._held = np.zeros(0, dtype=np.float32)
        self._segment, self._segment_samples = None, 0
        return _joined(out)

    def _end_segment(self) -> list[np.ndarray]:
        # A segment shorter than twice the fade ends before its fade-in could be computed.
        return self._fade_in() if self._fading is not None else []

    def _fade_in(self) -> list[np.ndarray]:
        fading, head = self._fading, self._head
        n = min(len(fading), len(head) // 2)
        t = np.linspace(0.0, np.pi / 2, n, dtype=np.float32)
        out = [fading[:len(fading) - n], fading[len(fading) - n:] * np.cos(t) + head[:n] * np.sin(t)]
        self._fading, self._head = None, np.zeros(0, dtype=np.float32)
        return out + self._hold(head[n:])

    def _hold(self, audio: np.ndarray) -> list[np.ndarray]:
        buffer = np.concatenate([self._held, audio])
        keep = min(self._fade, self._segment_samples // 2, len(buffer))
        self._held = buffer[len(buffer) - keep:]
        return [buffer[:len(buffer) - keep]]


def _joined(pieces: list[np.ndarray]) -> np.ndarray:
    pieces = [p for p in pieces if len(p)]
    if not pieces:
        return np.zeros(0, dtype=np.float32)
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


def crossfade_join(pieces: list[np.ndarray], sample_rate_hz: int, crossfade_s: float = CROSSFADE_S) -> np.ndarray:
    """Join whole segments (float32 ``(n,)`` each) as :class:`SegmentJoiner` does.

    Returns:
        float32 of ``sum(len) - overlaps`` samples, each overlap at most ``crossfade_s`` and at most
        half of either neighbour.
    """
    joiner = SegmentJoiner(sample_rate_hz, crossfade_s)
    out = [joiner.push(i, p) for i, p in enumerate(pieces)] + [joiner.finish()]
    return np.concatenate(out).astype(np.float32, copy=False)
