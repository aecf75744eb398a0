"""Device check for the real CosyVoice 2 / 3 engine: for anyone with an NVIDIA GPU, a clone of
FunAudioLLM/CosyVoice and downloaded weights (README, CosyVoice section).

Runs every mode on the real prompts in ../shared/prompts through a supervised worker on CUDA and
prints, per mode, once without and once with the model's streaming mode: RTF, time to the first
audio chunk, peak allocated / reserved VRAM (torch); then restarts the worker and prints the VRAM
NVML sees for the old pid (it must hold 0 bytes).

    .venv/bin/python tests/gpu/cosyvoice_check.py --model-dir PATH --cosyvoice-repo PATH [--no-fp16] [--load-trt] [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from cosyvoice_ui.engines.base import PromptSamples, SynthesisRequest  # noqa: E402
from cosyvoice_ui.inputs.prompt_audio import load_prompt_audio  # noqa: E402
from cosyvoice_ui.monitor.nvml import NvmlReader  # noqa: E402
from cosyvoice_ui.worker.supervisor import Supervisor  # noqa: E402
from tests.conftest import PROMPTS_DIR  # noqa: E402

MIB = 2**20
TEXTS = {"zh": "收到好友从远方寄来的生日礼物，那份意外的惊喜与深深的祝福让我心中充满了甜蜜的快乐。",
         "en": "The quick brown fox jumps over the lazy dog, and then it runs all the way back home."}


def prompts():
    entries = json.loads((PROMPTS_DIR / "manifest.json").read_text())
    for e in entries[:3]:
        audio = load_prompt_audio(str(PROMPTS_DIR / e["file"]))
        yield e, PromptSamples(audio.samples, audio.sample_rate_hz, audio.sha1)


def cases(speakers):
    for entry, prompt in prompts():
        text = TEXTS.get(entry.get("language"), TEXTS["en"])
        if entry.get("transcript"):
            yield "zero-shot", entry["file"], SynthesisRequest(text=text, prompt=prompt, prompt_text=entry.get("transcript") or "")
        yield "cross-lingual", entry["file"], SynthesisRequest(text=TEXTS["en"], prompt=prompt)
        yield "instruct", entry["file"], SynthesisRequest(text=text, prompt=prompt, instruction="用开心的语气说")
    if speakers:
        yield "pretrained speaker", speakers[0], SynthesisRequest(text=TEXTS["zh"], speaker=speakers[0])


def _mib(value: int | None) -> str:
    return "n/a" if value is None else f"{value / MIB:,.0f}"


def run(args, stream: bool) -> bool:
    import dataclasses

    options = {"model_dir": args.model_dir, "repo": args.cosyvoice_repo, "load_trt": args.load_trt,
               "load_vllm": args.load_vllm}
    sup = Supervisor("cosyvoice", args.device, not args.no_fp16, request_timeout_s=300, start_timeout_s=900,
                     engine_options=options).start()
    if not sup.wait_ready(900):
        print("load failed:", sup.status()["last_error"])
        return False
    facts = sup.status()["engine_facts"]
    print(f"\n## stream={stream}: {facts.get('model')} on {facts.get('device')} ({facts.get('dtype')}), "
          f"trt={facts.get('load_trt')} vllm={facts.get('load_vllm')}, load {sup.status()['load_s']} s\n")
    print("| mode | prompt | audio s | RTF | first chunk s | peak allocated MiB | peak reserved MiB | outcome |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    ok = True
    for mode, prompt_name, request in cases(facts.get("speakers") or []):
        first = []
        t0 = time.perf_counter()
        try:
            output, stats = sup.submit(
                dataclasses.replace(request, stream=stream), on_audio=lambda a, r, restarted: first or first.append(time.perf_counter() - t0)).result()
            print(f"| {mode} | {prompt_name} | {stats.audio_s:.2f} | {stats.real_time_factor:.3f} | "
                  f"{(first[0] if first else float('nan')):.3f} | {_mib(stats.peak_allocated_bytes)} | "
                  f"{_mib(stats.peak_reserved_bytes)} | ok ({output.details.get('mode')}) |")
            ok &= output.details.get("mode") == mode
        except Exception as e:  # noqa: BLE001 - a report, not a test
            ok = False
            print(f"| {mode} | {prompt_name} | | | | | | FAILED: {e} |")
    nvml = NvmlReader()
    old = sup.worker_pid
    before = nvml.process_bytes(old)
    report = sup.restart(reason="check")
    time.sleep(1.5)
    after = nvml.process_bytes(old)
    print(f"\nrestart {report.duration_s:.2f} s: old pid {old} held "
          f"{'n/a' if before is None else f'{before / MIB:,.0f} MiB'} before, "
          f"{'n/a' if after is None else f'{after / MIB:,.0f} MiB'} after (must be 0); new pid {report.new_pid}")
    ok &= after in (0, None)
    sup.stop()
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--cosyvoice-repo", required=True)
    ap.add_argument("--no-fp16", action="store_true")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu, e.g. to try the script with the stand-in")
    ap.add_argument("--load-trt", action="store_true")
    ap.add_argument("--load-vllm", action="store_true")
    args = ap.parse_args()
    ok = run(args, stream=False) & run(args, stream=True)
    print("RESULT", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
