"""Stand-in of ``cosyvoice/cli/cosyvoice.py``: ``AutoModel``, ``CosyVoice``, ``CosyVoice2``,
``CosyVoice3`` with the real signatures (CosyVoice3 has no ``load_jit``)."""

import json
import math
import os
import re
import threading
import time

import numpy as np
import soundfile
import torch

import matcha  # noqa: F401 - the real package needs third_party/Matcha-TTS on sys.path too

_SPLIT = re.compile(r"(?<=[.!?。！？;；])\s*")


def _log(event: dict) -> None:
    path = os.environ.get("COSYVOICE_STANDIN_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(event, ensure_ascii=False) + "\n")


def _load_wav(wav, target_sr, min_sr=16000):
    """Like cosyvoice.utils.file_utils.load_wav: a path or file-like object, asserts the rate."""
    data, sr = soundfile.read(wav, dtype="float32", always_2d=True)
    assert sr >= min_sr, "wav sample rate {} must be greater than {}".format(sr, target_sr)
    return data.mean(axis=1), sr


class CosyVoice:
    _yaml = "cosyvoice.yaml"
    sample_rate = 22050

    def __init__(self, model_dir, load_jit=False, load_trt=False, fp16=False, trt_concurrent=1):
        self._init(model_dir, dict(load_jit=load_jit, load_trt=load_trt, fp16=fp16, trt_concurrent=trt_concurrent))

    def _init(self, model_dir, flags):
        self.model_dir = model_dir
        if not os.path.exists(os.path.join(model_dir, self._yaml)):
            raise ValueError("{}/{} not found!".format(model_dir, self._yaml))
        if not torch.cuda.is_available() and any(flags.get(k) for k in ("load_jit", "load_trt", "fp16", "load_vllm")):
            flags = {k: (False if k != "trt_concurrent" else v) for k, v in flags.items()}
        self.fp16 = flags["fp16"]
        self.flags = flags
        spk_file = os.path.join(model_dir, "spk2info.pt")
        self._spks = []
        if os.path.exists(spk_file):  # the stand-in's spk2info is one speaker name per line
            with open(spk_file, encoding="utf-8") as f:
                self._spks = [line.strip() for line in f if line.strip()]
        _log({"event": "init", "class": type(self).__name__, "model_dir": model_dir, **flags})

    def list_available_spks(self):
        return list(self._spks)

    def add_zero_shot_spk(self, prompt_text, prompt_wav, zero_shot_spk_id):
        assert zero_shot_spk_id != "", "do not use empty zero_shot_spk_id"
        self._spks.append(zero_shot_spk_id)
        return True

    # -- the generators -------------------------------------------------------------------

    def inference_sft(self, tts_text, spk_id, stream=False, speed=1.0, text_frontend=True):
        assert spk_id in self._spks, "speaker {} not found".format(spk_id)
        yield from self._tts("inference_sft", tts_text, dict(spk_id=spk_id), None, stream, speed, "")

    def inference_zero_shot(self, tts_text, prompt_text, prompt_wav, zero_shot_spk_id="", stream=False, speed=1.0,
                            text_frontend=True):
        yield from self._tts("inference_zero_shot", tts_text, dict(prompt_text=prompt_text, zero_shot_spk_id=zero_shot_spk_id),
                             prompt_wav, stream, speed, prompt_text)

    def inference_cross_lingual(self, tts_text, prompt_wav, zero_shot_spk_id="", stream=False, speed=1.0,
                                text_frontend=True):
        yield from self._tts("inference_cross_lingual", tts_text, dict(zero_shot_spk_id=zero_shot_spk_id),
                             prompt_wav, stream, speed, "")

    def inference_instruct(self, tts_text, spk_id, instruct_text, stream=False, speed=1.0, text_frontend=True):
        assert type(self) is CosyVoice, "inference_instruct is only implemented for CosyVoice!"
        yield from self._tts("inference_instruct", tts_text, dict(spk_id=spk_id, instruct_text=instruct_text), None,
                             stream, speed, instruct_text)

    def _check_text(self, tts_text, prompt_text):
        pass

    def _tts(self, method, tts_text, extra, prompt_wav, stream, speed, prompt_text):
        prompt = None
        if prompt_wav is not None:
            samples, sr = _load_wav(prompt_wav, 16000)
            assert len(samples) / sr <= 30, "do not support extract speech token for audio longer than 30s"
            prompt = {"seconds": round(len(samples) / sr, 3), "sample_rate": sr}
        _log({"event": "call", "method": method, "tts_text": tts_text, "stream": stream, "speed": speed,
              "prompt_wav": prompt, **extra})
        self._check_text(tts_text, prompt_text)
        if stream is True:
            assert speed == 1.0, "speed change only support non-stream inference mode"
        fault = os.environ.get("COSYVOICE_STANDIN_FAULT", "")
        fault_file = os.path.join(self.model_dir, "STANDIN_FAULT")  # for a worker that is already running
        if not fault and os.path.exists(fault_file):
            with open(fault_file) as f:
                fault = f.read().strip()
        if fault == "llm-error":
            raise RuntimeError("llm thread failed")
        pieces = [p for p in _SPLIT.split(tts_text) if p.strip()] or [tts_text]
        for piece in pieces:  # one yield per text piece, or several chunks of it when streaming
            n = int(self.sample_rate * 0.06 * max(1, len(piece)) / speed)
            t = np.arange(n, dtype=np.float32) / self.sample_rate
            audio = 0.3 * np.sin(2 * math.pi * 200 * t).astype(np.float32)
            if fault == "nan":
                audio[:] = np.nan
            elif fault == "inf":
                audio[n // 2] = np.inf
            elif fault == "silence":
                audio[:] = 0.0
            elif fault == "hang":  # the decode thread waits forever for tokens that never come
                threading.Event().wait()
            hop = int(self.sample_rate * 0.5) if stream else n
            for start in range(0, n, hop):
                if stream:
                    time.sleep(0.01)
                yield {"tts_speech": torch.from_numpy(audio[start:start + hop].copy()).unsqueeze(0)}


class CosyVoice2(CosyVoice):
    _yaml = "cosyvoice2.yaml"
    sample_rate = 24000

    def __init__(self, model_dir, load_jit=False, load_trt=False, load_vllm=False, fp16=False, trt_concurrent=1):
        self._init(model_dir, dict(load_jit=load_jit, load_trt=load_trt, load_vllm=load_vllm, fp16=fp16,
                                   trt_concurrent=trt_concurrent))

    def inference_instruct(self, *args, **kwargs):
        raise NotImplementedError("inference_instruct is not implemented for CosyVoice2!")

    def inference_instruct2(self, tts_text, instruct_text, prompt_wav, zero_shot_spk_id="", stream=False, speed=1.0,
                            text_frontend=True):
        yield from self._tts("inference_instruct2", tts_text,
                             dict(instruct_text=instruct_text, zero_shot_spk_id=zero_shot_spk_id),
                             prompt_wav, stream, speed, instruct_text)


class CosyVoice3(CosyVoice2):
    _yaml = "cosyvoice3.yaml"
    sample_rate = 24000

    def __init__(self, model_dir, load_trt=False, load_vllm=False, fp16=False, trt_concurrent=1):
        self._init(model_dir, dict(load_trt=load_trt, load_vllm=load_vllm, fp16=fp16, trt_concurrent=trt_concurrent))

    def _check_text(self, tts_text, prompt_text):
        assert "<|endofprompt|>" in tts_text + prompt_text, \
            "<|endofprompt|> not detected in CosyVoice3 text or prompt_text, check your input!"


def AutoModel(**kwargs):
    """Picks the class from the yaml file the model folder holds (keyword arguments only)."""
    model_dir = kwargs["model_dir"]
    if not os.path.exists(model_dir):
        raise RuntimeError("the stand-in cannot download {} (the real one would)".format(model_dir))
    for cls in (CosyVoice, CosyVoice2, CosyVoice3):
        if os.path.exists(os.path.join(model_dir, cls._yaml)):
            return cls(**kwargs)
    raise TypeError("No valid model type found!")
