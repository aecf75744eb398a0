"""Engines that misbehave on purpose, to test the supervisor with real processes.

Loaded in the worker with ``--engine tests.fault_engines:FaultEngine``. The text decides what
happens, so one running worker can exercise every path:

- ``"crash"`` anywhere in the text: the worker SIGKILLs itself (a segfault or OOM kill looks the
  same to the supervisor);
- ``"crash-once"``: SIGKILL only if this worker has not crashed on it before - a marker file
  under $FAULT_ENGINE_DIR remembers it, so the retry on a new worker succeeds;
- ``"sleep:S"``: sleep S seconds first (a slow request);
- ``"hang"``: never return;
- ``"invalid"``: raise ValueError (the engine refuses the request);
- ``"oom"``: raise MemoryError;
- ``"oom-over:N"``: raise MemoryError when the segment is longer than N characters.
Otherwise: a 220 Hz tone of 0.1 s per character at 16 kHz.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time

import numpy as np

from cosyvoice_ui.engines.base import Capabilities, Engine, SynthesisOutput, SynthesisRequest


class FaultEngine(Engine):
    capabilities = Capabilities(name="fault", languages=("en",), prompt_audio_required=False,
                                uses_prompt_text=False, instruction_presets=(), devices=("cpu",),
                                fp16=False, seed=False)

    def load(self, device: str, fp16: bool) -> dict:
        if os.environ.get("FAULT_ENGINE_TEMP_FILE"):  # a temporary file, as the Piper backend writes one
            import tempfile

            fd, path = tempfile.mkstemp(prefix="fault-engine-")
            os.close(fd)
            with open(os.path.join(os.environ["FAULT_ENGINE_DIR"], f"tempfile-{os.getpid()}"), "w") as f:
                f.write(path)
        delay = float(os.environ.get("FAULT_ENGINE_LOAD_S", "0"))
        later = os.path.join(os.environ.get("FAULT_ENGINE_DIR", ""), "load_s")  # for loads after the first
        if os.path.exists(later):
            with open(later) as f:
                delay = float(f.read())
        time.sleep(delay)
        if os.path.exists(os.path.join(os.environ.get("FAULT_ENGINE_DIR", ""), "fail_load")):
            raise RuntimeError("the test asked this load to fail")
        return {"device": "cpu", "dtype": "float32"}

    def synthesize(self, request: SynthesisRequest) -> SynthesisOutput:
        text = request.text
        m = re.search(r"sleep:([0-9.]+)", text)
        if m:
            time.sleep(float(m.group(1)))
        m = re.search(r"hold-gil:([0-9.]+)", text)
        if m:
            # Like a long C call that keeps the GIL (WORLD analysis on a loaded host): the
            # process computes, but its heartbeat thread cannot run.
            hold_s = float(m.group(1))
            before = sys.getswitchinterval()
            sys.setswitchinterval(hold_s + 5)  # no other thread is given the GIL meanwhile
            end = time.monotonic() + hold_s
            try:
                while time.monotonic() < end:
                    pass
            finally:
                sys.setswitchinterval(before)
        if "crash-once" in text:
            marker = os.path.join(os.environ["FAULT_ENGINE_DIR"], "crashed-" + re.sub(r"\W", "_", text)[:80])
            if not os.path.exists(marker):
                open(marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
        elif "crash" in text:
            os.kill(os.getpid(), signal.SIGKILL)
        if "hang" in text:
            while True:
                time.sleep(1)
        if "invalid" in text:
            raise ValueError("The fault engine refuses this text.")
        m = re.search(r"oom-over:(\d+)", request.prompt_text)
        if m and len(text) > int(m.group(1)):
            raise MemoryError(f"fault engine: segment of {len(text)} characters is over {m.group(1)}")
        if re.search(r"\boom\b", text):
            raise MemoryError("fault engine: simulated out of memory")
        sr = 16000
        t = np.arange(int(0.1 * sr * len(text))) / sr
        return SynthesisOutput(audio=(0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), sample_rate_hz=sr,
                               details={"pid": os.getpid()})


class LeakyEngine(FaultEngine):
    """Keeps ``LEAK_MB`` (default 30) MiB more host memory after every request, like a cache that
    is never cleared."""

    def load(self, device: str, fp16: bool) -> dict:
        self._kept = []
        return super().load(device, fp16)

    def synthesize(self, request: SynthesisRequest) -> SynthesisOutput:
        block = np.ones(int(os.environ.get("LEAK_MB", "30")) * 2**20, dtype=np.uint8)  # touched: counts in RSS
        self._kept.append(block)
        return super().synthesize(request)


class CudaAllocEngine(FaultEngine):
    """Holds ``CUDA_ALLOC_MB`` (default 256) MiB of tensors on the GPU after load, so a test can see
    the worker's memory in NVML and see it vanish when the worker is replaced."""

    def load(self, device: str, fp16: bool) -> dict:
        import torch

        mb = int(os.environ.get("CUDA_ALLOC_MB", "256"))
        self._block = torch.empty(mb * 2**20, dtype=torch.uint8, device=device)
        return {"device": device, "dtype": "uint8"}


class CudaLeakyEngine(CudaAllocEngine):
    """Keeps ``LEAK_MB`` (default 64) MiB more CUDA memory after every request."""

    def synthesize(self, request: SynthesisRequest) -> SynthesisOutput:
        import torch

        self._kept = getattr(self, "_kept", [])
        self._kept.append(torch.ones(int(os.environ.get("LEAK_MB", "64")) * 2**20, dtype=torch.uint8,
                                     device=self._block.device))
        return super().synthesize(request)


class CudaOomEngine(CudaAllocEngine):
    """Runs into a real CUDA out-of-memory error on segments longer than ``CUDA_OOM_CHARS``
    (default 60) characters: a segment's "activations" take ``len(segment) / CUDA_OOM_CHARS`` of
    the GPU memory that was free after load, times 1.2, so a segment over the limit asks for more
    than the card has and the worker's retry with halved segments fits."""

    def load(self, device: str, fp16: bool) -> dict:
        import torch

        facts = super().load(device, fp16)
        free_bytes, _ = torch.cuda.mem_get_info(self._block.device)
        self._bytes_per_char = int(1.2 * free_bytes / int(os.environ.get("CUDA_OOM_CHARS", "60")))
        return facts

    def synthesize(self, request: SynthesisRequest) -> SynthesisOutput:
        import torch

        activations = torch.empty(len(request.text) * self._bytes_per_char, dtype=torch.uint8,
                                  device=self._block.device)
        try:
            return super().synthesize(request)
        finally:
            del activations

