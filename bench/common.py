"""Helpers shared by the benchmark scripts: a real prompt, Markdown tables, the machine, the app.

Every script prints its tables and ends with one ``**Result:** ...`` line (the headline figure and
its goal), which ``bench/summary.py`` collects. Goals are printed, never asserted: these machines
are shared, so only ratios against a baseline measured in the same run mean anything.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import sys
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import PROMPTS_DIR, RunningApp, free_port  # noqa: E402,F401

DEFAULT_PROMPT = PROMPTS_DIR / "f5_basic_ref_en.wav"
MIB = 2**20


def load_prompt(path: Path = DEFAULT_PROMPT):
    """The prompt as the web process hands it to the worker (decoded, 24 kHz, trimmed)."""
    from cosyvoice_ui.engines.base import PromptSamples
    from cosyvoice_ui.inputs.prompt_audio import load_prompt_audio

    audio = load_prompt_audio(str(path))
    return PromptSamples(samples=audio.samples, sample_rate_hz=audio.sample_rate_hz, sha1=audio.sha1)


def median(values) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def table(headers: list[str], rows: list[list], right: set[int] | None = None) -> str:
    """A Markdown table; columns in ``right`` (default: all but the first) are right-aligned."""
    right = set(range(1, len(headers))) if right is None else right
    lines = ["| " + " | ".join(headers) + " |",
             "| " + " | ".join("---:" if i in right else "---" for i in range(len(headers))) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def result(text: str) -> None:
    """The headline line that bench/summary.py copies into the READMEs."""
    print(f"\n**Result:** {text}")


def met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def machine() -> str:
    """CPU model, cores, RAM, GPU (from NVML, if any), Python and date, in one line."""
    model = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from cosyvoice_ui.monitor.nvml import NvmlReader

    nvml = NvmlReader()
    gpus = ", ".join(f"{g.name} ({g.total_bytes / 2**30:.0f} GiB)" for g in nvml.read()) or "no GPU"
    nvml.close()
    return (f"{model}, {psutil.cpu_count(logical=True)} cores, {psutil.virtual_memory().total / 2**30:.1f} GiB RAM, "
            f"{gpus}, Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f} at "
            f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}")


def healthz(url: str, timeout_s: float = 5.0) -> dict | None:
    """The app's ``/healthz`` JSON, or ``None`` when it is not up or answers 503."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/healthz", timeout=timeout_s) as r:
            return json.loads(r.read())
    except Exception:  # not listening yet, or 503 while loading/restarting
        return None


def wait_until(predicate, timeout_s: float, interval_s: float = 0.05):
    """Poll ``predicate`` until it returns something truthy; that value, or ``None`` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    return None
