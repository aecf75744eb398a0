"""Event handlers: validate with :mod:`cosyvoice_ui.inputs`, call the supervisor, format.

Their parameter names are the public API (``gradio_client`` calls them by name), so they are
kept stable: ``/synthesize(text, prompt_audio, prompt_text, instruction, speed, seed)``,
``/restart()``, ``/status()``.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging

import gradio as gr
import numpy as np

from ..engines.base import Capabilities
from ..errors import SynthesisFailed, UserFacingError
from ..inputs.request import build_request
from ..monitor.admission import Admission, AdmissionError
from ..monitor.sampler import MemoryMonitor
from ..settings import Settings
from ..worker.supervisor import Supervisor, report_to_dict
from . import formatting

log = logging.getLogger(__name__)


class Handlers:
    def __init__(self, settings: Settings, supervisor: Supervisor, monitor: MemoryMonitor,
                 capabilities: Capabilities, admission: Admission | None = None) -> None:
        self.settings = settings
        self.admission = admission
        self.supervisor = supervisor
        self.monitor = monitor
        self.capabilities = capabilities

    def synthesize(self, text: str, prompt_audio: str | None = None, prompt_text: str | None = None,
                   instruction: str | None = None, speed: float | None = None, seed: int | None = None,
                   progress=gr.Progress()):
        """Speak ``text`` in the voice of ``prompt_audio``.

        Returns:
            ``((sample_rate_hz, int16 samples), stats)`` - Gradio writes the audio as WAV.
            stats: sample_rate_hz, audio_s, synthesis_s, real_time_factor, peak_memory_bytes
            (torch peak allocated on CUDA, else peak worker RSS), worker_pid, device, notes, ...

        Raises:
            gr.Error: with the validation or synthesis message (the page and worker keep running).
        """
        try:
            request, notes = build_request(
                text, prompt_audio, prompt_text, instruction, speed, seed,
                max_text_chars=self.settings.max_text_chars, capabilities=self.capabilities,
                max_segment_chars=self.settings.max_segment_chars)
            predicted = None
            if self.admission is not None:
                decision = self.admission.check(request.segments or (request.text,))
                predicted = decision.predicted_peak_bytes
                if decision.resplit_to_chars:
                    request = dataclasses.replace(request, segments=decision.segments)
                    notes.append(f"Split into segments of at most {decision.resplit_to_chars} characters so the "
                                 f"request fits in free memory (about {predicted / 2**20:,.0f} MiB needed, "
                                 f"{decision.available_bytes / 2**20:,.0f} MiB available).")
            # Gradio's progress only works from the handler's own thread, so the supervisor's
            # callback records the count and this thread reports it while it waits.
            segments_done = [0, len(request.segments) or 1]

            def on_progress(done: int, total: int) -> None:
                segments_done[:] = [done, total]

            future = self.supervisor.submit(request, on_progress=on_progress, predicted_peak_bytes=predicted)
            shown = None
            while True:
                if segments_done[1] > 1 and tuple(segments_done) != shown:
                    shown = tuple(segments_done)
                    progress(shown, desc="segments", unit="segment")
                try:
                    output, stats = future.result(timeout=0.25)
                    break
                except concurrent.futures.TimeoutError:
                    continue
        except (UserFacingError, AdmissionError) as e:
            if not isinstance(e, SynthesisFailed):  # refused before the worker: leave a trace too
                outcome = {"BusyError": "refused:busy", "AdmissionError": "refused:memory",
                           "InputError": "refused:input"}.get(type(e).__name__, "refused")
                self.supervisor.ledger.add_event(self.supervisor.engine, "", outcome, str(e), text_chars=len(text or ""))
            raise gr.Error(str(e), print_exception=False) from None
        notes = notes + list(output.notes)
        peak = stats.peak_allocated_bytes if stats.peak_allocated_bytes is not None else stats.peak_rss_bytes
        result = {
            "sample_rate_hz": output.sample_rate_hz,
            "audio_s": round(stats.audio_s, 3),
            "synthesis_s": round(stats.synthesis_s, 3),
            "real_time_factor": round(stats.real_time_factor, 4),
            "peak_memory_bytes": peak,
            "peak_memory_kind": "torch peak allocated" if stats.peak_allocated_bytes is not None else "worker peak RSS",
            "peak_allocated_bytes": stats.peak_allocated_bytes,
            "peak_reserved_bytes": stats.peak_reserved_bytes,
            "peak_rss_bytes": stats.peak_rss_bytes,
            "predicted_extra_bytes": predicted,
            "worker_pid": stats.pid,
            "device": stats.device,
            "engine": self.supervisor.engine,
            "text_chars": len(request.text),
            "segments": stats.segments,
            "prompt_s": round(len(request.prompt.samples) / request.prompt.sample_rate_hz, 3) if request.prompt else None,
            "notes": notes,
            "details": output.details,
        }
        audio = np.clip(output.audio, -1.0, 1.0)
        return (output.sample_rate_hz, (audio * 32767.0).astype(np.int16)), result

    def restart(self):
        """Replace the worker process. Returns the restart report as a dict (JSON)."""
        try:
            report = self.supervisor.restart(reason="user")
        except UserFacingError as e:
            raise gr.Error(str(e), print_exception=False) from None
        out = report_to_dict(report)
        out["old_pid_gpu_bytes"] = self._gpu_bytes_of(report.old_pid)
        return out

    def restart_ui(self):
        report = self.restart()
        return formatting.restart_markdown(report, report.get("old_pid_gpu_bytes"))

    def free_cache(self) -> dict:
        """Ask the worker to empty its allocator caches; returns reserved/RSS before and after."""
        try:
            return self.supervisor.free_cache()
        except UserFacingError as e:
            raise gr.Error(str(e), print_exception=False) from None

    def free_cache_ui(self) -> str:
        return formatting.free_cache_markdown(self.free_cache())

    def status(self) -> dict:
        """Supervisor status plus the latest monitor sample (GPU figures or why there are none)."""
        status = self.supervisor.status()
        sample = self.monitor.latest()
        status["nvml_error"] = self.monitor.nvml_error
        if sample is not None:
            status["gpus"] = [
                {"index": g.index, "name": g.name, "used_bytes": g.used_bytes, "total_bytes": g.total_bytes,
                 "utilization_gpu_pct": g.utilization_gpu_pct} for g in sample.gpus]
            status["worker_gpu_bytes"] = sample.worker_gpu_bytes
            status["worker_rss_bytes"] = sample.worker_rss_bytes
            status["web_rss_bytes"] = sample.web_rss_bytes
        return status

    def refresh_monitor(self):
        """Timer tick: the panel text and the plot. Reads buffers only; never waits on synthesis."""
        status = self.supervisor.status()
        sample = self.monitor.latest()
        return (formatting.status_markdown(status, sample, self.monitor.nvml_error),
                formatting.memory_frame(self.monitor.history()),
                formatting.ledger_frame(self.supervisor.ledger.records()))

    def _gpu_bytes_of(self, pid: int | None) -> int | None:
        if pid is None or not self.monitor.nvml.available:
            return None
        return sum((g.process_used_bytes.get(pid) or 0) for g in self.monitor.nvml.read())
