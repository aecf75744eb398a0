"""Does Restart give memory back? Worker and web-process memory across ``--restarts`` restarts.

Starts the app (``app.py`` subprocess; its pid is the web process), warms it up with two
requests, then ``--restarts`` times: one ``/synthesize`` (so the worker holds what a request
leaves), read the worker's RSS (psutil; and its GPU memory per NVML when there is a GPU), then
``/restart`` through ``gradio_client``; after it, check that the old worker pid is gone (and what
NVML still shows for it), and read the new worker's RSS, the web process's RSS, and the number of
processes under the web process. The worker pid comes from ``/healthz``.

The baseline is the same run's web RSS before the first restart. Goal: the web process grows by
less than 20 MB over the restarts (after the last restart's request vs before the first).

    .venv/bin/python bench/memory_given_back.py [--restarts 10] [--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil  # noqa: E402
from gradio_client import Client, handle_file  # noqa: E402

from bench.common import DEFAULT_PROMPT, MIB, RunningApp, healthz, machine, met, result, table, wait_until  # noqa: E402
from bench.texts import text_of_length  # noqa: E402
from cosyvoice_ui.monitor.nvml import NvmlReader  # noqa: E402

GOAL_MB = 20.0


def rss(pid: int | None) -> int | None:
    try:
        return psutil.Process(pid).memory_info().rss if pid else None
    except psutil.NoSuchProcess:
        return None


def gone(pid: int) -> bool:
    """The old worker ended (a zombie not yet reaped also counts as gone: its memory is free)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def mib(value: int | None) -> str:
    return "-" if value is None else f"{value / MIB:,.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--restarts", type=int, default=10)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--chars", type=int, default=100, help="text length of the request before each restart")
    args = ap.parse_args()
    nvml = NvmlReader()

    def gpu_of(pid: int | None) -> int | None:
        return nvml.process_bytes(pid) if pid else None

    app = RunningApp("--device", args.device, "--restart-cooldown", "0")  # restarts back to back
    try:
        app.wait_healthy(300)
        web = psutil.Process(app.proc.pid)
        client = Client(app.url, verbose=False)
        prompt = handle_file(str(DEFAULT_PROMPT))

        def request() -> None:
            client.predict(text=text_of_length(args.chars), prompt_audio=prompt, api_name="/synthesize")

        def worker_pid() -> int:
            return wait_until(lambda: healthz(app.url), 300)["pid"]

        def app_tree() -> tuple[int, int]:
            procs = [web, *web.children(recursive=True)]
            return len(procs), sum(rss(p.pid) or 0 for p in procs)

        request(), request()  # warm-up: first upload, prompt decoder and resampler imported
        rows = []
        web_before, (procs_before, tree_before) = web.memory_info().rss, app_tree()
        first_worker = None
        for i in range(1, args.restarts + 1):
            request()
            pid = worker_pid()
            worker_rss, worker_gpu = rss(pid), gpu_of(pid)
            first_worker = first_worker or (worker_rss, worker_gpu)
            report = client.predict(api_name="/restart")
            new_pid = worker_pid()
            procs, tree = app_tree()
            rows.append([i, pid, mib(worker_rss), mib(worker_gpu), "yes" if gone(pid) else "NO",
                         mib(report.get("old_pid_gpu_bytes")), new_pid, mib(rss(new_pid)),
                         mib(web.memory_info().rss), procs, mib(tree)])
        request()
        web_after, (procs_after, tree_after) = web.memory_info().rss, app_tree()
        last_pid = worker_pid()
        last_worker = (rss(last_pid), gpu_of(last_pid))
    finally:
        app.stop()
        nvml.close()

    growth_mb = (web_after - web_before) / 1e6
    print(f"app on --device {args.device}; a {args.chars}-character request before each restart; "
          f"GPU figures: {'NVML' if nvml.available or not nvml.error else 'none (' + nvml.error + ')'}\n\n{machine()}\n")
    print(table(["restart", "old worker pid", "old worker RSS MiB", "old worker GPU MiB", "old pid gone",
                 "old pid GPU MiB after", "new worker pid", "new worker RSS MiB", "web RSS MiB",
                 "app processes", "app RSS MiB"], rows))
    print("\n" + table(["", "web RSS MiB", "app processes", "app RSS MiB", "worker RSS MiB (after a request)",
                        "worker GPU MiB"],
                       [["before the first restart", mib(web_before), procs_before, mib(tree_before),
                         mib(first_worker[0]), mib(first_worker[1])],
                        [f"after {args.restarts} restarts", mib(web_after), procs_after, mib(tree_after),
                         mib(last_worker[0]), mib(last_worker[1])],
                        ["after / before", f"{web_after / web_before:.3f}", f"{procs_after / procs_before:.2f}",
                         f"{tree_after / tree_before:.3f}", f"{last_worker[0] / first_worker[0]:.3f}", "-"]]))
    all_gone = all(r[4] == "yes" for r in rows)
    result(f"web process {growth_mb:+.1f} MB over {args.restarts} restarts (ratio {web_after / web_before:.3f}), "
           f"goal < {GOAL_MB:g} MB: {met(growth_mb < GOAL_MB)}; old workers gone: "
           f"{'all' if all_gone else 'NOT all'}; app processes {procs_before} → {procs_after}")


if __name__ == "__main__":
    main()
