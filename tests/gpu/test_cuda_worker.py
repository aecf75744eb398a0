"""Checks that need an NVIDIA GPU: the worker holds the CUDA memory, the web process none, and a
restart returns all of the old worker's memory (NVML per process)."""

from __future__ import annotations

import os
import time

import pytest

from cosyvoice_ui.monitor.nvml import NvmlReader
from cosyvoice_ui.worker.supervisor import Supervisor

NVML = NvmlReader()
pytestmark = pytest.mark.skipif(not NVML.available, reason=f"needs an NVIDIA GPU with NVML: {NVML.error}")


def _pid_bytes(pid):
    return NVML.process_bytes(pid)


def test_worker_owns_cuda_memory_and_restart_frees_it(monkeypatch):
    monkeypatch.setenv("CUDA_ALLOC_MB", "512")
    sup = Supervisor("tests.fault_engines:CudaAllocEngine", "cuda", True).start()
    try:
        assert sup.wait_ready(180), sup.status()
        old = sup.worker_pid
        time.sleep(1)
        assert _pid_bytes(old) >= 512 * 2**20, NVML.read()
        assert _pid_bytes(os.getpid()) == 0, "the web process must not hold a CUDA context"
        report = sup.restart()
        time.sleep(1)
        assert _pid_bytes(old) == 0
        assert _pid_bytes(report.new_pid) >= 512 * 2**20
        assert report.memory_before.allocated_bytes >= 512 * 2**20
    finally:
        sup.stop()


def test_cuda_leak_is_caught_by_torch_allocated_figures(monkeypatch):
    from cosyvoice_ui.engines.base import SynthesisRequest
    from cosyvoice_ui.monitor.leak import LeakWatchdog

    monkeypatch.setenv("CUDA_ALLOC_MB", "64")
    monkeypatch.setenv("LEAK_MB", "64")
    watchdog = LeakWatchdog(threshold_bytes=128 * 2**20, window=3, warmup_requests=1)
    sup = Supervisor("tests.fault_engines:CudaLeakyEngine", "cuda", True, leak_watchdog=watchdog).start()
    try:
        assert sup.wait_ready(180), sup.status()
        first = sup.worker_pid
        pids = [sup.synthesize(SynthesisRequest(text=f"request {i}"))[1].pid for i in range(10)]
        assert sup.status()["restarts_by_reason"].get("leak", 0) >= 1 and pids[-1] != first
        time.sleep(1)
        assert _pid_bytes(first) == 0  # the leaked CUDA memory went back with the process
    finally:
        sup.stop()


def test_admission_reads_free_gpu_memory():
    from cosyvoice_ui.monitor.admission import available_memory

    gpu = NVML.read()[0]
    read = available_memory(lambda: {"device": "cuda:0", "memory": {}}, NVML.read, 0.10)
    free = read()
    assert 0 < free <= gpu.total_bytes - gpu.used_bytes


def test_real_cuda_out_of_memory_is_retried_in_smaller_segments_and_the_worker_stays(monkeypatch):
    """A segment that asks for more than the card has raises torch.OutOfMemoryError in the worker;
    the retry with halved segments fits, the memory goes back after the request, and a request
    that does not fit after the retry either gets a clear message without ending the worker."""
    from cosyvoice_ui.engines.base import SynthesisRequest
    from cosyvoice_ui.errors import SynthesisFailed

    monkeypatch.setenv("CUDA_ALLOC_MB", "256")
    monkeypatch.setenv("CUDA_OOM_CHARS", "60")
    sup = Supervisor("tests.fault_engines:CudaOomEngine", "cuda", True).start()
    try:
        assert sup.wait_ready(180), sup.status()
        pid = sup.worker_pid
        text = "A sentence long enough to run out of memory, with a clause, and one more clause."
        assert len(text) > 60
        output, stats = sup.synthesize(SynthesisRequest(text=text, segments=(text,)))
        assert any("retried with segments of at most" in n for n in output.notes), output.notes
        assert stats.segments >= 2 and stats.pid == pid and len(output.audio) > 0
        assert stats.peak_allocated_bytes > 60 * 2**30  # the retried halves really took the card's memory
        time.sleep(1)
        assert _pid_bytes(pid) < 4 * 2**30, "the activations of the request were not given back"
        # 130 characters: the retry's 65-character halves still ask for 1.3 times the free memory.
        with pytest.raises(SynthesisFailed, match="again when retried"):
            sup.synthesize(SynthesisRequest(text="y" * 130, segments=("y" * 130,)), timeout_s=120)
        output, stats = sup.synthesize(SynthesisRequest(text="a short request afterwards"))
        assert stats.pid == pid and len(output.audio) > 0
    finally:
        sup.stop()
