"""Validation of the text to speak (web process, pure functions)."""

from __future__ import annotations

import re
import unicodedata

from ..errors import InputError
from .segments import is_spoken, spoken_chars

# Unicode script ranges for the languages people most often type here. Only letters count:
# digits, punctuation and emoji belong to no language.
_SCRIPT_RANGES: dict[str, tuple[tuple[int, int], ...]] = {
    "zh": ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F)),
    "ja": ((0x3040, 0x30FF), (0x31F0, 0x31FF)),
    "ko": ((0xAC00, 0xD7AF), (0x1100, 0x11FF), (0x3130, 0x318F)),
    "ru": ((0x0400, 0x04FF),),
    "ar": ((0x0600, 0x06FF), (0x0750, 0x077F)),
    "he": ((0x0590, 0x05FF),),
    "el": ((0x0370, 0x03FF),),
    "hi": ((0x0900, 0x097F),),
    "th": ((0x0E00, 0x0E7F),),
}
# Languages CosyVoice 3 speaks (engines/cosyvoice/engine.py), for the advice in a refusal.
_COSYVOICE_LANGUAGES = {"zh", "en", "ja", "ko", "de", "es", "fr", "it", "ru"}
LANGUAGE_NAMES = {
    "en": "English", "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "ru": "Russian",
    "ar": "Arabic", "he": "Hebrew", "el": "Greek", "hi": "Hindi", "th": "Thai",
    "de": "German", "es": "Spanish", "fr": "French", "it": "Italian",
}
# Languages written in Latin letters cannot be told apart by script; "en" stands for all of them.
_LATIN_LANGUAGES = {"en", "de", "es", "fr", "it"}


_ANSI_ESCAPE = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|[@-Z\\-_])")


def _script_of(ch: str) -> str | None:
    if "\u2800" <= ch <= "\u28ff":
        return "braille"  # symbols, but read out one "braille pattern dots-..." name each
    if not ch.isalpha():  # digits and numerals (clean_text writes them as numbers), punctuation, symbols
        return None
    cp = ord(ch)
    for lang, ranges in _SCRIPT_RANGES.items():
        if any(lo <= cp <= hi for lo, hi in ranges):
            return lang
    name = unicodedata.name(ch, "")
    if "LATIN" in name:
        return "en"
    # Any other script (Armenian, Georgian, Ethiopic, Cherokee, runes, ...) by its Unicode name,
    # so that an engine that does not speak it refuses it rather than reading it out or
    # dropping it (seventeenth newcomer session). Letter-like signs (µ, ª, modifier letters such as
    # ʻ and ˈ) name no script and stay neutral.
    if (" LETTER " in name or " SYLLABLE " in name) and not name.startswith("MODIFIER"):
        # Every word before it: "LINEAR B SYLLABLE B008 A" was named "Linear", "OLD ITALIC LETTER A"
        # "Old" (helper-150).
        return re.split(r" (?:CAPITAL |SMALL )?(?:LETTER|SYLLABLE) ", name, maxsplit=1)[0].lower()
    return None


def detect_languages(text: str) -> dict[str, int]:
    """Count letters per script-implied language.

    Args:
        text: any string.

    Returns:
        ``{language code: number of letters}``; Latin letters count as ``"en"``. Characters that
        are not letters of a known script (digits, punctuation, emoji) are not counted.
    """
    counts: dict[str, int] = {}
    for ch in text:
        lang = _script_of(ch)
        if lang:
            counts[lang] = counts.get(lang, 0) + 1
    return counts


# Full-width punctuation (，！？：；（）～ ...) and the ellipsis "…", as Chinese and Japanese are
# written; NFKC would turn "，" into "," and "…" into "...", which CosyVoice's text frontend and
# its training data do not use for Chinese.
_CJK_PUNCTUATION = "\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff60\u2026"
_NOT_CJK_PUNCTUATION = re.compile(f"[^{_CJK_PUNCTUATION}]+")


