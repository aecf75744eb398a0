"""The one interface every synthesis engine implements.

An engine knows nothing of processes or the UI: the worker loads it once, then calls
:meth:`Engine.synthesize` for one request at a time. Engine modules import their heavy
dependencies (torch, onnxruntime, model code) inside :meth:`Engine.load`, so the web process can
read :attr:`Engine.capabilities` without them.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import ClassVar, Iterator

import numpy as np


class NoSpeechSounds(ValueError):
    """The text (or one segment of it) gave the engine nothing to say: symbols it does not read,
    such as a line of "─" or "⇒" between paragraphs."""


class PromptAudioRefused(ValueError):
    """The engine cannot clone from the prompt audio (no voiced speech in it, too long for the
    model, a sample rate too low); the message is for the user."""


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What an engine can do, known before it is loaded.

    Attributes:
        name: shown in the UI and stats.
        languages: ISO 639-1 codes of the languages it speaks.
        prompt_audio_required: whether a request without prompt audio is refused.
        uses_prompt_text: whether a transcript of the prompt changes the result.
        instruction_presets: example instructions offered in the UI; empty when instructions are
            not supported.
        devices: "cpu" and/or "cuda".
        fp16: whether half precision is supported on CUDA.
        seed: whether ``seed`` makes results reproducible.
        prompt_sample_rate_hz: the rate the engine wants its prompt audio at; the web process
            resamples to it, so the worker needs no resampler (torch alone adds about 480 MiB to
            an ONNX Runtime worker, bench/README.md). ``None``: the inputs' 24 kHz.
        performed_tags: inline tags the engine performs (``"laughter"`` for ``[laughter]`` and
            ``<laughter>``, ``"strong"``), kept in the text; other markup is removed before a
            request reaches it (:func:`cosyvoice_ui.inputs.markup.remove_markup`).
    """

    name: str
    languages: tuple[str, ...]
    prompt_audio_required: bool
    uses_prompt_text: bool
    instruction_presets: tuple[str, ...]
    devices: tuple[str, ...]
    fp16: bool
    seed: bool
    prompt_sample_rate_hz: int | None = None
    performed_tags: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class PromptSamples:
    """Prompt audio as it crosses into the worker: float32 ``(n,)`` mono at ``sample_rate_hz``,
    with the digest an engine may cache its analysis under."""

    samples: np.ndarray
    sample_rate_hz: int
    sha1: str


@dataclasses.dataclass(frozen=True)
class SynthesisRequest:
    """An engine-neutral, already validated request.

    Attributes:
        text: cleaned text within the configured limits.
        prompt: the voice to clone, or ``None`` for the engine's own voice.
        prompt_text: transcript of the prompt audio ("" when unknown).
        instruction: free-text style instruction ("" when none).
        speed: speaking-rate multiplier, 0.5-2.0 (1.0 = natural).
        seed: random seed, or -1 for a fresh random one.
        segments: the text split for synthesis one piece at a time (:mod:`cosyvoice_ui.inputs.segments`);
            empty means the whole text is one segment. Engines see one segment per call.
        speaker: a pretrained speaker of the model (``Engine.load``'s ``speakers`` fact), used
            instead of prompt audio; "" for none.
        stream: the client plays audio as it comes; engines with a streaming mode use it.
    """

    text: str
    prompt: PromptSamples | None = None
    prompt_text: str = ""
    instruction: str = ""
    speed: float = 1.0
    seed: int = -1
    segments: tuple[str, ...] = ()
    speaker: str = ""
    stream: bool = False


@dataclasses.dataclass
class SynthesisOutput:
    """What an engine returns.

    Attributes:
        audio: float32, shape ``(n,)``, mono, in [-1, 1].
        sample_rate_hz: rate of ``audio``.
        notes: things the user should know (instructions not applied, fallbacks taken).
        details: engine-specific figures for the stats (JSON-serializable values).
    """

    audio: np.ndarray
    sample_rate_hz: int
    notes: list[str] = dataclasses.field(default_factory=list)
    details: dict = dataclasses.field(default_factory=dict)


class Engine(abc.ABC):
    """Base class of synthesis engines.

    Lifecycle: construct with no arguments, :meth:`load` once, then :meth:`synthesize` any number
    of times, never concurrently (the models in this field are not thread-safe).
    """

    capabilities: ClassVar[Capabilities]

    @abc.abstractmethod
    def load(self, device: str, fp16: bool) -> dict:
        """Load weights onto ``device`` ("cpu" or "cuda:N").

        Args:
            device: a resolved torch device string.
            fp16: half precision requested (engines without fp16 support ignore it and say so).

        Returns:
            Facts for the status panel, at least ``{"device": str, "dtype": str}`` as actually used.
        """

    @abc.abstractmethod
    def synthesize(self, request: SynthesisRequest) -> SynthesisOutput:
        """Speak ``request.text`` in the prompt's voice.

        Raises:
            ValueError: the request cannot be served by this engine; the message is shown to the user.
            MemoryError / torch.OutOfMemoryError: out of memory.
        """

    @property
    def applies_seed(self) -> bool:
        """Whether a seed makes this loaded engine's results reproducible (``capabilities.seed``
        unless the backend it chose at load time cannot take one)."""
        return self.capabilities.seed

    def synthesize_stream(self, request: SynthesisRequest) -> Iterator[SynthesisOutput]:
        """Speak ``request.text`` as a sequence of chunks that follow each other directly.

        Engines that produce audio incrementally (CosyVoice's ``stream=True``) override this; the
        default yields :meth:`synthesize`'s one output. Every chunk has the same sample rate;
        notes and details may ride on any chunk (the first chunk's details are kept).

        Raises:
            The same as :meth:`synthesize`.
        """
        yield self.synthesize(request)
