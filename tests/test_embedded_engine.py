"""The embedded engine on real prompts: speech-like output, instructions that change prosody,
and a clone that moves toward the prompt (resemblyzer speaker similarity)."""

from __future__ import annotations

import numpy as np
import pytest

from cosyvoice_ui.engines.base import PromptSamples, SynthesisRequest
from cosyvoice_ui.engines.embedded import voice_conversion as vc
from cosyvoice_ui.engines.embedded.engine import EmbeddedEngine
from cosyvoice_ui.inputs.prompt_audio import frame_rms_dbfs, load_prompt_audio

from .conftest import prompt_files

SENTENCE = "The quick brown fox jumps over the lazy dog, and then it runs back home."


@pytest.fixture(scope="module")
def engine():
    e = EmbeddedEngine()
    e.load("cpu", False)
    return e


def _prompt(path) -> PromptSamples:
    p = load_prompt_audio(str(path))
    return PromptSamples(p.samples, p.sample_rate_hz, p.sha1)


def assert_speech_like(audio: np.ndarray, sr: int, text: str) -> None:
    seconds = len(audio) / sr
    # English is read at roughly 10-20 characters per second.
    assert len(text) / 25 < seconds < len(text) / 6, seconds
    assert audio.dtype == np.float32 and np.all(np.isfinite(audio))
    assert np.max(np.abs(audio)) < 0.999, "clipped"
    levels = frame_rms_dbfs(audio, sr)
    assert np.mean(levels > -45) > 0.5, "mostly silent"
    assert np.mean(np.abs(audio) >= 0.99) < 0.001


@pytest.mark.parametrize("path", prompt_files(), ids=lambda p: p.name)
def test_each_real_prompt_gives_speech(engine, path):
    out = engine.synthesize(SynthesisRequest(text=SENTENCE, prompt=_prompt(path)))
    assert out.sample_rate_hz == 22050
    assert_speech_like(out.audio, out.sample_rate_hz, SENTENCE)
    # Pitch moved to the prompt's (measured with Harvest, which makes fewer voicing errors than
    # the engine's fast DIO on high voices): the output's geometric-mean F0 (the statistic the conversion
    # matches) within 20 % of the prompt's, and closer to it than Piper's own.
    def measured_f0(out) -> float:
        f0 = vc.analyze(out.audio.astype(np.float64), out.sample_rate_hz, accurate_f0=True).f0_hz
        return float(np.exp(np.mean(np.log(f0[f0 > 0]))))

    measured = measured_f0(out)
    target, source = out.details["f0_target_hz"], out.details["f0_source_hz"]
    if abs(measured - target) / target >= 0.2:
        # Piper draws its noise at random, and one draw measured 183.5 Hz for a 234 Hz target
        # (f5_basic_ref_zh.wav, in session 28's CI; 21 local runs passed): the median of three decides.
        more = [measured_f0(engine.synthesize(SynthesisRequest(text=SENTENCE, prompt=_prompt(path))))
                for _ in range(2)]
        measured = float(np.median([measured, *more]))
    assert abs(measured - target) / target < 0.2, (measured, target)
    if abs(np.log(source / target)) > 0.15:  # Piper's pitch clearly differs from the prompt's
        assert abs(np.log(measured / target)) < abs(np.log(source / target))


def _f0_and_level(out):
    f0 = vc.analyze(out.audio.astype(np.float64), out.sample_rate_hz).f0_hz
    rms = float(np.sqrt(np.mean(out.audio ** 2)))
    return f0, rms


