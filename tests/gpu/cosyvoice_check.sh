#!/usr/bin/env bash
# Device check of the real CosyVoice engine (needs an NVIDIA GPU, the CosyVoice clone and weights):
#   tests/gpu/cosyvoice_check.sh MODEL_DIR COSYVOICE_REPO [--no-fp16] [--load-trt] [--load-vllm]
# Prints per mode (zero-shot, cross-lingual, instruct, pretrained speaker) RTF and peak VRAM, the
# first-chunk latency when streaming, and the VRAM the old worker holds after a restart (must be 0).
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ $# -lt 2 ]; then sed -n 2,5p "$0"; exit 2; fi
MODEL_DIR=$1; REPO=$2; shift 2
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
.venv/bin/python tests/gpu/cosyvoice_check.py --model-dir "$MODEL_DIR" --cosyvoice-repo "$REPO" "$@"
