"""What Restart costs: API restart → ready, next to a cold app start and the engine's own load.

Each round, on the CPU (embedded engine, ONNX Runtime), measures in turn:

- **engine load**: a fresh ``python`` subprocess times ``EmbeddedEngine().load("cpu", False)``
  (and its imports); the subprocess's whole wall time is printed too;
- **cold start**: ``app.py --device cpu --port N`` spawned → ``/healthz`` 200 → first successful
  ``/synthesize`` through ``gradio_client``;
- **restart**: on that app, ``Client.predict(api_name="/restart")`` (it returns when the new
  worker's model is loaded) → ``/healthz`` 200; with the supervisor's own ``duration_s`` and the
  new worker's ``load_s``.

Medians over ``--rounds``. Goal: restart <= engine load + 1 s.

    .venv/bin/python bench/restart_cost.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gradio_client import Client  # noqa: E402

from bench.common import ROOT, RunningApp, healthz, machine, median, met, result, table, wait_until  # noqa: E402

GOAL_MARGIN_S = 1.0
LOAD_CODE = """
import json, time
t0 = time.perf_counter()
from cosyvoice_ui.engines.embedded.engine import EmbeddedEngine
t1 = time.perf_counter()
EmbeddedEngine().load("cpu", False)
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1}))
"""


def engine_load() -> dict:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", LOAD_CODE], cwd=ROOT, capture_output=True, text=True, check=True)
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "process_s": time.perf_counter() - t0}


def cold_start_and_restart() -> dict:
    t0 = time.perf_counter()
    app = RunningApp("--device", "cpu")
    try:
        if not wait_until(lambda: healthz(app.url, 1), 300):
            app.wait_healthy(1)  # raises with the app's log
        healthy_s = time.perf_counter() - t0
        client = Client(app.url, verbose=False)
        client.predict(text="Hello there.", api_name="/synthesize")
        cold_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        report = client.predict(api_name="/restart")
        returned_s = time.perf_counter() - t0
        status = wait_until(lambda: healthz(app.url, 1), 300)
        ready_s = time.perf_counter() - t0
    finally:
        app.stop()
    if report.get("error") or not status:
        raise RuntimeError(f"restart failed: {report}")
    return {"healthy_s": healthy_s, "cold_s": cold_s, "restart_s": ready_s, "returned_s": returned_s,
            "duration_s": report["duration_s"], "worker_load_s": status["load_s"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    loads, apps = [], []
    for _ in range(args.rounds):
        loads.append(engine_load())
        apps.append(cold_start_and_restart())

    def m(runs, key):
        return median(r[key] for r in runs)

    load_s, restart_s = m(loads, "load_s"), m(apps, "restart_s")
    rows = [
        ["engine load: EmbeddedEngine().load('cpu') in a fresh process", f"{load_s:.2f}", "1.00"],
        ["↳ its imports", f"{m(loads, 'import_s'):.2f}", f"{m(loads, 'import_s') / load_s:.2f}"],
        ["↳ whole subprocess (interpreter + imports + load)", f"{m(loads, 'process_s'):.2f}",
         f"{m(loads, 'process_s') / load_s:.2f}"],
        ["restart: /restart call → /healthz 200", f"{restart_s:.2f}", f"{restart_s / load_s:.2f}"],
        ["↳ /restart call returned", f"{m(apps, 'returned_s'):.2f}", f"{m(apps, 'returned_s') / load_s:.2f}"],
        ["↳ supervisor's duration_s (kill old → new ready)", f"{m(apps, 'duration_s'):.2f}",
         f"{m(apps, 'duration_s') / load_s:.2f}"],
        ["↳ new worker's load_s (engine import + load, as the worker reports it)", f"{m(apps, 'worker_load_s'):.2f}",
         f"{m(apps, 'worker_load_s') / load_s:.2f}"],
        ["cold start: spawn app.py → /healthz 200", f"{m(apps, 'healthy_s'):.2f}", f"{m(apps, 'healthy_s') / load_s:.2f}"],
        ["cold start: spawn app.py → first synthesis", f"{m(apps, 'cold_s'):.2f}", f"{m(apps, 'cold_s') / load_s:.2f}"],
    ]
    print(f"CPU, embedded engine; medians of {args.rounds} rounds (each round: engine load, cold start, restart)\n\n"
          f"{machine()}\n")
    print(table(["what", "seconds", "/ engine load"], rows))
    print(f"\nrestart / cold start to first synthesis: {restart_s / m(apps, 'cold_s'):.2f}")
    result(f"restart {restart_s:.2f} s vs engine load {load_s:.2f} s (+{restart_s - load_s:.2f} s), "
           f"goal <= engine load + {GOAL_MARGIN_S:g} s: {met(restart_s <= load_s + GOAL_MARGIN_S)}; "
           f"cold start to first synthesis {m(apps, 'cold_s'):.2f} s")


if __name__ == "__main__":
    main()
