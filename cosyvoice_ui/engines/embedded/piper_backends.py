"""The two ways to run Piper's VITS voice: ONNX Runtime (CPU) and PyTorch (CPU or CUDA).

Both take phoneme ids from Piper's own phonemizer and return a float32 waveform at the voice's
sample rate, with the voice config's ``noise_scale``, ``length_scale`` and ``noise_w``.
Measured on the 2-core CPU machines here, ONNX Runtime is about 2.5x faster than PyTorch for
this voice (``bench/memory_vs_length.py`` prints both), so ``--engine embedded`` uses ONNX Runtime
on the CPU and PyTorch on CUDA, where the voice then lives in GPU memory and fp16 applies.
"""

from __future__ import annotations

import numpy as np


class OnnxBackend:
    name = "onnxruntime"

    def load(self, model_path: str, device: str, fp16: bool) -> dict:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        # Without the arena, buffers go back to the system after each run, so the worker's memory
        # follows the current segment instead of keeping the largest one ever seen.
        options.enable_cpu_mem_arena = False
        self._session = onnxruntime.InferenceSession(str(model_path), sess_options=options,
                                                     providers=["CPUExecutionProvider"])
        facts = {"device": "cpu", "dtype": "float32", "runtime": "onnxruntime"}
        if device != "cpu":
            facts["note"] = f"ONNX Runtime runs on the CPU here; --device {device} does not apply to it."
        return facts

    def synthesize_ids(self, ids: list[int], noise_scale: float, length_scale: float, noise_w: float,
                       seed: int) -> np.ndarray:
        audio = self._session.run(None, {
            "input": np.array([ids], dtype=np.int64),
            "input_lengths": np.array([len(ids)], dtype=np.int64),
            "scales": np.array([noise_scale, length_scale, noise_w], dtype=np.float32),
        })[0]
        return np.asarray(audio, dtype=np.float32).reshape(-1)


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
