import pytest

from cosyvoice_ui.errors import InputError
from cosyvoice_ui.inputs.text import clean_text, detect_languages, validate_text

from .conftest import PROMPTS_DIR


def test_plain_english_passes_and_is_cleaned():
    assert validate_text("  Hello,\n world!\t ", 200, ("en",)) == "Hello, world!"


@pytest.mark.parametrize("text", [None, "", "   ", "\n\t  \r\n"])
def test_empty_or_whitespace_is_refused(text):
    with pytest.raises(InputError, match="empty"):
        validate_text(text, 200)


def test_over_limit_names_length_and_limit():
    with pytest.raises(InputError) as e:
        validate_text("a" * 201, 200)
    assert "201" in str(e.value) and "200" in str(e.value)


def test_exactly_at_limit_passes():
    assert len(validate_text("b" * 200, 200)) == 200


@pytest.mark.parametrize("text", ["!!!???", "... --- ...", "😀😀🎉"])
def test_punctuation_or_emoji_only_is_refused(text):
    with pytest.raises(InputError, match="no letters"):
        validate_text(text, 200)


def test_control_characters_are_removed():
    assert validate_text("Hel\x00lo\x1b[31m there\u202e", 200) == "Hello there"
    # Other control characters part words ("bellrang" was one word; helper-57); NUL does not: UTF-16
    # text read as bytes has one after every letter.
    assert validate_text("The bell\x07rang and\x7fstopped", 200) == "The bell rang and stopped"
    assert validate_text("H\x00e\x00l\x00l\x00o\x00 there", 200) == "Hello there"


def test_chinese_for_english_engine_names_supported_language():
    with pytest.raises(InputError) as e:
        validate_text("今天天气很好", 200, ("en",))
    assert "English" in str(e.value) and "Chinese" in str(e.value)


def test_mixed_scripts_detected():
    counts = detect_languages("Hello 世界 Привет")
    assert counts["en"] == 5 and counts["zh"] == 2 and counts["ru"] == 6


def test_numbers_and_units_pass_for_english():
    assert validate_text("It costs $5.99 for 3 kg at 20°C.", 200, ("en",))


def test_fullwidth_latin_is_normalized():
    assert validate_text("ｈｅｌｌｏ　ｗｏｒｌｄ！", 200, ("en",)) == "hello world!"


def test_chinese_keeps_its_fullwidth_punctuation():
    """CosyVoice reads Chinese with its own punctuation; NFKC alone would make it ASCII."""
    text = "你好，世界！今天（周一）天气怎么样？好吧…　ｈｉ"
    assert validate_text(text, 200) == "你好，世界！今天（周一）天气怎么样？好吧… hi"


def test_ansi_escape_sequence_removed_whole():
    assert validate_text("red \x1b[31mtext\x1b[0m here", 200, ("en",)) == "red text here"


@pytest.mark.parametrize("text, found", [
    ("Please meet my friend 王小明 in Beijing tomorrow morning at nine.", "Chinese (王小明)"),
    ("Our guest today is محمد from the north office.", "Arabic (محمد)"),
    ("Say hello to 田中さん and 田中 when you arrive at the station.", "Chinese, Japanese (田中さん, 田中)"),
    ("The word is Hаllo with one Cyrillic letter.", "Russian (а)"),  # a homoglyph pasted in
    # Vowel signs and diacritics belong to their word (it was quoted as "प, र, य" and "م, ح, د").
    ("Her name is Priya (प्रिया).", "Hindi (प्रिया)"),
    ("Thanks مُحَمَّد.", "Arabic (مُحَمَّد)"),
    # Scripts without a range of their own passed unrefused, read out or dropped.
    ("Meet Արամ and გიორგი today.", "Georgian, Armenian (Արամ, გიორგი)"),
    ("Meet ሰላም today, and ᚠᚢᚦ too.", "Ethiopic, Runic (ሰላም, ᚠᚢᚦ)"),
    ("Hello ⠓⠑⠇⠇⠕ in Braille.", "Braille (⠓⠑⠇⠇⠕)"),
    # A script named in more than one word was named by its first ("Linear"; helper-150).
    ("Tablet \U00010000\U00010001 and \U00010300\U00010301.", "Linear B, Old Italic (\U00010000\U00010001, \U00010300\U00010301)"),
])
def test_a_few_letters_of_another_script_in_english_are_named(text, found):
    """A name in another script, however short, was read by the English voice as "Chinese
    letter" (or "Arabic meem") with no note; the refusal names the words."""
    with pytest.raises(InputError) as e:
        validate_text(text, 200, ("en",))
    assert f"the text contains {found}, which it cannot pronounce" in str(e.value), str(e.value)


def test_refusal_advice_fits_the_script():
    """Pinyin is advice for Chinese only, and CosyVoice 3 only for languages it speaks."""
    with pytest.raises(InputError) as chinese:
        validate_text("Meet 王小明 today.", 200, ("en",))
    assert "pinyin" in str(chinese.value) and "CosyVoice 3 does" in str(chinese.value)
    with pytest.raises(InputError) as thai:
        validate_text("Call มานี today.", 200, ("en",))
    assert "pinyin" not in str(thai.value) and "CosyVoice" not in str(thai.value), str(thai.value)


@pytest.mark.parametrize("text, found", [
    ("Say λόγος twice.", "Greek (λόγος)"),
    ("Hοllo there", "Greek (ο)"),  # a Greek omicron inside an English word
])
def test_greek_words_are_greek(text, found):
    with pytest.raises(InputError) as e:
        validate_text(text, 200, ("en",))
    assert f"the text contains {found}" in str(e.value), str(e.value)


def test_letter_like_signs_are_not_a_script():
    assert validate_text("It is 5 µm wide, 1ª edición, Hawaiʻi, Nguyễn Văn A.", 200, ("en",))


@pytest.mark.parametrize("text", [
    "The area is π r² for a circle of radius r.",
    # Two Greek letters in a short text were counted as Greek (over 10 % of the letters), so the
    # README's own example was refused; standing alone they are symbols, read "pi", "mu".
    "π r², µm", "The area is π r² in µm.", "π", "α-β decay",
])
def test_a_stray_greek_letter_in_a_formula_is_english(text):
    assert validate_text(text, 200, ("en",))
    assert validate_text("Room ١٢٣ is on the left.", 200, ("en",))  # Arabic-Indic digits are digits


