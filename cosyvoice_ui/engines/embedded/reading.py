"""Numbers and signs written out as English words before espeak-ng phonemizes the text.

espeak-ng reads many written forms its own way: "$50" as "dollar fifty", "2026-11-30" as "2026 dash
11 dash 30", "a<b" as "a b" (found by the thirty-seventh to forty-first newcomer sessions). The
embedded engine's text goes through :func:`spoken_form`; each step is its own function, so a test
can check one reading at a time. Only the embedded engine needs this: CosyVoice's own frontend
normalizes text (ttsfrd, or WeTextProcessing where ttsfrd is missing: ``cosyvoice/cli/frontend.py``).
"""

from __future__ import annotations

import re


def spoken_form(text: str) -> str:
    """``text`` as the embedded voice should read it: powers and fractions, dates, times and
    ranges, signed and currency amounts, then comparisons, written as words. The order matters:
    a range of amounts ("$50-$100") must be found before the amounts are written out, and a
    comparison ("<$50") after. Returns a new ``str``; raises nothing."""
    return read_comparisons(read_currency_amounts(read_signed_amounts(read_dates_times_and_ranges(
        read_powers_and_fractions(text)))))


_DENOMINATORS = {2: ("half", "halves"), 3: ("third", "thirds"), 4: ("quarter", "quarters"),
                 5: ("fifth", "fifths"), 6: ("sixth", "sixths"), 7: ("seventh", "sevenths"),
                 8: ("eighth", "eighths"), 9: ("ninth", "ninths"), 10: ("tenth", "tenths")}
# "1 1/2", "3⁄4" (U+2044, as clean_text writes a fraction character); not part of a date (1/2/2024)
_FRACTION = re.compile(r"(?<![\d/\u2044.,])(?:(\d+) )?(\d+)([/\u2044])(\d+)(?![\d/\u2044])")
_POWER = re.compile(r"(?<=\S)\^(\([+-]?\w{1,8}(?:[+-]\w{1,8})?\)|[+-]?(?:\d+|[A-Za-z])(?:[+-]\d+)?)(?![A-Za-z\d])")


# A typed "4/5" after these words is a count or a score ("step 1/3", "rated 4/5"), read "4 out of 5";
# before any other word than these units and "of" it is left as typed ("meet on 3/4 at noon", "2/3
# times"): read as fractions, both changed their meaning (thirty-ninth newcomer session).
_COUNTED_BEFORE = re.compile(r"\b(?:step|page|part|chapter|episode|round|question|slide|item|level|stage|track|disc|"
                             r"day|week|rated|rating|score|scored|scores|voted|got|gets)\s*$", re.I)
_FRACTION_AFTER = re.compile(
    r"\s*(?:[-\s]?(?:of|cups?|teaspoons?|tablespoons?|tsp|tbsp|inch(?:es)?|in|miles?|mi|hours?|hrs?|minutes?|mins?|"
    r"seconds?|pounds?|lbs?|ounces?|oz|kilograms?|kg|grams?|g|lit(?:re|er)s?|l|ml|cm|mm|m|km|foot|feet|ft|yards?|"
    r"yd|gallons?|gal|pints?|pt|quarts?|qt|sticks?|slices?|dozen|acres?|percent|pieces?|parts?|shares?|"
    r"servings?|cans?|bottles?|loaf|loaves)\b|[^\w\s]|$)", re.I)


def read_powers_and_fractions(text: str) -> str:
    """``text`` with powers and fractions written as English words, which espeak-ng reads right:
    ``10^5`` -> "10 to the power of 5", ``x^2`` -> "x squared", ``2^n`` -> "2 to the power of n",
    ``1 1⁄2`` (U+2044, as :func:`cosyvoice_ui.inputs.text.clean_text` writes ``1½``) -> "1 and
    1 half", ``3⁄4`` -> "3 quarters" (a denominator over 10: "over"). A typed slash is read as a
    fraction only when the fraction is proper with a denominator of 2-10 (``1/2``, ``1 3/4``) and,
    without a whole number before it, stands at the end of a phrase or before "of" or a unit
    (``3/4 cup``, ``1/2 of it``); after a counting word it is a score (``step 1/3``, ``rated 4/5``:
    "1 out of 3"); before other words, "24/7", "50/50" and dates (``1/2/2024``, ``3/4 at noon``)
    it is left to espeak-ng, which reads ``1/2`` as "one slash two" and skips U+2044."""
    def fraction(m: re.Match) -> str:
        whole, num, slash, den = m.group(1), int(m.group(2)), m.group(3), int(m.group(4))
        words = _DENOMINATORS.get(den)
        if slash == "/" and not (words and num < den):
            return m.group()
        if slash == "/" and not whole:
            if _COUNTED_BEFORE.search(m.string, 0, m.start()):
                return f"{num} out of {den}"
            if not _FRACTION_AFTER.match(m.string, m.end()):
                return m.group()
        part = f"{num} {words[num != 1]}" if words else f"{num} over {den}"
        return f"{whole} and {part}" if whole else part

    def power(m: re.Match) -> str:
        exponent = m.group(1).strip("()").lstrip("+")  # 10^(3), as clean_text writes 10⁽³⁾
        return {"2": " squared", "3": " cubed"}.get(exponent, f" to the power of {exponent}")

    return _POWER.sub(power, _FRACTION.sub(fraction, text))


