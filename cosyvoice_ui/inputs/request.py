"""Where a user's raw input becomes a validated, engine-neutral request (web process).

Nothing reaches the worker without passing :func:`build_request`.
"""

from __future__ import annotations

import math

from ..engines.base import Capabilities, PromptSamples, SynthesisRequest
from ..errors import InputError
from .markup import remove_markup, strip_control_markers
from .prompt_audio import load_prompt_audio, resample
from .segments import split_text
from .text import RAW_TEXT_FACTOR, clean_text, long_amounts, long_codes, spelled_numbers, validate_text

MAX_INSTRUCTION_CHARS = 200
MAX_PROMPT_TEXT_CHARS = 500
SPEED_RANGE = (0.5, 2.0)
MAX_SEED = 2**31 - 1


def build_request(
    text: str | None,
    prompt_audio_path: str | None,
    prompt_text: str | None,
    instruction: str | None,
    speed: float | None,
    seed: int | float | None,
    *,
    max_text_chars: int,
    capabilities: Capabilities,
    max_segment_chars: int = 200,
    speaker: str | None = None,
    speakers: tuple[str, ...] = (),
) -> tuple[SynthesisRequest, list[str]]:
    """Validate everything a user sent and build the request for the worker.

    Args:
        text: text to speak (checked by :func:`~.text.validate_text`; HTML, SSML and Markdown,
            subtitle timings and the inline tags the engine does not perform removed first by
            :func:`~.markup.remove_markup`, with a note).
        prompt_audio_path: uploaded or recorded file, or ``None``.
        prompt_text: transcript of the prompt (optional; markup removed as from the text, with a note).
        instruction: style instruction (optional, at most 200 characters; markup removed, with a note).
        speed: speaking-rate multiplier in [0.5, 2.0]; ``None`` means 1.0.
        seed: integer in [-1, 2**31-1]; -1 (or ``None``) means random.
        max_text_chars: ``--max-text-chars``.
        max_segment_chars: ``--max-segment-chars``; the text is split into segments this long.
        capabilities: of the running engine (languages, whether a prompt is required).
        speaker: a pretrained speaker chosen instead of prompt audio ("" or ``None``: none).
        speakers: the running model's pretrained speakers.

    Returns:
        ``(request, notes, refusal_hint)``: notes are hints for the user (short prompt, clipping,
        ...); refusal_hint is the prompt audio's :attr:`~.prompt_audio.PromptAudio.refusal_hint`.

    The values arrive as the caller sent them (the synthesize events skip Gradio's own
    preprocessing, which rounded a seed of 1.5 and turned a number sent as text into a string),
    so their types are checked here too.

    Raises:
        InputError: the first problem found, with a message saying what would work.
    """
    for value, name in ((text, "text"), (prompt_text, "prompt_text"), (instruction, "instruction"),
                        (speaker, "speaker"), (prompt_audio_path, "prompt_audio")):
        if value is not None and not isinstance(value, str):
            raise InputError(f"The {name} must be a string (got {_shown(value)}).")
    markup: list[str] = []
    typed_chars = len(text) if isinstance(text, str) else None
    if text and len(text) <= RAW_TEXT_FACTOR * max_text_chars + 1000:  # longer: validate_text refuses it
        text, markup = remove_markup(text, capabilities.performed_tags)
        if markup and not any(ch.isalnum() for ch in clean_text(text)):
            raise InputError(f"The text is only {_kinds_removed(markup).lower()} ({_listed(markup)}), with no words to speak. "
                             f"Type or paste the words themselves.")
    clean = validate_text(text, max_text_chars, capabilities.languages, typed_chars=typed_chars)
    if amounts := long_amounts(clean):
        raise InputError(f"The text has an amount of money of 13 or more digits ({amounts[0][:40]}): numbers that "
                         "long are read one digit at a time, and the currency with the first digit (\"3 dollars 6 0 "
                         "0 ...\"). Write it in words, such as \"36 trillion dollars\".")
    # Again on the cleaned text: a marker disguised (full-width, entity-encoded, nested, a NUL or
    # soft hyphen inside) comes out whole only now (helper-61).
    clean, markers = strip_control_markers(clean)
    if markers:
        markup.extend(_markers_shown(markers))
        clean = clean.strip()
        if not any(ch.isalnum() for ch in clean):
            raise InputError(f"The text is only {_kinds_removed(markup).lower()} ({_listed(markup)}), with no words to speak. "
                             f"Type or paste the words themselves.")
    notes: list[str] = []
    if markup:
        notes.append(f"{_kinds_removed(markup)} removed before speaking (it would have been read aloud): "
                     f"{_listed(markup)}.")
    if numbers := spelled_numbers(clean):
        notes.append(f"Read one digit at a time (a number of 13 or more digits; up to 12 are read as an amount): "
                     f"{', '.join(numbers)}.")
    if codes := long_codes(clean):
        notes.append(f"Read one character at a time: {', '.join(codes)}. Leave such codes out, or shorten "
                     f"them, if you do not want to hear them spelled.")
    prompt, refusal_hint = None, ""
    speaker = (speaker or "").strip()
    if speaker and speaker not in speakers:
        raise InputError(f"Unknown speaker {speaker[:100]!r}; "
                         + (f"choose one of: {', '.join(speakers)}." if speakers else "this model has no pretrained speakers."))
    if prompt_audio_path:
        audio = load_prompt_audio(prompt_audio_path)
        samples, rate = audio.samples, audio.sample_rate_hz
        if capabilities.prompt_sample_rate_hz and capabilities.prompt_sample_rate_hz != rate:
            samples, rate = resample(samples, rate, capabilities.prompt_sample_rate_hz), capabilities.prompt_sample_rate_hz
        prompt = PromptSamples(samples=samples, sample_rate_hz=rate, sha1=audio.sha1)
        notes.extend(audio.notes)
        refusal_hint = audio.refusal_hint
    elif capabilities.prompt_audio_required and not speaker:
        raise InputError("This engine needs prompt audio: upload or record 3-10 s of the voice to clone"
                         + (", or choose a pretrained speaker." if speakers else "."))
    # "<b>happy</b>" as an instruction listed its tag's pieces as words not applied (forty-third
    # newcomer session): the other fields lose their markup as the text does.
    instruction = _without_markup(instruction, MAX_INSTRUCTION_CHARS, "instruction", capabilities, notes)
    prompt_text = _without_markup(prompt_text, MAX_PROMPT_TEXT_CHARS, "prompt text", capabilities, notes)
    instruction_clean = _optional_text(
        instruction, MAX_INSTRUCTION_CHARS, "instruction",
        "Describe the style in a few words, e.g. 'happy' or '用悲伤的语气'.")
    instruction_clean = _without_disguised_markers(instruction_clean, "instruction", notes)
    if instruction_clean and not capabilities.instruction_presets:
        notes.append("This engine does not take instructions; the instruction was not applied.")
    prompt_text_clean = _optional_text(
        prompt_text, MAX_PROMPT_TEXT_CHARS, "prompt text", "It should be the transcript of the prompt audio only.")
    prompt_text_clean = _without_disguised_markers(prompt_text_clean, "prompt text", notes)
    if prompt_text_clean and not capabilities.uses_prompt_text:
        notes.append("This engine does not use the prompt text; it clones from the audio alone.")
    speed_hint = f"use a number from {SPEED_RANGE[0]} to {SPEED_RANGE[1]} (1.0 is natural)"
    speed_value = _number(speed, 1.0, "speed", speed_hint)
    if not (SPEED_RANGE[0] <= speed_value <= SPEED_RANGE[1]):
        raise InputError(f"The speed {_shown(speed)} is out of range; {speed_hint}.")
    seed_hint = f"use a whole number from 0 to {MAX_SEED}, or -1 for random"
    seed_value = _number(seed, -1, "seed", seed_hint)
    if seed_value != int(seed_value) or not (-1 <= seed_value <= MAX_SEED):
        raise InputError(f"The seed {_shown(seed)} is not valid; {seed_hint}.")
    request = SynthesisRequest(text=clean, prompt=prompt, prompt_text=prompt_text_clean,
                               instruction=instruction_clean, speed=speed_value, seed=int(seed_value),
                               segments=tuple(split_text(clean, max_segment_chars)), speaker=speaker)
    return request, notes, refusal_hint