@pytest.mark.parametrize("typed, cleaned", [
    # NFKC joined a superscript or fraction to the number before it: "1½" became "11⁄2", read
    # "eleven two"; "10⁵" became "105" (twenty-sixth newcomer session).
    ("1½ cups", "1 1\u20442 cups"), ("1⅞ miles", "1 7\u20448 miles"), ("¾", "3\u20444"),
    ("10⁵ stars", "10^5 stars"), ("x² + y²", "x^2 + y^2"), ("5 km³", "5 km^3"), ("10⁻³ s", "10^-3 s"),
    ("E = mc²", "E = mc^2"),
    ("the note¹ here", "the note here"),  # after a word: a footnote marker, not read
    # After punctuation a footnote marker was spoken; after ")" and as a letter, a power was not
    # (twenty-seventh newcomer session).
    ("Footnote here.¹ Next.", "Footnote here. Next."), ("He said “hello”¹ to me.", "He said “hello” to me."),
    ("(see the note)¹ ok", "(see the note) ok"), ("Value (x)² here.", "Value (x)^2 here."), ("(a+b)²", "(a+b)^2"),
    ("2ⁿ", "2^n"), ("2ⁿ⁺¹", "2^n+1"),
    ("Try 10⁽³⁾ now.", "Try 10^(3) now."), ("x⁽ⁿ⁺¹⁾", "x^(n+1)"),  # the exponent was dropped (twenty-eighth)
    ("2ⁿᵈ place", "2nd place"), ("1ˢᵗ", "1st"),  # ordinal suffixes (twenty-ninth)
    ("Items ①②③ here.", "Items 1 2 3 here."), ("⑪⑫", "11 12"),  # circled numbers were joined (thirtieth)
    ("Items ⒈⒉⒊ here.", "Items 1. 2. 3. here."),  # list markers were "1.2.3.", a decimal (thirty-second)
    ("Total 999,999,999,999,999 now.", "Total 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 now."), ("Pay 999,999,999,999 now.", "Pay 999,999,999,999 now."),
    ("H₂O", "H2O"), ("³", "3"),
])
def test_superscripts_and_fractions_keep_apart_from_the_number_before(typed, cleaned):
    assert clean_text(typed) == cleaned


@pytest.mark.parametrize("typed, cleaned", [
    ("I donʼt think itʼs Johnʼs.", "I don't think it's John's."), ("donʹt", "don't"), ("don`t", "don't"),
    ("run `ls` now", "run `ls` now"), ("Hawaiʻi", "Hawaiʻi"),
])
def test_apostrophes_typed_as_other_characters_become_apostrophes(typed, cleaned):
    """espeak spelled "donʼt" (U+02BC) out letter by letter: a sentence took 2.9 times as long
    (thirty-seventh newcomer session). Only between letters: a backtick quoting code stays."""
    assert clean_text(typed) == cleaned


def test_a_pile_of_combining_marks_is_refused_by_name():
    """250 accents on one letter in a six-word sentence were split from their letter into a
    segment of their own, and the request failed as "no speech sounds"."""
    # All 250 counted: NFKC joins the first to the e, and "249" was not what was typed (helper-55).
    with pytest.raises(InputError, match="250 accents or other combining marks in a row"):
        validate_text("Hello world, how are you today e" + "\u0301" * 250, 2000, ("en",))
    assert validate_text("Nguyễn Văn A, naïve café, e\u0301\u0323", 200, ("en",))  # a few are text


def test_a_text_in_a_language_the_engine_cannot_speak_is_told_so_before_its_length():
    with pytest.raises(InputError, match="English"):
        validate_text("今天天气很好。" * 400, 2000, ("en",))


def test_a_huge_text_is_refused_before_it_is_cleaned():
    """Cleaning walks every character: 100 million of them cost 6 minutes of the web process's
    CPU before the refusal. Far over the limit, the text is refused as sent; a text that only
    cleaning brings within the limit (runs of spaces) is still accepted."""
    # Cleaned, it would be 19999999 characters (the last space goes): the count shows it was not.
    with pytest.raises(InputError, match="The text is 20000000 characters long; the limit is 2000"):
        validate_text("a " * 10_000_000, 2000, ("en",))
    assert validate_text("Hello" + " " * 3000 + "there.", 2000, ("en",)) == "Hello there."


@pytest.mark.parametrize("field,name,limit", [("prompt_text", "prompt text", 500), ("instruction", "instruction", 200)])
def test_a_huge_prompt_text_or_instruction_is_refused_before_it_is_cleaned(field, name, limit):
    """Only the text had the raw-length check: a million characters of prompt text or instruction
    cost 3.5-4 s of the web process's CPU before the refusal (twenty-fourth newcomer session)."""
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.inputs.request import build_request

    values = {"prompt_text": None, "instruction": None, field: "a " * 500_000}
    with pytest.raises(InputError, match=f"The {name} is 1000000 characters long; the limit is {limit}"):
        build_request("Hello there.", None, values["prompt_text"], values["instruction"], 1.0, -1,
                      max_text_chars=2000, capabilities=engine_capabilities("embedded"))


