"""The worker process: owns the engine (and with it any CUDA context) and runs one request at a time.

Started by :class:`~.supervisor.Supervisor` with the ``spawn`` start method, so it begins from a
fresh interpreter that never inherited the web process's threads or state. Ending this process
is what gives all of its GPU memory back to the driver.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import sys
import tempfile
import threading
import time
import traceback

import numpy as np

from .. import LOG_FORMAT
from ..engines.base import PromptAudioRefused, SynthesisOutput
from ..engines.long_text import RequestAbandoned
from ..engines.output_check import BadAudioOutput
from . import protocol as msg


def _configure_allocator() -> None:
    # Varying text lengths fragment the caching allocator; expandable segments avoid it.
    # torch 2.9 reads both names, and 2.9.1 honours expandable_segments only under the old one
    # (field notes), so set both before torch is imported.
    for key in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        os.environ.setdefault(key, "expandable_segments:True")


def _nvidia_gpu_visible() -> bool:
    """Whether NVML sees an NVIDIA GPU this process may use (cheap; no CUDA context)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetCount() > 0
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no driver, no library: no usable GPU
        return False


def resolve_device(requested: str) -> str:
    """Turn ``auto|cpu|cuda|cuda:N`` into a concrete torch device string. Worker-side only:
    it may initialize CUDA.

    Raises:
        RuntimeError: CUDA was asked for but is not usable, or the index does not exist.
    """
    if requested == "cpu" or (requested == "auto" and not _nvidia_gpu_visible()):
        # No torch import: on the CPU the default engine runs in ONNX Runtime, and importing torch
        # alone adds about 480 MiB to the worker.
        return "cpu"
    import torch

    available = torch.cuda.is_available()
    if requested == "auto":
        return "cuda:0" if available else "cpu"
    if not available:
        raise RuntimeError(f"--device {requested} was requested but this machine has no usable CUDA GPU "
                           "(torch.cuda.is_available() is False). Use --device cpu or --device auto.")
    index = int(requested.partition(":")[2] or 0)
    if index >= torch.cuda.device_count():
        raise RuntimeError(f"--device {requested}: only {torch.cuda.device_count()} CUDA device(s) are visible.")
    return f"cuda:{index}"


class _Memory:
    """Reads the worker's memory figures; samples peak RSS while a request runs."""

    def __init__(self) -> None:
        import psutil

        self._proc = psutil.Process()
        self.device = "cpu"
        self._peak_rss = 0
        self._sampling = threading.Event()
        threading.Thread(target=self._sample_peak, name="peak-rss", daemon=True).start()

    def _torch_cuda(self):
        if not self.device.startswith("cuda") or "torch" not in sys.modules:
            return None
        import torch

        return torch.cuda if torch.cuda.is_initialized() else None

    def snapshot(self) -> msg.MemorySnapshot:
        cuda = self._torch_cuda()
        return msg.MemorySnapshot(
            rss_bytes=self._proc.memory_info().rss,
            device=self.device,
            allocated_bytes=cuda.memory_allocated(self.device) if cuda else None,
            reserved_bytes=cuda.memory_reserved(self.device) if cuda else None,
        )

    def _sample_peak(self) -> None:
        while True:
            self._sampling.wait()
            self._peak_rss = max(self._peak_rss, self._proc.memory_info().rss)
            time.sleep(0.02)

    def start_request(self) -> None:
        cuda = self._torch_cuda()
        if cuda:
            cuda.reset_peak_memory_stats(self.device)
        self._peak_rss = self._proc.memory_info().rss
        self._sampling.set()

    def peak_so_far(self) -> int:
        """Peak of the running request: torch peak allocated on CUDA, else peak RSS."""
        cuda = self._torch_cuda()
        if cuda:
            return int(cuda.max_memory_allocated(self.device))
        return max(self._peak_rss, self._proc.memory_info().rss)

    def end_request(self) -> tuple[int | None, int | None, int]:
        self._sampling.clear()
        peak_rss = max(self._peak_rss, self._proc.memory_info().rss)
        cuda = self._torch_cuda()
        if cuda:
            return cuda.max_memory_allocated(self.device), cuda.max_memory_reserved(self.device), peak_rss
        return None, None, peak_rss