def counted_text_chars(text, max_text_chars: int, capabilities: Capabilities) -> int:
    """``text``'s length as the limit counts it (markup removed, then cleaned), for the ledger
    record of a refused request: it showed 4002 characters for a text refused as "2001 characters
    long" (forty-fourth newcomer session). The raw length where cleaning is skipped for being far
    too long; 0 for a value that is no string (the API takes any JSON value)."""
    if not isinstance(text, str):
        return 0
    if len(text) > RAW_TEXT_FACTOR * max_text_chars + 1000:
        return len(text)
    return len(clean_text(remove_markup(text, capabilities.performed_tags)[0]))


def _without_markup(value: str | None, limit: int, name: str, capabilities: Capabilities, notes: list[str]):
    """An optional field without its markup, with a note naming what went; far over its limit it is
    left for :func:`_optional_text` to refuse before any work."""
    if not value or len(value) > RAW_TEXT_FACTOR * limit + 1000:
        return value
    value, removed = remove_markup(value, capabilities.performed_tags)
    if removed:
        notes.append(f"{_kinds_removed(removed)} removed from the {name}: {_listed(removed)}.")
    return value


def _markers_shown(markers: list[str]) -> list[str]:
    return [f"{m} (a model's control marker)" for m in dict.fromkeys(markers)]


