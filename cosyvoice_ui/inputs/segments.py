"""Splitting long text into segments the model can take one at a time (web process, pure).

Activations grow with the length of what the model sees at once, so a long text is split at
sentence boundaries (Chinese and English punctuation), then at clause boundaries, then at spaces,
and only as a last resort inside a run of characters; neighbouring pieces are merged back while
they fit, so segments are as long as allowed and no longer.
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"[.!?。！？；;…]+[\"'”’）)\]]*\s*")
_CLAUSE_END = re.compile(r"[,，、:：—–]+\s*")
_SPACE = re.compile(r"\s+")


def _split_keep(text: str, pattern: re.Pattern) -> list[str]:
    pieces, start = [], 0
    for m in pattern.finditer(text):
        if m.end() > start:
            pieces.append(text[start:m.end()])
            start = m.end()
    if start < len(text):
        pieces.append(text[start:])
    return [p for p in pieces if p.strip()]


def _is_cjk(ch: str) -> bool:
    return "\u3000" <= ch <= "\u9fff" or "\uf900" <= ch <= "\uffef"


def _join(a: str, b: str) -> str:
    if not a:
        return b
    if _is_cjk(a[-1]) or _is_cjk(b[0]):
        return a + b
    return a + " " + b


def split_text(text: str, max_chars: int) -> list[str]:
    """Split ``text`` into segments of at most ``max_chars`` characters.

    Args:
        text: cleaned text (single spaces, no control characters).
        max_chars: segment limit (``--max-segment-chars``), at least 1.

    Returns:
        Non-empty, stripped segments whose concatenation (with spaces between Latin words)
        is the text; a text within the limit comes back as one segment.
    """
    text = text.strip()
    if len(text) <= max_chars:
        return [text] if text else []
    pieces: list[str] = []
    for sentence in _split_keep(text, _SENTENCE_END):
        if len(sentence.strip()) <= max_chars:
            pieces.append(sentence.strip())
            continue
        for clause in _split_keep(sentence, _CLAUSE_END):
            if len(clause.strip()) <= max_chars:
                pieces.append(clause.strip())
                continue
            for word in _split_keep(clause, _SPACE) if " " in clause.strip() else [clause]:
                word = word.strip()
                pieces.extend(word[i:i + max_chars] for i in range(0, len(word), max_chars))
    segments: list[str] = []
    for piece in pieces:
        if segments and len(_join(segments[-1], piece)) <= max_chars:
            segments[-1] = _join(segments[-1], piece)
        else:
            segments.append(piece)
    return segments