def test_instructions_change_prosody(engine):
    def run(instruction):
        return engine.synthesize(SynthesisRequest(text=SENTENCE, instruction=instruction))
    def mean_length(instruction):  # Piper draws durations at random (noise_w): average 3 runs
        return np.mean([len(run(instruction).audio) for _ in range(3)])
    neutral = run("")
    neutral_len = mean_length("")
    assert mean_length("fast") < 0.88 * neutral_len  # length_scale 0.75 asked
    assert mean_length("慢一点") > 1.15 * neutral_len  # 1.35 asked
    loud_rms = _f0_and_level(run("loud"))[1]
    soft_rms = _f0_and_level(run("小声"))[1]
    assert loud_rms > 2.5 * soft_rms  # +6 dB vs -6 dB
    # Pooled over 3 runs, as the lengths are: Piper draws its noise at random, and one pair of
    # runs gave a range ratio of 1.40 where 1.7-2.75 is usual (ninth session, /tmp/s9/prosody.py).
    happy_f0 = np.concatenate([_f0_and_level(run("happy"))[0] for _ in range(3)])
    sad_f0 = np.concatenate([_f0_and_level(run("用悲伤的语气"))[0] for _ in range(3)])
    assert np.median(happy_f0[happy_f0 > 0]) > 1.15 * np.median(sad_f0[sad_f0 > 0])
    happy_lf0 = np.log(happy_f0[happy_f0 > 0])
    sad_lf0 = np.log(sad_f0[sad_f0 > 0])
    def iqr(x):  # robust spread: F0 trackers make octave errors
        return np.subtract(*np.percentile(x, [75, 25]))
    assert iqr(happy_lf0) > 1.5 * iqr(sad_lf0)  # wider pitch range (1.35 vs 0.6 asked)
    whisper_f0 = _f0_and_level(run("whisper"))[0]
    neutral_f0 = _f0_and_level(neutral)[0]
    assert np.mean(whisper_f0 > 0) < 0.5 * np.mean(neutral_f0 > 0)  # voicing mostly gone


def test_unapplied_instruction_is_reported(engine):
    out = engine.synthesize(SynthesisRequest(text="Hello there.", instruction="sarcastic and happy"))
    assert out.details["styles"] == ["happy"]
    assert any("sarcastic" in n for n in out.notes)


def test_clone_moves_toward_each_prompt(engine):
    """Speaker similarity to the prompt (resemblyzer GE2E) rises when the voice is converted.

    Each prompt is compared with the same Piper rendering converted and unconverted. Piper adds
    noise per call, so the check is on the mean over the ten prompts plus a bound per prompt.
    """
    resemblyzer = pytest.importorskip("resemblyzer")
    encoder = resemblyzer.VoiceEncoder("cpu", verbose=False)
    text = ("Please call Stella and ask her to bring these things with her from the store. "
            "I hope you have a wonderful day.")
    base = engine.synthesize(SynthesisRequest(text=text))
    base_embedding = encoder.embed_utterance(resemblyzer.preprocess_wav(base.audio, source_sr=base.sample_rate_hz))
    gains = []
    for path in prompt_files():
        prompt = _prompt(path)
        target = encoder.embed_utterance(resemblyzer.preprocess_wav(prompt.samples, source_sr=prompt.sample_rate_hz))
        out = engine.synthesize(SynthesisRequest(text=text, prompt=prompt))
        converted = encoder.embed_utterance(resemblyzer.preprocess_wav(out.audio, source_sr=out.sample_rate_hz))
        gains.append(float(converted @ target - base_embedding @ target))
    print("similarity gains:", np.round(gains, 3))
    assert np.mean(gains) > 0.02, gains
    # ONNX Runtime's noise is unseeded: one prompt's gain reached -0.0303 in a full run (2026-11-30)
    # while the mean held; the per-prompt bound only catches a conversion that moves away.
    assert min(gains) > -0.05, gains
    assert sum(g > 0 for g in gains) >= 7, gains


def test_non_speech_prompt_is_refused(engine):
    sr = 24000
    rng = np.random.default_rng(0)
    noise = (0.1 * rng.standard_normal(3 * sr)).astype(np.float32)
    with pytest.raises(ValueError, match="voiced speech"):
        engine.synthesize(SynthesisRequest(text="Hello.", prompt=PromptSamples(noise, sr, "noise")))


def _run(engine, request):
    from cosyvoice_ui.engines.long_text import synthesize_segments

    chunks = []
    summary = synthesize_segments(engine, request, lambda i, audio, rate: chunks.append(audio))
    return np.concatenate(chunks), summary.details["seed"]


def test_random_seed_is_reported_and_reproduces_the_result():
    """seed=-1 draws one seed for the whole request and reports it; sending that seed back gives
    the same audio (PyTorch backend, which takes a seed); a different seed gives other audio."""
    from cosyvoice_ui.engines.embedded.engine import EmbeddedTorchEngine

    torch_engine = EmbeddedTorchEngine()
    torch_engine.load("cpu", False)
    segments = ("The first part is here.", "And the second part follows it.")
    request = SynthesisRequest(text=" ".join(segments), segments=segments, seed=-1)
    first, seed = _run(torch_engine, request)
    assert isinstance(seed, int) and 0 <= seed <= 2**31 - 1
    again, seed_again = _run(torch_engine, SynthesisRequest(text=request.text, segments=segments, seed=seed))
    assert seed_again == seed and np.array_equal(first, again)
    other, _ = _run(torch_engine, SynthesisRequest(text=request.text, segments=segments, seed=seed ^ 1))
    assert len(other) != len(first) or not np.allclose(other, first)


