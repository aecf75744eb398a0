"""What WORLD voice conversion costs: the embedded engine's RTF next to raw Piper's, same run.

Loads ``EmbeddedEngine`` in this process (``load("cpu", False)``: ONNX Runtime) and, for three
text lengths, times

- **embedded**: ``engine.synthesize`` with a real prompt (Piper + WORLD conversion toward the
  prompt + level), the prompt's profile already cached as it is after a first request;
- **raw Piper**: the same phonemizer and the same ``OnnxBackend`` session, sentence by sentence
  with the same gaps, no conversion (what the engine does before WORLD).

The two are interleaved, each ``--runs`` times; RTF = synthesis seconds / audio seconds (Piper's
durations are random, so RTF, not seconds, is compared). Prints median RTFs, the ratio
embedded/raw (the cost of voice conversion), and the engine's own split into piper_s and
conversion_s. No goal: it is a figure to watch.

    .venv/bin/python bench/engine_speed.py [--runs 5] [--lengths 50,100,200] [--prompt FILE]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DEFAULT_PROMPT, load_prompt, machine, median, result, table  # noqa: E402
from bench.texts import text_of_length  # noqa: E402
from cosyvoice_ui.engines.base import SynthesisRequest  # noqa: E402
from cosyvoice_ui.engines.embedded import engine as embedded  # noqa: E402


def raw_piper(engine: embedded.EmbeddedEngine, text: str) -> np.ndarray:
    """Piper alone through the engine's own phonemizer and backend, as in ``engine.synthesize``."""
    inf = engine._inference
    chunks = [engine._backend.synthesize_ids(engine._voice.phonemes_to_ids(p), inf["noise_scale"],
                                             inf["length_scale"], inf["noise_w"], -1)
              for p in engine._voice.phonemize(text) if p]
    gap = np.zeros(int(embedded._SENTENCE_GAP_S * engine._sample_rate_hz), dtype=np.float32)
    return np.concatenate([x for c in chunks for x in (c, gap)][:-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--lengths", default="50,100,200", help="characters, comma-separated")
    ap.add_argument("--prompt", type=Path, default=DEFAULT_PROMPT)
    args = ap.parse_args()

    engine = embedded.EmbeddedEngine()
    t0 = time.perf_counter()
    facts = engine.load("cpu", False)
    load_s = time.perf_counter() - t0
    prompt = load_prompt(args.prompt)
    rate = engine._sample_rate_hz
    engine.synthesize(SynthesisRequest(text=text_of_length(50), prompt=prompt))  # warm-up; caches the profile
    raw_piper(engine, text_of_length(50))

    rows, ratios = [], []
    for chars in [int(n) for n in args.lengths.split(",")]:
        text = text_of_length(chars)
        emb, raw, piper_s, conv_s, audio = [], [], [], [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            out = engine.synthesize(SynthesisRequest(text=text, prompt=prompt))
            seconds = time.perf_counter() - t0
            emb.append(seconds / (len(out.audio) / out.sample_rate_hz))
            piper_s.append(out.details["piper_s"])
            conv_s.append(out.details["conversion_s"])
            audio.append(len(out.audio) / out.sample_rate_hz)
            t0 = time.perf_counter()
            x = raw_piper(engine, text)
            raw.append((time.perf_counter() - t0) / (len(x) / rate))
        ratio = median(emb) / median(raw)
        ratios.append(ratio)
        rows.append([chars, f"{median(audio):.1f}", f"{median(raw):.3f}", f"{median(emb):.3f}", f"{ratio:.2f}",
                     f"{median(piper_s):.3f}", f"{median(conv_s):.3f}"])

    print(f"embedded engine in-process on the CPU ({facts.get('runtime')}, load {load_s:.2f} s), prompt "
          f"{args.prompt.name}; median of {args.runs} interleaved runs\n\n{machine()}\n")
    print(table(["chars", "audio s", "raw Piper RTF", "embedded RTF", "embedded / raw", "piper_s", "conversion_s"], rows))
    result(f"embedded / raw Piper RTF {median(ratios):.2f} (median over {len(ratios)} lengths; "
           f"{min(ratios):.2f}-{max(ratios):.2f}): what WORLD voice conversion costs. No goal.")


if __name__ == "__main__":
    main()