def test_digits_and_numerals_of_every_script_are_spoken_as_numbers():
    """Arabic-Indic, Devanagari and Thai digits were dropped from the speech without a note ("Call
    me at ١٢٣ now." came out without the number), an Ethiopic numeral too (twenty-fourth newcomer
    session), and a cuneiform or Roman numeral was read as its code point ("letter one two four one
    five"; twenty-fifth). They are written as the numbers they stand for; the Chinese 〇 stays."""
    assert validate_text("Call me at ١٢٣ now.", 200, ("en",)) == "Call me at 123 now."
    assert validate_text("Pay ५ dollars, room ๑๒.", 200, ("en",)) == "Pay 5 dollars, room 12."
    assert validate_text("Item ① of Ⅻ, ❶.", 200, ("en",)) == "Item 1 of XII, 1 ."
    assert validate_text("Total: ፻ birr, ፲፪ days.", 200, ("en",)) == "Total: 100 birr, 10 2 days."
    assert validate_text("Count 𒐕 wedges, ↂ men, 𐄇 sign.", 200, ("en",)) == "Count 1 wedges, 10000 men, 1 sign."
    assert validate_text("价格是〇元, 二〇二六年", 200, ("zh", "en")) == "价格是〇元, 二〇二六年"
    # A text that numerals make longer says so: "9011 characters" for 1512 typed (twenty-sixth).
    with pytest.raises(InputError, match=r"5999 characters long once characters such as ↂ \(10000\) are written out \(1000 as typed\)"):
        validate_text("ↂ" * 1000, 2000, ("en",))
    # A PDF's ligatures grow too, with no numeral in sight (thirty-seventh newcomer session), and
    # ellipses, which were blamed on numerals and ligatures (forty-third): the message names them.
    with pytest.raises(InputError, match=r"2100 characters long once characters such as ﬃ \(ffi\)"):
        validate_text("ﬃ" * 700, 2000, ("en",))
    with pytest.raises(InputError, match=r"3996 characters long once characters such as … \(\.\.\.\) are written out"):
        validate_text("a…" * 999, 2000, ("en",))  # ("…" * 1499 is shortened: a run of punctuation)
    # Plain digits, spelled one at a time, were blamed on "numerals and ligatures" (helper-59).
    with pytest.raises(InputError, match=r"3999 characters long once numbers of 13 or more digits are spelled one "
                                         r"digit at a time \(2000 as typed\)"):
        validate_text("1" * 2000, 2000, ("en",))
    # Their separators too: "3٫14" was read "three fourteen" (twenty-sixth newcomer session).
    assert validate_text("Price $١٬٢٣٤٫٥٦, pi is ٣٫١٤.", 200, ("en",)) == "Price $1,234.56, pi is 3.14."


@pytest.mark.parametrize("typed, start", [
    ("I love pizza 🍕🍕 and cats 😺! Great 👍🏽.", "Emoji removed before speaking"),  # was "Markup" (helper-78)
    ("Nice :-) and 🍕 too.", "Emoji and emoticons removed before speaking"),
    ("<b>Bold</b> and 🍕 too.", "Markup and emoji removed before speaking"),
    ("<b>Bold</b> words.", "Markup removed before speaking"),
])
def test_the_removal_note_names_what_was_removed(typed, start):
    _, notes = _requested(typed)
    assert len(notes) == 1 and notes[0].startswith(start), notes


def _requested(text: str, engine: str = "embedded"):
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.inputs.request import build_request

    prompt = str(PROMPTS_DIR / "xtts_female.wav") if engine == "cosyvoice" else None
    request, notes, _ = build_request(text, prompt, None, None, 1.0, -1, max_text_chars=2000,
                                      capabilities=engine_capabilities(engine))
    return request.text, [n for n in notes if " removed before speaking" in n]


@pytest.mark.parametrize("typed, spoken", [
    ('<p>Dear Anna,<br/>see <a href="https://x.y/?a=1&amp;b=2">the <b>new</b> plan</a>.</p>',
     "Dear Anna, see the new plan."),
    ("un<i>believ</i>able &amp; true&nbsp;&#39;so&#39;", "unbelievable & true 'so'"),
    ('<speak>Hi <break time="1s"/><prosody rate="slow">there</prosody></speak>', "Hi. there."),
    # Blocks end a sentence; footnotes, subtitle timings and SSML aliases (thirty-ninth newcomer session).
    ('<div class="post"><h2>Welcome back</h2><p>Read our news.</p></div><ul><li>One</li><li>Two</li></ul>',
     "Welcome back. Read our news. One. Two."),
    ("> **Tip:** use a *Dutch oven*[^2].\n\n[^2]: Cast iron.", "Tip: use a Dutch oven. Cast iron."),
    ("1\n00:00:01,000 --> 00:00:03,500\nHello, how are you?\n\n2\n00:00:04,000 --> 00:00:06,000\nFine.",
     "Hello, how are you? Fine."),
    ("WEBVTT\n\n00:01.000 --> 00:04.000\nNever drink it.", "Never drink it."),
    ('The <sub alias="World Wide Web">WWW</sub> is big.', "The World Wide Web is big."),
    # fortieth newcomer session
    ("00:01:02,500 --> 00:01:04,000 Hello there.", "Hello there."),
    ("| Name | Age |\n|---|---|\n| Bob | 42 |", "Name, Age. Bob, 42."),
    ("Here*. And one**. Rating: ***** stars.", "Here. And one. Rating: stars."),
    ('<p>A cat: <img alt="a cat" src="x.png"><p>Done', "A cat: a cat. Done."),
    # Code and drawings go with their content (forty-second newcomer session).
    ('<head><style>body{color:red}</style><script>var x = "no";</script></head><h1>Welcome</h1>'
     '<svg><text>icon</text></svg><p>Hello.</p>', "Welcome. Hello."),
    ('<mstts:express-as style="cheerful">Yay!</mstts:express-as> <!-- hidden -->', "Yay!"),
    ("[laughter] Oh <strong>no</strong>, <laughter>ha ha</laughter>.", "Oh no, ha ha."),
    ('<svg onload="window.__w=1"> Hello there.', "Hello there."),  # an unpaired <svg> (helper-148)
    ("## Intro\nThis is **bold** and *it* and ~~old~~ `code`.\n- one\n* two\n> quoted\n---\n"
     "See [the docs](https://x.y/a_b).", "Intro. This is bold and it and old code. one. two. quoted See the docs."),
])
def test_markup_is_removed_with_a_note(typed, spoken):
    """HTML, SSML, Markdown and CosyVoice's inline tags pasted into the text were read aloud by the
    embedded engine ("less than b greater than"; thirty-seventh newcomer session)."""
    text, notes = _requested(typed)
    assert text == spoken
    assert len(notes) == 1 and "<" not in spoken


