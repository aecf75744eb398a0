"""Device check, worker part: the embedded engine on CUDA in its supervised worker, without the web
layer (so it runs where Gradio is not installed). For fp16 and fp32 it synthesizes from a real
prompt, then restarts, and prints what NVML says each process holds.

    python tests/gpu/check_worker.py [PROMPT.wav]

Prints per precision: load time, audio seconds, real-time factor (synthesis wall time / audio
seconds), torch's peak allocated and reserved bytes in the worker, the worker's NVML bytes, and
after the restart the old worker's NVML bytes (must be 0) and this process's (must be 0: only the
worker touches CUDA). Exits 1 when a "must" fails.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.common import load_prompt  # noqa: E402
from cosyvoice_ui.engines.base import SynthesisRequest  # noqa: E402
from cosyvoice_ui.monitor.nvml import NvmlReader  # noqa: E402
from cosyvoice_ui.worker.supervisor import Supervisor  # noqa: E402
from tests.conftest import PROMPTS_DIR  # noqa: E402

MIB = 2**20
TEXT = ("The quick brown fox jumps over the lazy dog, and then it runs back home. "
        "It was a bright cold day in April, and the clocks were striking thirteen.")



def check(fp16: bool, prompt_path: Path, nvml: NvmlReader) -> bool:
    label = "fp16" if fp16 else "fp32"
    t0 = time.perf_counter()
    sup = Supervisor("embedded", "cuda", fp16).start()
    try:
        if not sup.wait_ready(300):
            print(f"{label}: the worker did not load: {sup.status()}")
            return False
        status = sup.status()
        print(f"{label}: loaded in {time.perf_counter() - t0:.1f} s, pid {sup.worker_pid}, "
              f"device {status.get('device')}, dtype {status.get('dtype')}")
        prompt = load_prompt(prompt_path)
        for attempt in ("first (warm-up)", "second"):
            output, stats = sup.synthesize(SynthesisRequest(text=TEXT, prompt=prompt, seed=1))
            print(f"{label} {attempt}: audio {stats.audio_s:.2f} s, RTF {stats.real_time_factor:.3f}, "
                  f"peak allocated {stats.peak_allocated_bytes / MIB:.1f} MiB, "
                  f"peak reserved {stats.peak_reserved_bytes / MIB:.1f} MiB, segments {stats.segments}")
        old = sup.worker_pid
        time.sleep(1.5)  # NVML's per-process figures lag behind allocations
        before = nvml.process_bytes(old)
        report = sup.restart()
        time.sleep(1.5)
        after_old, after_new, here = nvml.process_bytes(old), nvml.process_bytes(report.new_pid), nvml.process_bytes(os.getpid())
        print(f"{label} restart {report.duration_s:.2f} s: old pid {old} held {before / MIB:.0f} MiB before, "
              f"{after_old / MIB:.0f} MiB after (must be 0); new pid {report.new_pid} holds "
              f"{after_new / MIB:.0f} MiB; this process holds {here / MIB:.0f} MiB (must be 0)")
        return before > 0 and after_old == 0 and here == 0
    finally:
        sup.stop()


def main() -> int:
    prompt_path = Path(sys.argv[1]) if len(sys.argv) > 1 else PROMPTS_DIR / "xtts_female.wav"
    nvml = NvmlReader()
    if not nvml.available:
        print(f"no GPU visible to NVML: {nvml.error}")
        return 1
    ok = [check(fp16, prompt_path, nvml) for fp16 in (True, False)]
    print("RESULT", "ok" if all(ok) else "FAILED")
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
