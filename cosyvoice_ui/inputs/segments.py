"""Splitting long text into segments the model can take one at a time (web process, pure).

Activations grow with the length of what the model sees at once, so a long text is split at
sentence boundaries (Chinese and English punctuation), then at clause boundaries, then at spaces,
and only as a last resort inside a run of characters. Whole sentences are packed into segments
up to the limit; a sentence longer than the limit is cut into as few, and as even, parts as the
limit allows, since the longest segment sets the peak memory.
"""

from __future__ import annotations

import functools
import re
import unicodedata

# ASCII punctuation ends a sentence or clause only before a space or the end ("3.14", "e.g.x",
# "1,000" and "www.example.com" stay whole); CJK punctuation ends one wherever it stands.
_SENTENCE_END = re.compile(r"(?:[.!?;…]+[\"'”’)\]]*(?=\s|$)|[。！？；]+[”’）」』]*)\s*")
_CLAUSE_END = re.compile(r"(?:[,:]+(?=\s)|[，、：—–]+)\s*")
_SPACE = re.compile(r"\s+")


def _spans(text: str, start: int, end: int, pattern: re.Pattern) -> list[tuple[int, int]]:
    """Split text[start:end] after each match of ``pattern``; spans keep the original characters."""
    out, pos = [], start
    for m in pattern.finditer(text, start, end):
        if m.end() > pos:
            out.append((pos, m.end()))
            pos = m.end()
    if pos < end:
        out.append((pos, end))
    return [(a, b) for a, b in out if text[a:b].strip()]


# A digit is spoken as several letters' worth of sound ("999999999999" is read "nine hundred
# ninety-nine billion, ..." in about 110 letters); counted as one character, 15 such numbers made
# a 209-character segment of 111 s of audio whose peak was four times admission's prediction
# (twenty-ninth newcomer session). Lengths here and in admission count each digit as this many.
SPOKEN_CHARS_PER_DIGIT = 10


# A symbol is read as a word or several ("≥" is "greater than or equal to", "℃" "degrees
# Celsius"): forty "≥" in an 87-character text were 37 s of audio, a segment of them 90 s, and
# their peaks up to twice admission's prediction (thirty-second newcomer session). Counted as one
# character each, they slipped past both the segment limit and admission. Every Unicode symbol
# (categories Sm, Sc, Sk, So: math, currency, arrows, ©, °, emoji) and the punctuation that is
# read as a word counts as this many, about the longest such reading.
SPOKEN_CHARS_PER_SYMBOL = 20
_WORDLIKE_PUNCTUATION = frozenset("%‰‱&@#§¶†‡*\\")


@functools.lru_cache(maxsize=4096)
def _weight(ch: str) -> int:
    if ch in "0123456789":
        return SPOKEN_CHARS_PER_DIGIT
    if ch in _WORDLIKE_PUNCTUATION or unicodedata.category(ch).startswith("S"):
        return SPOKEN_CHARS_PER_SYMBOL
    return 1


def spoken_chars(text: str) -> int:
    """The length of ``text`` as :func:`split_text` and admission count it: characters, with
    each ASCII digit counted as :data:`SPOKEN_CHARS_PER_DIGIT` (clean_text has made every script's
    digits ASCII) and each symbol (``≥ ± ℃ € → ©``, ``% & @``) as :data:`SPOKEN_CHARS_PER_SYMBOL`.
    A proxy for how much audio, and so memory, a segment takes."""
    return sum(map(_weight, text))


def _stripped_len(text: str, a: int, b: int) -> int:
    return spoken_chars(text[a:b].strip())


# A number (up to 12 digits, grouped by commas or not, with its decimal part) is never cut: cut
# inside, "12345678901" or "12.50" became two numbers, or lost the "point" (thirtieth newcomer
# session; grouped, "999,999,999,999", the thirty-second). Capped, so a
# segment stays bounded: longer runs are spelled a digit at a time by clean_text anyway.
_NUMBER = re.compile(r"(?:[0-9]{1,3}(?:,[0-9]{3}){1,3}(?![0-9])|[0-9]{1,12})(?:\.[0-9]{1,12})?")


