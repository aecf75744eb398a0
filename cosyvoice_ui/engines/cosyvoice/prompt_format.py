"""What CosyVoice is asked: the mode chosen from what the user gave, and the text of each field.

Facts from the official repository (``../shared/docs/cosyvoice-api.md``): CosyVoice 3 needs a
system prompt and the ``<|endofprompt|>`` token - in the prompt text for zero-shot, in the
instruction for instruct, in front of the text for cross-lingual - or it fails an assertion;
CosyVoice 2 takes the instruction followed by ``<|endofprompt|>`` and no system prompt. With a
pretrained speaker there is no prompt field either, so CosyVoice 3's system prompt goes in front
of the text as for cross-lingual (our choice; the docs do not cover it). The
text front-end skips normalization when a text holds ``<|`` and ``|>``, so markers a user typed
are removed before any of this.
"""

from __future__ import annotations

import dataclasses

from ...inputs.markup import strip_control_markers as strip_markers

SYSTEM_PROMPT = "You are a helpful assistant."
END_OF_PROMPT = "<|endofprompt|>"
# The inline tags CosyVoice's tokenizer knows; they pass through and the UI lists them as help.
INLINE_TAGS = ("[breath]", "[quick_breath]", "[laughter]", "[noise]", "[cough]", "[sigh]",
               "<strong>word</strong>", "<laughter>words</laughter>")
PERFORMED_TAGS = ("breath", "quick_breath", "laughter", "noise", "cough", "sigh", "strong")  # their names
INSTRUCTION_PRESETS = (
    "用开心的语气说", "用悲伤的语气说", "用愤怒的语气说", "请用广东话表达。", "请用四川话说这句话。",
    "请用尽可能快地语速说一句话。", "Speak happily.", "Speak in a sad tone.", "Whisper it softly.",
)

ZERO_SHOT, CROSS_LINGUAL, INSTRUCT, PRETRAINED = "zero-shot", "cross-lingual", "instruct", "pretrained speaker"


@dataclasses.dataclass(frozen=True)
class ModelCall:
    """One call of a CosyVoice generator method.

    Attributes:
        mode: one of ZERO_SHOT, CROSS_LINGUAL, INSTRUCT, PRETRAINED (shown in the result).
        method: the model's method name, e.g. ``inference_zero_shot``.
        kwargs: its arguments except ``prompt_wav``, ``stream`` and ``speed``.
        uses_prompt_wav: whether ``prompt_wav`` is passed.
        notes: what the user should know (fields not used in this mode, markers removed).
    """

    mode: str
    method: str
    kwargs: dict
    uses_prompt_wav: bool
    notes: tuple[str, ...] = ()


def plan_call(version: int, text: str, *, has_prompt: bool, prompt_text: str = "", instruction: str = "",
              speaker: str = "", speakers: tuple[str, ...] = ()) -> ModelCall:
    """Choose the mode from what the user gave and format every field for model ``version``.

    Mode: a pretrained ``speaker`` -> ``inference_sft``; else prompt audio with an instruction ->
    ``inference_instruct2``; with a prompt text -> ``inference_zero_shot``; with neither ->
    ``inference_cross_lingual``.

    Args:
        version: 2 or 3 (the model class, from the model folder's yaml).
        text, prompt_text, instruction, speaker: the user's fields (markers are stripped here).
        has_prompt: whether prompt audio was given.
        speakers: the model's pretrained speakers (``list_available_spks()``).

    Raises:
        ValueError: no prompt audio and no speaker, an unknown speaker, or nothing left to say
            after markers were removed.
    """
    notes: list[str] = []
    cleaned = {}
    for name, value in (("text", text), ("prompt text", prompt_text), ("instruction", instruction)):
        cleaned[name], removed = strip_markers(value)
        if removed:
            notes.append(f"Removed control markers from the {name}: {', '.join(sorted(set(removed)))} "
                         "(they would switch off text normalization or break the prompt format).")
    text, prompt_text, instruction = cleaned["text"].strip(), cleaned["prompt text"].strip(), cleaned["instruction"].strip()
    # clean_text writes a fraction character as "1⁄2" with U+2044; text normalizers such as
    # CosyVoice's read the ASCII "1/2" as a fraction.
    text, prompt_text, instruction = (t.replace("\u2044", "/") for t in (text, prompt_text, instruction))
    if not text:
        raise ValueError("Nothing is left to say after removing <|...|> control markers. Type the words to speak.")
    v3 = version >= 3
    if speaker:
        if speaker not in speakers:
            known = ", ".join(speakers) or "none"
            raise ValueError(f"Unknown speaker {speaker!r}. This model's pretrained speakers: {known}.")
        if has_prompt:
            notes.append("A pretrained speaker was chosen, so the prompt audio was not used.")
        if instruction or prompt_text:
            notes.append("The instruction and prompt text are not used with a pretrained speaker.")
        # No prompt field in this mode: CosyVoice 3's system prompt goes in front of the text.
        tts_text = f"{SYSTEM_PROMPT}{END_OF_PROMPT}{text}" if v3 else text
        return ModelCall(PRETRAINED, "inference_sft", {"tts_text": tts_text, "spk_id": speaker}, False, tuple(notes))
    if not has_prompt:
        raise ValueError("CosyVoice needs prompt audio (3-10 s of the voice to clone)"
                         + (" or one of its pretrained speakers." if speakers else "."))
    if instruction:
        if prompt_text:
            notes.append("The prompt text is not used with an instruction (instruct mode clones from the audio alone).")
        instruct_text = f"{SYSTEM_PROMPT} {instruction}{END_OF_PROMPT}" if v3 else f"{instruction}{END_OF_PROMPT}"
        return ModelCall(INSTRUCT, "inference_instruct2", {"tts_text": text, "instruct_text": instruct_text},
                         True, tuple(notes))
    if prompt_text:
        formatted = f"{SYSTEM_PROMPT}{END_OF_PROMPT}{prompt_text}" if v3 else prompt_text
        return ModelCall(ZERO_SHOT, "inference_zero_shot", {"tts_text": text, "prompt_text": formatted},
                         True, tuple(notes))
    notes.append("No prompt text: cross-lingual mode (clones the voice from the audio alone; "
                 "give the prompt's transcript for zero-shot, which is closer).")
    tts_text = f"{SYSTEM_PROMPT}{END_OF_PROMPT}{text}" if v3 else text
    return ModelCall(CROSS_LINGUAL, "inference_cross_lingual", {"tts_text": tts_text}, True, tuple(notes))