_SIGNED_AMOUNT = re.compile(r"(?<![\w.,])-(?=[$€£¥₹¢]\s?[0-9])")
# A minus right after a bracket, "=", a comparison or a colon: espeak-ng said nothing for it ("(-20%)"
# was "twenty percent", "x = -1" "x equals one"; forty-fifth newcomer session). After a space it
# says "minus" itself.
_MINUS_AFTER_SIGN = re.compile(r"(?:(?<=[(\[=<>:])|(?<=[(\[=<>:] ))[-\u2212](?=\d)")


def read_signed_amounts(text: str) -> str:
    """``text`` with a minus before a currency amount written as a word: espeak-ng read "-$50" as
    "dollar fifty", so a refund of -$50 was spoken as a payment (thirty-seventh newcomer
    session); "-5" it reads as "minus 5" already, but not after a bracket or "=" (``(-20%)``,
    ``x = -1``), where it is written as a word too."""
    return _MINUS_AFTER_SIGN.sub("minus ", _SIGNED_AMOUNT.sub("minus ", text))


_CURRENCIES = {"$": ("dollar", "dollars", "cent", "cents"), "€": ("euro", "euros", "cent", "cents"),
               "£": ("pound", "pounds", "penny", "pence"), "¥": ("yen", "yen", "sen", "sen"),
               "₹": ("rupee", "rupees", "paisa", "paise")}
_SCALES = {"k": "thousand", "m": "million", "mn": "million", "b": "billion", "bn": "billion",
           "thousand": "thousand", "million": "million", "billion": "billion", "trillion": "trillion",
           "lakh": "lakh", "lakhs": "lakh", "crore": "crore", "crores": "crore"}
# Grouped by thousands (1,000,000) or the Indian way (10,00,000: "₹1,00,000" was read "1 rupee, 00,000";
# fortieth newcomer session).
_AMOUNT = (r"(\d{1,3}(?:,\d{3})+|\d{1,2}(?:,\d{2})+,\d{3}|\d+)(?:\.(\d+))?"
           r"(?:\s?(k|m|mn|b|bn|thousand|million|billion|trillion|lakhs?|crores?)\b)?")
_CURRENCY_BEFORE = re.compile(rf"([$€£¥₹])\s?{_AMOUNT}", re.I)
_CURRENCY_AFTER = re.compile(rf"(?<![\w.,]){_AMOUNT}\s?([€£¥₹])", re.I)


