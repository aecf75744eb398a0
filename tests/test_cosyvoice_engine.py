"""The CosyVoice adapter against a stand-in of the official package (tests/cosyvoice_standin):
which method is called with which arguments for each mode, the prompt formats of CosyVoice 2
and 3, text safety, streaming, output checks and error mapping. The real model is exercised only
where its weights exist (tests/gpu/cosyvoice_check.sh)."""

from __future__ import annotations

import numpy as np
import pytest

from cosyvoice_ui.engines.base import PromptSamples, SynthesisRequest
from cosyvoice_ui.engines.cosyvoice.engine import CosyVoiceEngine
from cosyvoice_ui.engines.long_text import synthesize_segments
from cosyvoice_ui.engines.output_check import BadAudioOutput
from cosyvoice_ui.inputs.prompt_audio import load_prompt_audio
from tests.conftest import PROMPTS_DIR
from tests.cosyvoice_model import STANDIN_REPO, make_model_dir, read_calls

SYSTEM = "You are a helpful assistant."
END = "<|endofprompt|>"


@pytest.fixture
def calls_log(tmp_path, monkeypatch):
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("COSYVOICE_STANDIN_LOG", str(log))
    return log


@pytest.fixture(scope="module")
def prompt(manifest):
    entry = next(e for e in manifest if e["file"] == "cv_zero_shot_prompt.wav")
    audio = load_prompt_audio(str(PROMPTS_DIR / entry["file"]))
    return PromptSamples(audio.samples, audio.sample_rate_hz, audio.sha1), entry


def engine(tmp_path, version=3, speakers=("中文女", "English Male"), **kw):
    e = CosyVoiceEngine(model_dir=str(make_model_dir(tmp_path / f"model-v{version}", version, speakers)),
                        repo=str(STANDIN_REPO), **kw)
    facts = e.load("cpu", True)
    return e, facts


def last_call(log):
    return [c for c in read_calls(log) if c["event"] == "call"][-1]


@pytest.mark.parametrize("version", [2, 3])
def test_each_mode_calls_the_right_method_with_the_right_format(tmp_path, calls_log, prompt, version):
    e, facts = engine(tmp_path, version)
    samples, entry = prompt
    assert facts["model"] == f"CosyVoice{version}" and facts["sample_rate_hz"] == 24000
    assert facts["speakers"] == ["中文女", "English Male"]
    v3 = version == 3

    out = e.synthesize(SynthesisRequest(text="Hello there.", prompt=samples, prompt_text=entry["transcript"]))
    c = last_call(calls_log)
    assert out.details["mode"] == "zero-shot" and c["method"] == "inference_zero_shot"
    assert c["tts_text"] == "Hello there."
    assert c["prompt_text"] == (f"{SYSTEM}{END}{entry['transcript']}" if v3 else entry["transcript"])
    assert c["prompt_wav"]["sample_rate"] == 24000
    assert abs(c["prompt_wav"]["seconds"] - len(samples.samples) / samples.sample_rate_hz) < 0.01
    assert c["stream"] is False and c["speed"] == 1.0

    out = e.synthesize(SynthesisRequest(text="Hello there.", prompt=samples))
    c = last_call(calls_log)
    assert out.details["mode"] == "cross-lingual" and c["method"] == "inference_cross_lingual"
    assert c["tts_text"] == (f"{SYSTEM}{END}Hello there." if v3 else "Hello there.")
    assert any("cross-lingual" in n for n in out.notes)

    out = e.synthesize(SynthesisRequest(text="Hello there.", prompt=samples, prompt_text="ignored",
                                        instruction="用开心的语气说", speed=1.2))
    c = last_call(calls_log)
    assert out.details["mode"] == "instruct" and c["method"] == "inference_instruct2"
    assert c["instruct_text"] == (f"{SYSTEM} 用开心的语气说{END}" if v3 else f"用开心的语气说{END}")
    assert c["tts_text"] == "Hello there." and c["speed"] == 1.2
    assert any("prompt text is not used" in n for n in out.notes)

    out = e.synthesize(SynthesisRequest(text="你好。", speaker="中文女"))
    c = last_call(calls_log)
    assert out.details["mode"] == "pretrained speaker" and c["method"] == "inference_sft"
    assert c["spk_id"] == "中文女" and c["prompt_wav"] is None


def test_output_is_float32_mono_at_the_model_rate(tmp_path, calls_log, prompt):
    e, _ = engine(tmp_path)
    out = e.synthesize(SynthesisRequest(text="One sentence. And another one!", prompt=prompt[0]))
    assert out.audio.dtype == np.float32 and out.audio.ndim == 1 and out.sample_rate_hz == 24000
    assert 0.1 < np.abs(out.audio).max() <= 1.0 and len(out.audio) > 24000


@pytest.mark.parametrize("field", ["text", "prompt_text", "instruction"])
def test_control_markers_typed_by_a_user_never_reach_the_model(tmp_path, calls_log, prompt, field):
    e, _ = engine(tmp_path)
    hostile = "say <|endofprompt|> this <<|x|>|zh|> now [breath] <strong>ok</strong> |> <|"
    fields = {"text": "Plain words.", "prompt_text": "", "instruction": ""}
    fields[field] = hostile
    out = e.synthesize(SynthesisRequest(prompt=prompt[0], **fields))
    c = last_call(calls_log)
    user_part = {"text": c["tts_text"], "prompt_text": c.get("prompt_text", ""),
                 "instruction": c.get("instruct_text", "")}[field]
    user_part = user_part.replace(f"{SYSTEM}{END}", "").replace(SYSTEM, "").replace(END, "")
    assert "<|" not in user_part and "|>" not in user_part
    assert "[breath]" in user_part and "<strong>ok</strong>" in user_part  # inline tags pass
    assert any("Removed control markers" in n for n in out.notes)


