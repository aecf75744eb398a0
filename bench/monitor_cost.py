"""What the memory panel costs: CPU time of the MemoryMonitor thread, as % of one core.

Runs ``MemoryMonitor`` (``cosyvoice_ui/monitor/sampler.py``) at ``--interval`` (1 Hz) for
``--seconds`` against a real second process standing in for the worker (its RSS is read with
psutil every sample; NVML is read too when there is a GPU). Alongside it, in the same run, a
baseline thread wakes at the same rate and does nothing, which is the floor any 1 Hz thread costs.
CPU time per thread is read from outside the thread with its POSIX CPU clock
(``time.pthread_getcpuclockid``; nanoseconds, where psutil's thread times have 10 ms ticks that a
1 Hz sampler stays under); the monitor's own ``cpu_time_s`` counter (``time.thread_time`` around
each sample, so without the wake-ups) is printed too. Figures are per
``--window`` seconds, and the median over windows is reported.

Goal: the monitor thread uses < 1 % of one core.

    .venv/bin/python bench/monitor_cost.py [--seconds 60] [--interval 1] [--window 10]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, median, met, result, table  # noqa: E402
from cosyvoice_ui.monitor.sampler import MemoryMonitor  # noqa: E402

GOAL_PCT = 1.0


def thread_cpu_s(thread: threading.Thread) -> float:
    """CPU seconds (user + system) used so far by another thread of this process."""
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--window", type=float, default=10.0)
    args = ap.parse_args()
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(100000)"])
    stop = threading.Event()

    def idle_loop() -> None:
        while not stop.wait(args.interval):
            pass

    baseline = threading.Thread(target=idle_loop, name="baseline", daemon=True)
    info = {"state": "ready", "pid": worker.pid, "memory": None}
    monitor = MemoryMonitor(lambda: dict(info), interval_s=args.interval)
    try:
        monitor.start()
        baseline.start()
        time.sleep(0.5)  # both threads have a native id and took their first sample
        ids = {"monitor": monitor._thread, "baseline": baseline}
        windows = []
        last = {k: thread_cpu_s(i) for k, i in ids.items()}
        last_own, last_t = monitor.cpu_time_s, time.monotonic()
        for _ in range(max(1, int(args.seconds / args.window))):
            time.sleep(args.window)
            now = {k: thread_cpu_s(i) for k, i in ids.items()}
            own, t = monitor.cpu_time_s, time.monotonic()
            elapsed = t - last_t
            windows.append({k: 100 * (now[k] - last[k]) / elapsed for k in ids} | {"own": 100 * (own - last_own) / elapsed})
            last, last_own, last_t = now, own, t
        samples = len(monitor.history())
    finally:
        stop.set()
        monitor.stop()
        worker.kill()
        worker.wait()

    mon, base, own = (median(w[k] for w in windows) for k in ("monitor", "baseline", "own"))
    nvml = "NVML" if monitor.nvml.error is None else f"no NVML ({monitor.nvml.error})"
    print(f"{len(windows)} windows of {args.window:g} s, sampling every {args.interval:g} s ({samples} samples), "
          f"{nvml}\n\n{machine()}\n")
    print(table(["thread", "% of one core (median)", "min", "max", "CPU ms per minute"], [
        ["memory-monitor (thread CPU clock)", f"{mon:.3f}", f"{min(w['monitor'] for w in windows):.3f}",
         f"{max(w['monitor'] for w in windows):.3f}", f"{mon * 600:.0f}"],
        ["memory-monitor (its own thread_time counter)", f"{own:.3f}", f"{min(w['own'] for w in windows):.3f}",
         f"{max(w['own'] for w in windows):.3f}", f"{own * 600:.0f}"],
        ["baseline: a thread waking at the same rate, doing nothing", f"{base:.3f}",
         f"{min(w['baseline'] for w in windows):.3f}", f"{max(w['baseline'] for w in windows):.3f}", f"{base * 600:.0f}"],
    ]))
    result(f"monitor thread {mon:.3f} % of one core at {1 / args.interval:g} Hz ({mon / base if base else float('inf'):.1f}x an idle thread "
           f"waking as often, {base:.3f} %), "
           f"goal < {GOAL_PCT:g} %: {met(mon < GOAL_PCT)}")


if __name__ == "__main__":
    main()