def test_onnx_backend_reports_no_seed(engine):
    """ONNX Runtime draws its own noise: no seed is reported rather than one that would not
    reproduce anything."""
    _, seed = _run(engine, SynthesisRequest(text=SENTENCE))
    assert seed is None


def test_powers_and_fractions_are_read_as_such(engine):
    """clean_text marks them (10^5, 1 1⁄2); espeak-ng read "1/2" as "one slash two", skipped the
    fraction slash and read the joined "11⁄2" as "eleven two"."""
    from cosyvoice_ui.engines.embedded.reading import read_powers_and_fractions
    from cosyvoice_ui.inputs.text import clean_text

    def spoken(text: str) -> str:
        return " ".join("".join(s) for s in engine._voice.phonemize(read_powers_and_fractions(clean_text(text))))

    assert spoken("1½ cups") == spoken("one and one half cups")
    assert spoken("¾ of it") == spoken("three quarters of it")
    assert spoken("10⁵ stars") == spoken("ten to the power of five stars")
    assert spoken("x² and y³") == spoken("x squared and y cubed")
    assert spoken("(a+b)²") == spoken("(a+b) squared") and spoken("2ⁿ") == spoken("two to the power of n")
    assert spoken("Try 10⁽⁵⁾ now.") == spoken("Try ten to the power of five now.")
    # Typed by hand, a proper fraction with a denominator up to 10 (twenty-seventh newcomer session);
    # "24/7", "9/11" and dates are left as they are.
    assert spoken("Add 1 1/2 cups.") == spoken("Add one and one half cups.")
    assert spoken("3/4") == spoken("three quarters")
    for kept in ("24/7", "9/11", "1/2/2024", "Meet on 3/4 at noon.", "Ask me 2/3 times."):
        assert spoken(kept) == " ".join("".join(s) for s in engine._voice.phonemize(kept))
    # Before other words, a score or a date: "rated 4 fifths stars" (thirty-ninth newcomer session).
    assert spoken("Rated 4/5 stars.") == spoken("Rated 4 out of 5 stars.")
    assert spoken("This is step 1/3 of the setup.") == spoken("This is step 1 out of 3 of the setup.")
    assert spoken("Add 3/4 cup, then 1/2-inch cubes and 1/3 of the rest.") == spoken(
        "Add three quarters cup, then one half-inch cubes and one third of the rest.")
    assert "ɪlˈɛvən" not in spoken("1½")


def test_every_digit_of_a_long_number_is_spoken(engine):
    """espeak-ng says at most about 44 digits of one run, and its number names lose digits from
    21 digits on: 200 "1"s gave 4.5 s of audio, like 40 of them (twenty-third newcomer session).
    clean_text spells long runs (every engine gets cleaned text), so the engine does not again."""
    from cosyvoice_ui.inputs.text import clean_text, spell_long_digit_runs

    def spoken(text: str) -> str:
        return " ".join("".join(s) for s in engine._voice.phonemize(spell_long_digit_runs(text)))

    assert spoken("1" * 200).count("wˈʌn") == 200
    decimals = "14159265358979323846264338327950288419716939937510582097494459"
    assert spoken("Pi is 3." + decimals + ".").count("nˈaɪn") == decimals.count("9")
    assert "bˈɪliən" in spoken("It costs 123456789012 dollars.")  # a 12-digit amount stays an amount
    # Grouped by commas, too: cut between groups it was read as two amounts (thirty-second newcomer session).
    assert spoken("Total 999,999,999,999,999,999,999 now.").count("nˈaɪn") == 21
    assert "bˈɪliən" in spoken("It costs 123,456,789,012 dollars.")

    seconds = {n: len(engine.synthesize(SynthesisRequest(text=clean_text("1" * n))).audio) / 22050 for n in (40, 80)}
    assert 1.7 < seconds[80] / seconds[40] < 2.3, seconds


