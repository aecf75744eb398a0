"""Turning status, samples and results into what the page shows (no Gradio events here)."""

from __future__ import annotations

import datetime
import time

import pandas as pd

from ..duration_text import duration_text
from ..monitor.sampler import Sample

MIB = 2**20


def mib(value: int | None) -> str:
    """Bytes as MiB text, or "n/a"."""
    return "n/a" if value is None else f"{value / MIB:,.0f} MiB"


# One colour per series name that memory_frame() writes (Tableau 10).
SERIES_COLORS = {
    "web process RSS": "#4c78a8", "worker RSS": "#f58518", "worker torch allocated": "#e45756",
    "worker torch reserved": "#72b7b2", "worker GPU (NVML)": "#54a24b",
    **{f"GPU {i} used": color for i, color in enumerate(["#b279a2", "#ff9da6", "#9d755d", "#bab0ac", "#eeca3b",
                                                         "#7f7f7f", "#17becf", "#bcbd22"])},
}


def memory_frame(samples: list[Sample]) -> pd.DataFrame:
    """Long-format frame for ``gr.LinePlot``: columns ``time`` (datetime in UTC), ``MiB``, ``series``.

    Series: device memory used per GPU and the worker's NVML share when NVML works; the worker's
    RSS and torch allocated/reserved; the web process's RSS.

    Times are UTC-aware: Gradio sends a datetime column as epoch milliseconds (pandas ``to_json``),
    which reads a naive datetime as UTC, so the server's local times put the plot off by the
    server's UTC offset (8 h on a server in Asia/Shanghai). The browser shows them in its own zone.
    """
    rows = []
    for s in samples:
        t = datetime.datetime.fromtimestamp(s.time_s, tz=datetime.timezone.utc)
        for g in s.gpus:
            rows.append((t, g.used_bytes / MIB, f"GPU {g.index} used"))
        if s.worker_gpu_bytes is not None:
            rows.append((t, s.worker_gpu_bytes / MIB, "worker GPU (NVML)"))
        if s.worker_allocated_bytes is not None:
            rows.append((t, s.worker_allocated_bytes / MIB, "worker torch allocated"))
        if s.worker_reserved_bytes is not None:
            rows.append((t, s.worker_reserved_bytes / MIB, "worker torch reserved"))
        if s.worker_rss_bytes is not None:
            rows.append((t, s.worker_rss_bytes / MIB, "worker RSS"))
        rows.append((t, s.web_rss_bytes / MIB, "web process RSS"))
    return pd.DataFrame(rows, columns=["time", "MiB", "series"])


LEDGER_COLUMNS = ["time", "outcome", "chars", "segments", "prompt s", "audio s", "RTF", "peak MiB", "pid"]


def server_zone(now_s: float | None = None) -> str:
    """The server's UTC offset now, as "UTC+08:00" (or "UTC" at offset 0)."""
    offset = datetime.datetime.fromtimestamp(time.time() if now_s is None else now_s).astimezone().utcoffset()
    minutes = round(offset.total_seconds() / 60) if offset else 0
    if minutes == 0:
        return "UTC"
    sign = "+" if minutes > 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def ledger_frame(records: list, limit: int = 50) -> pd.DataFrame:
    """The ledger as a table, latest first. Peak is torch peak allocated on CUDA, else peak RSS.

    Times are the server's clock (with the date for records of another day), and the time column
    names its zone ("time (server, UTC+08:00)"):
    the memory plot beside it shows the browser's zone, which may differ (helper-49's browser in
    Asia/Shanghai saw the two 8 h apart with neither labelled).
    """
    rows = []
    today = datetime.date.today()
    for r in reversed(records[-limit:]):
        peak = r.peak_allocated_bytes if r.peak_allocated_bytes is not None else r.peak_rss_bytes
        at = datetime.datetime.fromtimestamp(r.time_s)
        # Records read back from --ledger at start may be days old: they carry their date (helper-114).
        shown = at.strftime("%H:%M:%S" if at.date() == today else "%Y-%m-%d %H:%M:%S")
        rows.append([shown, r.outcome, r.text_chars,
                     r.segments, r.prompt_s if r.prompt_s is not None else "", r.audio_s if r.audio_s is not None else "",
                     r.real_time_factor if r.real_time_factor is not None else "",
                     round(peak / MIB, 1) if peak is not None else "", r.worker_pid or ""])
    columns = [f"time (server, {server_zone()})", *LEDGER_COLUMNS[1:]]
    return pd.DataFrame(rows, columns=columns)