# Superscript digits and letters (with their sign) and the fraction characters; NFKC makes them
# plain and joins them to what comes before: "10⁵" became "105", "1½" "11⁄2" ("eleven two";
# twenty-sixth newcomer session).
# Signs and brackets (⁺⁻⁼⁽⁾: U+207A-207E) around at least one digit or letter: 10⁽³⁾ lost its
# exponent when the bracket was taken for punctuation (twenty-eighth newcomer session).
_SUPERSCRIPT_RUN = re.compile(r"[\u207a-\u207e]*[\u00b2\u00b3\u00b9\u2070\u2071\u2074-\u2079\u207f]"
                              r"[\u00b2\u00b3\u00b9\u2070\u2071\u2074-\u207e\u207f]*")
_POWER_BASE_MAX_LETTERS = 3  # x², m², km³ are powers; "word¹" is a footnote marker
_CLOSING = {")": "(", "]": "["}


def _superscript_is_a_power(before: str) -> bool | None:
    """Whether a superscript after ``before`` is a power (``True``), a footnote marker (``False``),
    or stands alone (``None``: after a space or at the start)."""
    if not before or before[-1].isspace():
        return None
    last = before[-1]
    if last.isdigit():
        return True
    if last in _CLOSING:  # (x)², (a+b)² are powers; "(see note)¹" is a footnote
        opened = before.rfind(_CLOSING[last])
        return opened >= 0 and not any(ch.isspace() for ch in before[opened:])
    if last.isalpha():
        word = re.search(r"[^\W\d_]+$", before).group()
        return len(word) <= _POWER_BASE_MAX_LETTERS
    return False  # after . , ; ! ? or a quote: a footnote marker (twenty-seventh newcomer session)


def _mark_powers_and_fractions(text: str) -> str:
    """Write a superscript after a number, a short symbol or a bracketed formula (``10⁵``,
    ``x²``, ``km³``, ``(a+b)²``, ``2ⁿ``) as a power, ``10^5``; drop one after a longer word,
    punctuation or a bracketed phrase (``word¹``, ``here.¹``: a footnote marker, not read aloud);
    put a space between a number and the fraction character after it (``1½`` -> ``1 ½``), which
    NFKC then writes as ``1⁄2`` with U+2044 FRACTION SLASH, and spaces around circled numbers
    and numbered list markers (``①②`` -> ``1 2``, not ``12``; ``⒈⒉`` -> ``1. 2.``). Engines read ``^`` and ``⁄`` in their
    language (the embedded engine: "10 to the power of 5", "1 and 1 half")."""
    def superscript(m: re.Match) -> str:
        digits = unicodedata.normalize("NFKC", m.group()).replace("\u2212", "-")
        if m.end() < len(m.string) and unicodedata.category(m.string[m.end()]) == "Lm":
            return digits  # the start of an ordinal suffix: 2ⁿᵈ is "2nd", not 2 to the power of nd
        kind = _superscript_is_a_power(m.string[:m.start()])
        return digits if kind is None else f"^{digits}" if kind else ""

    def apart(i: int, ch: str) -> str:
        decomposition = unicodedata.decomposition(ch)
        if decomposition.startswith("<square>"):
            unit = unicodedata.normalize("NFKC", ch)
            if len(unit) > 1 and unit[-1] in "23" and unit[-2].isalpha():
                return f"{unit[:-1]}^{unit[-1]}"  # ㎡ is m^2, not "m2" ("m two"; thirty-seventh newcomer session)
        name = unicodedata.name(ch, "")
        if decomposition.startswith("<circle>") or (name.endswith(" FULL STOP") and name.startswith(("DIGIT", "NUMBER"))):
            # ①②③ became "123" (thirtieth newcomer session), the list markers ⒈⒉⒊ "1.2.3." (thirty-second)
            return f" {ch} "
        if i and text[i - 1].isdigit() and decomposition.startswith("<fraction>"):
            return f" {ch}"
        return ch

    text = _SUPERSCRIPT_RUN.sub(superscript, text)
    return "".join(apart(i, ch) for i, ch in enumerate(text))