@pytest.mark.parametrize("typed", ["x <y and y> z, if a < b.", "2*3*4 = 24 and a * b", "Call #5 now",
                                   "snake_case_name", "AT&T and R&D; &foo; here", "[1] See note", "if a<b and c>d then",
                                   # fortieth newcomer session: tags named in prose, signs before numbers, names
                                   "Use a <p> tag; the <head> of it.", "> 5 people came.", "+ 5 points.",
                                   "Use __init__ and A__B.",
                                   "Use <template> files; see <template>.", "Tags: <slot>, <Slot/>, <SLOT />"])
def test_text_that_only_looks_like_markup_is_kept(typed):
    text, notes = _requested(typed)
    assert notes == [] and text == clean_text(typed)


@pytest.mark.parametrize("typed, spoken", [
    # WebVTT as YouTube writes it: header, NOTE block, word timestamps, class and voice spans.
    ("WEBVTT\nKind: captions\nLanguage: en\n\nNOTE made by hand\nstill the note\n\n"
     "00:00:00.000 --> 00:00:02.000 align:start position:0%\nhello<00:00:00.480><c> everyone</c>"
     "<00:00:00.960><c.yellow> and</c>\n\n00:00:02.000 --> 00:00:04.000\n<v Roger>Welcome.</v>",
     "hello everyone and Welcome."),
    ("[![Build](https://img.shields.io/b.svg)](https://ci.example.com/x) passing.", "Build passing."),
    ('See the [docs][1] and [FAQ][].\n\n[1]: https://example.com/docs "Docs"\n[FAQ]: https://example.com/faq',
     "See the docs and FAQ."),
    ("Install:\n```bash\ngit clone https://github.com/foo/bar.git\ncd bar && ./run.sh\n```\nThen run it.",
     "Install: Then run it."),
    ("- [x] Buy milk\n- [ ] Call Anna", "Buy milk. Call Anna."),
    ("It was built.[2][3] In 1901[citation needed] it fell,[a] they say[who?].",
     "It was built. In 1901 it fell, they say."),
    ('Retrieved from "https://en.wikipedia.org/w/index.php?title=Foo&oldid=12345".',
     'Retrieved from "en.wikipedia.org".'),
    ("Go to https://www.google.com/url?sa=t&url=https%3A%2F%2Fexample.com, or www.example.org/a/b.",
     "Go to google.com, or example.org."),
    ("(see https://en.wikipedia.org/wiki/Foo_(bar)). Mail <mailto:a@b.org> or see <https://x.org/q>.",
     "(see en.wikipedia.org). Mail a@b.org or see x.org."),
    # Forty-fifth newcomer session: boolean attributes and declarations, CRLF, IPA, rolling captions,
    # addresses without a scheme, sound labels.
    ('<!DOCTYPE html><video controls autoplay muted><source src="a.mp4" type="video/mp4"></video>'
     '<div class="banner" hidden>We use cookies.</div><details open><summary>More</summary></details>',
     "We use cookies. More."),
    ("# Title\r\n\r\n```\r\npip install foo\r\n```\r\n| a | b |\r\n|---|---|\r\n| 1 | 2 |\r\n",
     "Title. a, b. 1, 2."),
    ("Paris (/ˈpærɪs/; French: [paʁi] ⓘ) is big. Einstein (/ˈaɪnstaɪn/ EYEN-styne; German: [ˈalbɛɐt] ⓘ; "
     "14 March 1879) was.", "Paris is big. Einstein (EYEN-styne; 14 March 1879) was."),
    ("WEBVTT\n\n00:00:00.000 --> 00:00:02.000\nhello<00:00:00.480><c> everyone</c>\n\n"
     "00:00:02.000 --> 00:00:02.010\nhello everyone\n \n\n00:00:02.010 --> 00:00:04.000\nhello everyone\n"
     "to the show\n[Music]", "hello everyone to the show"),
    ("See github.com/user/repo/blob/main/x.py#L10-L20 and bit.ly/3xYzAbC. Done.", "See github.com and bit.ly. Done."),
    ("It was built.[a][2] Done[1].", "It was built. Done."),
])
def test_pasted_documents_lose_what_nobody_meant_to_hear(typed, spoken):
    """Forty-third newcomer session: WebVTT's word timings made a 1.6 s cue 15.8 s, a badge and
    reference links read their addresses, citation marks and a "Retrieved from" address made an
    article 20 % longer, a 232-character address was 43 s of letters, a code block's commands
    were read out, task-list boxes read "x"."""
    text, notes = _requested(typed)
    assert text == spoken
    assert len(notes) == 1


@pytest.mark.parametrize("typed", ["NOTE: the office closes at 5.", "[1] See the first note.",
                                   "Write to a.b@example.com today.",
                                   # forty-fifth newcomer session: indices, plurals, lists, units
                                   "Set x[i] and Buyer[s] and A[i][j].", "Items: a, , b; c; ;d (x; y)",
                                   "e.g. 3.5/5 km/h and/or", "x <b and c> d"])
def test_text_that_only_looks_like_subtitles_citations_or_addresses_is_kept(typed):
    text, notes = _requested(typed)
    assert notes == [] and text == clean_text(typed)


def test_a_bare_tilde_line_is_a_scene_break_not_code():
    """Fiction's "~~~" between paragraphs removed the paragraph between two of them as code
    (forty-fifth newcomer session); "~~~python" still opens a code block."""
    text, notes = _requested("Paragraph A.\n\n~~~\n\nParagraph B.\n\n~~~\n\nParagraph C.")
    assert text == "Paragraph A. Paragraph B. Paragraph C."
    text, notes = _requested("Code:\n~~~python\nx = 1\n~~~\nDone.")
    assert text == "Code: Done."
    # Four tildes or more were named "```", which the text did not hold (helper-111).
    text, notes = _requested("Chapter one ends here.\n~~~~\nThe rest of the story.")
    assert text == "Chapter one ends here. The rest of the story." and "~~~ (scene breaks)" in notes[0], notes
    assert "```" not in notes[0], notes


