"""Emoticons: faces drawn in characters, which a voice reads sign by sign.

Read aloud, ``:-)`` was "colon", ``:P`` "colon P", ``└(^o^)┘`` "to the power of o", ``ʕ•ᴥ•ʔ``
"reversed glottal stop, letter one D two five, glottal stop", ``( ͡° ͜ʖ ͡°)`` its signs one by one;
``¯\\_(ツ)_/¯`` and ``ಠ_ಠ`` were refused as Japanese and Kannada for the English voice (helper-49,
helper-54; the readings are espeak-ng's phonemes for Piper's English voice, checked this session).
:mod:`.markup` removes what :func:`is_emoticon` and :data:`SPACED_FACE` find, with a note.

Recognised, as whole space-separated runs (the sentence's punctuation after one stays):
- bracketed drawings with kana or drawing signs (``¯\\_(ツ)_/¯``, ``ヽ(´ー｀)ノ``, ``(╯°□°）╯``);
- eye-mouth-eye faces, bare or in brackets, with arms (``ಠ_ಠ``, ``^_^``, ``-_-``, ``o_O``,
  ``ʕ•ᴥ•ʔ``, ``└(^o^)┘``, ``\\(^o^)/``);
- the common sideways faces (``:)``, ``:-(``, ``;)``, ``:D``, ``:P``, ``:'(``, ``=)``, ``:/``,
  ``:3``) and ``^^``;
- emoji (:data:`EMOJI`), wherever they stand.
Left as typed, because they are also ordinary text: ``<3`` ("x <3" is a comparison), ``XD`` and
``D:`` (a name, "Plan D:"), and faces glued to a word ("fun:)").
"""

from __future__ import annotations

import re
import unicodedata

_KAOMOJI_SIGNS = set("¯´`｀ಠω︶╯╰□━┻┳◕‿ᴗ▽∀≧≦＾・ﾉ") | {chr(c) for c in range(0x3040, 0x3100)}

_EYES = "ಠಥʘ◕•·◉⊙◔ᵔ˘≧≦╥･・◡☉^><;-"  # "·": the bear ʕ·ᴥ·ʔ (helper-73)
_MOUTHS = "_.o‿ᴥω﹏▽益︿⌒ᗜ‸ー∀□дДꈊ"
_FACE = rf"(?:[{re.escape(_EYES)}][{re.escape(_MOUTHS)}]{{1,3}}[{re.escape(_EYES)}]|[oOTxX]_[oOTxX]|o\.O|O\.o)"
_ARMS = r"[^\w\s]{0,3}"
_FACE_RUN = re.compile(rf"ʕ?{_FACE}ʔ?|{_ARMS}[(（]{_FACE}[)）]{_ARMS}")
_SIDEWAYS = re.compile(r"[:;=]['‑-]?(?:\)|\(+|D|P|p|O|o|/|\||\]|\[|\*|3)|\^\^")  # ":3", "^^": helper-57

# Emoji: pictographs of the emoji planes (U+1F000-1FAFF: faces, hands, flags' letter pairs, with
# skin tones and ZWJ sequences such as 👨‍👩‍👧‍👦), keycaps (1️⃣) and older symbols drawn as emoji
# with U+FE0F (☀️, ❤️; a bare ❤ in "I ❤ NY" stands for a word, and is left). Read by name, "so
# funny 😂😂😂" was "face with tears of joy" three times (6.9 s against 2.6 s; helper-57). Other
# symbols (★, ✓, ♪) are left to the engine. EMOJI_RUN takes a run of them with the blanks before
# each, so that what stood around the run can be joined again.
_PICTOGRAPH = r"(?:[\U0001F000-\U0001FAFF]|[\u2600-\u27BF\u2B00-\u2BFF\u2300-\u23FF]\uFE0F)"
_MODIFIERS = r"(?:\uFE0F|[\U0001F3FB-\U0001F3FF])*"
EMOJI = re.compile(rf"[\U0001F1E6-\U0001F1FF]{{2}}|{_PICTOGRAPH}{_MODIFIERS}"
                   rf"(?:\u200D(?:[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF]){_MODIFIERS})*"
                   r"|[#*0-9]\uFE0F?\u20E3")
EMOJI_RUN = re.compile(rf"(?:[ \t]*(?:{EMOJI.pattern}))+")

# A face drawn with spaces and combining marks: ( ͡° ͜ʖ ͡°), ( ͡ಠ ʖ̯ ͡ಠ), or with an eye-mouth-eye
# face inside: ( ˘▽˘)っ♨, ʕ •ᴥ•ʔ, (ノಠ益ಠ)ノ彡┻━┻ (helper-73: read aloud, or refused as Japanese).
# Found in the text before the runs are looked at, with the arms and props around it. The Thai
# letter ง is the raised fist of (ง'̀-'́)ง: the face went and the fist was refused as Thai.
_ARM_SIGNS = "งっノﾉ彡♨✧゜ﾟ┻━┳︵ヽ"
_ARM = rf"(?:[{_ARM_SIGNS}]|[^\w\s()（）ʕʔ.,!?;:。！？，；：'\"」』])"  # └(^o^)┘: not the sentence's own marks
SPACED_FACE = re.compile(rf"([ \t]*)({_ARM}{{0,3}}[(（ʕ][^()（）ʕʔ\n\d]{{1,24}}[)）ʔ]{_ARM}{{0,6}})")  # (blanks, face)
# Signs a drawing uses as eyes, mouths, brackets and arms: not counted as letters of words.
_DRAWING = set(_EYES) | set(_MOUTHS) | set(_ARM_SIGNS) | set("ʕʔ")


def is_emoticon(run: str) -> bool:
    """True for a face drawn in characters, given one run of text without spaces (see the module
    docstring for what is recognised)."""
    if _FACE_RUN.fullmatch(run) or _SIDEWAYS.fullmatch(run):
        return True
    if not (set(run) & set("(（") and set(run) & set(")）") and set(run) & _KAOMOJI_SIGNS):
        return False
    letters = sum(ch.isalpha() for ch in run)
    return not any(ch.isdigit() for ch in run) and letters * 2 <= len(run)


def is_spaced_face(group: str) -> bool:
    """True for a :data:`SPACED_FACE` match drawn with combining marks or holding an eye-mouth-eye
    face, whose letters (other than the drawing's signs) are no more than half of what is not a
    space (``( ͡° ͜ʖ ͡°)``, ``( ˘▽˘)っ♨``, ``ʕ •ᴥ•ʔ``; not ``(a b)`` or a decomposed ``(café)``)."""
    drawn = [ch for ch in group if not ch.isspace()]
    marks = sum(unicodedata.category(ch) == "Mn" for ch in drawn)
    letters = sum(ch.isalpha() and ch not in _DRAWING for ch in drawn)
    return (marks > 0 or re.search(_FACE, group) is not None) and letters * 2 <= len(drawn)