# Digits grouped by thin or no-break spaces, as SI and most of Europe write them ("12 345"), are
# one number (read as two before; thirty-seventh newcomer session). Ordinary spaces are left as
# typed: joined from two groups of three on, a phone number "+1 555 123 4567" and a list of rooms
# "101 102 103" became one huge amount (fortieth).
_SPACE_GROUPED = re.compile(r"(?<![\d.,])[1-9]\d{0,2}(?:[\u00a0\u2009\u202f]\d{3})+(?![\d]|[.,]\d{3})")


def _join_digit_groups(text: str) -> str:
    """``12\u202f345`` and ``1\u00a0234\u00a0567`` (thin or no-break spaces) -> ``12345``, ``1234567``."""
    return _SPACE_GROUPED.sub(lambda m: re.sub(r"[\u00a0\u2009\u202f]", "", m.group()), text)


# A word hyphenated across a line break, as text copied from a PDF has it ("exam-\nple", or a soft
# hyphen before the break): read as two words, "exam ple" (forty-third newcomer session). Joined
# only between a letter and a lower-case letter ("Item 5-\nA" stays); a hyphenated compound broken
# at its hyphen ("well-\nknown") is joined too, which espeak reads as the same word.
_HYPHENATED_LINE_BREAK = re.compile(r"(?<=[^\W\d_])[-\u00ad][ \t]*\r?\n[ \t]*(?=[a-z])")
# "!", "?", "," or ";" with a letter right after it: "Please confirm！Thanks" (typed on a Chinese
# keyboard, "!" once normalized) was read "confirm exclamation mark thanks" (forty-third newcomer
# session). Not ":" or "." (times, web addresses, "e.g.").
_PUNCTUATION_BEFORE_A_LETTER = re.compile(r"(?<=[^\W\d_])([!?,;])(?=[^\W\d_])")


# A bidi embedding, override or isolate (U+202A-U+202E, U+2066-U+2069) starts or ends a run of
# text, so between two letters it parts two words: dropped like other format characters, it
# joined "hello\u202eworld" into one (known list). Beside a space it is dropped.
_BIDI_RUN_BETWEEN_WORDS = re.compile(r"(?<=\w)[\u202a-\u202e\u2066-\u2069]+(?=\w)")