def read_currency_amounts(text: str) -> str:
    """``text`` with amounts of money written as English words: espeak-ng read "$50" as "dollar
    fifty" (which a listener hears as $1.50), "$1.2M" as "dollar one point two M" and "€9.99" as
    "euros nine point nine nine" (thirty-ninth newcomer session). ``$50`` -> "50 dollars", ``$1``
    -> "1 dollar", ``$1.50`` -> "1 dollar and 50 cents", ``$1.2M`` / ``50k €`` -> "1.2 million
    dollars" / "50 thousand euros", ``9.99 €`` -> "9 euros and 99 cents"; ``$``, ``€``, ``£``,
    ``¥``, ``₹`` before or after the amount."""
    def words(symbol: str, whole: str, decimals: str | None, scale: str | None) -> str:
        one, many, sub_one, sub_many = _CURRENCIES[symbol]
        if scale:
            amount = whole + (f".{decimals}" if decimals else "")
            return f"{amount} {_SCALES[scale.lower()]} {many}"
        whole = whole.replace(",", "") if re.fullmatch(r"\d{1,2}(?:,\d{2})+,\d{3}", whole) else whole
        spoken = f"{whole} {one if whole == '1' else many}"
        if decimals and len(decimals) == 2 and int(decimals):
            cents = str(int(decimals))
            cents = f"{cents} {sub_one if cents == '1' else sub_many}"
            return cents if whole == "0" else f"{spoken} and {cents}"
        return spoken if not decimals or not int(decimals) else f"{whole}.{decimals} {many}"

    def before(m: re.Match) -> str:
        joined = m.start() > 0 and m.string[m.start() - 1].isalnum()  # "US$20" became "US20 dollars"
        return (" " if joined else "") + words(m.group(1), m.group(2), m.group(3), m.group(4))

    text = _CURRENCY_BEFORE.sub(before, text)
    return _CURRENCY_AFTER.sub(lambda m: words(m.group(4), m.group(1), m.group(2), m.group(3)), text)


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_ISO_DATE = re.compile(r"(?<![\d-])(1[89]\d\d|2[01]\d\d)-(\d{2})-(\d{2})(?![\d-])")  # 1800-2199: "1234-12-12" is a code
_DAYS_IN_MONTH = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_CLOCK = r"\d{1,3}(?::\d{2})?"
# An en dash between numbers; a hyphen between numbers of one to three digits or clock times ("9-5",
# "2-3 tbsp", "50-100", "9:00-17:00"), between years ("1939-1945"), or between an amount and a
# currency sign ("$50-$100": the range was lost, fortieth newcomer session); not "123-4567" (a
# phone number), "1-800-555" nor "1-2-3".
_RANGE = re.compile(rf"(?<![\d:.,-])(\d[\d,.:]*)\s?\u2013\s?(?=[$€£¥₹]?\d)"
                    rf"|(?<![\d:.,-])({_CLOCK}|1[89]\d\d|20\d\d)-(?=(?:{_CLOCK}|1[89]\d\d|20\d\d)(?![\d:-])"
                    r"(?!\s*(?:=|equals\b)))"  # "10-2 = 8" is a subtraction (forty-first newcomer session)
                    rf"|(?<=\d)[kKmMbB]?\s?[-\u2013]\s?(?=[$€£¥₹]\d)")
# A date written month/day/year (12/25/1990) or day/month/year (25/12/1990): told apart when one of
# the first two numbers is over 12; both 12 or under ("03/04/2025") it stays as typed ("slash").
_SLASH_DATE = re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})/(1[89]\d\d|2[01]\d\d)(?![\d/])")
# Not "0:03": a position in a video or a lap time ("0:00 Intro" was "zero o'clock intro"; forty-fifth).
_TIME = re.compile(r"(?<![\d:.,])(0[0-9]|1\d?|[2-9]|2[0-4]):([0-5]\d)(?![\d:])(\s?[ap]\.?m\b\.?)?", re.I)


def read_dates_times_and_ranges(text: str) -> str:
    """``text`` with ISO dates, clock times and number ranges written as English words, which
    espeak-ng read as arithmetic or digits (thirty-ninth newcomer session): ``2026-11-30`` ->
    "November 30, 2026" (was "2026 dash 11 dash 30"), ``12/25/1990`` and ``25/12/1990`` -> "December 25,
    1990" (not ``03/04/2025``, which could be either), ``10–12`` and ``9-5`` -> "10 to 12", "9 to 5"
    (the en dash was silent, the hyphen "dash"), ``9:00`` -> "9 o'clock" ("9 zero zero"), ``14:05``
    -> "14 oh 5" ("14 zero 5"), ``9:00 am`` -> "9 am" (not ``0:03``, a position in a video); years
    of 1100-1999 after a month and day, in a range or after "in", "since", "until" at a phrase's
    end as a year is said (``1879`` -> "18 79")."""
    def date(m: re.Match) -> str:
        month, day = int(m.group(2)), int(m.group(3))
        valid = 1 <= month <= 12 and 1 <= day <= _DAYS_IN_MONTH[month - 1]  # not "February 30"
        return f"{_MONTHS[month - 1]} {day}, {m.group(1)}" if valid else m.group()

    def range_(m: re.Match) -> str:
        if m.group(1) is not None:
            return f"{m.group(1)} to "
        if m.group(2) is not None:
            return f"{m.group(2)} to "
        return m.group().rstrip("-\u2013 ") + " to "  # an amount's scale (50k) stays before "to"

    def time_(m: re.Match) -> str:
        hour, minutes, meridiem = m.group(1), m.group(2), m.group(3) or ""
        if minutes == "00":
            return f"{int(hour)}{meridiem}" if meridiem else f"{int(hour)} o'clock"
        return f"{int(hour)} oh {minutes[1]}{meridiem}" if minutes[0] == "0" else m.group()

    def slash_date(m: re.Match) -> str:
        a, b, year = int(m.group(1)), int(m.group(2)), m.group(3)
        month, day = (a, b) if b > 12 >= a else (b, a) if a > 12 >= b else (0, 0)
        if not (1 <= month <= 12 and 1 <= day <= _DAYS_IN_MONTH[month - 1]):
            return m.group()
        return f"{_MONTHS[month - 1]} {day}, {year}"

    text = _ISO_DATE.sub(date, text)
    text = _SLASH_DATE.sub(slash_date, text)
    text = _RANGE.sub(range_, text)
    text = _TIME.sub(time_, text)
    return _YEAR.sub(lambda m: _year_words(m.group(1)) + m.group(2) + _year_words(m.group(3)) if m.group(1)
                     else m.group(4) + _year_words(m.group(5)), text)


