"""The embedded voice's espeak-ng in its own child process (engines/embedded/phonemizer_process.py):
a crash on a text refuses that text only; a child ended or stopped from outside is replaced and
the text read again."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from cosyvoice_ui.engines.embedded.phonemizer_process import IsolatedPhonemizer, TextNotReadable

SENTENCE = "Hello there, how are you today?"


@pytest.fixture
def phonemizer():
    p = IsolatedPhonemizer()
    p.start()
    yield p
    p.close()


def test_a_crash_refuses_that_text_and_the_next_one_is_read(phonemizer):
    expected = phonemizer.phonemize(SENTENCE)
    refused = 0
    for _ in range(5):  # the crash is likely, not certain (17 fresh processes in 20 for this text)
        try:
            phonemizer.phonemize("A.B.C.D.E.F.G.H.I.J." * 15)
        except TextNotReadable as e:
            assert "crashed on it (SIGSEGV)" in str(e) and "a. b. c." in str(e), str(e)
            refused += 1
    assert refused, "espeak-ng never crashed: nothing was tested"
    assert phonemizer.phonemize(SENTENCE) == expected


@pytest.mark.parametrize("outside", [signal.SIGKILL, signal.SIGTERM], ids=lambda s: s.name)
def test_a_child_killed_while_it_reads_is_replaced_and_the_text_read(phonemizer, outside):
    """A child ended from outside mid-text (an operator, the OOM killer) was reported as a crash the
    text caused, with advice about dotted letters, for an ordinary sentence (helper-124). It is
    stopped first here, so that the kill lands while the text is being read."""
    expected = phonemizer.phonemize(SENTENCE)
    pid = phonemizer._child.pid
    os.kill(pid, signal.SIGSTOP)
    threading.Timer(0.3, os.kill, (pid, outside)).start()
    assert phonemizer.phonemize(SENTENCE) == expected
    assert phonemizer._child.pid != pid


def test_a_stopped_child_is_replaced_not_waited_for(phonemizer, monkeypatch):
    """A child stopped with SIGSTOP held every request for the 30 s deadline, which then told the
    user to shorten a 17-character text (helper-124, helper-125). A stopped child is seen within a
    second and replaced (the deadline is 10 s here: waiting for it refuses the text)."""
    from cosyvoice_ui.engines.embedded import phonemizer_process

    monkeypatch.setattr(phonemizer_process, "PHONEMIZE_DEADLINE_S", 10.0)
    expected = phonemizer.phonemize(SENTENCE)
    pid = phonemizer._child.pid
    os.kill(pid, signal.SIGSTOP)
    assert phonemizer.phonemize(SENTENCE) == expected
    assert phonemizer._child.pid != pid
