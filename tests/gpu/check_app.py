"""Device check, app part: start the app on CUDA, synthesize from a real prompt through the API,
restart, and print what NVML says the old and new workers hold.

    .venv/bin/python tests/gpu/check_app.py [--fp16|--no-fp16]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gradio_client import Client, handle_file  # noqa: E402

from cosyvoice_ui.monitor.nvml import NvmlReader  # noqa: E402
from tests.conftest import PROMPTS_DIR, RunningApp  # noqa: E402

MIB = 2**20



def main() -> int:
    precision = sys.argv[1] if len(sys.argv) > 1 else "--fp16"
    nvml = NvmlReader()
    if not nvml.available:
        print(f"no GPU visible to NVML: {nvml.error}")
        return 1
    # RunningApp passes --device cpu first; the later --device cuda wins in argparse.
    app = RunningApp("--engine", "embedded", precision, "--device", "cuda")
    try:
        status = app.wait_healthy(300)
        print(f"worker pid {status['pid']} on {status['device']} dtype {status['dtype']}")
        client = Client(app.url, verbose=False)
        t0 = time.perf_counter()
        _, stats = client.predict(text="The quick brown fox jumps over the lazy dog, and then it runs back home.",
                                  prompt_audio=handle_file(str(PROMPTS_DIR / "xtts_female.wav")), api_name="/synthesize")
        print(f"synthesis via API: {time.perf_counter() - t0:.2f} s, audio {stats['audio_s']} s, RTF "
              f"{stats['real_time_factor']}, peak allocated {stats['peak_allocated_bytes'] / MIB:.1f} MiB, "
              f"peak reserved {stats['peak_reserved_bytes'] / MIB:.1f} MiB")
        old = status["pid"]
        time.sleep(1.5)
        before = nvml.process_bytes(old)
        report = client.predict(api_name="/restart")
        time.sleep(1.5)
        after_old = nvml.process_bytes(old)
        after_new = nvml.process_bytes(report["new_pid"])
        web = nvml.process_bytes(app.proc.pid)
        print(f"restart {report['duration_s']} s: old pid {old} held {before / MIB:.0f} MiB before, "
              f"{after_old / MIB:.0f} MiB after (must be 0); new pid {report['new_pid']} holds {after_new / MIB:.0f} MiB; "
              f"web process holds {web / MIB:.0f} MiB (must be 0)")
        ok = after_old == 0 and web == 0 and before > 0
        print("RESULT", "ok" if ok else "FAILED")
        return 0 if ok else 1
    finally:
        app.stop()


if __name__ == "__main__":
    sys.exit(main())