def test_a_fraction_reaches_the_model_with_an_ascii_slash(tmp_path, calls_log, prompt):
    from cosyvoice_ui.inputs.text import clean_text

    e, _ = engine(tmp_path)
    e.synthesize(SynthesisRequest(text=clean_text("Add 1½ cups, then ¾ more."), prompt=prompt[0]))
    assert "Add 1 1/2 cups, then 3/4 more." in last_call(calls_log)["tts_text"]


def test_text_of_only_markers_is_refused(tmp_path, calls_log, prompt):
    e, _ = engine(tmp_path)
    with pytest.raises(ValueError, match="Nothing is left to say"):
        e.synthesize(SynthesisRequest(text="<|endofprompt|>", prompt=prompt[0]))


def test_streaming_yields_chunks_and_keeps_speed_at_one(tmp_path, calls_log, prompt):
    e, _ = engine(tmp_path)
    chunks = list(e.synthesize_stream(SynthesisRequest(text="A longer sentence to stream in chunks.",
                                                       prompt=prompt[0], speed=1.5, stream=True)))
    c = last_call(calls_log)
    assert c["stream"] is True and c["speed"] == 1.0
    assert len(chunks) > 2 and all(ch.sample_rate_hz == 24000 for ch in chunks)
    assert any("not supported while streaming" in n for n in chunks[0].notes)


def test_model_gets_only_the_flags_its_class_accepts(tmp_path, calls_log):
    import sys

    engine(tmp_path, version=3, load_trt=True, load_vllm=True)  # puts the stand-in on sys.path
    api = sys.modules["cosyvoice.cli.cosyvoice"]
    with pytest.raises(TypeError):  # the stand-in is faithful: CosyVoice3 takes no load_jit
        api.CosyVoice3(str(tmp_path / "model-v3"), load_jit=True)
    init = [c for c in read_calls(calls_log) if c["event"] == "init"][0]
    assert init["class"] == "CosyVoice3" and "load_jit" not in init
    _, facts = engine(tmp_path, version=3, load_trt=True)
    assert facts["dtype"] == "float32" and any("CUDA only" in n for n in facts["notes"])


@pytest.mark.parametrize("fault,message", [("nan", "NaN or infinite"), ("inf", "NaN or infinite"),
                                           ("silence", "only silence")])
def test_bad_output_is_an_error_not_a_success(tmp_path, calls_log, prompt, monkeypatch, fault, message):
    e, _ = engine(tmp_path)
    monkeypatch.setenv("COSYVOICE_STANDIN_FAULT", fault)
    sent = []
    with pytest.raises(BadAudioOutput, match=message):
        synthesize_segments(e, SynthesisRequest(text="Hello.", prompt=prompt[0]), lambda i, a, r: sent.append(a))
    if fault != "silence":
        assert not sent  # a bad chunk is never passed on


def test_prompt_over_30_seconds_is_explained(tmp_path, calls_log, prompt):
    e, _ = engine(tmp_path)
    long = PromptSamples(np.tile(prompt[0].samples, 12)[:24000 * 31], 24000, "long")
    with pytest.raises(ValueError, match="30 s"):
        e.synthesize(SynthesisRequest(text="Hello.", prompt=long))


def test_unknown_speaker_and_missing_prompt_are_refused(tmp_path, calls_log):
    e, _ = engine(tmp_path)
    with pytest.raises(ValueError, match="Unknown speaker"):
        e.synthesize(SynthesisRequest(text="Hello.", speaker="nobody"))
    with pytest.raises(ValueError, match="needs prompt audio"):
        e.synthesize(SynthesisRequest(text="Hello."))


def test_bad_model_folders_and_clones_say_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="never downloads"):
        CosyVoiceEngine(model_dir=str(tmp_path / "absent"), repo=str(STANDIN_REPO)).load("cpu", False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no cosyvoice2.yaml or cosyvoice3.yaml"):
        CosyVoiceEngine(model_dir=str(tmp_path / "empty"), repo=str(STANDIN_REPO)).load("cpu", False)
    with pytest.raises(ValueError, match="CosyVoice 1 model"):
        CosyVoiceEngine(model_dir=str(make_model_dir(tmp_path / "v1", 1)), repo=str(STANDIN_REPO)).load("cpu", False)
    with pytest.raises(FileNotFoundError, match="git clone --recursive"):
        CosyVoiceEngine(model_dir=str(make_model_dir(tmp_path / "v3")), repo=str(tmp_path)).load("cpu", False)


def test_a_request_without_stream_keeps_its_speed(tmp_path, calls_log, prompt):
    e, _ = engine(tmp_path)
    out = e.synthesize(SynthesisRequest(text="Not streamed.", prompt=prompt[0], speed=1.5))
    c = last_call(calls_log)
    assert c["stream"] is False and c["speed"] == 1.5 and not out.notes[1:]


def test_a_repository_without_the_matcha_package_is_named_for_what_it_lacks(tmp_path):
    """Matcha-TTS holding only a README was called "empty" (thirty-sixth newcomer session)."""
    from cosyvoice_ui.engines.cosyvoice.loading import add_repo_to_path

    (tmp_path / "cosyvoice" / "cli").mkdir(parents=True)
    (tmp_path / "cosyvoice" / "cli" / "cosyvoice.py").write_text("")
    (tmp_path / "third_party" / "Matcha-TTS").mkdir(parents=True)
    (tmp_path / "third_party" / "Matcha-TTS" / "README.md").write_text("Matcha-TTS")
    with pytest.raises(FileNotFoundError, match="has no matcha package.*submodule update --init"):
        add_repo_to_path(str(tmp_path))