def test_symbols_count_as_the_words_they_are_read_as(engine):
    """Segments and admission measure text with spoken_chars: forty "≥" ("greater than or equal
    to" each) counted as 87 characters were 37 s of audio, and a 607-character text of them 258 s
    in 200-character segments (thirty-second newcomer session). Counted by spoken_chars, a text of
    symbols is no more speech per character than an ordinary sentence (phonemes as the measure)."""
    from cosyvoice_ui.engines.embedded.reading import read_powers_and_fractions
    from cosyvoice_ui.inputs.segments import spoken_chars
    from cosyvoice_ui.inputs.text import clean_text

    def phonemes_per_char(text: str) -> float:
        cleaned = clean_text(text)
        phonemes = "".join("".join(s) for s in engine._voice.phonemize(read_powers_and_fractions(cleaned)))
        return len(phonemes) / spoken_chars(cleaned)

    plain = phonemes_per_char(SENTENCE)
    for symbol in "≥ ± ℃ ∑ √ ∞ © → € § ¶ \\ ♥ $ +".split():
        assert phonemes_per_char("Go " + " ".join([symbol] * 10) + " end.") < 1.2 * plain, symbol
    assert phonemes_per_char("It costs 999999999999 dollars, or 1½ of it.") < 1.2 * plain


def test_a_segment_of_unspoken_symbols_is_skipped_not_fatal(engine):
    """A line of box-drawing characters between paragraphs became segments of their own, which
    espeak says nothing for, and the whole request failed with "no speech sounds" (thirty-fourth
    newcomer session). Such segments are skipped with a note; text of nothing else is still refused."""
    from cosyvoice_ui.engines.base import NoSpeechSounds
    from cosyvoice_ui.engines.long_text import synthesize_segments
    from cosyvoice_ui.inputs.segments import split_text
    from cosyvoice_ui.inputs.text import clean_text

    def run(text):
        cleaned = clean_text(text)
        chunks = []
        summary = synthesize_segments(engine, SynthesisRequest(text=cleaned, segments=tuple(split_text(cleaned, 200))),
                                      lambda i, audio, rate: chunks.append(audio))
        return np.concatenate(chunks), summary

    words, _ = run("First part of the story. Second part of the story.")
    audio, summary = run("First part of the story.\n" + "─" * 30 + "\nSecond part of the story.")
    assert abs(len(audio) - len(words)) < 0.25 * len(words), (len(audio), len(words))
    assert any("had nothing the voice can say" in n and "were skipped" in n for n in summary.notes), summary.notes
    _, summary = run("Okay. " + " ".join(["⇒"] * 10))  # one segment skipped: "was", not "were" (thirty-sixth)
    assert any("1 of 2 segments" in n and "was skipped" in n for n in summary.notes), summary.notes
    with pytest.raises(NoSpeechSounds):
        run("⇒" * 40)


def test_a_minus_before_a_currency_amount_is_spoken(engine):
    """espeak-ng read "-$50" as "dollar fifty": a refund was spoken as a payment (thirty-seventh
    newcomer session). Compared in phonemes with the words written out."""
    from cosyvoice_ui.engines.embedded.reading import read_signed_amounts

    def spoken(text: str) -> str:
        return " ".join("".join(s) for s in engine._voice.phonemize(read_signed_amounts(text)))

    assert spoken("Refund of -$50.") == spoken("Refund of minus $50.") != spoken("Refund of $50.")
    assert spoken("Account -£400 overdrawn.") == spoken("Account minus £400 overdrawn.")
    assert spoken("It was -5 degrees.") == " ".join("".join(s) for s in engine._voice.phonemize("It was -5 degrees."))
    assert read_signed_amounts("A-$5 rate, pre-$") == "A-$5 rate, pre-$"  # inside words: left alone


def test_speed_and_a_slow_instruction_together_stay_within_the_speed_range(engine):
    """Speed 0.5 with "sad and slow" multiplied the phoneme durations to 3.2 times and made audio
    2.7 times as long as speed 1.0, with no note (thirty-seventh newcomer session). The product is
    kept within what speed alone reaches (0.5-2.0), and the note says so."""
    def run(speed, instruction):
        return engine.synthesize(SynthesisRequest(text=SENTENCE, instruction=instruction, speed=speed, seed=1))

    slowest, both = run(0.5, ""), run(0.5, "sad and slow")
    assert 0.9 < len(both.audio) / len(slowest.audio) < 1.1, (len(both.audio), len(slowest.audio))
    assert any("kept to 2 times, as slow as speed alone goes" in n for n in both.notes), both.notes
    fastest, both = run(2.0, ""), run(2.0, "fast")
    assert 0.9 < len(both.audio) / len(fastest.audio) < 1.1
    assert any("as fast as speed alone goes" in n for n in both.notes), both.notes
    assert not any("kept to" in n for n in run(1.0, "sad and slow").notes)  # 1.59: within the range


