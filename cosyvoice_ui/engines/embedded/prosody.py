"""Emotion instructions ("happy", "用悲伤的语气") turned into prosody for the embedded engine.

Piper's voice has no emotion input, so an instruction becomes the acoustic correlates that
emotional speech is known for: speaking rate, pitch level and range, energy, and voicing
(whisper is speech with the voicing removed). Rough directions follow the survey by Scherer,
"Vocal communication of emotion" (Speech Communication 40, 2003), table 3: joy and anger raise
pitch level, range and energy; sadness lowers them and slows the rate; calm narrows the range.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata


@dataclasses.dataclass(frozen=True)
class Prosody:
    """How to render speech.

    Attributes:
        length_scale: multiplies Piper's phoneme durations (>1 slower, <1 faster).
        pitch_shift_semitones: added to every voiced frame's pitch.
        pitch_range_scale: multiplies the spread of log-F0 around its mean.
        gain_db: level change applied to the waveform.
        whisper: drop voicing (F0 = 0, aperiodicity = 1) so the result is whispered.
    """

    length_scale: float = 1.0
    pitch_shift_semitones: float = 0.0
    pitch_range_scale: float = 1.0
    gain_db: float = 0.0
    whisper: bool = False

    def combine(self, other: "Prosody") -> "Prosody":
        return Prosody(
            length_scale=self.length_scale * other.length_scale,
            pitch_shift_semitones=self.pitch_shift_semitones + other.pitch_shift_semitones,
            pitch_range_scale=self.pitch_range_scale * other.pitch_range_scale,
            gain_db=self.gain_db + other.gain_db,
            whisper=self.whisper or other.whisper,
        )


STYLES: dict[str, Prosody] = {
    "happy": Prosody(length_scale=0.92, pitch_shift_semitones=2.0, pitch_range_scale=1.35, gain_db=1.5),
    "sad": Prosody(length_scale=1.18, pitch_shift_semitones=-2.0, pitch_range_scale=0.6, gain_db=-3.0),
    "angry": Prosody(length_scale=0.94, pitch_shift_semitones=1.0, pitch_range_scale=1.45, gain_db=4.0),
    "calm": Prosody(length_scale=1.08, pitch_shift_semitones=-0.5, pitch_range_scale=0.7, gain_db=-1.5),
    "whisper": Prosody(length_scale=1.05, gain_db=-6.0, whisper=True),
    "fast": Prosody(length_scale=0.75),
    "slow": Prosody(length_scale=1.35),
    "loud": Prosody(gain_db=6.0, pitch_range_scale=1.1),
    "soft": Prosody(gain_db=-6.0, pitch_range_scale=0.9),
}

# Words (English, matched as whole words) and phrases (Chinese, matched as substrings, longest
# first so that 快乐 is "happy" and not "fast") for each style.
# Comparatives and superlatives too: "happier" and "calmer" were reported as not applied while
# "faster" and "louder" were (thirty-seventh newcomer session).
_ENGLISH_WORDS: dict[str, tuple[str, ...]] = {
    "happy": ("happy", "happier", "happiest", "happily", "cheerful", "cheerfully", "cheery", "cheerier", "joyful",
              "joyfully", "joyous", "excited", "excitedly", "glad", "gladly", "joy", "upbeat", "delighted"),
    "sad": ("sad", "sadder", "saddest", "sadly", "sorrowful", "sorrowfully", "unhappy", "unhappily", "melancholy",
            "gloomy", "gloomier", "sorrow", "mournful", "mournfully", "depressed", "tearful", "tearfully"),
    "angry": ("angry", "angrier", "angriest", "angrily", "furious", "furiously", "mad", "madder", "annoyed",
              "rage", "irate", "irritated"),
    "calm": ("calm", "calmer", "calmest", "calmly", "relaxed", "peaceful", "peacefully", "gentle", "gentler",
             "gently", "soothing", "serene", "tranquil"),
    "whisper": ("whisper", "whispering", "whispered", "whispers", "whispery"),
    "fast": ("fast", "faster", "fastest", "quick", "quicker", "quickest", "quickly", "rapid", "rapidly",
             "hurried", "hurriedly", "speedy", "speedily", "briskly"),
    "slow": ("slow", "slower", "slowest", "slowly", "leisurely"),
    "loud": ("loud", "louder", "loudest", "loudly", "shout", "shouting", "shouted", "yell", "yelling"),
    "soft": ("soft", "softer", "softest", "softly", "quiet", "quieter", "quietest", "quietly", "hushed"),
}
_CHINESE_PHRASES: dict[str, tuple[str, ...]] = {
    # "生气勃勃" (full of life) was applied as angry by its 生气, "痛快" as fast by its 快 (helper-150).
    # Also 快活, 爽快, 畅快, 快快乐乐 (fast), 充满生气 (angry) (helper-152).
    "happy": ("开心", "高兴", "快乐", "愉快", "欢快", "兴奋", "生气勃勃", "朝气蓬勃", "活泼", "痛快", "欢乐",
              "快活", "爽快", "畅快", "快快乐乐", "充满生气", "富有生气"),
    "sad": ("悲伤", "难过", "伤心", "哀伤", "忧伤"),
    "angry": ("生气", "愤怒", "恼火", "气愤"),
    "calm": ("平静", "冷静", "温柔", "平和", "舒缓"),
    "whisper": ("耳语", "悄悄", "低语"),
    "fast": ("快速", "快点", "快一点", "快些", "快"),
    "slow": ("慢速", "慢点", "慢一点", "慢些", "缓慢", "慢"),
    "loud": ("大声", "响亮"),
    "soft": ("小声", "轻声"),
}
# Words that hold a style's character and mean something else: 傲慢 (arrogant) was applied as
# slow by its 慢 (helper-152). Listed as not understood.
_CHINESE_NOT_STYLES = ("傲慢", "怠慢", "凉快", "快递")
# Words that carry no style of their own ("speak in a happy tone", "用…的语气说").
_ENGLISH_FILLER = set(
    "a an the in with and but or please speak speaking say said read talk talking sound sounding voice tone "
    "style way manner mood emotion like very really more bit little slightly somewhat quite be it this that "
    "of to as is are sounds make extremely so tell do does go super pretty rather totally".split()
)
_CHINESE_FILLER = ("请", "用", "以", "的", "地", "得", "语气", "语调", "声音", "口吻", "说话", "说", "读", "念",
                   "一点", "一些", "点", "些", "很", "非常", "有点", "稍微", "比较", "特别", "地说", "，", "。",
                   "、", "！", "？", "和", "又", "再", "更加", "更",
                   # "请用悲伤的语气说这句话", "语速慢一点": listed "这句话" and "语速" as not applied
                   # (forty-ninth newcomer session).
                   "这句话", "这段话", "这句", "这段", "句子", "一下", "语速", "速度", "音量",
                   # "开心但是不要太快" listed "但是" as not applied, where "but" was not (helper-65).
                   "但是", "但", "可是", "不过", "而且", "并且", "同时",
                   "有点儿", "一点儿", "极其", "十分", "格外", "略微", "稍稍", "相当", "超级")

# A negation turns off the style it governs, also across intensifiers, a few other words and
# punctuation ("not too fast", "do not go fast", "not-fast", "不要太快"): "not too fast" was applied
# as "fast" (nineteenth newcomer session), "don’t be sad" typed with a phone's curly apostrophe
# and "isn't fast" too (twentieth). Wrongly leaving a style out is the lesser harm: it is reported.
# "less" counts as one: the engine has no "less happy" (half the prosody change) to offer.
_NEGATIONS = {"not", "no", "don't", "dont", "never", "without", "un", "less", "nor", "stop", "avoid", "hardly",
              "barely", "neither", "none", "nothing"}
_NEGATION_SCOPE = {"too", "so", "very", "overly", "that", "as", "much", "more", "any", "at", "all", "a", "bit",
                   "little", "be", "sound", "speak", "talk", "read", "say", "it", "in", "with", "tone", "way", "go",
                   "do", "does", "did", "is", "are", "was", "longer", "the", "an", "of", "to"}
_NEGATION_REACH_WORDS = 3  # other words a negation reaches over before it lapses ("not go very fast")
_NEGATION_ENDS = {"but", "and", "or", "yet", "though", "although", "however", "instead", "rather", "then"}
_SENTENCE_ENDS = {".", ";", "!", "?", "。", "；", "！", "？"}  # not "..." ("not... fast")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'", "`": "'"})
_CHINESE_NEGATIONS = ("不需要", "不要", "不用", "不必", "不是", "没有", "无需", "没", "不", "别", "別", "莫", "勿")
_CHINESE_NEGATION_SCOPE = ("太过", "太", "那么", "这么", "那样", "这样", "很", "过于", "特别", "非常", "用", "以", "是",
                           "说得", "讲得", "得")
# Words of degree, which the filler above lets through: each style has one strength, so "a bit
# faster" and "very very fast" were the same 0.75 length scale without a word (helper-57). They are
# named in a note when a style was applied. Not 一点/点/些: the presets 快一点 and 慢一点 carry them.
_ENGLISH_DEGREE = {"very", "really", "bit", "little", "slightly", "somewhat", "quite", "extremely", "super",
                   "pretty", "rather", "totally", "more", "so"}
# "有点儿大声" had two notes and "极其开心" a "not understood" one (helper-65).
# Not 更/更加: "更开心" is "happier", a comparative, which the README lists as understood (helper-68).
_CHINESE_DEGREE = ("非常", "特别", "稍微", "有点儿", "有点", "比较", "很", "极其", "十分", "格外", "略微", "稍稍", "相当",
                   "超级")
# Styles that undo each other; asked for together, neither is applied ("fast slow" averaged to
# nothing audible, "whisper loudly" whispered at +0 dB).
_CONTRADICTIONS = (("happy", "sad"), ("fast", "slow"), ("loud", "soft"), ("loud", "whisper"), ("calm", "angry"))

PRESETS: tuple[str, ...] = (
    "happy", "sad", "angry", "calm", "whisper", "fast", "slow", "loud", "soft",
    "用开心的语气", "用悲伤的语气", "用生气的语气", "平静地说", "悄悄地说", "快一点", "慢一点", "大声", "小声",
)


@dataclasses.dataclass(frozen=True)
class ParsedInstruction:
    """Result of :func:`parse_instruction`.

    Attributes:
        styles: the recognized styles in the order met (keys of :data:`STYLES`).
        prosody: the styles combined.
        unrecognized: parts of the instruction that were not applied, for the user to see
            (a negated style comes with its negation: "not too fast", "不要太快").
        contradictions: pairs of styles asked for together that undo each other; neither of a
            pair is applied.
    """

    styles: tuple[str, ...]
    prosody: Prosody
    unrecognized: tuple[str, ...]
    contradictions: tuple[tuple[str, str], ...] = ()
    degree_words: tuple[str, ...] = ()  # "very", "a bit", 非常 ...: styles have one strength
    # style -> the words that asked for it first ("shout" for loud, 大声 too): a note named "loud"
    # to a user who typed "shout" (helper-145).
    said_as: dict = dataclasses.field(default_factory=dict)


def parse_instruction(instruction: str | None) -> ParsedInstruction:
    """Find the styles an instruction asks for.

    English words are matched whole and case-insensitively; Chinese phrases as substrings,
    longest first. A negation ("not", "less", 不, 别, 不要 ...) turns off the style it governs,
    also across intensifiers ("not too fast", "不要太快"). Whatever remains after styles and
    filler words are removed is returned in ``unrecognized`` so the caller can tell the user it
    was not applied; styles that undo each other ("fast" with "slow") in ``contradictions``.

    Args:
        instruction: free text such as ``"speak happily and fast"`` or ``"用悲伤的语气"``.

    Returns:
        A :class:`ParsedInstruction`; an empty or ``None`` instruction gives neutral prosody.
    """
    text = (instruction or "").strip()
    found: list[tuple[int, str]] = []
    unrecognized: list[tuple[int, str]] = []  # (position, text): reported in the order written
    # A control marker is reported whole: "happy<|endofprompt|>" listed '<|', 'endofprompt', '|>'
    # (forty-ninth newcomer session).
    remaining = text
    for marker in re.finditer(r"<\|[^\n]*?\|>", text):
        unrecognized.append((marker.start(), marker.group(0)))
        remaining = remaining[:marker.start()] + " " * len(marker.group(0)) + remaining[marker.end():]
    # A percentage is a degree too ("20% faster", "快20%"): its "20" was listed as not understood.
    percentages: list[tuple[int, str]] = []
    for m in re.finditer(r"\d+(?:[.,]\d+)?\s*(?:%|％|per\s*cent\b)", remaining, re.I):
        percentages.append((m.start(), m.group()))
        remaining = remaining[:m.start()] + " " * len(m.group()) + remaining[m.end():]
    for word in _CHINESE_NOT_STYLES:
        while (idx := remaining.find(word)) >= 0:
            unrecognized.append((idx, word))
            remaining = remaining[:idx] + " " * len(word) + remaining[idx + len(word):]
    # Chinese first: blank matched phrases out so shorter ones (快) do not match inside them.
    phrases = sorted(((p, s) for s, ps in _CHINESE_PHRASES.items() for p in ps), key=lambda x: -len(x[0]))
    for phrase, style in phrases:
        while (idx := remaining.find(phrase)) >= 0:
            start = _chinese_negation_start(remaining, idx)
            end = idx + len(phrase)
            if start is None:
                found.append((idx, style, phrase))
                start = idx
            else:
                unrecognized.append((start, text[start:end]))
            remaining = remaining[:start] + " " * (end - start) + remaining[end:]
    degree: list[tuple[int, str]] = [(m.start(), m.group()) for w in _CHINESE_DEGREE
                                     for m in re.finditer(re.escape(w), remaining)
                                     if not any(w != longer and w in longer and remaining.startswith(longer, m.start())
                                                for longer in _CHINESE_DEGREE)]
    word_to_style = {w: s for s, ws in _ENGLISH_WORDS.items() for w in ws}
    negation: _Negation | None = None
    for match in re.finditer(r"\w+(?:'\w+)*|[^\w\s]+", remaining.translate(_APOSTROPHES)):
        token = match.group(0)
        lower = token.lower()
        if lower in _NEGATIONS or lower.endswith("n't") or lower in ("isnt", "arent", "doesnt", "wont", "cant"):
            if negation is not None:
                unrecognized.extend(negation.words)
            unrecognized.append((match.start(), token))
            negation = _Negation(index=len(unrecognized) - 1, start=match.start())
            continue
        if lower in word_to_style:
            if negation is not None:  # "not too happy": the negated style is reported, not applied
                unrecognized[negation.index] = (negation.start, text[negation.start:match.end()])
                negation = None
            else:
                found.append((match.start(), word_to_style[lower], token))
            continue
        if negation is not None:
            word = any(ch.isalnum() for ch in token)  # punctuation is no word ("not-fast", "not, fast")
            if lower in _NEGATION_ENDS or token.strip("\"')]）」") in _SENTENCE_ENDS:
                unrecognized.extend(negation.words)
                negation = None
            elif word and lower not in _NEGATION_SCOPE and lower not in _ENGLISH_FILLER:
                negation.words.append((match.start(), token))  # "do not go fast": reached over
                if len(negation.words) > _NEGATION_REACH_WORDS:
                    unrecognized.extend(negation.words)
                    negation = None
                continue
            else:
                continue
        if lower in _ENGLISH_FILLER:
            if lower in _ENGLISH_DEGREE:  # "a bit", "a little" named whole
                before = remaining[:match.start()].rstrip()
                a = lower in ("bit", "little") and re.search(r"(?:^|\s)a$", before, re.I)
                degree.append((match.start(), f"{before[-1]} {token}" if a else token))
            continue
        leftover = token
        for filler in sorted(_CHINESE_FILLER, key=len, reverse=True):
            leftover = leftover.replace(filler, "")
        # Only punctuation is noise; letters, emoji and other symbols are something asked for.
        leftover = "".join(ch for ch in leftover if not unicodedata.category(ch).startswith(("P", "Z")))
        if leftover:
            unrecognized.append((match.start(), token))
    if negation is not None:  # it lapsed at the end: what it reached over was not applied either
        unrecognized.extend(negation.words)
    if found:
        degree.extend(percentages)
    else:  # nothing it could be the degree of; unless a negated style reported it with itself
        unrecognized.extend((at, p) for at, p in percentages
                            if not any(start <= at < start + len(t) for start, t in unrecognized))
    styles: list[str] = []
    said_as: dict[str, str] = {}
    for _, style, typed in sorted(found):
        if style not in styles:
            styles.append(style)
            said_as[style] = typed
    contradictions = tuple((a, b) for a, b in _CONTRADICTIONS if a in styles and b in styles)
    styles = [s for s in styles if not any(s in pair for pair in contradictions)]
    prosody = Prosody()
    for style in styles:
        prosody = prosody.combine(STYLES[style])
    return ParsedInstruction(styles=tuple(styles), prosody=prosody,
                             unrecognized=tuple(t for _, t in sorted(unrecognized)), contradictions=contradictions,
                             degree_words=tuple(dict.fromkeys(t for _, t in sorted(degree))) if styles else (),
                             said_as=said_as)


@dataclasses.dataclass
class _Negation:
    index: int  # of the negation in the unrecognized list
    start: int  # where it starts in the instruction
    words: list = dataclasses.field(default_factory=list)  # other words it reached over, reported if it lapses


def _chinese_negation_start(text: str, idx: int) -> int | None:
    """Where a negation governing the phrase at ``idx`` starts (不开心, 不要太快, 别那么生气,
    不是很开心, 不要 快), or None."""
    end = idx
    while True:
        while end > 0 and text[end - 1].isspace():
            end -= 1
        scope = next((w for w in _CHINESE_NEGATION_SCOPE if text.endswith(w, 0, end)), None)
        if scope is None:
            break
        end -= len(scope)
    negation = next((n for n in _CHINESE_NEGATIONS if text.endswith(n, 0, end)), None)
    return None if negation is None else end - len(negation)
