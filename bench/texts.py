"""Benchmark texts of exact lengths, cut from a fixed English passage at word boundaries."""

PASSAGE = (
    "It was a bright cold day in April, and the clocks were striking thirteen. Winston Smith, his chin "
    "nuzzled into his breast in an effort to escape the vile wind, slipped quickly through the glass doors "
    "of Victory Mansions, though not quickly enough to prevent a swirl of gritty dust from entering along "
    "with him. The hallway smelt of boiled cabbage and old rag mats. At one end of it a coloured poster, too "
    "large for indoor display, had been tacked to the wall. It depicted simply an enormous face, more than a "
    "metre wide: the face of a man of about forty-five, with a heavy black moustache and ruggedly handsome "
    "features. Winston made for the stairs. It was no use trying the lift. Even at the best of times it was "
    "seldom working, and at present the electric current was cut off during daylight hours. "
)


def text_of_length(chars: int) -> str:
    """English text of exactly ``chars`` characters ending at a word boundary (padded with '.')."""
    text = (PASSAGE * (chars // len(PASSAGE) + 2))[:chars]
    if len(text) == chars and " " in text:
        text = text[: text.rindex(" ")].rstrip(",;:") + "."
    return (text + "." * chars)[:chars] if len(text) < chars - 5 else text