def test_amounts_of_money_are_read_as_amounts(engine):
    """espeak-ng read "$50" as "dollar fifty" (heard as $1.50), "$1.2M" as "dollar one point two M",
    and "€1.234,56" as "euros one point two three four, fifty six", a thousandth of the amount
    (thirty-ninth newcomer session). Compared in phonemes with the amounts written out."""
    from cosyvoice_ui.engines.embedded.reading import (read_currency_amounts, read_dates_times_and_ranges,
                                                      read_signed_amounts)
    from cosyvoice_ui.inputs.text import clean_text

    def spoken(text: str, plain: bool = False) -> str:
        text = text if plain else read_currency_amounts(read_signed_amounts(read_dates_times_and_ranges(clean_text(text))))
        return " ".join("".join(s) for s in engine._voice.phonemize(text))

    cases = {
        "It costs $50 today.": "It costs 50 dollars today.",
        "A refund of -$50.": "A refund of minus 50 dollars.",
        "They raised $1.2M and £5.": "They raised 1.2 million dollars and 5 pounds.",
        "I paid €1.234,56 for the car.": "I paid 1234 euros and 56 cents for the car.",
        "It costs 1.234,56 € in Germany.": "It costs 1234 euros and 56 cents in Germany.",
        "From €9,99 to €12,50, or $0.50.": "From 9 euros and 99 cents to 12 euros and 50 cents, or 50 cents.",
        "A $1 coin, US$20 and 50k € prize.": "A 1 dollar coin, US 20 dollars and 50 thousand euros prize.",
        # Indian grouping and ranges (fortieth newcomer session)
        "It costs ₹1,00,000 or ₹2.5 lakh.": "It costs 100000 rupees or 2.5 lakh rupees.",
        "Pay $50-100, $50-$100 or $50k-$80k.": "Pay 50 dollars to 100, 50 dollars to 100 dollars or 50 thousand dollars to 80 thousand dollars.",
    }
    for typed, words in cases.items():
        assert spoken(typed) == spoken(words, plain=True), typed
    assert spoken("The $ sign and 1.234 and 3,14.") == spoken("The $ sign and 1.234 and 3,14.", plain=True)


def test_dates_times_and_ranges_are_read_as_such(engine):
    """espeak-ng read "2026-11-30" as "2026 dash 11 dash 30", "10–12" as "ten twelve", "9-5" as
    "nine dash five" and "9:00" as "nine zero zero" (thirty-ninth newcomer session). Compared in
    phonemes with the words written out; phone numbers and names with numbers stay as they were."""
    from cosyvoice_ui.engines.embedded.reading import read_dates_times_and_ranges
    from cosyvoice_ui.inputs.text import clean_text

    def spoken(text: str, plain: bool = False) -> str:
        text = text if plain else read_dates_times_and_ranges(clean_text(text))
        return " ".join("".join(s) for s in engine._voice.phonemize(text))

    cases = {
        "Due 2026-11-30 at 14:05.": "Due November 30, 2026 at 14 oh 5.",
        "Open 9-5, or 9:00-17:00, for 10–12 people.": "Open 9 to 5, or 9 o'clock to 17 o'clock, for 10 to 12 people.",
        "Add 2-3 tbsp at 9:00 am.": "Add 2 to 3 tbsp at 9 am.",
        # fortieth newcomer session; years read as years since the forty-fifth
        "From 1939-1945, pages 100-120.": "From 19 39 to 19 45, pages 100 to 120.",
    }
    for typed, words in cases.items():
        assert spoken(typed) == spoken(words, plain=True), typed
    kept = "Call 555-1234 or 1-800-555-1234, COVID-19, 1-2-3, at 9:30 in 16:9, serial 1234-12-12, due 2026-02-30."
    assert spoken(kept) == spoken(kept, plain=True)