def clean_text(text: str) -> str:
    """Normalize to NFKC (fullwidth ``ｈｅｌｌｏ`` typed on a Chinese keyboard becomes ``hello``),
    with superscripts written as powers and fractions kept apart from the number before them
    (:func:`_mark_powers_and_fractions`: ``10⁵`` -> ``10^5``, ``1½`` -> ``1 1⁄2``, ``㎡`` -> ``m^2``),
    digit groups written with thin or no-break spaces joined (:func:`_join_digit_groups`), write the
    digits and numerals of every script as ASCII numbers (``١٢٣`` -> ``123``, ``፻`` -> ``100``),
    drop terminal escape sequences, write apostrophes typed as ``ʼ``, ``ʹ`` or a backtick inside a
    word as ``'``, join words hyphenated across a line break (``exam-\nple`` -> ``example``), put a
    space after ``! ? , ;`` between letters (``confirm!Thanks``), turn line breaks, tabs and
    zero-width spaces, control characters other than NUL (BEL, DEL) and bidi overrides between two
    letters into spaces, drop NUL and other format characters (soft hyphens, joiners, bidi marks),
    collapse runs of spaces, write decimal commas as points
    where they cannot be anything else (:func:`write_decimal_commas_as_points`: ``1.234,56``,
    ``€9,99``), and spell runs of 13 or more digits one digit at a time (:func:`spell_long_digit_runs`).

    In text with Chinese, Japanese or Korean letters, full-width punctuation (``，。！？``) is
    kept as typed; elsewhere it becomes ASCII (``ｈｅｌｌｏ！`` -> ``hello!``)."""
    text = _HYPHENATED_LINE_BREAK.sub("", text)
    text = _join_digit_groups(text)
    text = _mark_powers_and_fractions(text)
    if any(_script_of(ch) in ("zh", "ja", "ko") for ch in text):
        text = _NOT_CJK_PUNCTUATION.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)
    else:
        text = unicodedata.normalize("NFKC", text)
    text = _ANSI_ESCAPE.sub("", text)
    # Apostrophes typed as modifier letters or a backtick inside a word: espeak spelled "donʼt"
    # out letter by letter ("D O N ejective T"; the sentence 2.9 times as long; thirty-seventh
    # newcomer session). ＇ became ' above (NFKC); espeak reads ’ as an apostrophe itself.
    text = _WORD_APOSTROPHE.sub("'", text)
    text = _PUNCTUATION_BEFORE_A_LETTER.sub(r"\1 ", text)
    text = _BIDI_RUN_BETWEEN_WORDS.sub(" ", text)
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "\n\r\t\v\f\u200b\x85" or (cat == "Cc" and ch != "\x00"):
            # A zero-width space, NEL or another control character (BEL, DEL) parts words:
            # "The\u200bnews" and "bell\x07rang" were one word (helper-57). NUL is dropped: text
            # saved as UTF-16 and read as bytes has one after every letter ("H\x00i\x00"), which a
            # space would spell out. Format characters (soft hyphens, joiners, bidi marks) sit
            # inside words and are dropped too.
            out.append(" ")
        elif cat in ("Cc", "Cf", "Cs", "Co", "Cn"):
            continue
        elif ch in _ARABIC_NUMBER_SEPARATORS:
            # ١٬٢٣٤٫٥٦ is 1,234.56: with the digits made ASCII, the Arabic separators were read as
            # pauses ("one, two hundred thirty four, fifty six"; twenty-sixth newcomer session).
            out.append(_ARABIC_NUMBER_SEPARATORS[ch])
        elif cat in ("Nd", "Nl", "No") and not ch.isascii() and (value := _numeral_value(ch)) is not None:
            # Digits and numerals of other scripts are numbers: the embedded engine dropped them
            # ("Call me at ١٢٣ now." lost the number; twenty-fourth newcomer session) or read out
            # their code point ("𒐕" as "letter one two four one five"; twenty-fifth).
            # Decimal digits are positional (١٢٣ is 123); other numerals stand alone (Ethiopic ፲፪
            # is 10 + 2, not 102), so they are spaced.
            out.append(value if cat == "Nd" else f" {value} ")
        else:
            out.append(ch)
    return shorten_unspoken_runs(spell_long_digit_runs(write_decimal_commas_as_points(" ".join("".join(out).split()))))


KEPT_UNSPOKEN = 6  # characters kept at each end of a longer run of unspoken ones


def shorten_unspoken_runs(text: str) -> str:
    """Cut the middle out of every run of more than ``2 * KEPT_UNSPOKEN`` characters that are not
    heard (:func:`~.segments.is_spoken`: punctuation, combining marks, variation selectors, ``_``;
    single spaces between them belong to the run), keeping its first and last
    :data:`KEPT_UNSPOKEN`. What is not heard stayed in one segment however long it was:
    ``"Hello" + "?!" * 990`` was one 1,800-character segment past ``--max-segment-chars 200``, and
    admission learned memory from that length (helper-146); so were runs of ``_``, of ``.`` with
    combining accents, and of ``.`` with emoji variation selectors (helper-147). Typed runs such as
    ``!!!" ... "`` or ``:-) :-) :-) ;-)`` (12) are left as they are, and so is a run of combining
    marks alone (a pile on one letter, which :func:`validate_text` refuses by name)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if is_spoken(text[i]) or text[i] == " ":
            out.append(text[i])
            i += 1
            continue
        marks, j = [], i
        while j < n and (not is_spoken(text[j]) and text[j] != " "
                         or text[j] == " " and j + 1 < n and not is_spoken(text[j + 1]) and text[j + 1] != " "):
            if text[j] != " ":
                marks.append(j)
            j += 1
        # Combining marks alone, with no space between, are a pile on a letter, which validate_text
        # refuses by name; spaced, they were one 1,727-character segment (helper-149).
        pile = j - i == len(marks) and all(unicodedata.category(text[k]).startswith("M") for k in marks)
        if len(marks) > 2 * KEPT_UNSPOKEN and not pile:
            out.append(text[i:marks[KEPT_UNSPOKEN - 1] + 1] + text[marks[-KEPT_UNSPOKEN]:j])
        else:
            out.append(text[i:j])
        i = j
    return "".join(out)


# Amounts written the continental European way: "1.234,56" (points group, a comma before the
# decimals) and "9,99" next to a euro sign. espeak-ng read "€1.234,56" as "euros one point two
# three four, fifty six", a thousandth of the amount (thirty-ninth newcomer session). Only the
# unambiguous forms: "1.234" alone and "9,99" without € are left as typed.
_GROUPED_WITH_DECIMAL_COMMA = re.compile(r"(?<![\w.,])\d{1,3}(?:\.\d{3})+,\d{1,2}(?!\d|[.,]\d)")
_EURO_DECIMAL_COMMA = re.compile(r"(?:(?<=€)|(?<=€ ))\d+,\d{2}(?!\d|[.,]\d)|(?<![\w.,])\d+,\d{2}(?= ?€)")


def write_decimal_commas_as_points(text: str) -> str:
    """``1.234,56`` -> ``1234.56`` and ``€9,99`` / ``9,99 €`` -> ``€9.99`` / ``9.99 €``: amounts
    with a decimal comma written the way every engine's English reading expects."""
    text = _GROUPED_WITH_DECIMAL_COMMA.sub(lambda m: m.group().replace(".", "").replace(",", "."), text)
    return _EURO_DECIMAL_COMMA.sub(lambda m: m.group().replace(",", "."), text)


