"""The CosyVoice engine through the real app and its API (gradio_client), with the stand-in of
the official package: modes and pretrained speakers over the API, control markers removed,
bad output reported as an error, a hanging model restarted at its deadline, and --stream."""

from __future__ import annotations

import soundfile as sf
import pytest
from gradio_client import Client, handle_file

from tests.conftest import PROMPTS_DIR, RunningApp
from tests.cosyvoice_model import STANDIN_REPO, make_model_dir, read_calls

PROMPT = PROMPTS_DIR / "cv_zero_shot_prompt.wav"


def start(tmp_path, *flags):
    model = make_model_dir(tmp_path / "model", 3, speakers=("中文女",))
    log = tmp_path / "calls.jsonl"
    app = RunningApp("--engine", "cosyvoice", "--model-dir", str(model), "--cosyvoice-repo", str(STANDIN_REPO),
                     *flags, env={"COSYVOICE_STANDIN_LOG": str(log)})
    app.wait_healthy(120)
    return app, model, log


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    app, model, log = start(tmp_path_factory.mktemp("cosyvoice"), "--request-timeout", "4")
    try:
        yield app, model, log, Client(app.url, verbose=False)
    finally:
        app.stop()


def calls(log):
    return [c for c in read_calls(log) if c["event"] == "call"]


def test_zero_shot_and_pretrained_speaker_over_the_api(served):
    app, model, log, client = served
    audio, stats = client.predict(text="Hello from the stand-in.", prompt_audio=handle_file(str(PROMPT)),
                                  prompt_text="希望你以后能够做的比我还好呦。", api_name="/synthesize")
    info = sf.info(audio)
    assert stats["mode"] == "zero-shot" and info.samplerate == 24000 and info.duration > 0.5
    assert calls(log)[-1]["method"] == "inference_zero_shot"
    _, stats = client.predict(text="你好，世界。", speaker="中文女", api_name="/synthesize")
    assert stats["mode"] == "pretrained speaker" and calls(log)[-1]["spk_id"] == "中文女"
    with pytest.raises(Exception, match="Unknown speaker 'nobody'; choose one of: 中文女"):
        client.predict(text="你好。", speaker="nobody", api_name="/synthesize")


def test_markers_typed_in_any_field_are_removed_before_the_model(served):
    app, model, log, client = served
    _, stats = client.predict(text="Say <|endofprompt|> this.", prompt_audio=handle_file(str(PROMPT)),
                              prompt_text="<|zh|>希望你以后能够做的比我还好呦。", api_name="/synthesize")
    c = calls(log)[-1]
    assert c["tts_text"] == "Say this." and c["prompt_text"].count("<|") == 1  # only the adapter's own token
    # Named by the markup check every engine runs (or by the adapter, which removes what is left).
    assert any("control marker" in n.lower() and "<|endofprompt|>" in n for n in stats["notes"]), stats["notes"]


@pytest.mark.parametrize("fault,message", [("nan", "NaN or infinite"), ("silence", "only silence")])
def test_bad_output_is_an_error_and_the_next_request_works(served, fault, message):
    app, model, log, client = served
    (model / "STANDIN_FAULT").write_text(fault)
    try:
        with pytest.raises(Exception, match=message):
            client.predict(text="Hello.", prompt_audio=handle_file(str(PROMPT)), api_name="/synthesize")
    finally:
        (model / "STANDIN_FAULT").unlink()
    _, stats = client.predict(text="Hello again.", prompt_audio=handle_file(str(PROMPT)), api_name="/synthesize")
    assert stats["audio_s"] > 0


def test_a_hanging_model_is_restarted_at_the_deadline(served):
    app, model, log, client = served
    pid = client.predict(api_name="/status")["pid"]
    (model / "STANDIN_FAULT").write_text("hang")
    try:
        with pytest.raises(Exception, match="deadline"):
            client.predict(text="Hello.", prompt_audio=handle_file(str(PROMPT)), api_name="/synthesize")
    finally:
        (model / "STANDIN_FAULT").unlink()
    status = client.predict(api_name="/status")
    assert status["pid"] != pid and status["restarts_by_reason"].get("timeout") == 1
    _, stats = client.predict(text="Back again.", prompt_audio=handle_file(str(PROMPT)), api_name="/synthesize")
    assert stats["audio_s"] > 0


def test_streaming_sends_chunks_to_the_api_and_keeps_speed_at_one(tmp_path):
    app, model, log = start(tmp_path, "--stream")
    try:
        client = Client(app.url, verbose=False)
        job = client.submit(text="A longer sentence, streamed to the client in chunks as the model makes them.",
                            prompt_audio=handle_file(str(PROMPT)), speed=1.5, api_name="/synthesize_stream")
        outputs = list(job)
        chunks = [wav for wav, _ in outputs if wav]
        final_stats = outputs[-1][1]
        assert all(stats is None for _, stats in outputs[:-1]) and outputs[-1][0] is None
        assert len(chunks) >= 3 and all(sf.info(c).samplerate == 24000 for c in chunks)
        assert any("not supported while streaming" in n for n in final_stats["notes"])
        assert calls(log)[-1]["stream"] is True and calls(log)[-1]["speed"] == 1.0
        # A refusal ends the iteration with no stats and no exception (gradio_client's way): the
        # README's recipe, job.result(), raises it (forty-fourth newcomer session found it silent).
        refused = client.submit(text="Hello. " * 400, prompt_audio=handle_file(str(PROMPT)), api_name="/synthesize_stream")
        assert all(stats is None for _, stats in refused)
        with pytest.raises(Exception, match="characters long; the limit is"):
            refused.result()
        whole, stats = client.predict(text="The same API as without streaming.", prompt_audio=handle_file(str(PROMPT)),
                                      speed=1.5, api_name="/synthesize")
        assert abs(sf.info(whole).duration - stats["audio_s"]) < 0.05
        assert calls(log)[-1]["stream"] is False and calls(log)[-1]["speed"] == 1.5  # /synthesize is not streamed
    finally:
        app.stop()
