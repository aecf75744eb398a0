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
    return sum((g.process_used_bytes.get(pid) or 0) for g in NVML.read() if pid in g.process_used_bytes)


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
