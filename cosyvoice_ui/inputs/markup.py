"""Markup in pasted text (web process, pure functions): HTML and SSML tags, HTML character
references, Markdown, subtitles, citation marks, web addresses, and CosyVoice's inline tags for an
engine that does not perform them.

Text copied from a web page's source, an e-mail template or another TTS service's SSML arrives
with its tags; the embedded engine read them aloud ("less than b greater than", "bracket laughter
bracket"; thirty-seventh newcomer session), and Markdown pasted from a chat assistant its
asterisks ("**bold**": "asterisk asterisk bold asterisk asterisk"). Only the tags of known HTML and
SSML elements and Markdown's unambiguous marks are removed, so arithmetic such as ``x <y and y> z``
or ``2*3*4`` stays as typed.
"""

from __future__ import annotations

import html
import re
import unicodedata

from . import emoticons

# HTML elements (WHATWG HTML's element index, the ones found in pasted text) and SSML 1.1's
# elements (W3C Speech Synthesis Markup Language). Tags with a namespace prefix
# (<mstts:express-as>, <amazon:effect>) are SSML vendor extensions and are removed too.
_HTML_ELEMENTS = frozenset("""
a abbr address article aside b bdi bdo big blockquote body br caption center cite code col colgroup
dd del details dfn div dl dt em figcaption figure font footer form h1 h2 h3 h4 h5 h6 head header hr
html i img input ins kbd label li main mark meta nav ol option p pre q s samp section select small
span strike strong sub summary sup table tbody td textarea tfoot th thead time title tr tt u ul var wbr
script style noscript iframe button link
video audio source track picture canvas object embed param dialog menu legend fieldset optgroup datalist
output progress meter area map base body head html nav label ruby rt rp frame frameset
svg math marquee blink
""".split())  # svg ... blink: "<svg onload=...> happy" was read out piece by piece (helper-148)
# Attributes that stand without a value (HTML's boolean attributes): "<video controls autoplay>" was
# read aloud, tag and all (forty-fifth newcomer session). Any other attribute must have a value:
# "x <b and c> d" is no tag.
_BOOLEAN_ATTRIBUTES = ("allowfullscreen|async|autofocus|autoplay|checked|controls|default|defer|disabled|hidden|inert|"
                       "ismap|itemscope|loop|multiple|muted|nomodule|novalidate|open|playsinline|readonly|required|"
                       "reversed|selected")
# CosyVoice's own (<strong>word</strong>, <laughter>words</laughter>): kept for it, removed for others.
_COSYVOICE_ELEMENTS = frozenset(("strong", "laughter"))
_SSML_ELEMENTS = frozenset("speak break emphasis prosody say-as voice phoneme sub audio mark lang paragraph "
                           "sentence w lexicon metadata desc".split())
# Elements whose tags sit inside a word or a phrase ("un<b>believ</b>able") leave nothing; blocks
# (paragraphs, headings, list items, table cells, line breaks) end a sentence, as Markdown's headings
# and list items do ("<h2>Welcome back</h2><p>Read ..." ran together; thirty-ninth newcomer
# session); the others (<speak>, <voice>) leave a space.
_INLINE = frozenset("a abbr b bdi bdo big cite code del dfn em font i ins kbd mark q s samp small span strike "
                    "strong sub sup time tt u var wbr emphasis prosody say-as phoneme w laughter".split())
_BLOCKS = frozenset("p br div li ul ol h1 h2 h3 h4 h5 h6 tr td th table blockquote section article header footer "
                    "nav main hr pre title dd dt dl figcaption caption option summary details paragraph sentence "
                    "break".split())
