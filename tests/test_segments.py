import pytest

from cosyvoice_ui.inputs.segments import split_text

EN = ("The first sentence is short. The second one, which has a clause or two, is a little longer! "
      "Is the third a question? ") * 20
ZH = "今天天气很好，我们去公园散步吧。公园里有很多人，有的在跑步，有的在下棋！你想一起去吗？" * 20


@pytest.mark.parametrize("text", [EN, ZH, EN + ZH])
@pytest.mark.parametrize("limit", [40, 80, 200])
def test_segments_fit_and_keep_every_character(text, limit):
    segments = split_text(text, limit)
    assert all(0 < len(s) <= limit for s in segments)
    squash = lambda s: "".join(s.split())  # noqa: E731
    assert squash("".join(segments)) == squash(text)


def test_segments_end_at_sentence_boundaries_when_possible():
    segments = split_text(EN, 200)
    assert all(s.endswith(("." , "!", "?")) for s in segments)
    assert len(segments) <= len(EN) // 150 + 1  # merged up to the limit, not one per sentence


def test_short_text_is_one_segment():
    assert split_text("Hello there.", 200) == ["Hello there."]


def test_run_without_punctuation_or_spaces_is_cut_hard():
    segments = split_text("字" * 450, 200)
    assert [len(s) for s in segments] == [200, 200, 50]


def test_long_words_without_punctuation_split_at_spaces():
    segments = split_text("word " * 100, 42)
    assert all(len(s) <= 42 and not s.startswith(" ") for s in segments)
    assert all(s.split() == ["word"] * len(s.split()) for s in segments)


def test_crossfade_join_length_and_continuity():
    import numpy as np

    from cosyvoice_ui.engines.long_text import crossfade_join

    sr = 1000
    a, b, c = np.ones(300, np.float32), np.ones(200, np.float32), np.ones(30, np.float32)
    out = crossfade_join([a, b, c], sr, crossfade_s=0.05)
    assert len(out) == 300 + 200 + 30 - 50 - 15
    # Equal-power fade of two equal signals: no dip below cos+sin >= 1, no click above sqrt(2).
    assert out.min() >= 0.999 and out.max() <= 1.4143
    assert crossfade_join([], sr).size == 0 and np.array_equal(crossfade_join([a], sr), a)


@pytest.mark.parametrize("keep", ["3.14", "www.example.com", "e.g.", "U.S.A.", "1,000,000", "3:2"])
def test_splitting_never_changes_the_text(keep):
    sentence = f"The value {keep} appears in this sentence, which is long enough to need a split here. "
    text = (sentence * 6).strip()
    segments = split_text(text, 120)
    assert len(segments) > 1
    assert " ".join(segments) == text  # only the spaces between segments are dropped
    assert all(keep in s for s in segments if "value" in s)


def test_joiner_gives_the_same_audio_however_the_segments_arrive_in_chunks():
    """Streaming (chunks) and whole segments must join to identical audio."""
    import numpy as np

    from cosyvoice_ui.engines.long_text import SegmentJoiner, crossfade_join

    rng = np.random.default_rng(0)
    sr = 16000
    segments = [rng.standard_normal(n).astype(np.float32) * 0.1 for n in (8000, 300, 12000, 1601)]
    whole = crossfade_join(segments, sr)
    joiner = SegmentJoiner(sr)
    out = []
    for i, seg in enumerate(segments):
        cuts = np.sort(rng.integers(0, len(seg), 5))
        for piece in np.split(seg, cuts):
            out.append(joiner.push(i, piece))
    out.append(joiner.finish())
    streamed = np.concatenate(out)
    assert len(streamed) == len(whole) == sum(map(len, segments)) - 150 - 150 - 800  # b (300) limits two fades
    np.testing.assert_allclose(streamed, whole, atol=1e-6)


def test_a_long_sentence_is_cut_evenly_not_greedily():
    """Peak memory follows the longest segment: 236 characters in clauses become two similar parts."""
    from bench.texts import PASSAGE

    sentence = next(s for s in PASSAGE.split(". ") if len(s) > 220) + "."
    segments = split_text(sentence, 200)
    assert len(segments) == 2 and " ".join(segments) == sentence
    assert max(map(len, segments)) < 150, [len(s) for s in segments]  # greedy packing gave 189 + 47


def test_numbers_are_split_by_how_long_they_are_spoken():
    """A digit counts as SPOKEN_CHARS_PER_DIGIT characters: fifteen 12-digit amounts are 209
    characters but over a minute and a half of speech, which one segment held (twenty-ninth
    newcomer session). A long run of digits is spelled by clean_text, so it is split between
    digits, never into short runs read as amounts."""
    from cosyvoice_ui.inputs.segments import spoken_chars
    from cosyvoice_ui.inputs.text import clean_text

    segments = split_text(clean_text(" ".join(["999999999999."] * 15)), 200)
    assert len(segments) >= 8 and all(spoken_chars(s) <= 200 for s in segments)
    segments = split_text(clean_text("1" * 210), 200)
    assert len(segments) > 1 and all(set(s.split()) == {"1"} for s in segments)
    assert sum(len(s.split()) for s in segments) == 210
    assert len(split_text("a" * 200, 200)) == 1


@pytest.mark.parametrize("text, limit", [
    ("Please note the reference ID 12345678901-12345678901 for your records today.", 200),
    ("Call 555-123-4567/555-987-6543 today, or 2023/2024/2025/2026/2027/2028.", 100),
    ("Number 123456789012 end.", 100),
    ("Pay 12.50 dollars.", 20),
    ("Please pay 999,999,999,999.99 dollars to account 123,456,789,012.", 60),
    ("Pay 123456789012.123456789012.", 200),
])
def test_a_number_is_never_cut(text, limit):
    """A word heavier than the limit was cut at the limit, inside a number: an ID became two
    other numbers, "12.50" lost its "point" (thirtieth newcomer session); grouped by commas,
    "999,999,999,999" too (thirty-second). The "." after a number as heavy as the limit was a
    segment alone, which failed the request as "no speech sounds"."""
    import re

    from cosyvoice_ui.inputs.segments import _speakable

    segments = split_text(text, limit)
    numbers = re.compile(r"[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?")
    assert len(segments) > 1
    assert [n for s in segments for n in numbers.findall(s)] == numbers.findall(text), segments
    assert all(_speakable(s) for s in segments), segments


def test_symbols_are_split_by_how_long_they_are_spoken():
    """Symbols read as words ("≥": "greater than or equal to") count as SPOKEN_CHARS_PER_SYMBOL:
    300 of them in 607 characters were four segments and 258 s of audio (thirty-second newcomer
    session)."""
    from cosyvoice_ui.inputs.segments import spoken_chars

    for symbol in ("≥", "§", "¶"):  # "§" and "¶" were taken for pauses and joined (thirty-fourth)
        text = "Go " + " ".join([symbol] * 300) + " end."
        segments = split_text(text, 200)
        assert len(segments) >= 25 and all(spoken_chars(s) <= 200 for s in segments), (symbol, len(segments))
        assert " ".join(segments) == text