# A year of 1100-1999 after a month and day ("March 14, 1879", also as written from 1879-03-14), in
# a range of years ("1939 to 1945") or after "in", "since", "until" at a phrase's end: espeak-ng read
# it as an amount, "one thousand eight hundred seventy nine" (forty-fifth newcomer session).
_YEAR = re.compile(r"\b(1[1-9]\d\d)( to )(1[1-9]\d\d)\b"
                   r"|((?:January|February|March|April|May|June|July|August|September|October|November|December)"
                   r" \d{1,2}, |\b(?:[Ii]n|[Ss]ince|[Uu]ntil|circa) )(1[1-9]\d\d)(?=[.,;:!?)]|\s*$)")


def _year_words(year: str) -> str:
    """"1879" -> "18 79", "1900" -> "19 hundred", "1905" -> "19 oh 5": espeak-ng reads each half as
    a number, as a year is said."""
    century, rest = year[:2], int(year[2:])
    return f"{century} hundred" if rest == 0 else f"{century} oh {rest}" if rest < 10 else f"{century} {rest}"


# Between a number or a one-letter variable and another (a<b, x >= 2, 5 > 3; not "Press <Enter>"), or
# before a number at the start of a phrase (<$50, > 5).
_COMPARISON = re.compile(r"\b(\d[\d.,]*|[A-Za-z])\s*(<=|>=|<|>)\s*(?=\d|[A-Za-z]\b)"
                         r"|(?:^|(?<=[\s(]))(<=|>=|<|>)\s?(?=[$€£¥₹]?\d)")
_COMPARISON_WORDS = {"<": "less than", ">": "greater than", "<=": "less than or equal to",
                     ">=": "greater than or equal to"}
_SPACED_MINUS = re.compile(r"(?<=\d) - (?=\d)|(?<=\d)-(?=\d+\s*(?:=|equals\b))")  # 5 - 3, 10-2 = 8
_ABOUT = re.compile(r"(?:^|(?<=[\s(]))~\s?(?=[$€£¥₹]?\d)")  # ~$50 was "tilde 50 dollars" (forty-first)
_TIMES = re.compile(r"(?<=\d)x(?=[\s.,;:!?)]|$)")  # "rose 3x" was "3 x"


def read_comparisons(text: str) -> str:
    """``text`` with comparison signs and a spaced minus between numbers written as words, which
    espeak-ng says nothing for (fortieth newcomer session: "a<b" was read "a b", "Price <$50"
    "price 50 dollars", "5 - 3 = 2" "five three equals two"): ``a<b`` -> "a less than b",
    ``x >= 2`` -> "x greater than or equal to 2", ``<$50`` -> "less than $50", ``5 - 3`` -> "5
    minus 3"; also ``~$50`` -> "about $50" and ``3x`` -> "3 times". Only between numbers or one-letter variables, or before a number: "Press <Enter>"
    and arrows ("->") stay as typed."""
    def sign(m: re.Match) -> str:
        if m.group(2):
            return f"{m.group(1)} {_COMPARISON_WORDS[m.group(2)]} "
        return f"{_COMPARISON_WORDS[m.group(3)]} "

    text = _ABOUT.sub("about ", _TIMES.sub(" times", text))
    return _SPACED_MINUS.sub(" minus ", _COMPARISON.sub(sign, text))
