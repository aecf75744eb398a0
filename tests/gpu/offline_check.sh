#!/usr/bin/env bash
# The worker-level device check on a GPU machine without a package index, from the repository
# root, after tests/gpu/make_offline_bundle.py made .devbundle/ (see that file for what it needs).
# Writes its log to $OUT/log when OUT is set. Each part has its own time limit, so a slow part
# cannot keep the others from running. With the argument "quick" it stops after the worker check
# (the benches take about half of the run).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
exec > >(tee "${OUT:-/tmp}/log") 2>&1
t0=$(date +%s)
el() { echo "[t+$(( $(date +%s) - t0 )) s]"; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .devbundle/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD/.devbundle/site
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --target /tmp/site2 .devbundle/pyworld-*.tar.gz 2>&1 | tail -5
export PYTHONPATH=$PYTHONPATH:/tmp/site2 COSYVOICE_UI_PROMPTS=$PWD/.devbundle/prompts
export PYTHONWARNINGS="ignore:pkg_resources is deprecated"
el
python3 -c "import torch, torchaudio, numpy, onnx, pynvml, soundfile, pyworld, piper; print('torch', torch.__version__, 'torchaudio', torchaudio.__version__, 'numpy', numpy.__version__, 'cuda', torch.cuda.is_available(), torch.version.cuda)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
echo "== CUDA tests (tests/gpu)"; el
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu 2>&1 | tail -40
echo "== worker check (embedded engine on CUDA, fp16 then fp32)"; el
timeout 120 python3 tests/gpu/check_worker.py
if [ "${1:-}" = quick ]; then el; echo DONE; exit 0; fi
echo "== memory vs length, fp16"; el
timeout 110 python3 bench/memory_vs_length.py --device cuda --engines embedded-torch --repeats 2
echo "== memory vs length, fp32"; el
timeout 90 python3 bench/memory_vs_length.py --device cuda --engines embedded-torch --repeats 2 --no-fp16
el; echo DONE