def test_a_reference_to_an_invisible_character_is_noted_as_nothing():
    """"&#x202E;" (right-to-left override) turned the page's pop-up text around (forty-fifth)."""
    _, notes = _requested("Ctrl &#x202E; and &#8203; x")
    assert "&#x202E; (read as nothing), &#8203; (read as nothing)" in notes[0] and "\u202e" not in notes[0]


def test_markup_in_the_instruction_and_prompt_text_is_removed_with_a_note():
    """"<b>happy</b>" as an instruction listed "<b>" pieces as words not applied (forty-third)."""
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.inputs.request import build_request

    request, notes, _ = build_request("Hello &lt;there&gt;.", None, "<i>Hi</i> there", "<b>happy</b>", 1.0, -1,
                                      max_text_chars=2000, capabilities=engine_capabilities("embedded"))
    assert (request.text, request.instruction, request.prompt_text) == ("Hello <there>.", "happy", "Hi there")
    assert "Markup removed from the instruction: <b>, </b>." in notes
    assert "Markup removed from the prompt text: <i>, </i>." in notes
    assert any("&lt; (read as <)" in n for n in notes)  # decoded, not "removed"


@pytest.mark.parametrize("typed, cleaned", [
    ("Please confirm！Thanks", "Please confirm! Thanks"), ("Really?Yes", "Really? Yes"), ("red,green;blue", "red, green; blue"),
    ("1,000 at 3:45, e.g.here, C++?", "1,000 at 3:45, e.g.here, C++?"),
    ("an exam-\nple of hyphen-\n  ated docu\u00ad\nment, Item 5-\nA", "an example of hyphenated document, Item 5- A"),
    ("The\u200binformation\u200bwas", "The information was"), ("Hello\x85there", "Hello there"),
    ("再见。。 ⒈⒉", "再见。。 1. 2."),  # an ideographic full stop is no list marker: it was spaced
])
def test_text_copied_from_pdfs_and_chinese_keyboards_reads_as_words(typed, cleaned):
    """Forty-third newcomer session: "confirm!Thanks" was read "confirm exclamation mark thanks",
    a PDF's "exam-\nple" as two words, words joined by zero-width spaces as one."""
    assert clean_text(typed) == cleaned


def test_hashes_and_tokens_get_a_note_that_they_are_spelled():
    """A git hash was 13.7 s of letters, a JSON Web Token 34.5 s, with no word of why (forty-third)."""
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.inputs.request import build_request

    _, notes, _ = build_request("Fixed in 3f2a9c0d1e2b3a4f5c6d7e8f9a0b1c2d3e4f5a6b today.", None, None, None, 1.0, -1,
                                max_text_chars=2000, capabilities=engine_capabilities("embedded"))
    assert any("Read one character at a time: 3f2a9c0d... (40 characters)" in n for n in notes)
    for plain in ("Internationalization2024 on 2026-11-30, call 1-800-555-1234.", "COVID-19-related A4-paper"):
        _, notes, _ = build_request(plain, None, None, None, 1.0, -1, max_text_chars=2000,
                                    capabilities=engine_capabilities("embedded"))
        assert not any("one character at a time" in n for n in notes)


def test_cosyvoice_keeps_the_tags_it_performs():
    text, notes = _requested("[laughter] Oh <strong>no</strong> <b>really</b> [cough].", "cosyvoice")
    assert text == "[laughter] Oh <strong>no</strong> really [cough]."
    assert notes and "<b>" in notes[0] and "strong" not in notes[0]


def test_text_of_only_markup_is_refused_by_name():
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.inputs.request import build_request

    with pytest.raises(InputError, match=r"only markup \(<p>, <br>, </p>\)"):
        build_request("<p><br></p>", None, None, None, 1.0, -1, max_text_chars=2000,
                      capabilities=engine_capabilities("embedded"))
    # Emoji alone were called "only markup" (helper-109).
    with pytest.raises(InputError, match=r"The text is only emoji \(😀 \(an emoji\)"):
        build_request("😀😀 🎉", None, None, None, 1.0, -1, max_text_chars=2000,
                      capabilities=engine_capabilities("embedded"))
    with pytest.raises(InputError, match=r"The text is only markup and emoji \("):
        build_request("<b>😀</b>", None, None, None, 1.0, -1, max_text_chars=2000,
                      capabilities=engine_capabilities("embedded"))


@pytest.mark.parametrize("typed, cleaned", [
    ("1\u202f234\u202f567 people", "1234567 people"), ("12\u202f345 km", "12345 km"),
    ("12\u00a0345,67 €", "12345.67 €"), ("1\u2009234\u2009567.89 total", "1234567.89 total"),
    ("Call +1 555 123 4567 now.", "Call +1 555 123 4567 now."), ("Rooms 101 102 103", "Rooms 101 102 103"),
    ("3 100 dollar bills", "3 100 dollar bills"), ("020 123 456", "020 123 456"),
])
def test_digits_grouped_by_thin_or_no_break_spaces_are_one_number(typed, cleaned):
    """"12 345" was read as two numbers (thirty-seventh newcomer session). Ordinary spaces are left
    as typed: joined, "+1 555 123 4567" and "Rooms 101 102 103" became one amount (fortieth)."""
    assert clean_text(typed) == cleaned


def test_unit_symbols_with_a_power_are_written_as_powers():
    """NFKC made ㎡ "m2", read "m two" (thirty-seventh newcomer session)."""
    assert clean_text("50㎡, 3㎥ and 9.8㎨; 5㎏") == "50m^2, 3m^3 and 9.8m∕s^2; 5kg"


@pytest.mark.parametrize("typed, cleaned", [
    ("I paid €1.234,56.", "I paid €1234.56."), ("1.234,56 € here", "1234.56 € here"),
    ("From €9,99 to 12,50 €.", "From €9.99 to 12.50 €."),
    ("1.234 and 3,14 and 1,50 m and v1.234,5", "1.234 and 3,14 and 1,50 m and v1.234,5"),  # ambiguous: as typed
])
def test_decimal_commas_are_points_where_nothing_else_is_meant(typed, cleaned):
    """"€1.234,56" was read "one point two three four, fifty six" (thirty-ninth newcomer session)."""
    assert clean_text(typed) == cleaned