_SENTENCE_BREAK = "\u2029"  # PARAGRAPH SEPARATOR, which no typed text keeps (clean_text drops it)
# SSML's <sub alias="World Wide Web">WWW</sub> is read as its alias.
_SSML_ALIAS = re.compile(r"<sub\s+alias\s*=\s*(?:\"([^\"<>]*)\"|'([^'<>]*)')\s*>[^<]*</sub\s*>", re.I)
# Elements with no end tag (HTML's void elements, SSML's empty ones).
_VOID = frozenset("br hr img input meta link wbr col break mark audio".split())
_NAME = r"[A-Za-z][\w.-]*(?::[\w.-]+)?"
# An attribute must have a value (href="x"): "x <b and c> d" is no tag. Possessive quantifiers keep
# a run of "<a b=c b=c ..." without a closing ">" linear. A quoted value may hold "<" and ">"
# (title="a > b", onerror="alert('<b>')"), as HTML allows: such a tag was read aloud (helper-57).
_TAG = re.compile(rf"<(/?)({_NAME})((?:\s+(?:[\w:.-]+\s*=\s*(?:\"[^\"\n]*+\"|'[^'\n]*+'|[^\s\"'<>=`]+)"
                  rf"|(?:{_BOOLEAN_ATTRIBUTES})(?![\w:.=-])))*+)\s*+(/?)>", re.I)
# A tag whose ">" is missing, cut off by another tag or the end: '<a href="javascript:x"<b>' was
# read aloud as "a href javascript" (helper-61's list). Only with a quoted attribute: "a<b" and
# "x <b and c" are prose.
_BROKEN_TAG = re.compile(rf"<({_NAME})(?:\s+[\w:.-]+\s*=\s*(?:\"[^\"\n<>]*+\"|'[^'\n<>]*+'))++\s*+(?=<|$)", re.I | re.M)
# <!DOCTYPE html> and <?xml version="1.0"?> at the top of a page's source or an SSML file.
_DECLARATION = re.compile(r"<!DOCTYPE\b[^<>]{0,200}>|<\?xml\b[^<>]{0,200}\?>", re.I)
_ALT = re.compile(r"\balt\s*=\s*(?:\"([^\"<>]*)\"|'([^'<>]*)')", re.I)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
# Model control markers (<|endoftext|>, <|im_start|>): the embedded engine read them as words
# ("endoftext Hello"; helper-59). CosyVoice's adapter removes them again, with any fragment left.
_CONTROL_MARKER = re.compile(r"<\|[^\n<>|]{0,64}\|>")
_ANY_MARKER = re.compile(r"<\|[^\n]*?\|>")
_MARKER_FRAGMENT = re.compile(r"<\||\|>")


def strip_control_markers(text: str) -> tuple[str, list[str]]:
    """Remove every ``<|...|>`` marker, and then any ``<|`` or ``|>`` left over, until none is left
    (removing one must not join the pieces of another: ``<<|x|>|endofprompt|>``). Run on text
    already cleaned (NFKC, control and format characters dropped, references decoded): a marker
    written full-width, with a soft hyphen or NUL inside, as ``&lt;|...|&gt;`` or nested was read
    aloud by the embedded engine after :func:`remove_markup` had let it through (helper-61).

    Returns:
        ``(clean text, the markers and fragments removed)``.
    """
    removed: list[str] = []
    while True:
        found = _ANY_MARKER.findall(text) or _MARKER_FRAGMENT.findall(text)
        if not found:
            return (re.sub(r"[ \t]{2,}", " ", text) if removed else text), removed
        removed.extend(found)
        text = _ANY_MARKER.sub("", text) if _ANY_MARKER.search(text) else _MARKER_FRAGMENT.sub("", text)


# Quotes around an emoticon ('"^_^"') are taken off to find it, and go with it.
_OPENING_QUOTES, _CLOSING_QUOTES = "\"'“‘«", "\"'”’»"
# Elements whose content is code or drawing, not words: pasted page source had its JavaScript and
# CSS read aloud (forty-second newcomer session). Removed with what is between their tags.
_CODE_ELEMENT = re.compile(r"<(script|style|noscript|template|svg)\b[^>]*>.*?</\1\s*>", re.S | re.I)
# Bracketed inline tags CosyVoice's tokenizer knows (engines/cosyvoice/prompt_format.py, INLINE_TAGS).
_BRACKET_TAG = re.compile(r"\[(breath|quick_breath|laughter|noise|cough|sigh|hissing|mn|lipsmack|vocalized-noise)\]",
                          re.I)
