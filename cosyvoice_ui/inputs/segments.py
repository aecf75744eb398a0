"""Splitting long text into segments the model can take one at a time (web process, pure).

Activations grow with the length of what the model sees at once, so a long text is split at
sentence boundaries (Chinese and English punctuation), then at clause boundaries, then at spaces,
and only as a last resort inside a run of characters; neighbouring pieces are merged back while
they fit, so segments are as long as allowed and no longer.
"""

from __future__ import annotations

import re

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


def _stripped_len(text: str, a: int, b: int) -> int:
    return len(text[a:b].strip())


def split_text(text: str, max_chars: int) -> list[str]:
    """Split ``text`` into segments of at most ``max_chars`` characters.

    Args:
        text: cleaned text (single spaces, no control characters).
        max_chars: segment limit (``--max-segment-chars``), at least 1.

    Returns:
        Non-empty segments, each an unchanged stretch of the text (only the spaces between
        segments are dropped); a text within the limit comes back as one segment.
    """
    text = text.strip()
    if len(text) <= max_chars:
        return [text] if text else []
    pieces: list[tuple[int, int]] = []
    for a, b in _spans(text, 0, len(text), _SENTENCE_END):
        if _stripped_len(text, a, b) <= max_chars:
            pieces.append((a, b))
            continue
        for c, d in _spans(text, a, b, _CLAUSE_END):
            if _stripped_len(text, c, d) <= max_chars:
                pieces.append((c, d))
                continue
            for e, f in _spans(text, c, d, _SPACE):
                while _stripped_len(text, e, f) > max_chars:  # a run with no space: cut it hard
                    while text[e].isspace():
                        e += 1
                    pieces.append((e, e + max_chars))
                    e += max_chars
                if text[e:f].strip():
                    pieces.append((e, f))
    segments: list[tuple[int, int]] = []
    for a, b in pieces:
        if segments and _stripped_len(text, segments[-1][0], b) <= max_chars:
            segments[-1] = (segments[-1][0], b)
        else:
            segments.append((a, b))
    return [text[a:b].strip() for a, b in segments]