def _without_disguised_markers(cleaned: str, name: str, notes: list[str]) -> str:
    """``cleaned`` without the control markers that came out whole only in cleaning (as for the
    text), with a note: the fields get the same treatment, so no engine has to be trusted to
    remove them again."""
    cleaned, markers = strip_control_markers(cleaned)
    if markers:
        notes.append(f"Markup removed from the {name}: {_listed(_markers_shown(markers))}.")
    return cleaned.strip()


def _optional_text(value: str | None, limit: int, name: str, hint: str) -> str:
    raw_chars = len(value or "")
    if raw_chars > RAW_TEXT_FACTOR * limit + 1000:
        # As for the text: refused before cleaning, which took 4 s for a million characters here
        # (twenty-fourth newcomer session: 35-40x the cost of an equal text).
        raise InputError(f"The {name} is {raw_chars} characters long; the limit is {limit}. {hint}")
    cleaned = clean_text(value or "")
    if len(cleaned) > limit:
        raise InputError(f"The {name} is {len(cleaned)} characters long; the limit is {limit}. {hint}")
    return cleaned


def _number(value, default: float, name: str, hint: str) -> float:
    """A JSON number (int or float, not bool) as float; ``None`` or "" (an emptied field) is ``default``."""
    if value is None or value == "":
        return float(default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"The {name} must be a number (got {_shown(value)}); {hint}.")
    if not math.isfinite(value):
        raise InputError(f"The {name} must be a finite number (got {_shown(value)}); {hint}.")
    return float(value)


def _kinds_removed(items: list[str]) -> str:
    """What the removed items are, for the note's start: "Markup", "Emoji", "Emoji and emoticons",
    "Markup and emoji", ... (emoji alone were called "Markup"; helper-78). An item names its kind
    in its last words, as ``inputs/markup.py`` lists it: ``"🍕 (an emoji)"``, ``":-) (an emoticon)"``."""
    emoji = any(item.endswith("(an emoji)") for item in items)
    emoticons = any(item.endswith("(an emoticon)") for item in items)
    markup = any(not item.endswith(("(an emoji)", "(an emoticon)")) for item in items)
    kinds = [kind for kind, present in (("markup", markup), ("emoji", emoji), ("emoticons", emoticons)) if present]
    named = kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " and " + kinds[-1]
    return named[0].upper() + named[1:]


def _listed(items: list[str], most: int = 6) -> str:
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")


def _shown(value) -> str:
    """A short, exact rendering of a caller's value for a message: whole numbers in full
    (``2147483648``, not ``2.14748e+09``), JSON's ``true``/``false``/``null`` as the caller sent
    them (they read ``True``; helper-59), others as ``repr`` cut at 60 characters."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e18:
        return str(int(value))
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
