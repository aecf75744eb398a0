"""Children that end with the process that started them.

A child process the kernel reparents to init when its parent is SIGKILLed lives on for good
(helper-117: FFmpeg's decoding children of a killed app, asleep). Used by the prompt decoder's
children (web process) and the phonemizer's child (worker).
"""

from __future__ import annotations

import os
import signal

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent_pid: int) -> None:
    """Have the kernel SIGKILL this process when the thread that started it ends (Linux's
    ``prctl(PR_SET_PDEATHSIG)``); if the parent is already gone (``os.getppid()`` is no longer
    ``parent_pid``), end now with status 1. Call it first thing in the child. Elsewhere than
    Linux nothing is set (the caller keeps its own backstop, such as an alarm)."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:
        os._exit(1)
