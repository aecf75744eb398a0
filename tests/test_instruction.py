import pytest

from cosyvoice_ui.engines.embedded.prosody import PRESETS, STYLES, parse_instruction


@pytest.mark.parametrize("instruction,style", [
    ("happy", "happy"), ("speak happily", "happy"), ("开心", "happy"), ("用高兴的语气说", "happy"),
    ("sad", "sad"), ("用悲伤的语气", "sad"), ("难过", "sad"),
    ("angry", "angry"), ("生气", "angry"), ("愤怒地说", "angry"),
    ("calm", "calm"), ("平静地说", "calm"),
    ("whisper", "whisper"), ("耳语", "whisper"), ("悄悄地说", "whisper"),
    ("fast", "fast"), ("快一点", "fast"), ("slow", "slow"), ("慢一点", "slow"),
    ("loud", "loud"), ("大声", "loud"), ("soft", "soft"), ("小声", "soft"),
])
def test_required_vocabulary(instruction, style):
    parsed = parse_instruction(instruction)
    assert parsed.styles == (style,), parsed
    assert parsed.unrecognized == ()


@pytest.mark.parametrize("instruction,style", [
    ("happier", "happy"), ("a bit calmer", "calm"), ("sadder please", "sad"), ("angrier", "angry"),
    ("the happiest voice", "happy"), ("speak more quietly", "soft"), ("quicker", "fast"), ("更开心一点", "happy"),
    ("更加平静", "calm"),
])
def test_comparatives_are_applied_like_their_style(instruction, style):
    """"happier" and "calmer" were reported as not applied while "faster" and "louder" were
    (thirty-seventh newcomer session)."""
    parsed = parse_instruction(instruction)
    assert parsed.styles == (style,) and parsed.unrecognized == ()


def test_happy_in_chinese_is_not_fast():
    # 快乐 contains 快 (fast): the longer phrase must win.
    assert parse_instruction("快乐").styles == ("happy",)


def test_combined_styles_combine_prosody():
    parsed = parse_instruction("happy and fast")
    assert parsed.styles == ("happy", "fast")
    assert parsed.prosody.length_scale == pytest.approx(STYLES["happy"].length_scale * STYLES["fast"].length_scale)


def test_unknown_words_are_reported_not_dropped():
    parsed = parse_instruction("sarcastic but happy")
    assert parsed.styles == ("happy",)
    assert parsed.unrecognized == ("sarcastic",)
    assert parse_instruction("用四川话说").unrecognized  # a dialect the embedded engine cannot do


def test_empty_instruction_is_neutral():
    parsed = parse_instruction("")
    assert parsed.styles == () and parsed.unrecognized == () and parsed.prosody == STYLES["fast"].__class__()


def test_every_preset_is_understood():
    for preset in PRESETS:
        parsed = parse_instruction(preset)
        assert parsed.styles and not parsed.unrecognized and not parsed.degree_words, preset


@pytest.mark.parametrize("instruction,words", [
    ("a bit faster", ("a bit",)), ("very very fast", ("very",)), ("super slow", ("super",)),
    ("非常开心", ("非常",)), ("有点难过", ("有点",)), ("fast", ()), ("quickly", ()), ("please speak very", ()),
    # "有点儿大声" had two notes, "极其开心" a "not understood" one (helper-65).
    ("有点儿大声", ("有点儿",)), ("极其开心", ("极其",)), ("十分平静地说", ("十分",)),
    # A comparative, as "happier" is (helper-68: "更开心" had a "how much" note, "happier" none).
    ("更开心", ()), ("happier", ()),
    # A percentage: its number was listed as not understood (known list: "speak 20% faster").
    ("speak 20% faster", ("20%",)), ("快20%", ("20%",)), ("12.5 percent slower", ("12.5 percent",)),
])
def test_words_of_degree_are_named_as_not_applied(instruction, words):
    """"a bit faster" and "very very fast" gave the same 0.75 length scale, and nothing said the
    degree was ignored (helper-57). They are named when a style is applied (and only then)."""
    parsed = parse_instruction(instruction)
    assert parsed.degree_words == words and not parsed.unrecognized, parsed
    if words:
        assert parsed.prosody == parse_instruction(parsed.styles[0]).prosody  # one strength per style


@pytest.mark.parametrize("instruction", ["生气勃勃", "用生气勃勃的语气", "痛快地说", "朝气蓬勃",
                                         "快活", "爽快", "畅快", "快快乐乐", "充满生气"])
def test_lively_words_holding_another_styles_characters_are_happy(instruction):
    """"生气勃勃" (full of life) was applied as angry by its 生气, with "勃勃" not understood, and
    "痛快" (heartily) as fast by its 快 (helper-150)."""
    parsed = parse_instruction(instruction)
    assert parsed.styles == ("happy",) and not parsed.unrecognized, parsed


@pytest.mark.parametrize("instruction,word", [("用傲慢的语气说", "傲慢"), ("怠慢", "怠慢")])
def test_words_holding_a_styles_character_that_mean_something_else_are_not_applied(instruction, word):
    """"用傲慢的语气说" (arrogant) was applied as slow by its 慢 (helper-152)."""
    parsed = parse_instruction(instruction)
    assert parsed.styles == () and word in "".join(parsed.unrecognized), parsed


@pytest.mark.parametrize("instruction", [
    "not happy", "don't whisper", "不开心", "别生气",
    # Across intensifiers and with "less": these were applied as the style they negate.
    "not too fast", "less happy", "不要太快", "不太快", "别那么生气",
])
def test_negated_styles_are_not_applied_and_are_reported(instruction):
    """A negated style is reported whole, with its negation, and not applied."""
    parsed = parse_instruction(instruction)
    assert parsed.styles == () and parsed.unrecognized == (instruction,), parsed


