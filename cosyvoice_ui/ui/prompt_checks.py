"""The page's early check of an uploaded prompt, remembered per file.

The page checks a prompt as soon as it is uploaded (``Handlers.check_prompt_page``). Anyone can
send that check again and again naming one upload, and each decoded the file again: helper-146
named one 100 s MP3 1,040 times, 3 s of decoding each. An upload never changes once written, so
the answer for a file (its path, size and modification time) is kept; a repeated check is
answered from memory.
"""

from __future__ import annotations

import collections
import os
import threading

from ..errors import InputError
from ..inputs.prompt_audio import load_prompt_audio

REMEMBERED_FILES = 256  # answers kept; the one used least recently goes first


class CheckedPrompts:
    """What :func:`~cosyvoice_ui.inputs.prompt_audio.load_prompt_audio` said about each recent file."""

    def __init__(self, remembered: int = REMEMBERED_FILES) -> None:
        self._answers: collections.OrderedDict[tuple, str | None] = collections.OrderedDict()
        self._remembered = remembered
        self._lock = threading.Lock()

    def problem(self, path: str) -> str | None:
        """Why the prompt audio at ``path`` cannot be used (an :class:`InputError`'s message), or None
        when it can. Decodes the file the first time only.

        Raises:
            ServiceStopping, BusyError and any other error of the decode: not remembered, so the
                next check tries again.
        """
        try:
            stat = os.stat(path)
            key = (path, stat.st_size, stat.st_mtime_ns)
        except OSError:  # no such file (any more): load_prompt_audio's message says which
            key = None
        with self._lock:
            if key in self._answers:
                self._answers.move_to_end(key)
                return self._answers[key]
        try:
            load_prompt_audio(path)
            answer = None
        except InputError as e:
            answer = str(e)
        if key is None:
            return answer
        with self._lock:
            self._answers[key] = answer
            while len(self._answers) > self._remembered:
                self._answers.popitem(last=False)
        return answer
