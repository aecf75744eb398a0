"""Does the web process give back what refused long prompts took? Web RSS across bursts of them.

Prompt audio is decoded and checked in the web process (``inputs/prompt_audio.py``). A prompt of
119 s (48 kHz stereo MP3, built here from a real prompt) is decoded whole and only then refused as
too long; that is the most a legitimate-looking upload makes the web process hold. For each
client count N (1, 2, 4, 8 by default) N ``gradio_client`` clients each send it ``--repeats``
times at once; after each burst the web process's RSS is read (psutil), with the app idle.

The baseline is the same run's web RSS after two ordinary requests. Goal: after the largest
burst the web process is less than 1.5 times its baseline (a newcomer session measured 626 MiB
growing to 4.9 GB after 8 clients, and past 8.9 GB with 12).

    .venv/bin/python bench/refused_upload_memory.py [--clients 1,2,4,8] [--repeats 5] [--seconds 119]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import psutil  # noqa: E402
import soundfile as sf  # noqa: E402
from gradio_client import Client, handle_file  # noqa: E402

from bench.common import DEFAULT_PROMPT, MIB, RunningApp, machine, met, result, table  # noqa: E402
from bench.texts import text_of_length  # noqa: E402

GOAL_RATIO = 1.5


def long_mp3(folder: Path, seconds: float) -> Path:
    """``seconds`` of the default prompt repeated, 48 kHz stereo MP3 (libsndfile's encoder)."""
    import torch
    import torchaudio.functional as F

    data, sr = sf.read(DEFAULT_PROMPT, dtype="float32", always_2d=True)
    mono = F.resample(torch.from_numpy(data.mean(axis=1)), sr, 48_000).numpy()
    n = int(seconds * 48_000)
    tiled = np.tile(mono, n // len(mono) + 1)[:n]
    path = folder / f"long_{seconds:g}s.mp3"
    sf.write(path, np.stack([tiled, 0.9 * tiled], axis=1), 48_000, format="MP3")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", default="1,2,4,8")
    ap.add_argument("--repeats", type=int, default=5, help="uploads per client in each burst")
    ap.add_argument("--seconds", type=float, default=119.0, help="length of the refused prompt")
    args = ap.parse_args()
    counts = [int(c) for c in args.clients.split(",")]

    with tempfile.TemporaryDirectory() as folder:
        heavy = long_mp3(Path(folder), args.seconds)
        heavy_mb = heavy.stat().st_size / 1e6
        app = RunningApp("--max-queue", str(max(counts) * 2))
        try:
            app.wait_healthy(300)
            web = psutil.Process(app.proc.pid)
            client = Client(app.url, verbose=False)
            for _ in range(2):  # warm-up: first upload, decoder and resampler imported
                client.predict(text=text_of_length(50), prompt_audio=handle_file(str(DEFAULT_PROMPT)),
                               api_name="/synthesize")
            baseline = web.memory_info().rss
            rows, answers = [], {}
            for n in counts:
                refused, other = [0], []
                lock = threading.Lock()

                def send() -> None:
                    c = Client(app.url, verbose=False)
                    for _ in range(args.repeats):
                        try:
                            c.predict(text="Hello.", prompt_audio=handle_file(str(heavy)), api_name="/synthesize")
                            with lock:
                                other.append("accepted")
                        except Exception as e:  # noqa: BLE001 -- the refusal is the expected answer
                            with lock:
                                if "long" in str(e):
                                    refused[0] += 1
                                else:
                                    other.append(str(e)[:100])

                t0 = time.monotonic()
                threads = [threading.Thread(target=send) for _ in range(n)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                took = time.monotonic() - t0
                time.sleep(2)  # idle: what the process holds, not what a request in flight holds
                now = web.memory_info().rss
                rows.append([n, n * args.repeats, refused[0], len(other), f"{took:.1f}",
                             f"{now / MIB:,.0f}", f"{now / baseline:.2f}"])
                answers.update({o: None for o in other})
            last = web.memory_info().rss
        finally:
            app.stop()

    print(f"{args.seconds:g} s 48 kHz stereo MP3 ({heavy_mb:.1f} MB) sent by N clients, "
          f"{args.repeats} times each\n\n{machine()}\n")
    print(f"web RSS after two ordinary requests (baseline): {baseline / MIB:,.0f} MiB\n")
    print(table(["clients", "uploads", "refused as too long", "other answers", "burst s", "web RSS MiB after",
                 "after / baseline"], rows))
    if answers:
        print("\nother answers: " + "; ".join(answers))
    ratio = last / baseline
    result(f"web RSS after the {counts[-1]}-client burst is {ratio:.2f} x its baseline "
           f"({baseline / MIB:,.0f} -> {last / MIB:,.0f} MiB), goal < {GOAL_RATIO:g}: {met(ratio < GOAL_RATIO)}")


if __name__ == "__main__":
    main()