def status_markdown(status: dict, sample: Sample | None, nvml_error: str | None) -> str:
    """The monitor panel's text. Contains no user-supplied text, so Markdown is safe here."""
    state = "loading model" if status["state"] == "loading" else status["state"]
    if state == "restarting" and status.get("in_flight"):
        # "restarting" for the 28 s a restart waited on another tab's request read as if that
        # request were lost (helper-62); /healthz keeps the state as it is.
        state = "restarting once the running request finishes (it is still being made)"
    lines = [f"**Worker:** {state} · pid {status.get('pid') or '-'} · engine `{status['engine']}` · "
             f"device `{status.get('device')}` · dtype `{status.get('dtype') or '-'}`",
             f"**Queue:** {status['queue_depth']} waiting (limit {status['max_queue']}) · "
             f"restarts {status['restarts']} · runs ended {status['completed']} "
             # "completed N" counted abandoned and failed runs as if each had made audio (helper-78).
             f"({status.get('completed_with_audio', 0)} with audio)"]
    if sample is not None and sample.gpus:
        for g in sample.gpus:
            util = f"{g.utilization_gpu_pct}%" if g.utilization_gpu_pct is not None else "n/a"
            lines.append(f"**GPU {g.index}** {g.name}: {mib(g.used_bytes)} / {mib(g.total_bytes)} used · "
                         f"utilization {util}")
        lines.append(f"**Worker GPU memory (NVML):** {mib(sample.worker_gpu_bytes)}")
    else:
        lines.append(f"**GPU:** not available ({nvml_error or 'no NVIDIA GPU'}); showing host memory instead.")
    mem = status.get("memory") or {}
    if mem.get("allocated_bytes") is not None:
        lines.append(f"**torch:** allocated {mib(mem['allocated_bytes'])} · reserved {mib(mem.get('reserved_bytes'))}")
    if sample is not None:
        lines.append(f"**Worker RSS:** {mib(sample.worker_rss_bytes)} · **web process RSS:** {mib(sample.web_rss_bytes)}")
    if status.get("leak"):
        lines.append(f"⚠️ **Memory leak suspected:** {status['leak']['message']}")
    elif status.get("last_leak"):
        lines.append(f"⚠️ **A previous worker was suspected of leaking:** {status['last_leak']}")
    if status.get("last_outcome") == "out_of_memory":
        lines.append("⚠️ **The last request ran out of memory.**")
    if status.get("ledger_error"):  # the path stays in the log and /healthz: the page may be public
        lines.append(f"⚠️ **The ledger file cannot be written:** {status['ledger_write_errors']} record(s) "
                     "not saved to it (see the log).")
    if status.get("last_error") and status["state"] not in ("ready", "busy"):
        lines.append(f"**Last error:** {status['last_error']}")
    if status.get("next_load_retry_s") is not None:
        lines.append(f"The model is loaded again in {duration_text(status['next_load_retry_s'])} "
                     "(--retry-failed-load-after), or at once with Restart.")
    return "  \n".join(lines)