def test_comparisons_and_a_spaced_minus_are_spoken(engine):
    """espeak-ng says nothing for "<", ">" and a spaced "-": "a<b" was read "a b", "Price <$50"
    "price 50 dollars" and "5 - 3 = 2" "five three equals two" (fortieth newcomer session)."""
    from cosyvoice_ui.engines.embedded.reading import read_comparisons, read_currency_amounts
    from cosyvoice_ui.inputs.text import clean_text

    def spoken(text: str, plain: bool = False) -> str:
        text = text if plain else read_comparisons(read_currency_amounts(clean_text(text)))
        return " ".join("".join(s) for s in engine._voice.phonemize(text))

    assert spoken("If a<b and x >= 2, then 5 - 3 = 2.") == spoken(
        "If a less than b and x greater than or equal to 2, then 5 minus 3 = 2.", plain=True)
    assert spoken("Price <$50.") == spoken("Price less than 50 dollars.", plain=True)
    kept = "Press <Enter>, go - now, a -> b."
    assert spoken(kept) == spoken(kept, plain=True)


def test_slash_dates_subtraction_about_and_times_are_read_as_meant(engine):
    """"12/25/1990" was read "12 slash 25 slash 1990", "10-2 = 8" as a range "10 to 2", "~$50"
    "tilde 50 dollars" and "rose 3x" "3 x" (forty-first newcomer session)."""
    from cosyvoice_ui.engines.embedded.reading import (read_comparisons, read_currency_amounts,
                                                      read_dates_times_and_ranges)
    from cosyvoice_ui.inputs.text import clean_text

    def spoken(text: str, plain: bool = False) -> str:
        text = text if plain else read_comparisons(read_currency_amounts(read_dates_times_and_ranges(clean_text(text))))
        return " ".join("".join(s) for s in engine._voice.phonemize(text))

    assert spoken("Born 12/25/1990, or 25/12/1990 in Britain.") == spoken(
        "Born December 25, 19 90, or December 25, 1990 in Britain.", plain=True)  # a year before "," (forty-fifth)
    assert spoken("So 10-2 = 8, it costs ~$50, and it rose 3x.") == spoken(
        "So 10 minus 2 = 8, it costs about 50 dollars, and it rose 3 times.", plain=True)
    kept = "On 03/04/2025, a 4x4 car."
    assert spoken(kept) == spoken(kept, plain=True)


def test_minus_signs_video_positions_and_years_are_read_as_meant():
    """Forty-fifth newcomer session: "(-20%)" was "twenty percent", "x = -1" "x equals one",
    "0:00 Intro" "zero o'clock intro", "1879" "one thousand eight hundred seventy nine"."""
    from cosyvoice_ui.engines.embedded.reading import spoken_form

    assert spoken_form("Shares (-20%) today, x = -1, [-5, 5].") == "Shares (minus 20%) today, x = minus 1, [minus 5, 5]."
    assert spoken_form("0:00 Intro 0:03 Setup, at 9:00.") == "0:00 Intro 0:03 Setup, at 9 o'clock."
    assert spoken_form("Born 1879-03-14, in 1905. From 1939 to 1945, in 1900.") == \
        "Born March 14, 18 79, in 19 oh 5. From 19 39 to 19 45, in 19 hundred."
    assert spoken_form("in 1500 cases, 1879 people, in 2024.") == "in 1500 cases, 1879 people, in 2024."


def test_symbols_the_voice_has_no_name_for_are_left_out_with_a_note(engine):
    """"★★★★☆" was read "symbol two six zero five" five times: 9.5 s instead of 1.6 s (forty-fifth)."""
    def spoken(text):
        out = engine.synthesize(SynthesisRequest(text=text, prompt=None, prompt_text="", instruction="", speed=1.0,
                                                 seed=1, segments=(text,), speaker=""))
        return len(out.audio) / out.sample_rate_hz, out.notes

    stars_s, notes = spoken("Rating: ★★★★☆ 4 out of 5.")
    plain_s, plain_notes = spoken("Rating: 4 out of 5.")
    assert "Left out, as the voice has no name for them: ★ ☆." in notes
    assert not any("Left out" in n for n in plain_notes)
    assert stars_s < 1.3 * plain_s
    _, notes = spoken("Turn right → now, © 2024 😀.")  # named by espeak-ng: read
    assert not any("Left out" in n for n in notes)


def test_double_brackets_are_read_as_words_not_phonemes(engine):
    """Piper reads what stands between [[ and ]] as phoneme symbols: a wiki link pasted with the
    text ("See [[Main Page]]") was spoken as the letters' phonemes, "Main Page" unread. The
    brackets are kept apart, silent, and the words read."""
    plain = engine._sentences("See Main Page for details.")
    for text in ("See [[Main Page]] for details.", "See [[[Main Page]]] for details."):
        assert engine._sentences(text) == plain, text