def test_emoticons_drawn_with_kana_are_left_out_with_a_note_not_refused_as_japanese():
    """The shrug ¯\\_(ツ)_/¯ was refused as Japanese for the English voice (helper-49); read, it was
    "macron backslash Japanese letter slash macron". Japanese words, in brackets or not, are still
    refused, and brackets in formulas and temperatures stay."""
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.inputs.request import build_request

    def build(text):
        return build_request(text, None, None, None, 1.0, -1, max_text_chars=2000,
                             capabilities=engine_capabilities("embedded"))

    request, notes, _ = build("I do not know ¯\\_(ツ)_/¯. Ask her ヽ(´ー｀)ノ!")
    assert request.text == "I do not know. Ask her!"
    assert any("¯\\_(ツ)_/¯ (an emoticon)" in n and "ヽ(´ー｀)ノ (an emoticon)" in n for n in notes), notes
    for japanese in ("こんにちは (hi)", "Say (こんにちは) now", "ツ is a letter"):
        with pytest.raises(InputError, match="Japanese"):
            build(japanese)
    for kept in ("(a+b)*c equals f(x)", "It is (25°C) today"):
        assert build(kept)[0].text == kept


def test_faces_drawn_in_characters_are_left_out_with_a_note_and_look_alikes_stay():
    """Read aloud, ":-)" was "colon", "└(^o^)┘" "to the power of o", "ʕ•ᴥ•ʔ" "reversed glottal stop
    ..." and "( ͡° ͜ʖ ͡°)" sign by sign; "ಠ_ಠ" was refused as Kannada (helper-54; espeak-ng's phonemes
    for the English voice). Text that only looks like a face stays as typed."""
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.inputs.request import build_request

    def build(text):
        request, notes, _ = build_request(text, None, None, None, 1.0, -1, max_text_chars=2000,
                                          capabilities=engine_capabilities("embedded"))
        return request.text, " ".join(notes)

    faces = ["( ͡° ͜ʖ ͡°)", "( ͡ಠ ʖ̯ ͡ಠ)", "ʕ•ᴥ•ʔ", "ಠ_ಠ", "ಥ_ಥ", "^_^", "-_-", "o_O", "T_T", "◕‿◕", "└(^o^)┘",
             "\\(^o^)/", ";_;", ":)", ":-(", ";)", ":D", ":P", ":'(", "=)",
             "(ง'̀-'́)ง",  # its fist was refused as Thai (known list)
             "ʕ •ᴥ•ʔ", "ʕ·ᴥ·ʔ", "(ノಠ益ಠ)ノ彡┻━┻", "( ˘▽˘)っ♨"]  # read aloud or refused as Japanese (helper-73)
    for face in faces:
        text, notes = build(f"We won {face} today.")
        assert text == "We won today.", (face, text)
        assert f"{face} (an emoticon)" in notes, (face, notes)
    text, notes = build("Call me (really :)) soon")  # the face's ")" and the bracket's
    assert text == "Call me (really) soon" and ":) (an emoticon)" in notes, (text, notes)
    # In quotes, before a citation mark, inside a tag (the user run of this session read the bear).
    for typed, spoken in (('She said "^_^" twice.', "She said twice."), ("Lovely ʕ•ᴥ•ʔ.[2] Yes", "Lovely. Yes"),
                          ("So <b>:)</b> now", "So now")):
        assert build(typed)[0] == spoken, (typed, build(typed))
    for kept in ("Plan D: go now", "if x <3 then stop", "snake_case and a_b", "at 10:30 or 1:3",
                 "f(x) = (a+b) and (café)", "version x.x soon", "see (...) here"):
        assert build(kept) == (kept, ""), kept


def test_emoji_in_a_sentence_are_left_out_with_a_note():
    """"so funny 😂😂😂" was read "face with tears of joy" three times (6.9 s against 2.6 s), with
    no note (helper-57). Sequences (family, skin tone, flag, keycap) go whole; ★, ✓ and a bare ❤
    stay for the engine."""
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.inputs.request import build_request

    def build(text):
        request, notes, _ = build_request(text, None, None, None, 1.0, -1, max_text_chars=2000,
                                          capabilities=engine_capabilities("embedded"))
        return request.text, " ".join(notes)

    text, notes = build("lol so funny 😂😂😂 and we shipped it 🚀! Family 👨‍👩‍👧‍👦 and 👍🏽 from 🇺🇸, press 1️⃣ ok")
    assert text == "lol so funny and we shipped it! Family and from, press ok", text
    for emoji in ("😂", "🚀", "👨‍👩‍👧‍👦", "👍🏽", "🇺🇸", "1️⃣"):
        assert f"{emoji} (an emoji)" in notes, (emoji, notes)
    assert notes.count("😂") == 1, notes
    assert build("Rated ★★★★☆ ✓ and I ❤ NY")[0] == "Rated ★★★★☆ ✓ and I ❤ NY"
    with pytest.raises(InputError, match="no words to speak"):
        build("😂🎉")


def test_angle_brackets_around_an_address_are_named_as_such():
    """The note said "<links>" were removed while the address was still read (helper-57)."""
    from cosyvoice_ui.inputs.markup import remove_markup

    out, removed = remove_markup("Tom <tom@example.com> wrote this.")
    assert out == "Tom tom@example.com wrote this." and removed == ["the angle brackets around addresses"], removed


def test_model_control_markers_are_removed_for_every_engine():
    """The embedded engine read "<|endoftext|>Hello" as "endoftext Hello" (1.15 s against 0.55 s),
    with no note (helper-59); only CosyVoice's adapter removed them."""
    from cosyvoice_ui.inputs.markup import remove_markup

    out, removed = remove_markup("<|im_start|>Hello<|im_end|> there")
    assert " ".join(out.split()) == "Hello there", out
    assert removed == ["<|im_start|> (a model's control marker)", "<|im_end|> (a model's control marker)"], removed
    assert remove_markup("x || y and a|b") == ("x || y and a|b", [])


