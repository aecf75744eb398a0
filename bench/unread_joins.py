"""Does the web process stay bounded when clients join Gradio's queue and never read? Web RSS
across unread joins.

A hostile client can send ``POST /gradio_api/queue/join`` with a new ``session_hash`` each time
and never open the session's stream. Gradio keeps, per session, a state of about 100 KB (up to
``state_session_capacity`` sessions) and a list of unanswered events (with no bound); a helper
measured the web process growing by 1.1 GB in a minute with 1 MB session hashes, and for good.
The app caps the session hash (128 characters), keeps 1,000 session states
(``server.SESSION_STATES``) and forgets the lists of sessions Gradio's message LRU dropped.

Here ``--joins`` joins of the cheap ``/status`` event, each with a new 32-character session hash,
are sent one after another; the web RSS (psutil) is printed every ``--step`` joins against the
same run's baseline (after warm-up). Goal: the growth over the last half of the joins is under
10 % of the growth over the first half (it levels off instead of growing linearly).

    .venv/bin/python bench/unread_joins.py [--joins 6000] [--step 1000]
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
import psutil  # noqa: E402

from bench.common import MIB, RunningApp, machine, met, result, table  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--joins", type=int, default=6000)
    ap.add_argument("--step", type=int, default=1000)
    args = ap.parse_args()

    app = RunningApp()
    try:
        app.wait_healthy(300)
        web = psutil.Process(app.proc.pid)
        with httpx.Client(timeout=30) as http:
            dependencies = http.get(app.url + "config").json()["dependencies"]
            fn_index = next(d["id"] for d in dependencies if d.get("api_name") == "status")

            def join(session_hash: str) -> int:
                return http.post(app.url + "gradio_api/queue/join", json={
                    "data": [], "fn_index": fn_index, "session_hash": session_hash,
                    "event_data": None, "trigger_id": None}).status_code

            for _ in range(50):  # warm-up: routes, queue, first session states
                join(uuid.uuid4().hex)
            time.sleep(2)
            baseline = web.memory_info().rss
            rows, growth = [], {}
            t0 = time.monotonic()
            for i in range(1, args.joins + 1):
                join(uuid.uuid4().hex)
                if i % args.step == 0:
                    growth[i] = web.memory_info().rss - baseline
                    rows.append([i, f"{growth[i] / MIB:.1f}", f"{time.monotonic() - t0:.1f}"])
            long_hash = join("x" * 200_000)
    finally:
        app.stop()

    print(machine())
    print(f"web RSS at the baseline: {baseline / MIB:.0f} MiB; 1 MB session_hash answered {long_hash}\n")
    print(table(["unread joins", "web RSS growth (MiB)", "elapsed (s)"], rows, right={0, 1, 2}))
    half = max(k for k in growth if k <= args.joins // 2)
    first, last = growth[half], growth[max(growth)] - growth[half]
    ratio = last / first if first > 0 else float("inf")
    result(f"growth over the last half of {args.joins} unread joins is {ratio:.2f}x that of the first half "
           f"({last / MIB:.1f} vs {first / MIB:.1f} MiB); goal < 0.10: {met(ratio < 0.10)}")


if __name__ == "__main__":
    main()
