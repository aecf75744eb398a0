"""GPU figures from NVML (``nvidia-ml-py``), without touching CUDA.

NVML reads the driver's counters; it creates no CUDA context, so the web process may call it.
Like nvitop's ``api`` layer, nothing here raises into the UI: when NVML is missing (no driver,
CI, laptops) :class:`NvmlReader` says why in :attr:`NvmlReader.error` and returns no devices;
queries a device does not support come back as ``None``.
"""

from __future__ import annotations

import dataclasses
import threading


@dataclasses.dataclass(frozen=True)
class GpuSample:
    """One device at one moment. Bytes are bytes; ``None`` means not supported or not visible.

    Attributes:
        index / name: NVML device index and product name.
        used_bytes / total_bytes: device memory (``nvmlDeviceGetMemoryInfo``; used includes
            the driver's reserved memory).
        utilization_gpu_pct / utilization_memory_pct: ``nvmlDeviceGetUtilizationRates``.
        power_w: ``nvmlDeviceGetPowerUsage`` / 1000.
        temperature_c: GPU core temperature.
        process_used_bytes: ``{pid: bytes}`` from ``nvmlDeviceGetComputeRunningProcesses``
            (PIDs are the host's inside containers, so a worker may be missing here).
    """

    index: int
    name: str
    used_bytes: int
    total_bytes: int
    utilization_gpu_pct: int | None
    utilization_memory_pct: int | None
    power_w: float | None
    temperature_c: int | None
    process_used_bytes: dict[int, int | None]


class NvmlReader:
    """Reads all visible NVIDIA GPUs. Thread-safe; initialize once, :meth:`close` at exit."""

    def __init__(self) -> None:
        self.error: str | None = None
        self._lock = threading.Lock()
        self._handles: list = []
        self._nvml = None
        try:
            import pynvml

            self._nvml = pynvml
            pynvml.nvmlInit()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            if not self._handles:
                self.error = "NVML found no NVIDIA GPU"
        except ImportError as e:
            self.error = f"nvidia-ml-py is not installed ({e})"
        except Exception as e:  # NVMLError_* and NVMLLibraryMismatchError (not an NVMLError subclass)
            self.error = f"{type(e).__name__}: {e}"
            self._handles = []

    @property
    def available(self) -> bool:
        return bool(self._handles)

    def read(self) -> list[GpuSample]:
        """Sample every device; an empty list when NVML is unavailable."""
        if not self._handles:
            return []
        nv = self._nvml
        out = []
        with self._lock:
            for index, h in enumerate(self._handles):
                try:
                    mem = nv.nvmlDeviceGetMemoryInfo(h)
                except Exception as e:
                    self.error = f"{type(e).__name__}: {e}"
                    continue
                util = _try(lambda: nv.nvmlDeviceGetUtilizationRates(h))
                power = _try(lambda: nv.nvmlDeviceGetPowerUsage(h))
                procs = _try(lambda: nv.nvmlDeviceGetComputeRunningProcesses(h)) or []
                name = _try(lambda: nv.nvmlDeviceGetName(h)) or f"GPU {index}"
                out.append(GpuSample(
                    index=index,
                    name=name.decode() if isinstance(name, bytes) else str(name),
                    used_bytes=int(mem.used),
                    total_bytes=int(mem.total),
                    utilization_gpu_pct=util.gpu if util else None,
                    utilization_memory_pct=util.memory if util else None,
                    power_w=power / 1000.0 if power is not None else None,
                    temperature_c=_try(lambda: nv.nvmlDeviceGetTemperature(h, 0)),
                    process_used_bytes={int(p.pid): (int(p.usedGpuMemory) if p.usedGpuMemory is not None else None)
                                        for p in procs},
                ))
        return out

    def process_bytes(self, pid: int) -> int | None:
        """GPU memory that process ``pid`` holds, in bytes, summed over all devices (0 when it
        holds none); ``None`` when NVML is unavailable."""
        if not self.available:
            return None
        return sum((g.process_used_bytes.get(pid) or 0) for g in self.read())

    def close(self) -> None:
        if self._handles and self._nvml is not None:
            _try(self._nvml.nvmlShutdown)
            self._handles = []


def _try(fn):
    try:
        return fn()
    except Exception:  # NotSupported and friends: the figure is simply not available
        return None
