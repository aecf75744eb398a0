"""Loading a CosyVoice model from a local clone of the official code and local weights.

The official repository has no installable package: its code is imported from a clone (with the
Matcha-TTS submodule) put on ``sys.path``. ``AutoModel(model_dir=...)`` picks the class from the
yaml file the model folder holds; this module picks the same class first, to pass only the
flags its constructor accepts (CosyVoice3 has no ``load_jit``; CosyVoice takes no ``load_vllm``).
Nothing is downloaded: a model folder that does not exist is an error here, before
``AutoModel`` would try ModelScope.
"""

from __future__ import annotations

import inspect
import os
import sys

# yaml file in the model folder -> (model version, class name in cosyvoice.cli.cosyvoice)
MODEL_FILES = (("cosyvoice3.yaml", 3, "CosyVoice3"), ("cosyvoice2.yaml", 2, "CosyVoice2"), ("cosyvoice.yaml", 1, "CosyVoice"))
GET_THE_CODE = ("git clone --recursive https://github.com/FunAudioLLM/CosyVoice.git "
                "(or: git submodule update --init --recursive in an existing clone)")


def add_repo_to_path(repo: str) -> None:
    """Put a clone of FunAudioLLM/CosyVoice and its ``third_party/Matcha-TTS`` first on ``sys.path``.

    Raises:
        FileNotFoundError: ``repo`` is not such a clone, or the submodule is missing; the message
            gives the command that fixes it.
    """
    repo = os.path.abspath(repo)
    if not os.path.isfile(os.path.join(repo, "cosyvoice", "cli", "cosyvoice.py")):
        raise FileNotFoundError(f"--cosyvoice-repo {repo}: no cosyvoice/cli/cosyvoice.py there. Get the code with: "
                                f"{GET_THE_CODE}")
    matcha = os.path.join(repo, "third_party", "Matcha-TTS")
    if not os.path.isdir(os.path.join(matcha, "matcha")):
        # "is empty" was said of a folder holding a README but not the package (thirty-sixth session).
        raise FileNotFoundError(f"{matcha} has no matcha package: the Matcha-TTS submodule is missing. Run: "
                                f"git -C {repo} submodule update --init --recursive")
    for path in (matcha, repo):
        if path not in sys.path:
            sys.path.insert(0, path)


def model_version(model_dir: str) -> tuple[int, str]:
    """``(version, class name)`` of the model in ``model_dir``, found as ``AutoModel`` finds it.

    Raises:
        FileNotFoundError: the folder does not exist (the app never downloads weights).
        ValueError: no CosyVoice yaml in it, or a CosyVoice 1 model (not supported here).
    """
    if not os.path.isdir(model_dir):
        raise FileNotFoundError(f"--model-dir {model_dir}: no such folder. Download the weights first "
                                "(README, CosyVoice section); the app never downloads them.")
    for name, version, class_name in MODEL_FILES:
        if os.path.isfile(os.path.join(model_dir, name)):
            if version == 1:
                raise ValueError(f"{model_dir} holds a CosyVoice 1 model; this app serves CosyVoice 2 and 3 "
                                 "(Fun-CosyVoice3-0.5B-2512 or CosyVoice2-0.5B).")
            return version, class_name
    raise ValueError(f"--model-dir {model_dir}: no cosyvoice2.yaml or cosyvoice3.yaml in it; is it a CosyVoice model folder?")


def load_model(model_dir: str, device: str, fp16: bool, load_trt: bool, load_vllm: bool):
    """Construct the model with the official ``AutoModel`` on ``device``.

    Args:
        device: "cpu" or "cuda:N" (already resolved by the worker). On the CPU the GPU is hidden
            from torch before the model code imports it, because the official classes pick CUDA
            whenever they see it.
        fp16, load_trt, load_vllm: passed when the class accepts them and a GPU is used.

    Returns:
        ``(model, version, facts)``: facts for the status panel, including ``notes`` for flags
        that did not apply.

    Raises:
        FileNotFoundError / ValueError: see :func:`model_version`; ImportError when the code is
        not on ``sys.path`` (see :func:`add_repo_to_path`).
    """
    version, class_name = model_version(model_dir)
    notes: list[str] = []
    if device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # read by torch when CUDA is first used
    else:
        import torch

        torch.cuda.set_device(torch.device(device))
    from cosyvoice.cli import cosyvoice as api

    cls = getattr(api, class_name)
    accepted = inspect.signature(cls.__init__).parameters
    on_gpu = device != "cpu"
    kwargs = {}
    for flag, wanted in (("fp16", fp16), ("load_trt", load_trt), ("load_vllm", load_vllm)):
        if not wanted:
            continue
        if not on_gpu:
            notes.append(f"{flag} applies on CUDA only; not used on the CPU.")
        elif flag not in accepted:
            notes.append(f"{class_name} does not take {flag}; not used.")
        else:
            kwargs[flag] = True
    if hasattr(api, "AutoModel"):
        model = api.AutoModel(model_dir=model_dir, **kwargs)
    else:  # releases before AutoModel: the class itself
        model = cls(model_dir, **kwargs)
    facts = {"device": device, "dtype": "float16" if kwargs.get("fp16") else "float32", "model": type(model).__name__,
             "model_dir": model_dir, "sample_rate_hz": int(model.sample_rate),
             "load_trt": bool(kwargs.get("load_trt")), "load_vllm": bool(kwargs.get("load_vllm"))}
    if notes:
        facts["notes"] = notes
    return model, version, facts
