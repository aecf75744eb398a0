"""The two ways to run Piper's VITS voice: ONNX Runtime (CPU) and PyTorch (CPU or CUDA).

Both take phoneme ids from Piper's own phonemizer and return a float32 waveform at the voice's
sample rate, with the voice config's ``noise_scale``, ``length_scale`` and ``noise_w``.
Measured on the 2-core CPU machines here, ONNX Runtime is about 2.5x faster than PyTorch for
this voice (``bench/memory_vs_length.py`` prints both), so ``--engine embedded`` uses ONNX Runtime
on the CPU and PyTorch on CUDA, where the voice then lives in GPU memory and fp16 applies.
"""

from __future__ import annotations

import os

import numpy as np


class OnnxBackend:
    """ONNX Runtime, with the voice's graph cut in two at the decoder's input: the text encoder,
    duration predictor and flow run once per sentence, the HiFi-GAN decoder in windows (as
    :meth:`.vits.Generator.decode_windowed` does), so memory follows the window and not the
    sentence. The windowed audio is identical to one pass (``tests/test_vits_equivalence.py``)."""

    name = "onnxruntime"

    def load(self, model_path: str, device: str, fp16: bool) -> dict:
        import onnx
        import onnxruntime
        from onnx.utils import Extractor

        options = onnxruntime.SessionOptions()
        # Without the arena, buffers go back to the system after each run, so the worker's memory
        # follows the current segment instead of keeping the largest one ever seen.
        options.enable_cpu_mem_arena = False
        model = onnx.load(str(model_path))
        latent = next((n.input[0] for n in model.graph.node if "dec.conv_pre.weight" in n.input), None)
        self._latent_name = latent
        if latent is None:  # not a Piper VITS graph as expected: run it whole
            del model
            self._front = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
            self._back = None
        else:
            # Sessions built from files, not from serialized bytes: from bytes the worker kept
            # about 60 MiB more (measured with psutil after load: 210 vs 149 MiB).
            import tempfile

            extractor = Extractor(model)
            inputs = [i.name for i in model.graph.input]
            outputs = [o.name for o in model.graph.output]
            with tempfile.TemporaryDirectory(prefix="cosyvoice-ui-piper-") as folder:
                front, back = os.path.join(folder, "front.onnx"), os.path.join(folder, "decoder.onnx")
                onnx.save(extractor.extract_model(inputs, [latent]), front)
                onnx.save(extractor.extract_model([latent], outputs), back)
                del model, extractor
                self._front = onnxruntime.InferenceSession(front, options, providers=["CPUExecutionProvider"])
                self._back = onnxruntime.InferenceSession(back, options, providers=["CPUExecutionProvider"])
        facts = {"device": "cpu", "dtype": "float32", "runtime": "onnxruntime",
                 "windowed_decoder": self._back is not None}
        if device != "cpu":
            facts["note"] = f"ONNX Runtime runs on the CPU here; --device {device} does not apply to it."
        return facts

    def synthesize_ids(self, ids: list[int], noise_scale: float, length_scale: float, noise_w: float,
                       seed: int) -> np.ndarray:
        feed = {
            "input": np.array([ids], dtype=np.int64),
            "input_lengths": np.array([len(ids)], dtype=np.int64),
            "scales": np.array([noise_scale, length_scale, noise_w], dtype=np.float32),
        }
        first = self._front.run(None, feed)[0]
        if self._back is None:
            return np.asarray(first, dtype=np.float32).reshape(-1)
        return decode_in_windows(lambda z: self._back.run(None, {self._latent_name: z})[0], first)


# Decoder windows: about 3 s of audio at 22.05 kHz with hop 256, and context well past the
# HiFi-GAN decoder's receptive field (about 10 latent frames for Piper's medium voices: conv_pre 3,
# the 8x stage's widest ResBlock2 - kernel 7, dilations 3 and 12 - 45 samples = 5.6 frames, later
# stages under 1). bench/vits_equivalence.py and tests/test_vits_equivalence.py measure the result.
DECODE_WINDOW_FRAMES = 256
DECODE_CONTEXT_FRAMES = 32


def window_spans(frames: int, window_frames: int = DECODE_WINDOW_FRAMES, context_frames: int = DECODE_CONTEXT_FRAMES):
    """``(start, end, a, b)`` per window: the window's own frames ``[start, end)`` and the frames
    ``[a, b)`` decoded for it (its own plus ``context_frames`` each side). One span when the
    latent is short enough to decode in one pass."""
    if frames <= window_frames + 2 * context_frames:
        return [(0, frames, 0, frames)]
    return [(start, min(frames, start + window_frames), max(0, start - context_frames),
             min(frames, start + window_frames + context_frames)) for start in range(0, frames, window_frames)]


def decode_in_windows(decode, z: np.ndarray) -> np.ndarray:
    """Run ``decode`` (latent float32 ``(1, C, frames)`` -> waveform ``(frames * hop,)``) window by
    window (:func:`window_spans`) and join each window's own span; equals one pass."""
    pieces = []
    for start, end, a, b in window_spans(z.shape[2]):
        audio = np.asarray(decode(np.ascontiguousarray(z[:, :, a:b])), dtype=np.float32).reshape(-1)
        hop = len(audio) // (b - a)
        pieces.append(audio[(start - a) * hop:(end - a) * hop])
    return np.concatenate(pieces) if len(pieces) > 1 else pieces[0]


class TorchBackend:
    name = "torch"

    def load(self, model_path: str, device: str, fp16: bool) -> dict:
        import torch

        from .onnx_weights import load_onnx_weights
        from .vits import PiperVits

        self._torch = torch
        self._device = torch.device(device)
        self._model = PiperVits(load_onnx_weights(model_path)).eval().to(self._device)
        self._dtype = torch.float16 if (fp16 and self._device.type == "cuda") else torch.float32
        if self._dtype == torch.float16:
            # Durations stay in float32 (same output length as fp32); flow and decoder, whose
            # activations grow with the audio, run in half precision.
            self._model.flow.half()
            self._model.dec.half()
        return {"device": str(self._device), "dtype": str(self._dtype).replace("torch.", ""), "runtime": "torch"}

    def synthesize_ids(self, ids: list[int], noise_scale: float, length_scale: float, noise_w: float,
                       seed: int) -> np.ndarray:
        torch = self._torch
        generator = None
        if seed >= 0:
            generator = torch.Generator(device=self._device)
            generator.manual_seed(seed)
        with torch.inference_mode():
            x = torch.tensor([ids], dtype=torch.long, device=self._device)
            audio = self._model.infer(x, noise_scale, length_scale, noise_w, generator=generator, dtype=self._dtype)
            return audio.cpu().numpy().astype(np.float32)