def _figure(snapshot: msg.MemorySnapshot) -> int:
    """The memory figure that tracks the model: torch allocated on CUDA, else RSS."""
    return snapshot.allocated_bytes if snapshot.allocated_bytes is not None else snapshot.rss_bytes


def _is_out_of_memory(error: BaseException) -> bool:
    if isinstance(error, MemoryError):
        return True
    torch = sys.modules.get("torch")
    oom = getattr(torch, "OutOfMemoryError", None) if torch else None
    return bool(oom and isinstance(error, oom))


def _free_caches() -> None:
    """Give back what the allocators cache, after an out-of-memory error."""
    import gc

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


MIN_RETRY_SEGMENT_CHARS = 20


def _smaller_segments(request):
    """The request with every segment split to at most half of its longest segment, or ``None``
    when segments are already at :data:`MIN_RETRY_SEGMENT_CHARS`."""
    import dataclasses

    from ..inputs.segments import split_text, spoken_chars

    segments = request.segments or (request.text,)
    longest = max(spoken_chars(s) for s in segments)
    limit = max(MIN_RETRY_SEGMENT_CHARS, longest // 2)
    if limit >= longest:
        return None, limit
    smaller = tuple(piece for s in segments for piece in split_text(s, limit))
    return dataclasses.replace(request, segments=smaller), limit


class OutOfMemoryAfterRetry(Exception):
    pass


def _synthesize_with_oom_retry(engine, request, send_chunk, progress, memory, abandoned=None):
    """Run the request, sending its audio chunk by chunk; on out-of-memory free caches and run it
    again once with smaller segments (its chunks marked ``attempt=1``, so the web process drops
    the first attempt's).

    Args:
        send_chunk: ``(attempt, segment, audio, sample_rate_hz)``.
        abandoned: asked between segments (see ``synthesize_segments``).

    Returns:
        ``(SegmentsSummary, segments_used, notes)``.

    Raises:
        OutOfMemoryAfterRetry: the retry ran out of memory too (or could not split further); the
            message gives the peak reached.
    """
    from ..engines.long_text import synthesize_segments

    def chunks_of(attempt):
        return lambda segment, audio, rate: send_chunk(attempt, segment, audio, rate)

    try:
        return (synthesize_segments(engine, request, chunks_of(0), progress, abandoned),
                len(request.segments) or 1, [])
    except BaseException as e:  # noqa: BLE001
        if not _is_out_of_memory(e):
            raise
        first_error = e
    peak = memory.peak_so_far()
    _free_caches()
    smaller, limit = _smaller_segments(request)
    if smaller is None:
        raise OutOfMemoryAfterRetry(
            f"Out of memory while synthesizing (peak {peak / 2**20:,.0f} MiB reached; {first_error}). "
            "The segments are already as short as they go. Use a shorter prompt audio, or restart the "
            "application to free memory held elsewhere.")
    try:
        summary = synthesize_segments(engine, smaller, chunks_of(1), progress, abandoned)
    except BaseException as e:  # noqa: BLE001
        if not _is_out_of_memory(e):
            raise
        peak = max(peak, memory.peak_so_far())
        _free_caches()
        raise OutOfMemoryAfterRetry(
            f"Out of memory while synthesizing (peak {peak / 2**20:,.0f} MiB reached), and again when retried "
            f"with segments of at most {limit} characters. Try a shorter text or prompt audio.") from None
    note = (f"Ran out of memory at first (peak {peak / 2**20:,.0f} MiB); succeeded when retried "
            f"with segments of at most {limit} characters.")
    return summary, len(smaller.segments), [note]


# The signals a terminal, a process manager or a closed session send the whole process group;
# the supervisor alone ends the worker.
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


def worker_main(conn, engine_name: str, device: str, fp16: bool, heartbeat_interval_s: float,
                engine_options: dict | None = None, empty_cache_after_request: bool = False,
                scratch_dir: str | None = None) -> None:
    """Entry point of the worker process.

    Args:
        conn: the worker's end of a duplex ``multiprocessing.Pipe``.
        engine_name: registry name or ``module:Class`` (see :mod:`cosyvoice_ui.engines`).
        device: ``auto|cpu|cuda|cuda:N``.
        fp16: half precision where the engine supports it.
        heartbeat_interval_s: seconds between :class:`~.protocol.Heartbeat` messages.
        engine_options: keyword arguments for the engine class.
        empty_cache_after_request: give the CUDA caching allocator's free blocks back after every
            request (slower next request; the default keeps them for reuse).
        scratch_dir: the folder for every temporary file of this process (``tempfile`` and
            ``TMPDIR``); the supervisor removes it once the process is gone, however it ended.

    The process exits when told to (:class:`~.protocol.Shutdown`), when the pipe closes (the
    web process is gone), or after sending :class:`~.protocol.LoadFailed`.
    """
    if scratch_dir:
        os.environ["TMPDIR"] = scratch_dir  # also for libraries and subprocesses that read it
        tempfile.tempdir = scratch_dir
    # A spawned process starts without the app's logging: the worker's warnings came out as bare
    # messages, no time, level or logger (helper-128).
    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)
    _configure_allocator()
    # Ctrl-C in a terminal, SIGTERM sent to the process group (systemd, docker, timeout) and
    # SIGHUP from a closed terminal reach the worker too; the supervisor decides when it stops, so
    # the running request can finish during a drain. The supervisor ends it with a Shutdown
    # message or SIGKILL, and a closed pipe (web process gone) ends it as well.
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # blocked by the supervisor while this process started
    pid = os.getpid()
    send_lock = threading.Lock()
    busy: list[str | None] = [None]
    stop = threading.Event()

    def send(message) -> None:
        with send_lock:
            try:
                conn.send(message)
            except (BrokenPipeError, ConnectionResetError):
                # The web process is gone (SIGKILLed): no one to answer. Raised out of a request,
                # this printed a 20-line traceback before the worker ended (helper-127).
                os._exit(0)

    memory = _Memory()

    def heartbeat() -> None:
        while not stop.is_set():
            try:
                send(msg.Heartbeat(pid=pid, busy_request_id=busy[0], memory=memory.snapshot()))
            except (OSError, EOFError, ValueError):
                os._exit(0)  # the web process is gone: nobody needs this worker any more
            stop.wait(heartbeat_interval_s)

    threading.Thread(target=heartbeat, name="heartbeat", daemon=True).start()

    from ..engines import resolve_engine_class

    t0 = time.perf_counter()
    try:
        resolved = resolve_device(device)
        memory.device = resolved
        engine = resolve_engine_class(engine_name)(**(engine_options or {}))
        facts = engine.load(resolved, fp16)
    except BaseException as e:  # noqa: BLE001 - everything must be reported, then exit
        send(msg.LoadFailed(pid=pid, error=f"{type(e).__name__}: {e}"))
        stop.set()
        conn.close()
        return
    send(msg.Ready(pid=pid, load_s=time.perf_counter() - t0, facts=facts, memory=memory.snapshot()))

    # Commands are read by their own thread, so that an Abandon reaches a running request (the
    # main thread is inside the engine until the request ends).
    commands: queue.Queue = queue.Queue()
    abandoned_ids: set[str] = set()

    def read_commands() -> None:
        while True:
            try:
                command = conn.recv()
            except (EOFError, OSError):
                commands.put(None)
                return
            if isinstance(command, msg.Abandon):
                abandoned_ids.add(command.request_id)
            else:
                commands.put(command)

    threading.Thread(target=read_commands, name="commands", daemon=True).start()

    while True:
        command = commands.get()
        if command is None:  # the pipe closed: the web process is gone
            break
        if isinstance(command, msg.Shutdown):
            break
        if isinstance(command, msg.FreeCache):
            before = memory.snapshot()
            _free_caches()
            after = memory.snapshot()
            send(msg.CacheFreed(pid=pid, reserved_before_bytes=before.reserved_bytes,
                                reserved_after_bytes=after.reserved_bytes, allocated_bytes=after.allocated_bytes,
                                rss_before_bytes=before.rss_bytes, rss_after_bytes=after.rss_bytes))
            continue
        if not isinstance(command, msg.Synthesize):
            continue
        busy[0] = command.request_id
        abandoned_ids.intersection_update({command.request_id})  # drop late Abandons of earlier requests
        before = memory.snapshot()
        memory.start_request()
        t_start = time.perf_counter()
        try:
            def progress(done: int, total: int, request_id: str = command.request_id) -> None:
                send(msg.Progress(request_id=request_id, done=done, total=total))

            def send_chunk(attempt, segment, audio, rate, request_id: str = command.request_id) -> None:
                send(msg.AudioChunk(request_id=request_id, segment=segment, audio=audio,
                                    sample_rate_hz=rate, attempt=attempt))

            summary, segments_used, retry_notes = _synthesize_with_oom_retry(
                engine, command.request, send_chunk, progress, memory,
                abandoned=lambda request_id=command.request_id: request_id in abandoned_ids)
            synthesis_s = time.perf_counter() - t_start
            peak_alloc, peak_reserved, peak_rss = memory.end_request()
            if retry_notes:
                # The retry's blocks were sized near what the card had free; left in the caching
                # allocator, NVML shows them held by the worker to everyone else on the GPU (an H200
                # run kept 81 GiB after such a request: tests/gpu/test_cuda_worker.py).
                _free_caches()
            output = SynthesisOutput(audio=np.zeros(0, dtype=np.float32), sample_rate_hz=summary.sample_rate_hz,
                                     notes=summary.notes + retry_notes, details=summary.details)
            audio_s = summary.samples / summary.sample_rate_hz if summary.sample_rate_hz else 0.0
            stats = msg.RequestStats(
                synthesis_s=synthesis_s, audio_s=audio_s,
                real_time_factor=synthesis_s / audio_s if audio_s > 0 else float("inf"),
                peak_allocated_bytes=peak_alloc, peak_reserved_bytes=peak_reserved,
                peak_rss_bytes=peak_rss, pid=pid, device=memory.device,
                segments=segments_used,
                memory_before_bytes=_figure(before),
                memory_after_bytes=_figure(memory.snapshot()),
            )
            reply = msg.Done(request_id=command.request_id, output=output, stats=stats)
        except RequestAbandoned as e:
            memory.end_request()
            reply = msg.Failed(request_id=command.request_id, kind="abandoned", message=str(e))
        except ValueError as e:
            memory.end_request()
            reply = msg.Failed(request_id=command.request_id, kind="invalid", message=str(e),
                               about_prompt_audio=isinstance(e, PromptAudioRefused))
        except OutOfMemoryAfterRetry as e:
            memory.end_request()
            reply = msg.Failed(request_id=command.request_id, kind="out_of_memory", message=str(e))
        except BadAudioOutput as e:
            memory.end_request()
            reply = msg.Failed(request_id=command.request_id, kind="bad_output", message=str(e))
        except BaseException as e:  # noqa: BLE001 - a request must never take the worker down
            memory.end_request()
            if _is_out_of_memory(e):
                _free_caches()
                reply = msg.Failed(request_id=command.request_id, kind="out_of_memory",
                                   message=f"Out of memory while synthesizing: {e}")
            else:
                traceback.print_exc()
                reply = msg.Failed(request_id=command.request_id, kind="error", message=f"{type(e).__name__}: {e}")
        if empty_cache_after_request:
            _free_caches()
        busy[0] = None
        try:
            send(reply)
        except (OSError, EOFError):
            break
    stop.set()