@pytest.mark.parametrize("instruction,word", [
    ("don\u2019t be sad", "sad"), ("don\u2019t speak fast", "fast"),  # a phone's or Mac's curly apostrophe
    ("isn't fast", "fast"), ("isn\u2019t fast", "fast"), ("aren't happy", "happy"), ("do not go fast", "fast"),
    ("not-fast", "fast"), ("not so-fast", "fast"), ("not, fast", "fast"), ("not... fast", "fast"),
    ("not (fast)", "fast"), ('not "fast"', "fast"), ("un-angry", "angry"), ("avoid whispering", "whispering"),
    ("no longer sad", "sad"), ("hardly fast", "fast"),
    ("不必太快", "快"), ("不要 快", "快"), ("別太快", "快"), ("不是很开心", "开心"),
])
def test_everyday_negations_are_not_applied(instruction, word):
    """Each of these was applied as the style it denies (twentieth newcomer session: "don’t be
    sad" typed on a phone made the speech sad); now the style is reported with its negation."""
    parsed = parse_instruction(instruction)
    assert parsed.styles == (), parsed
    assert any(word in u and u != word for u in parsed.unrecognized), parsed


def test_negation_lapses_at_a_new_clause_and_reports_what_it_reached_over():
    assert parse_instruction("not sad, but happy").styles == ("happy",)
    assert parse_instruction("not sad. Happy").styles == ("happy",)
    parsed = parse_instruction("not really a big fan of anything")
    assert parsed.styles == () and parsed.unrecognized == ("not", "big", "fan", "anything"), parsed


def test_negation_reaches_only_the_style_it_governs():
    parsed = parse_instruction("happy, not too fast")
    assert parsed.styles == ("happy",) and parsed.unrecognized == ("not too fast",), parsed
    assert parse_instruction("特别开心").styles == ("happy",)  # 别 inside 特别 ("especially") negates nothing


@pytest.mark.parametrize("instruction,pair", [
    ("happy sad", ("happy", "sad")), ("fast slow", ("fast", "slow")), ("whisper loudly", ("loud", "whisper")),
    ("开心又难过", ("happy", "sad")),
])
def test_styles_that_undo_each_other_are_not_applied(instruction, pair):
    """Both styles of a contradictory pair were applied at once ("whisper loudly" whispered at
    +0 dB) without a word; now neither is, and the pair is reported."""
    parsed = parse_instruction(instruction)
    assert parsed.styles == () and parsed.contradictions == (pair,), parsed
    assert parsed.prosody == STYLES["fast"].__class__()


def test_words_in_other_alphabets_are_reported_whole():
    """"fröhlich" was reported as 'fr', 'ö', 'hlich'."""
    assert parse_instruction("fröhlich").unrecognized == ("fröhlich",)


def test_emoji_instruction_is_reported():
    assert parse_instruction("😀").unrecognized == ("😀",)
    assert parse_instruction("happy 🎉").styles == ("happy",)


@pytest.mark.parametrize("instruction, style", [
    ("请用悲伤的语气说这句话", "sad"), ("语速慢一点", "slow"), ("super excited", "happy"), ("pretty calm", "calm")])
def test_everyday_phrasings_apply_their_style_without_stray_notes(instruction, style):
    """"请用悲伤的语气说这句话" applied sad and still listed '的语气说这句话' as not applied;
    "语速慢一点" listed '语速', "super excited" 'super' (forty-ninth newcomer session)."""
    parsed = parse_instruction(instruction)
    assert parsed.styles == (style,) and parsed.unrecognized == (), parsed


def test_a_control_marker_is_reported_whole():
    """"happy<|endofprompt|>" listed '<|', 'endofprompt', '|>' as three things not applied."""
    parsed = parse_instruction("happy<|endofprompt|> and calm")
    assert parsed.styles == ("happy", "calm") and parsed.unrecognized == ("<|endofprompt|>",), parsed


@pytest.mark.parametrize("instruction, left_out", [("说得慢一点，但不要悲伤", ("不要悲伤",)),
                                                   ("开心但是不要太快", ("不要太快",)), ("slow, but not sad", ("not sad",))])
def test_but_is_no_instruction_in_chinese_either(instruction, left_out):
    """"但" and "但是" were listed as instructions not applied; "but" never was (helper-65)."""
    assert parse_instruction(instruction).unrecognized == left_out


@pytest.mark.parametrize("instruction,unrecognized", [
    ("20%", ("20%",)), ("50 per cent", ("50 per cent",)), ("not 20% faster", ("not 20% faster",)),
])
def test_a_percentage_with_no_style_is_listed_once_as_not_applied(instruction, unrecognized):
    parsed = parse_instruction(instruction)
    assert parsed.styles == () and parsed.unrecognized == unrecognized, parsed


def test_a_pair_that_undoes_itself_is_named_in_the_words_typed():
    """"happy sad whisper shout fast slow" got the note "'loud' and 'whisper' undo each other":
    the user had typed "shout" (helper-145)."""
    from cosyvoice_ui.engines.embedded.engine import _as_typed

    parsed = parse_instruction("happy sad whisper shout fast slow")
    assert ("loud", "whisper") in parsed.contradictions
    assert (_as_typed(parsed, "loud"), _as_typed(parsed, "whisper")) == ("'shout' (loud)", "'whisper'")
    assert _as_typed(parse_instruction("大声 小声"), "soft") == "'小声' (soft)"
    assert _as_typed(parse_instruction("Fast slow"), "fast") == "'Fast'"
