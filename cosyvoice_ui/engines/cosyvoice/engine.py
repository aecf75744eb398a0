"""The CosyVoice 2 / 3 engine (``--engine cosyvoice --model-dir PATH --cosyvoice-repo PATH``).

Runs in the worker: the model is loaded once with the official ``AutoModel`` (:mod:`.loading`),
and each segment is one call of the generator method :mod:`.prompt_format` chooses. Audio is
passed on chunk by chunk as the model yields it (one chunk per model text piece, or the model's
stream chunks with ``--stream``); :mod:`..output_check` refuses NaN, infinite or silent output.
The real model runs only where its weights exist; tests drive this adapter against a stand-in
of the official package (``tests/cosyvoice_standin``).
"""

from __future__ import annotations

import inspect
import os
import tempfile
from typing import Iterator

import numpy as np

from ..base import Capabilities, Engine, PromptAudioRefused, SynthesisOutput, SynthesisRequest
from . import prompt_format
from .loading import add_repo_to_path, load_model


class CosyVoiceEngine(Engine):
    """CosyVoice 2 or 3 from a local model folder.

    Args:
        model_dir: the model folder (``--model-dir``).
        repo: a clone of FunAudioLLM/CosyVoice (``--cosyvoice-repo``); ``None`` when the
            ``cosyvoice`` package is importable already.
        load_trt, load_vllm: passed to the model where it accepts them (CUDA only).

    The model's streaming mode is used for requests with ``stream`` set (the page and
    ``/synthesize_stream`` with ``--stream``); ``/synthesize`` runs without it and honours speed.
    """

    capabilities = Capabilities(
        name="cosyvoice (CosyVoice 2 / 3)",
        languages=("zh", "en", "ja", "ko", "de", "es", "fr", "it", "ru"),
        prompt_audio_required=True, uses_prompt_text=True,
        instruction_presets=prompt_format.INSTRUCTION_PRESETS,
        devices=("cpu", "cuda"), fp16=True, seed=True, performed_tags=prompt_format.PERFORMED_TAGS)

    def __init__(self, model_dir: str | None = None, repo: str | None = None, load_trt: bool = False,
                 load_vllm: bool = False) -> None:
        if not model_dir:
            raise ValueError("--engine cosyvoice needs --model-dir PATH (a local CosyVoice 2 or 3 model folder).")
        self._model_dir = model_dir
        self._repo = repo
        self._load_trt = load_trt
        self._load_vllm = load_vllm
        self._model = None
        self._version = 0
        self._speakers: tuple[str, ...] = ()
        self._sample_rate_hz = 0

    def load(self, device: str, fp16: bool) -> dict:
        if self._repo:
            add_repo_to_path(self._repo)
        self._model, self._version, facts = load_model(self._model_dir, device, fp16, self._load_trt, self._load_vllm)
        if "prompt_wav" not in inspect.signature(self._model.inference_zero_shot).parameters:
            raise ValueError("This CosyVoice checkout is older than the API this app uses (inference_zero_shot "
                             "takes no prompt_wav). Update the clone: git pull && git submodule update --init --recursive")
        list_speakers = getattr(self._model, "list_available_spks", None) or getattr(self._model, "list_avaliable_spks")
        self._speakers = tuple(list_speakers())
        self._sample_rate_hz = int(self._model.sample_rate)
        facts.update(speakers=list(self._speakers), inline_tags=list(prompt_format.INLINE_TAGS))
        return facts

    def synthesize(self, request: SynthesisRequest) -> SynthesisOutput:
        """All of :meth:`synthesize_stream` in one output."""
        chunks = list(self.synthesize_stream(request))
        audio = np.concatenate([c.audio for c in chunks]) if chunks else np.zeros(0, dtype=np.float32)
        notes = [n for c in chunks for n in c.notes]
        return SynthesisOutput(audio=audio, sample_rate_hz=self._sample_rate_hz, notes=notes,
                               details=chunks[0].details if chunks else {})

    def synthesize_stream(self, request: SynthesisRequest) -> Iterator[SynthesisOutput]:
        """Yield the model's chunks as float32 ``(n,)`` at the model's rate (24 kHz for v2/v3).

        Raises:
            ValueError: a request CosyVoice cannot serve (no prompt audio or speaker, unknown
                speaker, prompt over 30 s or under 16 kHz); the message is for the user.
            RuntimeError: the model failed in a way the user cannot fix (message says what).
        """
        if self._model is None:
            raise RuntimeError("CosyVoiceEngine.synthesize called before load()")
        call = prompt_format.plan_call(
            self._version, request.text, has_prompt=request.prompt is not None, prompt_text=request.prompt_text,
            instruction=request.instruction, speaker=request.speaker, speakers=self._speakers)
        notes = list(call.notes)
        speed = request.speed
        stream = request.stream
        if stream and speed != 1.0:
            notes.append(f"Speed {speed:g} is not supported while streaming (a limit of the model); "
                         "synthesized at 1.0.")
            speed = 1.0
        import torch

        if request.seed >= 0:
            torch.manual_seed(request.seed)
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                torch.cuda.manual_seed_all(request.seed)
        kwargs = dict(call.kwargs, stream=stream, speed=speed)
        prompt_path = _write_prompt(request) if call.uses_prompt_wav else None
        if prompt_path:
            kwargs["prompt_wav"] = prompt_path
        details = {"mode": call.mode, "model": type(self._model).__name__, "stream": stream,
                   "method": call.method}
        first = True
        try:
            with torch.inference_mode():
                for out in getattr(self._model, call.method)(**kwargs):
                    audio = out["tts_speech"].detach().to("cpu", torch.float32).numpy().reshape(-1)
                    yield SynthesisOutput(audio=audio, sample_rate_hz=self._sample_rate_hz,
                                          notes=notes if first else [], details=details if first else {})
                    first = False
        except AssertionError as e:
            raise _explain_assertion(e) from e
        finally:
            if prompt_path:
                os.unlink(prompt_path)


def _write_prompt(request: SynthesisRequest) -> str:
    """The prompt audio as a 16-bit WAV file (the official API reads a path), at the rate the
    request carries (24 kHz, above the model's 16 kHz minimum)."""
    import soundfile

    fd, path = tempfile.mkstemp(prefix="cosyvoice-ui-prompt-", suffix=".wav")
    os.close(fd)
    soundfile.write(path, request.prompt.samples, request.prompt.sample_rate_hz, subtype="PCM_16")
    return path


def _explain_assertion(error: AssertionError) -> Exception:
    """Turn the official code's assertions into messages that say what to do."""
    text = str(error)
    if "30s" in text or "30 s" in text:
        return PromptAudioRefused("The prompt audio is longer than CosyVoice's 30 s limit; use 3-10 s of speech.")
    if "sample rate" in text:
        return PromptAudioRefused(f"The prompt audio's sample rate is too low for CosyVoice ({text}); use 16 kHz or more.")
    if "speed" in text:
        return ValueError("Speed other than 1.0 is not supported while streaming; set speed to 1.0.")
    if "endofprompt" in text:
        return RuntimeError(f"CosyVoice rejected the prompt format ({text}): the model folder and the code "
                            "may be of different versions (CosyVoice 3 weights need the CosyVoice 3 code).")
    return RuntimeError(f"CosyVoice refused the input: {text or 'assertion failed'}")
