#!/usr/bin/env bash
# Device check for a machine with an NVIDIA GPU (run from the repository root after ./run.sh setup):
#   1. the app on --device cuda: synthesis through the API, restart, VRAM of old/new worker (NVML)
#   2. the same with --no-fp16, then both below the web layer (tests/gpu/check_worker.py)
#   3. peak memory against text length on CUDA, fp16 and fp32 (bench/memory_vs_length.py)
#   4. the CUDA tests in tests/gpu
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=.venv/bin/python
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
echo "== app, fp16";  $PY tests/gpu/check_app.py --fp16
echo "== app, fp32";  $PY tests/gpu/check_app.py --no-fp16
echo "== worker, fp16 and fp32 (no web layer)"; $PY tests/gpu/check_worker.py
echo "== memory vs length, fp16"; $PY bench/memory_vs_length.py --device cuda --engines embedded-torch --repeats 2
echo "== memory vs length, fp32"; $PY bench/memory_vs_length.py --device cuda --engines embedded-torch --repeats 2 --no-fp16
echo "== CUDA tests (worker memory, leak watchdog, admission)"; $PY -m pytest -q tests/gpu
echo "== VITS port vs ONNX Runtime"; $PY bench/vits_equivalence.py | tail -1