@pytest.mark.parametrize("typed", ["Hi <|end<|endoftext|>oftext|> x", "Hi <<|x|>|endoftext|> x",
                                   "Hi <<b></b>|endoftext|> x", "Hi &lt;|endoftext|&gt; x", "Hi ＜｜endoftext｜＞ x",
                                   "Hi ﹤|endoftext|﹥ x", "Hi <\x00|endoftext|> x", "Hi <\u00ad|endoftext|\u00ad> x",
                                   "Hi <\u202e|endoftext|> x"])
def test_a_disguised_control_marker_is_removed_too(typed):
    """Nested, entity-encoded, full-width or with a NUL, soft hyphen or bidi mark inside, a marker
    came out whole only after cleaning and was read "endoftext" (helper-61)."""
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.inputs.request import build_request

    request, notes, _ = build_request(typed, None, None, None, 1.0, -1, max_text_chars=2000,
                                      capabilities=engine_capabilities("embedded"))
    assert request.text == "Hi x" and "control marker" in " ".join(notes), (request.text, notes)


def test_the_sound_labels_note_names_each_label():
    """It said "sound labels ([Music])" whatever was removed: [Applause] went unnamed (helper-59)."""
    from cosyvoice_ui.inputs.markup import remove_markup

    out, removed = remove_markup("Hello [Applause] there [applause] and [Cheering]")
    assert " ".join(out.split()) == "Hello there and", out
    assert removed == ["sound labels ([Applause], [applause], [Cheering])"], removed


def test_a_tag_with_angle_brackets_inside_a_quoted_attribute_is_markup():
    """title="a > b" and onerror="alert('<b>hi</b>')" are valid HTML; such tags were read aloud
    ("a href equals ... greater than here", 5.1 s for "Example site."; helper-57)."""
    from cosyvoice_ui.inputs.markup import remove_markup

    for typed, spoken, named in (('<p title="a > b">Hello</p> world.', "Hello. world.", "<p>"),
                                 ('<a href="https://example.com" title="Click > here">Example</a> site.',
                                  "Example site.", "<a>"),
                                 ("Look <img src=x onerror=\"alert('<b>hi</b>')\"> here.", "Look here.", "<img>")):
        out, removed = remove_markup(typed)
        assert " ".join(out.split()) == spoken and named in removed, (typed, out, removed)
    for kept in ('He said "a <b" and "c> d" ok', "x <y and y> z"):
        assert remove_markup(kept) == (kept, []), kept


def test_the_citation_note_names_the_marks_removed():
    """The note was a fixed "citation marks ([1], [citation needed])" whatever was removed (helper-52)."""
    from cosyvoice_ui.inputs.markup import remove_markup

    assert remove_markup("It was built in 1900.[7]") == ("It was built in 1900.", ["citation marks ([7])"])
    assert remove_markup("Rally as inflation cools.[1][2] The moon is cheese.[citation needed]")[1] == \
        ["citation marks ([1], [2])", "citation marks ([citation needed])"]


@pytest.mark.parametrize("field", ["instruction", "prompt_text"])
def test_a_disguised_control_marker_leaves_the_instruction_and_prompt_text_too(field):
    """The text lost a marker that came out whole only in cleaning; the instruction and prompt text
    kept it for the engine to remove (CosyVoice's adapter did; the embedded engine listed
    "endoftext" among the instruction's words not applied)."""
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.inputs.request import build_request

    value = "happy &lt;|endoftext|&gt; ＜｜im_end｜＞"
    fields = {"instruction": None, "prompt_text": None, field: value}
    request, notes, _ = build_request("Hello there.", None, fields["prompt_text"], fields["instruction"], 1.0, -1,
                                      max_text_chars=2000, capabilities=engine_capabilities("embedded"))
    kept = request.instruction if field == "instruction" else request.prompt_text
    assert kept == "happy", kept
    name = field.replace("_", " ")
    assert any(n.startswith(f"Markup removed from the {name}: <|endoftext|> (a model's control marker), "
                            "<|im_end|>") for n in notes), notes


@pytest.mark.parametrize("typed, spoken", [
    ("Great, 😀, thanks.", "Great, thanks."), ("Hi (😀) there.", "Hi there."), ("Yes – 😀 – no.", "Yes – no."),
    ("We met :), then left.", "We met, then left."), ("Call f() with 1,,2 😀.", "Call f() with 1,,2.")])
def test_punctuation_emptied_by_a_removed_emoji_goes_with_it(typed, spoken):
    """"Great, 😀, thanks" was spoken from "Great,, thanks", "Hi (😀) there" from "Hi ( ) there"
    (known list). What the user typed themselves ("f()", "1,,2") stays."""
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.inputs.request import build_request

    request, _, _ = build_request(typed, None, None, None, 1.0, -1, max_text_chars=2000,
                                  capabilities=engine_capabilities("embedded"))
    assert request.text == spoken, request.text


@pytest.mark.parametrize("typed, cleaned", [("hello\u202eworld today", "hello world today"),
                                            ("Say \u2067hello\u2069 now", "Say hello now"),
                                            ("co\u00adop", "coop")])
def test_a_bidi_override_between_letters_parts_two_words(typed, cleaned):
    """Dropped like a soft hyphen, a bidi override joined "hello\\u202eworld" into one word for the
    engine (known list); beside a space it is dropped, and a soft hyphen still joins."""
    from cosyvoice_ui.inputs.text import clean_text

    assert clean_text(typed) == cleaned


def test_a_number_spelled_digit_by_digit_gets_a_note():
    """Three hundred 1s became 599 characters and 48 s of audio with no note (helper-62)."""
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.inputs.request import build_request

    request, notes, _ = build_request("1" * 300, None, None, None, 1.0, -1, max_text_chars=2000,
                                      capabilities=engine_capabilities("embedded"))
    assert len(request.text) == 599
    assert "Read one digit at a time (a number of 13 or more digits; up to 12 are read as an amount): " \
           "11111111... (300 digits)." in notes, notes
    # Before a full stop or inside brackets too (helper-67: "(15 digits)" for 16, no note for 13).
    for typed, shown in (("Id 1234567890123.", "12345678... (13 digits)"),
                         ("My account is (1234567890123456).", "12345678... (16 digits)")):
        _, notes, _ = build_request(typed, None, None, None, 1.0, -1, max_text_chars=2000,
                                    capabilities=engine_capabilities("embedded"))
        assert any(n.endswith(shown + ".") for n in notes), (typed, notes)
    _, notes, _ = build_request("We have 123,456,789 people.", None, None, None, 1.0, -1, max_text_chars=2000,
                                capabilities=engine_capabilities("embedded"))
    assert not any("digit at a time" in n for n in notes), notes