# espeak-ng names numbers up to quintillions and reads longer runs digit by digit, but it says
# at most about 44 digits of one run (of a decimal part too) and from 21 digits on its number
# names lose digits: 200 "1"s became 44 "one"s and pi's 62 decimals 38 digits, without a word
# (twenty-third newcomer session; counted in the phonemes). Runs longer than a 12-digit amount
# are spelled digit by digit, a space apart, so every digit is said, by any engine, and a long
# run can be split into segments between digits rather than cut into short amounts (twenty-ninth).
# A number grouped by commas counts its digits the same way: "999,999,999,999,999,999,999" was
# cut between groups into two amounts (thirty-second newcomer session).
_LONG_DIGIT_RUN = re.compile(r"[0-9]{13,}|(?<![0-9,])[0-9]{1,3}(?:,[0-9]{3}){4,}(?![0-9])")


def spell_long_digit_runs(text: str) -> str:
    """``text`` with every run of 13 or more ASCII digits, also one grouped by commas, written one
    digit at a time ("1234567890123" and "1,234,567,890,123" -> "1 2 3 4 5 6 7 8 9 0 1 2 3");
    shorter numbers are left to the engine, which reads them as amounts."""
    return _LONG_DIGIT_RUN.sub(lambda m: " ".join(m.group().replace(",", "")), text)


def long_amounts(cleaned: str) -> list[str]:
    """The amounts of money in ``cleaned`` (:func:`clean_text`'s output) whose number was spelled
    one digit at a time (:func:`spell_long_digit_runs`): a currency sign (Unicode category Sc)
    before or after a run of 13 or more digits, as ``"$36000000000000"``. "$36,000,000,000,000"
    was read "3 dollars 6 0 0 0 ..." (helper-141); read from the cleaned text, full-width digits
    and a sign after the number count too (helper-144)."""
    found = []
    for m in _SPELLED_DIGITS.finditer(cleaned):
        before, after = cleaned[:m.start()].rstrip()[-1:], cleaned[m.end():].lstrip()[:1]
        digits = m.group().replace(" ", "")
        if before and unicodedata.category(before) == "Sc":
            found.append(before + digits)
        elif after and unicodedata.category(after) == "Sc":
            found.append(digits + after)
    return found


_ARABIC_NUMBER_SEPARATORS = {"\u066b": ".", "\u066c": ","}  # ARABIC DECIMAL / THOUSANDS SEPARATOR
_WORD_APOSTROPHE = re.compile(r"(?<=[^\W\d_])[\u02bc\u02b9`](?=[^\W\d_])")  # ʼ ʹ ` between letters


