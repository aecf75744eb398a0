"""Load: N clients (1, 2, 4, 8) send requests through gradio_client for a bounded time each.

Prints throughput, p50/p95 latency, requests refused as busy, and other errors per client count,
with the queue settings used, and each row's throughput over the first row's (same run).

    .venv/bin/python bench/load.py [--seconds 30] [--clients 1,2,4,8] [--max-queue 16]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gradio_client import Client, handle_file  # noqa: E402

from bench.texts import text_of_length  # noqa: E402
from tests.conftest import PROMPTS_DIR, RunningApp  # noqa: E402


def run(url: str, clients: int, seconds: float) -> dict:
    latencies: list[float] = []
    busy = [0]
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds
    prompt = handle_file(str(PROMPTS_DIR / "f5_basic_ref_en.wav"))

    def loop() -> None:
        client = Client(url, verbose=False)
        while time.monotonic() < stop_at:
            t0 = time.perf_counter()
            try:
                client.predict(text=text_of_length(100), prompt_audio=prompt, api_name="/synthesize")
                with lock:
                    latencies.append(time.perf_counter() - t0)
            except Exception as e:  # noqa: BLE001
                with lock:
                    if "busy" in str(e):
                        busy[0] += 1
                    else:
                        errors.append(str(e)[:120])
                time.sleep(0.2)

    threads = [threading.Thread(target=loop) for _ in range(clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    lat = sorted(latencies)
    return {"clients": clients, "ok": len(lat), "per_min": 60 * len(lat) / elapsed,
            "p50": statistics.median(lat) if lat else float("nan"),
            # nearest rank, so that p95 is never below p50 with few requests
            "p95": lat[math.ceil(0.95 * len(lat)) - 1] if lat else float("nan"), "busy": busy[0], "errors": len(errors)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--clients", default="1,2,4,8")
    ap.add_argument("--max-queue", type=int, default=16)
    args = ap.parse_args()
    app = RunningApp("--max-queue", str(args.max_queue))
    try:
        app.wait_healthy()
        Client(app.url, verbose=False).predict(text="warm up", api_name="/synthesize")
        print(f"embedded engine on the CPU, 100-character text, one prompt; --max-queue {args.max_queue}, "
              f"{args.seconds:g} s per row\n")
        print("| clients | ok | requests/min | p50 s | p95 s | busy | errors | requests/min / first row |\n"
              "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        first = None
        for n in [int(c) for c in args.clients.split(",")]:
            r = run(app.url, n, args.seconds)
            first = first or r["per_min"]
            print(f"| {n} | {r['ok']} | {r['per_min']:.1f} | {r['p50']:.2f} | {r['p95']:.2f} | {r['busy']} | {r['errors']} | "
                  f"{r['per_min'] / first if first else float('nan'):.2f} |")
    finally:
        app.stop()


if __name__ == "__main__":
    main()
