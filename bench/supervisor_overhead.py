"""What the web app adds to a request: end-to-end API latency / direct in-process engine call.

Starts the app (``RunningApp("--device", "cpu")``: embedded engine on ONNX Runtime) and loads the
same engine in this process. Then, interleaved, ``--runs`` times each:

- **API**: ``gradio_client.Client(url).predict(text=..., prompt_audio=handle_file(prompt),
  api_name="/synthesize")`` - upload, prompt decoding and checks, admission, the supervisor's
  queue and pipe, the worker, WAV encoding, download;
- **direct**: ``EmbeddedEngine.synthesize`` on the same text and the same (already decoded) prompt.

Text: ``--chars`` characters (100 gives about 5 s of audio, one segment). Piper's durations are
random, so besides the latency ratio the ratio of seconds per second of audio is printed too.
Goal: API / direct <= 1.05 (medians).

The worker runs with ``supervisor.WORKER_ENVIRONMENT`` (a fixed glibc mmap threshold), which by
itself makes synthesis slower (more page faults); ``--worker-malloc`` applies the same setting to
this process with ``mallopt``, so that the ratio shows only what the supervisor, pipe and HTTP add.

    .venv/bin/python bench/supervisor_overhead.py [--runs 5] [--chars 100] [--no-prompt] [--worker-malloc]
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gradio_client import Client, handle_file  # noqa: E402

from bench.common import DEFAULT_PROMPT, RunningApp, load_prompt, machine, median, met, result, table  # noqa: E402
from bench.texts import text_of_length  # noqa: E402
from cosyvoice_ui.engines.base import SynthesisRequest  # noqa: E402
from cosyvoice_ui.engines.embedded.engine import EmbeddedEngine  # noqa: E402
from cosyvoice_ui.worker.supervisor import WORKER_ENVIRONMENT  # noqa: E402

GOAL = 1.05
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter that MALLOC_MMAP_THRESHOLD_ sets


def worker_malloc() -> str:
    """Give this process the worker's malloc setting (only the mmap threshold is known here)."""
    value = WORKER_ENVIRONMENT.get("MALLOC_MMAP_THRESHOLD_")
    if value is None:
        return "none"
    ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, int(value))
    return f"mmap threshold {value}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--chars", type=int, default=100)
    ap.add_argument("--prompt", type=Path, default=DEFAULT_PROMPT)
    ap.add_argument("--no-prompt", action="store_true", help="no prompt audio (Piper's own voice) in both")
    ap.add_argument("--worker-malloc", action="store_true",
                    help="direct calls with the worker's malloc setting (WORKER_ENVIRONMENT)")
    args = ap.parse_args()
    malloc = worker_malloc() if args.worker_malloc else "glibc default"
    text = text_of_length(args.chars)
    prompt = None if args.no_prompt else load_prompt(args.prompt)
    engine = EmbeddedEngine()
    engine.load("cpu", False)
    app = RunningApp("--device", "cpu")
    try:
        app.wait_healthy(300)
        client = Client(app.url, verbose=False)
        kwargs = {} if args.no_prompt else {"prompt_audio": handle_file(str(args.prompt))}

        def via_api() -> tuple[float, float, float]:
            t0 = time.perf_counter()
            _, stats = client.predict(text=text, api_name="/synthesize", **kwargs)
            return time.perf_counter() - t0, stats["audio_s"], stats["synthesis_s"]

        def direct() -> tuple[float, float, float]:
            t0 = time.perf_counter()
            out = engine.synthesize(SynthesisRequest(text=text, prompt=prompt))
            seconds = time.perf_counter() - t0
            return seconds, len(out.audio) / out.sample_rate_hz, seconds

        via_api(), direct()  # warm-up: first upload, profile caches on both sides
        api, dir_ = [], []
        for _ in range(args.runs):
            api.append(via_api())
            dir_.append(direct())
    finally:
        app.stop()

    def row(name, runs):
        return [name, f"{median(r[0] for r in runs):.3f}", f"{median(r[2] for r in runs):.3f}",
                f"{median(r[1] for r in runs):.2f}", f"{median(r[0] / r[1] for r in runs):.3f}"]

    ratio = median(r[0] for r in api) / median(r[0] for r in dir_)
    per_audio = median(r[0] / r[1] for r in api) / median(r[0] / r[1] for r in dir_)
    print(f"{args.chars}-character text, {'no prompt' if args.no_prompt else 'prompt ' + args.prompt.name}, "
          f"median of {args.runs} interleaved runs each, CPU; direct calls with malloc: {malloc}\n\n{machine()}\n")
    print(table(["path", "latency s", "engine/worker synthesis s", "audio s", "s per audio s"],
                [row("API (/synthesize via gradio_client)", api), row("direct EmbeddedEngine.synthesize", dir_)]))
    print(f"\nlatency API / direct: {ratio:.3f}; per second of audio: {per_audio:.3f}; "
          f"added: {median(r[0] for r in api) - median(r[0] for r in dir_):+.3f} s "
          f"(of which outside the worker's synthesis: {median(r[0] - r[2] for r in api):.3f} s)")
    result(f"API / direct latency {ratio:.2f} (per audio second {per_audio:.2f}), goal <= {GOAL}: {met(ratio <= GOAL)}")


if __name__ == "__main__":
    main()
