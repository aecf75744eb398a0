"""Soak: 2 clients send requests through gradio_client for a bounded time; is memory flat?

Starts the app (embedded engine, CPU unless --device), writes its ledger to a temporary file,
and compares the worker's memory after each request (torch allocated on CUDA, else RSS) over the
first ten and the last ten requests of the same worker. Goal: growth under 2 %.

The web process's RSS (``/healthz`` ``web_rss_bytes``, psutil) is sampled every 30 s and printed
at 5 minutes (after warm-up: Gradio's caches, the first uploads) and at the end, with its growth
per hour between them. It is printed, not judged: Python's allocator keeps freed arenas, so
growth that levels off is not a leak; a steady climb per hour is.

    .venv/bin/python bench/soak.py --minutes 60 [--clients 2] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import random
import urllib.request
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gradio_client import Client, handle_file  # noqa: E402

from bench.texts import text_of_length  # noqa: E402
from tests.conftest import RunningApp, prompt_files  # noqa: E402

INSTRUCTIONS = ["", "happy", "用悲伤的语气", "whisper", "fast", "calm"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--evaluate", metavar="LEDGER", help="only evaluate an existing --ledger file")
    args = ap.parse_args()
    if args.evaluate:
        return evaluate(Path(args.evaluate))
    ledger = Path(tempfile.mkdtemp()) / "ledger.jsonl"
    app = RunningApp("--ledger", str(ledger), "--device", args.device)
    prompts = prompt_files()
    errors: list[str] = []
    done = [0]
    stop_at = time.monotonic() + args.minutes * 60

    def client_loop(seed: int) -> None:
        rng = random.Random(seed)
        client = Client(app.url, verbose=False)
        while time.monotonic() < stop_at:
            try:
                client.predict(text=text_of_length(rng.choice([40, 80, 150, 200, 400])),
                               prompt_audio=handle_file(str(rng.choice(prompts))),
                               instruction=rng.choice(INSTRUCTIONS), api_name="/synthesize")
                done[0] += 1
            except Exception as e:  # counted, not fatal: the soak is about memory
                errors.append(str(e)[:200])
                time.sleep(1)

    web_rss: list[tuple[float, int]] = []  # (seconds since start, bytes)

    def sample_web_rss() -> None:
        t0 = time.monotonic()
        while time.monotonic() < stop_at:
            try:
                with urllib.request.urlopen(app.url + "healthz", timeout=10) as r:
                    web_rss.append((time.monotonic() - t0, json.load(r)["web_rss_bytes"]))
            except Exception:  # noqa: BLE001 - a 503 during a restart: skip the sample
                pass
            time.sleep(30)

    try:
        app.wait_healthy()
        threads = [threading.Thread(target=client_loop, args=(i,)) for i in range(args.clients)]
        threads.append(threading.Thread(target=sample_web_rss, daemon=True))
        for t in threads:
            t.start()
        for t in threads[:-1]:
            t.join(timeout=args.minutes * 60 + 600)
    finally:
        app.stop()
    print(f"{args.minutes:g} min, {args.clients} clients: {done[0]} requests ok, {len(errors)} errors")
    for e in errors[:5]:
        print("error:", e)
    report_web_rss(web_rss)
    return evaluate(ledger)


def report_web_rss(samples: list[tuple[float, int]]) -> None:
    if len(samples) < 2:
        print("web process RSS: too few samples")
        return
    warm = next((s for s in samples if s[0] >= 300), samples[len(samples) // 2])
    first, last = samples[0], samples[-1]
    per_hour = (last[1] - warm[1]) / max(last[0] - warm[0], 1) * 3600
    print(f"web process RSS: {first[1] / 2**20:,.0f} MiB at start, {warm[1] / 2**20:,.0f} MiB at "
          f"{warm[0] / 60:.0f} min, {last[1] / 2**20:,.0f} MiB at {last[0] / 60:.0f} min "
          f"({per_hour / 2**20:+,.1f} MiB per hour after warm-up; max {max(s[1] for s in samples) / 2**20:,.0f} MiB)")


def evaluate(ledger: Path) -> int:
    """Memory after each request of the busiest worker, read as the memory before the next one
    (the very first record is before any request, while the model is still cold, so it is not an
    after-request figure). Compares the first ten with the last ten."""
    records = [json.loads(line) for line in ledger.read_text().splitlines()]
    ok = [r for r in records if r["outcome"] == "ok" and r["memory_before_bytes"]]
    pids = {r["worker_pid"] for r in ok}
    pid = max(pids, key=lambda p: sum(1 for r in ok if r["worker_pid"] == p))
    series = [r["memory_before_bytes"] for r in ok if r["worker_pid"] == pid][1:]
    first, last = statistics.mean(series[:10]), statistics.mean(series[-10:])
    growth = (last - first) / first
    others = sorted({r["outcome"] for r in records if r["outcome"] != "ok"})
    print(f"{len(records)} ledger records, {len(pids)} worker pid(s), other outcomes: {others or 'none'}")
    print(f"worker {pid} memory after requests: first ten {first / 2**20:,.1f} MiB, last ten {last / 2**20:,.1f} MiB, "
          f"growth {growth:+.2%} (goal < 2 %) over {len(series)} requests")
    return 0 if growth < 0.02 else 1


if __name__ == "__main__":
    sys.exit(main())