def _numeral_value(ch: str) -> str | None:
    """The number a digit or numeral stands for, written in ASCII ("٣" -> "3", "፻" -> "100",
    "ↂ" -> "10000"), or ``None`` for the Chinese ones (〇, Hangzhou numerals), which CosyVoice's
    frontend reads as they are."""
    name = unicodedata.name(ch, "")
    if "IDEOGRAPH" in name or name.startswith("HANGZHOU"):
        return None
    value = unicodedata.numeric(ch, None)
    if value is None:
        return None
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


RAW_TEXT_FACTOR = 4  # raw text longer than this many times --max-text-chars is refused uncleaned


# Unicode's Stream-Safe Text Format (UAX #15, section 13) bounds a run of combining marks at 30;
# no language comes near it. A longer run ("zalgo" text) was cut between a letter and its marks
# by the segment splitter, and the marks-only segment failed the whole request as "no speech
# sounds" (nineteenth newcomer session).
_MAX_MARK_RUN = 30


def _longest_mark_run(text: str) -> int:
    longest = current = 0
    for ch in text:
        current = current + 1 if unicodedata.category(ch).startswith("M") else 0
        longest = max(longest, current)
    return longest


def validate_text(text: str | None, max_chars: int, languages: tuple[str, ...] | None = None,
                  typed_chars: int | None = None) -> str:
    """Check and clean the text a user wants spoken.

    Args:
        text: the raw text from the browser or API (may be ``None``).
        max_chars: the longest text accepted, in Unicode code points after cleaning
            (``--max-text-chars``).
        languages: language codes the engine speaks (e.g. ``("en",)``); ``None`` accepts any.
        typed_chars: the text's length before its markup and emoji were removed, when they were
            (:func:`~.markup.remove_markup`), for the over-limit message.

    Returns:
        The cleaned text (see :func:`clean_text`).

    Raises:
        InputError: empty or whitespace-only text, text over ``max_chars``, text whose spoken
            length (:func:`~.segments.spoken_chars`) is over :data:`SPOKEN_LENGTH_FACTOR` times
            ``max_chars``, a run of more than
            30 combining marks, text with no letters or digits, or text in a language the engine
            does not speak. The message says what
            would work.
    """
    raw_chars = len(text or "")
    if raw_chars > RAW_TEXT_FACTOR * max_chars + 1000:
        # Refused before cleaning, which walks every character in Python: a 100-million-character
        # text kept the web process busy for 6 minutes before its refusal (twenty-first newcomer
        # session). Cleaning only drops characters (spaces, controls) or grows a few (NFKC), so no
        # text this long can come within the limit.
        raise InputError(f"The text is {raw_chars} characters long; the limit is {max_chars}. "
                         f"Shorten it or split it into several requests.")
    cleaned = clean_text(text or "")
    if not cleaned:
        raise InputError("The text is empty. Type the sentence you want to hear.")
    if languages is not None:
        # Before the length: a long Chinese text for an English-only engine was told to shorten
        # itself first, and then that it could not be spoken at all (forty-third newcomer session).
        _check_languages(cleaned, languages)
    if len(cleaned) > max_chars:
        # Cleaning can lengthen a text (ↂ is written "10000"): say so, or the count is not what was typed.
        # Ligatures and unit symbols (ﬁ, ㎡) grow under NFKC too: a PDF's text with no digits was
        # told its numerals had grown it (thirty-seventh newcomer session).
        grown = (f" once {_growth(text)} ({raw_chars} as typed)"
                 if len(cleaned) > raw_chars else "")
        if not grown and typed_chars is not None and typed_chars != raw_chars:
            # "2399 characters" for 2600 typed with emoji said nothing of the difference (helper-62).
            grown = f" without its markup and emoji ({typed_chars} as typed)"
        raise InputError(
            f"The text is {len(cleaned)} characters long{grown}; the limit is {max_chars}. "
            f"Shorten it or split it into several requests."
        )
    _check_spoken_length(cleaned, max_chars)
    # Counted as typed: composed, "e" and 40 accents read "39 accents" (the first joined the e; helper-55).
    run = _longest_mark_run(unicodedata.normalize("NFD", cleaned))
    if run > _MAX_MARK_RUN:
        raise InputError(f"The text has {run} accents or other combining marks in a row on one letter; real "
                         f"text has a few at most. Remove them (at most {_MAX_MARK_RUN} in a row are accepted).")
    if not any(ch.isalnum() for ch in cleaned):
        raise InputError("The text has no letters or digits to speak (only punctuation or symbols). "
                         "Type a sentence with words in it.")
    return cleaned


