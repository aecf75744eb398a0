"""Peak memory and real-time factor against text length, through a real worker process.

For 25, 50, 100, 200 and 400 characters as one segment, 2000 characters split into segments of at
most 200, and the longest of those segments alone, prints the request's peak memory (torch peak
allocated on CUDA; the worker's peak RSS on the CPU), what the request added over the memory before
it next to what admission's fitted model predicts, the real-time factor, the 2000/200 peak ratio
(goal: at most 1.15), and the ratio of 2000 characters to their longest segment alone (what text
length adds when segment length is held fixed). Runs each engine given; the ratio of real-time
factors between engines is what decides the CPU default (see piper_backends.py).

    .venv/bin/python bench/memory_vs_length.py [--device cpu|cuda] [--engines embedded-onnx,embedded-torch] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.texts import text_of_length  # noqa: E402
from cosyvoice_ui.engines.base import SynthesisRequest  # noqa: E402
from cosyvoice_ui.inputs.segments import split_text, spoken_chars  # noqa: E402
from cosyvoice_ui.monitor.admission import extra_bytes, fit_peak  # noqa: E402
from cosyvoice_ui.worker.supervisor import Supervisor  # noqa: E402

LENGTHS = (25, 50, 100, 200, 400)
MIB = 2**20


def run_engine(engine: str, device: str, fp16: bool, repeats: int) -> dict:
    sup = Supervisor(engine, device, fp16, request_timeout_s=600).start()
    if not sup.wait_ready(300):
        raise SystemExit(f"{engine} did not start: {sup.status()['last_error']}")
    rows = {}
    try:
        cases = [(n, (text_of_length(n),)) for n in LENGTHS]
        long_text = text_of_length(2000)
        long_segments = tuple(split_text(long_text, 200))
        cases.append((2000, long_segments))
        # The same longest segment alone: peak follows the longest segment (Piper runs a sentence
        # or clause at a time), so this separates text length from segment length.
        cases.append(("longest", (max(long_segments, key=len),)))
        for chars, segments in cases:
            peaks, rtfs, audio = [], [], []
            # Each length in a fresh worker after the same warm-up, so no case inherits the
            # memory an earlier, longer one left in the allocator (RSS on the CPU never shrinks).
            sup.restart(reason="benchmark")
            sup.synthesize(SynthesisRequest(text=text_of_length(200)))
            for _ in range(repeats):
                _, stats = sup.synthesize(SynthesisRequest(text=" ".join(segments), segments=segments))
                peak = stats.peak_allocated_bytes if stats.peak_allocated_bytes is not None else stats.peak_rss_bytes
                peaks.append(peak)
                rtfs.append(stats.real_time_factor)
                audio.append(stats.audio_s)
            rows[chars] = dict(segments=len(segments), peak=max(peaks),
                               rtf=statistics.median(rtfs), audio_s=statistics.median(audio),
                               kind="torch peak allocated" if stats.peak_allocated_bytes is not None else "worker peak RSS",
                               device=stats.device)
    finally:
        sup.stop()
    # Admission's model fitted on this run's ledger, against what each length really added.
    records = sup.ledger.records()
    fit = fit_peak(records)
    for chars, r in rows.items():
        segments = cases[[c for c, _ in cases].index(chars)][1]
        longest = max(spoken_chars(s) for s in segments)
        # This case's own requests: the 2000-character text and its longest segment alone share
        # max_segment_chars, and the "longest" row showed the 2000 row's figures (thirty-fifth
        # newcomer session). The warm-up requests (200 characters) are told apart by their length.
        actual = max(e for rec in records if rec.max_segment_chars == longest
                     and rec.text_chars == len(" ".join(segments)) and (e := extra_bytes(rec)) is not None)
        r["predicted_extra"] = fit.predict(longest)
        r["actual_extra"] = actual
    return rows


def long_segments_of() -> tuple[str, ...]:
    return tuple(split_text(text_of_length(2000), 200))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--engines", default="embedded-onnx,embedded-torch")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-fp16", action="store_true")
    args = ap.parse_args()
    results = {}
    for engine in args.engines.split(","):
        rows = run_engine(engine, args.device, not args.no_fp16, args.repeats)
        results[engine] = rows
        first = next(iter(rows.values()))
        print(f"\n## {engine} on {first['device']} ({first['kind']}; median RTF of {args.repeats}, max peak)\n")
        print("| chars | segments | audio s | RTF | peak MiB | added in request MiB | admission predicted MiB |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for chars, r in rows.items():
            print(f"| {chars} | {r['segments']} | {r['audio_s']:.1f} | {r['rtf']:.3f} | {r['peak'] / MIB:,.0f} | "
                  f"{r['actual_extra'] / MIB:,.1f} | {r['predicted_extra'] / MIB:,.1f} |")
        print(f"\npeak ratio 2000/200 chars: {rows[2000]['peak'] / rows[200]['peak']:.3f} (goal <= 1.15)")
        print(f"peak ratio 2000 chars / its longest segment ({len(max(long_segments_of(), key=len))} chars) alone: "
              f"{rows[2000]['peak'] / rows['longest']['peak']:.3f}")
    if len(results) > 1:
        names = list(results)
        base = results[names[0]]
        for other in names[1:]:
            ratios = [results[other][n]["rtf"] / base[n]["rtf"] for n in base if n != "longest"]
            print(f"\nRTF {other} / {names[0]}: median {statistics.median(ratios):.2f} over the {len(ratios)} lengths")


if __name__ == "__main__":
    main()