def _hard_cut(text: str, e: int, max_chars: int) -> int:
    """The end of the longest stretch from ``e`` within ``max_chars``, cut only between numbers
    and other characters; at least one character, or the whole number that starts at ``e`` (so a
    number may exceed a small limit, by at most 25 characters' worth)."""
    end, used = e, 0
    while end < len(text):
        number = _NUMBER.match(text, end)
        step = number.end() - end if number else 1
        used += spoken_chars(text[end:end + step])
        if used > max_chars and end > e:
            break
        end += step
    return end


def split_text(text: str, max_chars: int) -> list[str]:
    """Split ``text`` into segments of at most ``max_chars`` characters, as :func:`spoken_chars`
    counts them (a digit counts as several).

    Args:
        text: cleaned text (single spaces, no control characters).
        max_chars: segment limit (``--max-segment-chars``), at least 1.

    Returns:
        Non-empty segments, each an unchanged stretch of the text (only the spaces between
        segments are dropped); a text within the limit comes back as one segment.
    """
    text = text.strip()
    if spoken_chars(text) <= max_chars:
        return [text] if text else []
    pieces: list[tuple[int, int, int]] = []  # (start, end, sentence number)
    for n, (a, b) in enumerate(_spans(text, 0, len(text), _SENTENCE_END)):
        if _stripped_len(text, a, b) <= max_chars:
            pieces.append((a, b, n))
            continue
        parts: list[tuple[int, int]] = []
        for c, d in _spans(text, a, b, _CLAUSE_END):
            if _stripped_len(text, c, d) <= max_chars:
                parts.append((c, d))
                continue
            for e, f in _spans(text, c, d, _SPACE):
                while _stripped_len(text, e, f) > max_chars:  # a run with no space: cut it hard
                    while text[e].isspace():
                        e += 1
                    cut = _hard_cut(text, e, max_chars)
                    parts.append((e, cut))
                    e = cut
                if text[e:f].strip():
                    parts.append((e, f))
        pieces.extend((c, d, n) for c, d in _balanced(text, parts, max_chars))
    segments: list[tuple[int, int, int]] = []
    for a, b, n in pieces:
        # Whole sentences are packed up to the limit; the balanced parts of one long sentence stay apart.
        if segments and segments[-1][2] != n and _stripped_len(text, segments[-1][0], b) <= max_chars:
            segments[-1] = (segments[-1][0], b, n)
        else:
            segments.append((a, b, n))
    return [text[a:b].strip() for a, b in _without_silent_segments(text, [(a, b) for a, b, _ in segments])]


def is_spoken(ch: str) -> bool:
    """Whether a character is heard: letters, digits and what is read as a word (symbols, "§ % &").
    Punctuation, combining marks, ``_`` and spaces are not. "§" alone was taken for a pause and a
    hundred of them joined into one 41 s segment (thirty-fourth newcomer session)."""
    return ch.isalnum() or _weight(ch) > 1


def _speakable(segment: str) -> bool:
    return any(map(is_spoken, segment))


def _without_silent_segments(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Punctuation alone (the "." after a number as heavy as the limit) is joined to the segment
    before it, or after it when first: alone it is no speech, and the engine failed the whole
    request with "no speech sounds" (thirty-second newcomer session). A segment goes over the
    limit this way only by punctuation, which is not spoken."""
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if out and (not _speakable(text[a:b]) or not _speakable(text[out[-1][0]:out[-1][1]])):
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _greedy(text: str, parts: list[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    groups: list[tuple[int, int]] = []
    for a, b in parts:
        if groups and _stripped_len(text, groups[-1][0], b) <= limit:
            groups[-1] = (groups[-1][0], b)
        else:
            groups.append((a, b))
    return groups


def _balanced(text: str, parts: list[tuple[int, int]], max_chars: int) -> list[tuple[int, int]]:
    """Merge the parts of one over-long sentence into as few groups as ``max_chars`` allows, with
    the longest group as short as possible (236 characters become about 118 + 118, not 189 + 47):
    peak memory follows the longest segment. The smallest limit that needs no more groups than
    ``max_chars`` does is found by bisection; greedy merging is optimal for a given limit."""
    fewest = len(_greedy(text, parts, max_chars))
    low, high = max(_stripped_len(text, a, b) for a, b in parts), max_chars
    while low < high:
        mid = (low + high) // 2
        if len(_greedy(text, parts, mid)) <= fewest:
            high = mid
        else:
            low = mid + 1
    return _greedy(text, parts, high)
