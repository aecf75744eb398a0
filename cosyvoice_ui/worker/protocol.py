"""The messages that cross between the supervisor (web process) and the worker process.

Everything is a small picklable dataclass sent over one duplex ``multiprocessing`` pipe. Each
synthesis message carries the request id it belongs to, so a late answer from a worker that was
replaced can never be mistaken for another request's answer.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..engines.base import SynthesisOutput, SynthesisRequest


@dataclasses.dataclass(frozen=True)
class MemorySnapshot:
    """The worker's own view of its memory.

    Attributes:
        rss_bytes: resident set size of the worker process (host memory).
        device: the torch device the engine runs on ("cpu", "cuda:0", ...).
        allocated_bytes / reserved_bytes: ``torch.cuda.memory_allocated`` / ``memory_reserved``
            on that device; ``None`` on the CPU or before CUDA is initialized.
    """

    rss_bytes: int
    device: str
    allocated_bytes: int | None = None
    reserved_bytes: int | None = None


# -- supervisor -> worker ---------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Synthesize:
    request_id: str
    request: SynthesisRequest


@dataclasses.dataclass(frozen=True)
class FreeCache:
    """Between requests: ``gc.collect()`` and ``torch.cuda.empty_cache()``; answer :class:`CacheFreed`."""


@dataclasses.dataclass(frozen=True)
class Abandon:
    """The client of ``request_id`` has left: stop it before its next segment and answer
    :class:`Failed` with kind ``"abandoned"`` (a segment already started runs to its end: cutting
    an engine's generator short can leave its state behind, CosyVoice's per-request caches)."""

    request_id: str


@dataclasses.dataclass(frozen=True)
class Shutdown:
    """Finish nothing new; exit after the current request."""


# -- worker -> supervisor ---------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Ready:
    """The model is loaded; the worker takes requests from now on."""

    pid: int
    load_s: float
    facts: dict  # engine.load()'s facts: device, dtype, ...
    memory: MemorySnapshot


@dataclasses.dataclass(frozen=True)
class LoadFailed:
    """The engine could not be loaded; the worker exits after sending this."""

    pid: int
    error: str


@dataclasses.dataclass(frozen=True)
class Heartbeat:
    pid: int
    busy_request_id: str | None
    memory: MemorySnapshot


@dataclasses.dataclass(frozen=True)
class CacheFreed:
    """Memory before and after freeing caches (torch figures ``None`` on the CPU)."""

    pid: int
    reserved_before_bytes: int | None
    reserved_after_bytes: int | None
    allocated_bytes: int | None
    rss_before_bytes: int
    rss_after_bytes: int


@dataclasses.dataclass(frozen=True)
class Progress:
    """``done`` of ``total`` segments of a request are synthesized."""

    request_id: str
    done: int
    total: int


@dataclasses.dataclass(frozen=True)
class AudioChunk:
    """Audio of a running request, sent as soon as the engine yields it, so the worker never
    holds the whole text's audio (the web process joins the chunks).

    Attributes:
        segment: index of the text segment the chunk belongs to (chunks of one segment follow
            each other directly; segments are cross-faded).
        audio: float32 ``(n,)`` mono in [-1, 1] at ``sample_rate_hz``.
        attempt: 0, or 1 after an out-of-memory retry with shorter segments: the web process
            drops the chunks of an earlier attempt.
    """

    request_id: str
    segment: int
    audio: np.ndarray
    sample_rate_hz: int
    attempt: int = 0


@dataclasses.dataclass(frozen=True)
class RequestStats:
    """Measurements of one request inside the worker.

    Attributes:
        synthesis_s: wall time of ``engine.synthesize``.
        audio_s: seconds of audio produced.
        real_time_factor: synthesis_s / audio_s (below 1 is faster than real time).
        peak_allocated_bytes / peak_reserved_bytes: ``torch.cuda.max_memory_allocated`` /
            ``max_memory_reserved`` during the request (CUDA only, else ``None``).
        peak_rss_bytes: highest worker RSS sampled during the request (every 20 ms).
    """

    synthesis_s: float
    audio_s: float
    real_time_factor: float
    peak_allocated_bytes: int | None
    peak_reserved_bytes: int | None
    peak_rss_bytes: int
    pid: int
    device: str
    segments: int = 1
    memory_before_bytes: int | None = None  # torch allocated on CUDA, else RSS, before the request
    memory_after_bytes: int | None = None  # the same after it (the leak watchdog's figure)
    runs: int = 1  # set by the supervisor: 2 when a worker died (or was replaced) mid-request and it ran again


@dataclasses.dataclass(frozen=True)
class Done:
    """The request finished. ``output.audio`` is empty: the audio came in :class:`AudioChunk`
    messages before this one."""

    request_id: str
    output: SynthesisOutput
    stats: RequestStats


@dataclasses.dataclass(frozen=True)
class Failed:
    """The request failed inside the worker; the worker itself is still healthy.

    Attributes:
        kind: "invalid" (the engine refused the request: the message is for the user),
            "out_of_memory", "bad_output" (NaN, infinite or silent audio; the message is for the
            user), "abandoned" (stopped between segments after :class:`Abandon`), or "error" (an
            unexpected exception).
    """

    request_id: str
    kind: str
    message: str
    about_prompt_audio: bool = False  # kind "invalid" because of the prompt audio (PromptAudioRefused)