# Greek letters are also symbols (π in a formula, λ for a wavelength, µ in µm): a Greek letter
# that stands alone is read as such, however many there are. Letters of any other script the
# engine does not speak are refused however few: an English voice reads a name like 王小明 as
# "Chinese letter" three times (fifteenth newcomer session), which no user wants and no note would mend.


# Hashes, tokens and keys: 20 or more letters and digits (and - _ . / + =) without a space, where
# letters and digits alternate at least 4 times ("3f2a9c...", "eyJhbGciOiJIUzI1NiJ9..."; not
# "internationalization2024" or a date). Every engine reads them a character at a time: a git
# commit hash was 13.7 s of audio, a JSON Web Token 34.5 s (forty-third newcomer session).
_CODE_CANDIDATE = re.compile(r"[A-Za-z\d][\w/+=.-]{18,}[A-Za-z\d=]")
_LETTER_DIGIT_SWITCH = re.compile(r"[A-Za-z](?=\d)|\d(?=[A-Za-z])")


# A number spelled one digit at a time by clean_text (spell_long_digit_runs): "1" * 300 became
# 599 characters and 48 s of audio with no note (helper-62).
# Bounded by anything but a word character ("Id 1234567890123." ends a sentence,
# "(1234...)" has brackets; helper-67: a 13-digit number before "." had no note).
_SPELLED_DIGITS = re.compile(r"(?<!\w)(?:\d ){12,}\d(?!\w|\.\d)")


def spelled_numbers(cleaned: str) -> list[str]:
    """The numbers of 13 or more digits that :func:`clean_text` spelled one digit at a time,
    shortened for a note: ``["31415926... (201 digits)"]``, at most three."""
    runs = [m.group().replace(" ", "") for m in _SPELLED_DIGITS.finditer(cleaned)]
    return [f"{run[:8]}... ({len(run)} digits)" for run in dict.fromkeys(runs)][:3]


def long_codes(text: str) -> list[str]:
    """The hashes, tokens and keys in ``text`` (see ``_CODE_CANDIDATE``), shortened for a note:
    ``["3f2a9c0d... (40 characters)"]``, at most three. Raises nothing."""
    found = [m.group() for m in _CODE_CANDIDATE.finditer(text)
             if len(_LETTER_DIGIT_SWITCH.findall(m.group())) >= 4]
    return [f"{code[:8]}... ({len(code)} characters)" for code in dict.fromkeys(found)][:3]


def _grown_characters(text: str, most: int = 4) -> str:
    """The characters of ``text`` that cleaning writes as more than one (``"… (...), ↂ (10000)"``),
    the most frequent first, for the length refusal: a text of "…" was told its numerals and
    ligatures had grown it (forty-third newcomer session)."""
    counts: dict[str, int] = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    grown = [(n, ch, written) for ch, n in counts.items() if len(written := clean_text(ch)) > 1]
    grown.sort(key=lambda item: -item[0])
    shown = ", ".join(f"{ch} ({written})" for _, ch, written in grown[:most])
    return f"characters such as {shown or 'numerals and ligatures'} are written out"


# A symbol or digit is spoken as a word or several, and the segment limit and admission count it
# so (segments.spoken_chars), but the text limit counted characters: 1,000 "a≥" (2,000
# characters) were taken as 112 segments, about 18 minutes of audio and 8 minutes of the worker
# where 2,000 letters make under 2 minutes (helper-106). A text may be spoken as this many times
# its limit: 35 sentences like "In 2024, revenue grew 3.5% to $1,234,567 from 987,654." (1,924
# characters, a third of them digits) count 4.8 times and still pass whole.
SPOKEN_LENGTH_FACTOR = 5