def test_an_amount_of_money_too_long_to_be_read_as_one_is_refused_with_words_to_use():
    """"$36,000,000,000,000" was read "3 dollars 6 0 0 0 ...", with only the digit-at-a-time note
    (helper-141). Refused, naming the amount and how to write it; 12 digits are read as amounts."""
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.errors import InputError
    from cosyvoice_ui.inputs.request import build_request

    for typed, shown in (("The debt is $36,000,000,000,000 today.", "$36000000000000"),
                         ("about € 1234567890123", "€1234567890123"),
                         # Full-width, and the sign after the number (helper-144).
                         ("＄３６，０００，０００，０００，０００", "$36000000000000"),
                         ("36000000000000€ in all", "36000000000000€")):
        with pytest.raises(InputError, match="amount of money of 13 or more digits") as e:
            build_request(typed, None, None, None, 1.0, -1, max_text_chars=2000,
                          capabilities=engine_capabilities("embedded"))
        assert f"({shown})" in str(e.value) and "36 trillion dollars" in str(e.value), str(e.value)
    build_request("It costs $123,456,789,012 and id 1234567890123.", None, None, None, 1.0, -1,
                  max_text_chars=2000, capabilities=engine_capabilities("embedded"))


def test_the_over_limit_message_says_markup_and_emoji_were_not_counted():
    """"The text is 2399 characters long" for 2600 typed, with emoji (helper-62)."""
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.inputs.request import build_request

    with pytest.raises(InputError, match=r"The text is 2399 characters long without its markup and emoji "
                                         r"\(2600 as typed\); the limit is 2000\."):
        build_request("Lorem ipsum 😀" * 200, None, None, None, 1.0, -1, max_text_chars=2000,
                      capabilities=engine_capabilities("embedded"))


def test_an_index_after_a_one_letter_name_is_no_citation():
    """"return x[0];" lost its "[0]" as a citation mark, and the note listed a bare "`" (helper-62)."""
    from cosyvoice_ui.inputs.markup import remove_markup

    out, removed = remove_markup("Run `make` then return x[0]; or a[12].")
    assert out == "Run make then return x[0]; or a[12].", out
    assert removed == ["` (code marks)"], removed
    assert remove_markup("Paris[2] is big.") == ("Paris is big.", ["citation marks ([2])"])


def test_a_tag_without_its_closing_bracket_is_removed():
    """'<a href="javascript:alert(1)"<b>x</b>' was read aloud as "a href javascript alert" (known
    list since helper-61). Only with a quoted attribute: "if a<b and c>d" is prose."""
    from cosyvoice_ui.inputs.markup import remove_markup

    out, removed = remove_markup('<a href="javascript:alert(1)"<b>Hello</b> there')
    assert " ".join(out.split()) == "Hello there", out
    assert removed[0] == "<a (a tag without its closing >)", removed
    assert remove_markup("if a<b and c>d") == ("if a<b and c>d", [])


def test_a_text_spoken_as_far_more_than_its_length_is_refused():
    """Symbols and digits are read as words, and the segment limit and admission count them so,
    but the text limit counted characters: 1,000 "a≥" (2,000 characters) were taken as 112
    segments, about 18 minutes of audio and 8 minutes of the worker (helper-106). A text is spoken
    as at most 5 times --max-text-chars; a text dense with figures still passes whole."""
    with pytest.raises(InputError, match=r"spoken as about 21000 characters' worth of words: its symbols and "
                                         r"digits are each read as a word or several \(≥ \(1000\)\)\. At most 10000"):
        validate_text("a≥" * 1000, 2000, ("en",))
    figures = "In 2024, revenue grew 3.5% to $1,234,567 from 987,654. " * 35
    assert len(validate_text(figures, 2000, ("en",))) > 1900
    assert validate_text("℃" * 100, 2000, ("en",))


def test_a_run_of_what_is_not_heard_cannot_make_a_segment_past_the_limit():
    """What is not heard stayed in one segment: ``"Hello" + "?!" * 990`` was a 1,800-character
    segment past --max-segment-chars 200, and admission learned memory from that length
    (helper-146); after a first fix for punctuation, runs of ``_``, of dots with combining accents
    or emoji variation selectors still were (helper-147). Runs of more than twelve keep their first
    and last six."""
    from cosyvoice_ui.inputs.segments import spoken_chars, split_text
    from cosyvoice_ui.inputs.text import clean_text

    for text in ("Hello" + "?!" * 990 + " world", "a" + "." * 1990, "Hi " + "! " * 900 + "there",
                 "好的" + "。" * 1000, "Hello " + "_" * 1800 + " world.", "Hello" + ".\u0301" * 900,
                 "Hello" + ".\ufe0f" * 900, "Hello. " + "_ " * 900 + "world.",
                 "Hello" + " \u0301" * 950 + " world.", "Hello" + " \ufe0f" * 1000 + " world."):  # helper-149
        segments = split_text(clean_text(text), 200)
        assert max(spoken_chars(s) for s in segments) <= 200, (text[:20], [len(s) for s in segments])
    assert clean_text("Hello" + "?!" * 990 + " world") == "Hello?!?!?!?!?!?! world"
    # What people type stays as typed: short runs, closing quotes, smileys, spoken signs and symbols.
    for typed in ("Wait... what?!", 'He said "No!!!" ... "Yes!!!"', 'He said: "Wow!!!"...', "Really?!?! No.",
                  ":-) :-) :-) ;-)", "(((hi)))", "100%%%%%%%% sure", "€€€€€€€€", "snake_case_name"):
        assert clean_text(typed) == typed
