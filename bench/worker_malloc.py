"""What the worker's fixed glibc mmap threshold costs and buys on the CPU.

The supervisor starts workers with ``MALLOC_MMAP_THRESHOLD_=262144`` (``WORKER_ENVIRONMENT`` in
``cosyvoice_ui/worker/supervisor.py``): buffers of 256 KiB and more then come from mmap and go
back to the system when freed, so the worker's memory follows the current request. This runs the
embedded engine in fresh processes with glibc's default (a threshold that rises after large
frees), 256 KiB and 4 MiB, interleaved, and prints CPU seconds, minor page faults and peak RSS
for the same three 200-character requests.

    .venv/bin/python bench/worker_malloc.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = r'''
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from bench.texts import text_of_length
from cosyvoice_ui.engines.base import SynthesisRequest
from cosyvoice_ui.engines.embedded.engine import EmbeddedEngine
engine = EmbeddedEngine(); engine.load("cpu", False)
engine.synthesize(SynthesisRequest(text=text_of_length(100)))  # warm-up
t0, f0 = time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    engine.synthesize(SynthesisRequest(text=text_of_length(200)))
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu_s": time.process_time() - t0, "faults": usage.ru_minflt - f0, "maxrss_mib": usage.ru_maxrss / 1024}))
'''
VARIANTS = {"glibc default": None, "256 KiB (the worker's)": "262144", "4 MiB": "4194304"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rows: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    for _ in range(args.rounds):
        for name, value in VARIANTS.items():
            env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
            if value:
                env["MALLOC_MMAP_THRESHOLD_"] = value
            out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT)], env=env, capture_output=True, text=True,
                                 check=True).stdout.strip().splitlines()[-1]
            rows[name].append(json.loads(out))
    base = statistics.median(r["cpu_s"] for r in rows["glibc default"])
    print(f"\nembedded engine (ONNX Runtime), 3 x 200 characters, median of {args.rounds} fresh processes\n")
    print("| mmap threshold | CPU s | CPU / default | minor page faults | peak RSS MiB |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, rs in rows.items():
        cpu = statistics.median(r["cpu_s"] for r in rs)
        print(f"| {name} | {cpu:.2f} | {cpu / base:.2f} | {statistics.median(r['faults'] for r in rs):,.0f} | "
              f"{statistics.median(r['maxrss_mib'] for r in rs):.0f} |")


if __name__ == "__main__":
    main()