# Signs only the IPA uses (not in English spelling): stress and length marks, schwa, ash, the
# open vowels, esh, ezh, theta, eth, eng, turned r, and their kin.
_IPA_SIGNS = "ˈˌːəɪʊæɑɔɛʃʒθðŋɹɾʁɐɒʌɜɚɝʔɨʉɯɤɣχʎɲɳɭʂʐçʝɕʑ"
_LINK = re.compile(r"!?\[([^\]\n]{1,300})\]\((?:[^()\s]+|<[^>\n]*>)(?:[ \t]+\"[^\"\n]*\")?\)")
_WEBVTT_FILE = re.compile(r"\A\s*WEBVTT\b")


def _citations(found: list[str]) -> str:
    """The note for removed citation marks, naming them: a fixed "([1], [citation needed])" was
    shown for "[7]" alone (helper-52)."""
    marks = list(dict.fromkeys(re.findall(r"\[[^\]]*\]", "".join(found))))
    return f"citation marks ({', '.join(marks[:6])}{', ...' if len(marks) > 6 else ''})"


# Markdown (CommonMark's syntax), only where it cannot be anything else: marks at the start of a
# line (headings, quotes, list bullets, rules, code fences), links, and emphasis that hugs words
# (``**bold**``, ``*it*``, ``~~struck~~``, ```code```; not ``a * b`` or ``2*3*4``).
_MARKDOWN = (
    # Subtitles (SubRip .srt, WebVTT): the cue numbers and timings were read as amounts, a 2.7 s
    # dialogue as 14.9 s of "zero zero colon ..." (thirty-ninth newcomer session). WebVTT's header
    # ("Kind: captions", "Language: en") and its NOTE, STYLE and REGION blocks (only in a file that
    # starts with WEBVTT: "NOTE: ..." elsewhere is a sentence) end at a blank line or a timing.
    (re.compile(r"^(?:NOTE|STYLE|REGION)\b[^\n]*(?:\n(?![^\n]*-->)[^\n]*\S[^\n]*)*", re.M),
     lambda m: "" if _WEBVTT_FILE.match(m.string) else m.group(), "subtitle timings"),
    (re.compile(r"^WEBVTT\b[^\n]*(?:\n(?![^\n]*-->)[^\n]*\S[^\n]*)*", re.M), "", "subtitle timings"),
    # WebVTT's cue tags: timestamps inside a cue (YouTube's word timings, "hello<00:00:00.480><c>
    # everyone</c>"), class spans <c.yellow> and voice spans <v Roger> (a 1.6 s cue was read as
    # 15.8 s; forty-third newcomer session).
    (re.compile(r"<(?:\d{2,}:)?\d{2}:\d{2}\.\d{3}>|</?c(?:\.[\w-]+)*>|<v(?:\.[\w-]+)*[ \t][^<>\n]{1,60}>|</v>"),
     "", "subtitle tags (<c>, <v>, <00:00:00.480>)"),
    # The timing and WebVTT's cue settings (align:start); words after them on the line stay (fortieth).
    (re.compile(r"^[ \t]*(?:\d+[ \t]*\n[ \t]*)?(?:\d{1,2}:)?\d{2}:\d{2}[,.]\d{3}[ \t]+-->[ \t]+(?:\d{1,2}:)?\d{2}:\d{2}[,.]\d{3}"
                r"(?:[ \t]+[\w-]+:[^\s:]+)*", re.M), "", "subtitle timings"),
    # Footnote markers [^1] (and their definitions' "[^1]:"): "oven[^2]" was read "oven squared".
    (re.compile(r"\[\^[^\]\s]{1,20}\]:?"), "", "[^1] (footnote markers)"),
    # A fenced code block goes with its code: a README's commands were read out ("git clone https colon
    # slash slash ..."; forty-third newcomer session). An unclosed fence loses only its mark.
    # A bare "~~~" is a scene break in prose (forum posts, fiction): a paragraph between two of them
    # was removed as code (forty-fifth newcomer session); "~~~python" still opens code.
    (re.compile(r"^[ \t]*(```|~~~(?=[ \t]*[\w{]))[^\n]*\n(?:.*?\n)??[ \t]*(?:```|~~~)[ \t]*$", re.M | re.S),
     lambda m: m.group() if m.group(1) == "~~~" and not m.group().rstrip().endswith("~~~") else _SENTENCE_BREAK,
     "``` code blocks (with their code)"),
    # "~~~~" and longer too: it fell to the fence line below and was named "```" (helper-111).
    (re.compile(r"^[ \t]*~{3,}[ \t]*$", re.M), _SENTENCE_BREAK, "~~~ (scene breaks)"),
    (re.compile(r"^[ \t]*```.*$", re.M), "", "```"),
    (re.compile(r"^[ \t]*~~~.*$", re.M), "", "~~~"),
    (re.compile(r"^[ \t]*([-*_])(?:[ \t]*\1){2,}[ \t]*$", re.M), " ", "rules (---, ***)"),
    # Tables: the row under the header goes, each row ends a sentence, its cells a phrase each.
    (re.compile(r"^[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+(?:[ \t]*:?-{3,}:?[ \t]*)?$", re.M), "", "| tables |"),
    (re.compile(r"^[ \t]*\|(.+)\|[ \t]*$", re.M),
     lambda m: _line_as_sentence(", ".join(c.strip() for c in m.group(1).split("|") if c.strip())), "| tables |"),
    (re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.*?)[ \t#]*$", re.M), lambda m: _line_as_sentence(m.group(1)), "#"),
    # Not before a number: "> 5 people came" is "more than 5", "+ 5 points" a plus (fortieth newcomer session).
    (re.compile(r"^[ \t]*(?:>[ \t]?)+(?![ \t]*[$€£¥₹]?\d)", re.M), "", "> (quotes)"),
    (re.compile(r"^[ \t]*(?:[-*][ \t]+|\+[ \t]+(?![$€£¥₹]?\d))(?:\[[ xX]\][ \t]+)?(\S.*?)[ \t]*$", re.M),
     lambda m: _line_as_sentence(m.group(1)), "list bullets"),
    # Twice: a badge is an image inside a link ("[![Build](badge.svg)](https://ci...)" read its
    # address after one pass; forty-third newcomer session).
    (_LINK, r"\1", "[text](link)"),
    (_LINK, r"\1", "[text](link)"),
    # Wikipedia's citation marks, attached to the word or punctuation before them ("built.[2][3]",
    # "[citation needed]", "[a]"): a pasted article was 20 % longer with them and its "Retrieved
    # from" address (forty-third newcomer session). "[1] See note" at a line's start stays.
    # A letter ("[a]") only after punctuation: "x[i]" and "Buyer[s]" are not citations (forty-fifth).
    (re.compile(r"(?<=[.,;:!?)\"'])(?:\[[a-z]\]|\[\d{1,3}\])+(?!\[|\()"), "", _citations),
    # Not after a one-letter name: "return x[0];" lost its index as a "citation" (helper-62).
    (re.compile(r"(?<=[^\s\[\]])(?<!\b[A-Za-z_])(?:\[(?:\d{1,3}|(?:note|nb|lower-alpha) \d{1,3}|"
                r"[a-z][a-z ]{0,30} needed|(?:who|when|which|where|why|by whom|according to whom|original research)\?|"
                r"dubious[^\]\n]{0,20}|failed verification|disputed[^\]\n]{0,20})\])+(?!\[|\()"), "", _citations),
    # Sound labels of captions: [Music], [Applause] (forty-fifth newcomer session).
    (re.compile(r"\[(?:music|applause|laughs?|cheering|silence|inaudible|crosstalk|background noise|no audio)\]", re.I),
     " ", lambda found: f"sound labels ({', '.join(dict.fromkeys(found))})"),  # named: helper-59 missed [Applause]
    # Reference links "[docs][1]", "[FAQ][]" and their definitions "[1]: https://... "Title"".
    (re.compile(r"^[ \t]{0,3}\[[^\]\n]{1,300}\]:[ \t]*\S+(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*$", re.M),
     "", "[text][ref] (reference links)"),
    # Not after a word: "A[i][j]" is an index (forty-fifth newcomer session).
    (re.compile(r"(?<![\w\]])!?\[([^\]\n]{1,300})\]\[[^\]\n]{0,40}\]"), r"\1", "[text][ref] (reference links)"),
    (re.compile(r"\*\*(?=[^\s*])(.+?)(?<=[^\s*])\*\*"), r"\1", "**"),
    # __bold__ only around a phrase with a space, between words: "__init__" and "A__B" are names (fortieth).
    (re.compile(r"(?<!\w)__(?=[^\s_])([^_\n]*?\s[^_\n]*?)(?<=[^\s_])__(?!\w)"), r"\1", "__"),
    (re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])"), r"\1", "*"),
    (re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"), r"\1", "~~"),
    # Footnote asterisks after a word ("here*.", "one**") and a rating's run of stars ("*****").
    (re.compile(r"(?<=[^\W\d_])\*{1,3}(?=[\s.,;:!?)]|$)|(?<!\S)\*{3,}(?!\S)", re.M), "", "* (footnote marks)"),
    (re.compile(r"(`+)(?=[^`\n])([^`\n]+?)\1(?!`)"), r"\2", "` (code marks)"),  # a bare "`" meant nothing (helper-62)
    # Markdown's autolinks: <https://example.com>, <mailto:a@b.org>, <a@b.org>.
    (re.compile(r"<(?:(https?://[^\s<>]+)|(?:mailto:)?([^\s<>@]+@[\w-]+(?:\.[\w-]+)+))>", re.I),
     # The note names what went: "<links>" read as if the address had gone too (helper-57).
     lambda m: m.group(1) or m.group(2), "the angle brackets around addresses"),
    # A web address is read as its site: a 232-character link was 43 s of letters (forty-third).
    (re.compile(r"(?<![\w@/])(?:https?://|www\.)(?:[^\s/?#@]*@)?([\w-]+(?:\.[\w-]+)+)(?::\d+)?"
                r"(?:[/?#](?:[^\s<>\"()]|\([^\s<>\"()]*\))*(?<![.,;:!?\]']))?", re.I),
     lambda m: re.sub(r"^www\.", "", m.group(1), flags=re.I), "web addresses (read as their site's name)"),
    # Without a scheme, a host with a path ("github.com/user/repo/blob/main/x.py#L10", "bit.ly/3xYz"):
    # read slash by slash (forty-fifth newcomer session).
    (re.compile(r"(?<![\w@/.])((?:[a-z\d-]+\.)+[a-z]{2,12})/(?:[^\s<>\"()]|\([^\s<>\"()]*\))+(?<![.,;:!?\]'])", re.I),
     r"\1", "web addresses (read as their site's name)"),
)


# Pronunciations in the International Phonetic Alphabet, as Wikipedia's first lines have them
# ("Paris (/ˈpærɪs/; French: [paʁi] ⓘ)"): spelled sign by sign, a lead took 14.3 s instead of 2.7 s
# (forty-fifth newcomer session). A span between slashes or brackets with an IPA-only sign goes;
# inside brackets, so do the language labels and the listen sign ⓘ it leaves, and the brackets if
# nothing else is in them.
_IPA_SPAN = re.compile(rf"/[^/\n]{{0,60}}[{_IPA_SIGNS}][^/\n]{{0,60}}/|\[[^\]\n]{{0,60}}[{_IPA_SIGNS}][^\]\n]{{0,60}}\]")
_PARENTHESES = re.compile(r"\(([^()\n]{0,300})\)")
_LEFT_BY_IPA = re.compile(r"(?:\b[A-Z][a-z]+(?: [A-Z][a-z]+)?:\s*)?ⓘ|\b[A-Z][a-z]+(?: [A-Z][a-z]+)?:\s*(?=[;,]|$)")


def _without_ipa(text: str) -> tuple[str, bool]:
    """``text`` without IPA pronunciations (``_IPA_SPAN``), and whether any were found."""
    found = False

    def parenthesis(m: re.Match) -> str:
        nonlocal found
        inner = _IPA_SPAN.sub("", m.group(1))
        if inner == m.group(1):
            return m.group()
        found = True
        parts = [p.strip() for p in re.split(r"[;,]", _LEFT_BY_IPA.sub("", inner))]
        kept = "; ".join(p for p in parts if p.strip(" :"))
        return f"({kept})" if kept else ""

    text = _PARENTHESES.sub(parenthesis, text)
    text, n = _IPA_SPAN.subn("", text)
    return text, found or n > 0


def _without_rolling_repeats(text: str, note) -> str:
    """A WebVTT file's lines without those that repeat the line before (blank lines between do not
    count): YouTube's automatic captions roll, each cue showing the last cue's line again, and
    "hello everyone and welcome" was read three times (forty-fifth newcomer session)."""
    kept, last = [], None
    for line in text.split("\n"):
        words = " ".join(line.split())
        if words and words == last:
            note("subtitle lines repeated by rolling captions")
            continue
        kept.append(line)
        last = words or last
    return "\n".join(kept)


def _line_as_sentence(line: str) -> str:
    """A heading or list item ends a sentence: with the line breaks made spaces, "## Intro" ran
    into the paragraph under it ("Intro This is ...")."""
    return line if not line or line[-1] in ".!?:;,。！？：；，" else line + "."


_CHARACTER_REFERENCE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


# The sentence's own punctuation, kept when a face or emoji before it is left out.
_SENTENCE_MARKS = ".,!?;:。！？，；："


def remove_markup(text: str, performed_tags: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """``text`` without markup an engine would read aloud.

    Removes HTML comments, the tags (not the words between them) of HTML and SSML elements and
    of namespaced SSML extensions (an image's ``alt`` text is read in its place), CosyVoice's
    bracketed tags (``[laughter]``, ``[breath]``, ...), Markdown's marks (see ``_MARKDOWN``: ``# ``,
    ``> ``, ``- `` and task boxes at a line's start, ``**bold**``, ``*it*``, ``~~x~~``, ```x```,
    ``[text](link)``, badges and reference links -> ``text``, link definitions, footnote markers
    ``[^1]`` and asterisks, tables, rules, fenced code blocks with their code), Wikipedia's citation
    marks after a word (``built.[2]``, ``[citation needed]``) and IPA pronunciations
    (``/ˈpærɪs/``), subtitle cue numbers and timings (.srt; WebVTT with its header, NOTE blocks,
    word timestamps, ``<c>``/``<v>`` spans and rolling captions' repeated lines), caption sound
    labels (``[Music]``), ``<!DOCTYPE>`` and ``<?xml?>``, and web addresses (replaced by their
    host, ``example.com``); SSML's ``<sub alias="...">`` is replaced by its alias. CRLF line ends
    count as line ends. Then
    it decodes HTML character references (``&amp;`` -> ``&``, ``&#39;`` -> ``'``; an unknown name
    such as ``&foo;`` stays). ``<script>``, ``<style>``, ``<noscript>``, ``<template>`` and ``<svg>``
    go with their content (code or drawing, not words).

    An inline tag (``<b>`` in "un<b>believ</b>able") leaves nothing; a block tag (``<p>``, ``<li>``,
    ``<h2>``, ``<br>``) ends a sentence, with a full stop where the text before has no punctuation;
    others leave a space. A tag counts only with its pair, attributes, a closing slash, no pair by
    nature (``<br>``) or when repeated: "Use a <p> tag" keeps its ``<p>``.

    Args:
        text: the text as typed, with its line breaks (Markdown's marks are known by where a line
            starts); within :data:`~.text.RAW_TEXT_FACTOR` times the length limit.
        performed_tags: tag names the engine performs and must keep, lower case, without brackets:
            ``("strong", "laughter", "breath", ...)`` for CosyVoice; empty for the embedded engine.

    Returns:
        ``(text, removed)``: ``removed`` lists each distinct tag removed, as typed (``"<b>"``,
        ``"[laughter]"``, ``"<!-- -->"``, ``"&amp;"`` for references, ``"**"`` for Markdown), in order
        of first appearance. The text is to be cleaned afterwards (:func:`~.text.clean_text`).
    """
    removed: list[str] = []

    def note(shown: str) -> None:
        if shown not in removed:
            removed.append(shown)

    def comment(m: re.Match) -> str:
        note("<!-- -->")
        return " "

    # A tag named in prose ("Use a <p> tag", "The <head> of the department") is a word: only tags
    # with their pair, attributes, a closing slash, no pair by nature (<br>) or repeated (<li>One<li>Two)
    # are markup (fortieth newcomer session: "Use a. tag for paragraphs").
    seen: dict[tuple[str, str], int] = {}
    for found in _TAG.finditer(text):
        key = (found.group(1), found.group(2).lower())
        seen[key] = seen.get(key, 0) + 1

    def is_markup(m: re.Match) -> bool:
        slash, name = m.group(1), m.group(2).lower()
        return bool(m.group(3) or m.group(4) or name in _VOID or ":" in name
                    or seen.get(("" if slash else "/", name)) or seen.get((slash, name), 0) > 1)

    def tag(m: re.Match) -> str:
        name = m.group(2).lower()
        if name in performed_tags or not (name in _HTML_ELEMENTS or name in _SSML_ELEMENTS
                                             or name in _COSYVOICE_ELEMENTS or ":" in name) or not is_markup(m):
            return m.group()
        note(f"<{m.group(1)}{m.group(2)}>")
        if name == "img" and (alt := _ALT.search(m.group(3))):  # the picture's words, as a screen reader says them
            return f" {alt.group(1) if alt.group(1) is not None else alt.group(2)} "
        return "" if name in _INLINE else _SENTENCE_BREAK if name in _BLOCKS else " "

    def broken_tag(m: re.Match) -> str:
        if m.group(1).lower() not in _HTML_ELEMENTS:
            return m.group()
        note(f"<{m.group(1)} (a tag without its closing >)")
        return " "

    def alias(m: re.Match) -> str:
        note("<sub alias> (read as its alias)")
        return m.group(1) if m.group(1) is not None else m.group(2)

    def bracket(m: re.Match) -> str:
        if m.group(1).lower() in performed_tags:
            return m.group()
        note(m.group())
        return " "

    def reference(m: re.Match) -> str:
        decoded = html.unescape(m.group())
        if decoded != m.group():
            shown = decoded.strip()
            if not shown.isprintable() or shown == "\ufffd":  # &#x202E; turned the pop-up's text around (forty-fifth)
                shown = "nothing" if unicodedata.category(decoded[0])[0] == "C" else f"U+{ord(decoded[0]):04X}"
            note(f"{m.group()} (read as {shown or 'a space'})")
        return decoded

    def code(m: re.Match) -> str:
        note(f"<{m.group(1)}> with its content")
        return " "

    # CRLF line ends (Windows, and what an API client sends as typed) hid every mark that must start
    # a line: fences, tables, rules and cue numbers were read (forty-fifth newcomer session).
    text = text.replace("\r\n", "\n").replace("\r", "\n")

    def emoticon(m: re.Match) -> str:
        space, quoted = m.group(1), m.group(2)
        opening = quoted[: len(quoted) - len(quoted.lstrip(_OPENING_QUOTES))]  # '"^_^"' is a face in quotes
        word = quoted[len(opening):]
        run = word.rstrip(_SENTENCE_MARKS + _CLOSING_QUOTES)  # the sentence's own punctuation stays
        if emoticons.is_emoticon(run):
            pass
        elif emoticons.is_emoticon(word):  # ";_;" ends in a sign that is also punctuation
            run = word
        elif run[-1:] in (")", "）") and emoticons.is_emoticon(run[:-1]):  # "(great :))" keeps its ")"
            run = run[:-1]
        else:
            return m.group()
        note(f"{run} (an emoticon)")
        rest = word[len(run):].lstrip(_CLOSING_QUOTES) if opening else word[len(run):]
        return rest or space or " "

    def emoji(m: re.Match) -> str:
        for found in emoticons.EMOJI.finditer(m.group()):
            note(f"{found.group()} (an emoji)")
        following = m.string[m.end():m.end() + 1]
        return "" if following in _SENTENCE_MARKS else " "  # "shipped it 🚀!" -> "shipped it!"

    def spaced_face(m: re.Match) -> str:
        blanks, face = m.group(1), m.group(2)
        if not emoticons.is_spaced_face(face):
            return m.group()
        note(f"{face} (an emoticon)")
        following = m.string[m.end():m.end() + 1]
        return "" if following in _SENTENCE_MARKS else (blanks or " ")  # "Lovely ʕ•ᴥ•ʔ." -> "Lovely."

    def control_marker(m: re.Match) -> str:
        note(f"{m.group()} (a model's control marker)")
        return ""  # not a space: "<<|x|>|endoftext|>" must close up into the marker it hides

    # First: Markdown would take the shrug's "_(ツ)_" for emphasis.
    out = _CONTROL_MARKER.sub(control_marker, text)
    out = emoticons.SPACED_FACE.sub(spaced_face, out)
    out = emoticons.EMOJI_RUN.sub(emoji, out)
    out = re.sub(r"([ \t]*)(\S+)", emoticon, out)
    out = _COMMENT.sub(comment, out)

    def declaration(m: re.Match) -> str:
        note(m.group().split()[0] + ">")
        return " "

    out = _DECLARATION.sub(declaration, out)
    out = _CODE_ELEMENT.sub(code, out)
    out = _SSML_ALIAS.sub(alias, out)
    out = _BROKEN_TAG.sub(broken_tag, out)
    out = _TAG.sub(tag, out)
    out = _BRACKET_TAG.sub(bracket, out)
    for pattern, replacement, shown in _MARKDOWN:
        before, out = out, pattern.sub(replacement, out)
        if out != before:
            note(shown([m.group() for m in pattern.finditer(before)]) if callable(shown) else shown)
    if _WEBVTT_FILE.match(text):
        out = _without_rolling_repeats(out, note)
    out, ipa = _without_ipa(out)
    if ipa:
        note("pronunciations (IPA)")
    # Again, once tags and citation marks are gone: "ʕ•ᴥ•ʔ.[2]" and "<b>:)</b>" hid their faces.
    out = re.sub(r"([ \t]*)(\S+)", emoticon, out)
    out = _CHARACTER_REFERENCE.sub(reference, out)
    if _SENTENCE_BREAK in out:
        out = " ".join(_line_as_sentence(piece.strip()) for piece in out.split(_SENTENCE_BREAK) if piece.strip())
    if removed:
        out = _without_emptied_punctuation(out)
    return out, removed


# What a removed emoji or tag leaves between its punctuation: "Great, 😀, thanks" became
# "Great,, thanks", "Hi (😀) there" "Hi ( ) there", "Yes – 😀 – no" "Yes – – no" (known list).
_EMPTIED = (
    (re.compile(r"[(\[（【]\s+[)\]）】]"), " "),    # brackets left empty (with a space: "f()" stays)
    (re.compile(r"(?<!\d)([,，、])(?:\s*[,，、])+"), r"\1"),  # commas left in a row ("1,,2" stays)
    (re.compile(r"([–—])(?:\s+[–—])+"), r"\1"),        # dashes left in a row
)


def _without_emptied_punctuation(text: str) -> str:
    for pattern, replacement in _EMPTIED:
        text = pattern.sub(replacement, text)
    return text