def _check_spoken_length(cleaned: str, max_chars: int) -> None:
    spoken = spoken_chars(cleaned)
    if spoken <= SPOKEN_LENGTH_FACTOR * max_chars:
        return
    heavy: dict[str, int] = {}
    for ch in cleaned:
        if spoken_chars(ch) > 1:
            heavy[ch] = heavy.get(ch, 0) + 1
    shown = ", ".join(f"{ch} ({n})" for ch, n in sorted(heavy.items(), key=lambda item: -item[1])[:5])
    raise InputError(
        f"The text is {len(cleaned)} characters long but is spoken as about {spoken} characters' worth of words: "
        f"its symbols and digits are each read as a word or several ({shown}). At most "
        f"{SPOKEN_LENGTH_FACTOR * max_chars} are made in one request ({SPOKEN_LENGTH_FACTOR} times the "
        f"{max_chars}-character limit). Split it into several requests.")


def _growth(text: str) -> str:
    """What lengthened ``text`` in cleaning, as the end of "The text is N characters long once ...".
    Plain digits grow too, spelled one at a time: "numerals and ligatures" told a text of 2000
    ones nothing (helper-59)."""
    if re.search(r"\d{13}", text):
        return "numbers of 13 or more digits are spelled one digit at a time"
    return _grown_characters(text)


def _greek_letters_are_symbols(text: str) -> bool:
    """True when no Greek letter in ``text`` is part of a word: each stands alone (π, α-β) or
    before a unit (µm), not next to another Greek letter (λόγος) nor inside a word of another
    script (a homoglyph: Hοllo with a Greek omicron). The rule counted Greek letters against
    10 % of the text, so "π r², µm" (the README's example) was refused and "π r²" was not."""
    for i, ch in enumerate(text):
        if _script_of(ch) != "el":
            continue
        j = i + 1
        while j < len(text) and unicodedata.category(text[j]).startswith("M"):
            j += 1  # its own accents
        before = text[i - 1] if i > 0 else " "
        after = text[j] if j < len(text) else " "
        if _script_of(before) == "el" or _script_of(after) == "el" or (before.isalpha() and after.isalpha()):
            return False
    return True


def _check_languages(text: str, languages: tuple[str, ...]) -> None:
    counts = detect_languages(text)
    supported = set(languages)
    if supported & _LATIN_LANGUAGES:
        supported.add("en")
    foreign = {lang: n for lang, n in counts.items() if lang not in supported}
    if not foreign:
        return
    if "el" in foreign and _greek_letters_are_symbols(text):
        del foreign["el"]
    if not foreign:
        return
    names = ", ".join(_language_name(c) for c in languages)
    found = ", ".join(_language_name(c) for c in sorted(foreign, key=foreign.get, reverse=True))
    shown = ", ".join(dict.fromkeys(_words_in(text, set(foreign))))
    shown = shown if len(shown) <= 40 else shown[:40] + "…"
    latin = " (a Chinese name in pinyin, for example)" if "zh" in foreign and "en" in supported else ""
    if set(foreign) <= _COSYVOICE_LANGUAGES - supported:
        other_engine = (f"or run the app with an engine that speaks {found} (CosyVoice 3 does; see the README)")
    else:
        other_engine = f"or use an engine that speaks {'them' if len(foreign) > 1 else 'it'}"
    raise InputError(
        f"This engine speaks {names} only, and the text contains {found} ({shown}), which it cannot "
        f"pronounce. Write those words in {names}{latin}, {other_engine}."
    )


def _language_name(code: str) -> str:
    return LANGUAGE_NAMES.get(code, code.title())  # a script's own name: "Linear B", "Old Italic"


def _words_in(text: str, scripts: set[str]) -> list[str]:
    """The runs of letters of ``scripts`` in ``text``, with their combining marks (vowel signs and
    diacritics, which belong to no script here: without them प्रिया was quoted as "प, र, य")."""
    words, current = [], ""
    for ch in text:
        if _script_of(ch) in scripts or (current and unicodedata.category(ch).startswith("M")):
            current += ch
        elif current:
            words.append(current)
            current = ""
    return words + ([current] if current else [])