def free_cache_markdown(report: dict) -> str:
    """Summary of a free-cache action."""
    if report.get("state") == "unloaded":
        return "No model is loaded (unloaded after idle time): nothing to free."
    parts = []
    if report.get("replaced_pid"):
        parts.append(f"Worker {report['replaced_pid']} was replaced before its caches could be freed (see "
                     f"restarts in the panel); the new worker started with empty caches.")
    parts.append(f"Freed caches in worker {report['pid']}:")
    if report.get("reserved_before_bytes") is not None:
        parts.append(f"torch reserved {mib(report['reserved_before_bytes'])} → {mib(report['reserved_after_bytes'])}"
                     f" (allocated {mib(report['allocated_bytes'])});")
    parts.append(f"RSS {mib(report['rss_before_bytes'])} → {mib(report['rss_after_bytes'])}.")
    return " ".join(parts)


def free_cache_pending_markdown(request_running: bool) -> str:
    """What a Free cache press is waiting for, shown until its report replaces it."""
    if request_running:
        return "Freeing cached memory: waiting for the running request to finish …"
    return "Freeing cached memory …"


def restart_pending_markdown(request_running: bool, restart_grace_s: float) -> str:
    """What a Restart press is waiting for, shown until its report replaces it."""
    if request_running:
        return (f"Restarting: waiting for the running request to finish (at most {restart_grace_s:g} s, "
                "--restart-grace), then loading the model again …")
    return "Restarting: loading the model again …"


def _failed_loads(errors: list[str]) -> str:
    tries = "One new worker" if len(errors) == 1 else f"{len(errors)} new workers"
    return (f"{tries} failed to load first ({'; '.join(dict.fromkeys(errors))}); try {len(errors) + 1} loaded. "
            "If this repeats, see the server log.")


def restart_markdown(report: dict, old_pid_gpu_bytes: int | None) -> str:
    """Summary of a restart: duration, pids, memory before/after."""
    before = report.get("memory_before") or {}
    after = report.get("memory_after") or {}
    if report.get("error"):
        return f"Restart failed after {report['duration_s']:.2f} s: {report['error']}"
    waited_s = (report.get("since_press_s") or 0.0) - report["duration_s"]
    # Without a running request the gap is the old worker's end (1.3 s on a loaded machine was
    # reported as "waited for the running request" in a user run of the seventh session).
    waited = ("" if waited_s < 1.0 else
              f"; {report['since_press_s']:.2f} s after the press, which waited for the running request"
              if report.get("waited_for_request", True) else
              f"; {report['since_press_s']:.2f} s after the press, with the old worker's end")
    if report.get("rerun_request_id"):
        waited = (f"; {report['since_press_s']:.2f} s after the press, which waited its grace (--restart-grace) for the "
                  f"running request" if waited_s >= 1.0 else "")
    if report.get("old_pid") is None:  # the model was unloaded (idle): loaded, nothing replaced ("pid None → 123")
        return (f"Loaded the model in **{report['duration_s']:.2f} s** (it had been unloaded after idle time): "
                f"worker pid {report['new_pid']}. Worker RSS {mib(after.get('rss_bytes'))}.")
    parts = [f"Restarted in **{report['duration_s']:.2f} s** (until the model was loaded{waited}): "
             f"pid {report['old_pid']} → {report['new_pid']}.",
             *([f"The running request did not finish within the grace, so it was stopped; it runs again from "
                f"the start on the new worker (request {report['rerun_request_id']})."]
               if report.get("rerun_request_id") else []),
             *([_failed_loads(report["failed_load_attempts"])] if report.get("failed_load_attempts") else []),
             f"Worker RSS before {mib(before.get('rss_bytes'))}, after {mib(after.get('rss_bytes'))}."
             if before else f"Worker RSS {mib(after.get('rss_bytes'))} (the old worker had already ended)."]
    if before.get("allocated_bytes") is not None or after.get("allocated_bytes") is not None:
        parts.append(f"torch reserved before {mib(before.get('reserved_bytes'))}, after {mib(after.get('reserved_bytes'))}.")
    if old_pid_gpu_bytes is not None:
        parts.append(f"Old worker's GPU memory now (NVML): {mib(old_pid_gpu_bytes)}.")
    return " ".join(parts)
