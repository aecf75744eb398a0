"""Prompt-audio variants made from the real prompts (nothing large is committed).

The makers live in :mod:`tests.make_hostile_corpus`, next to the whole hostile corpus; this module
keeps the short names the input tests use. Each maker writes one file into ``folder`` and
returns its path.
"""

from __future__ import annotations

from .make_hostile_corpus import encode, m4a_aac, mp3, ogg_opus, read, webm_opus

__all__ = ["encode", "m4a_aac", "mp3", "ogg_opus", "read", "webm_opus"]
