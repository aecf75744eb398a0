"""What the app's short-lived helper processes set first: they end with the process that started
them, and a crash leaves no core dump.

Used by FFmpeg's decoding children (web process, ``inputs/pyav_process.py``) and espeak-ng's
child (worker, ``engines/embedded/phonemizer_process.py``).
"""

from __future__ import annotations

import os
import signal

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent_pid: int) -> None:
    """A child process the kernel reparents to init when its parent is SIGKILLed lives on for good
    (helper-117: FFmpeg's decoding children of a killed app, asleep).

    Have the kernel SIGKILL this process when the thread that started it ends (Linux's
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


_PR_SET_DUMPABLE = 4  # <linux/prctl.h>


def no_core_dumps() -> None:
    """Write no core dump when this process crashes (``RLIMIT_CORE`` 0, and Linux's
    ``prctl(PR_SET_DUMPABLE, 0)``, which a core pipe such as systemd-coredump also honours).

    These children crash on purpose-made input (a text that crashes espeak-ng, a file that crashes
    FFmpeg): with ``ulimit -c unlimited`` each crash wrote a 47 MB ``core`` into the app's working
    folder, one per request where the name holds the pid (helper-128). Nothing is raised where a
    limit cannot be set.
    """
    import ctypes
    import resource

    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (OSError, ValueError):
        pass
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def is_stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (SIGSTOP, a debugger), read from ``/proc/PID/stat``; False
    where it cannot be read. A stopped helper held every request for its whole deadline, and the
    user was then told the input took too long (helper-124, helper-130)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] in (b"T", b"t")
    except (OSError, IndexError):
        return False


def signal_name(returncode: int) -> str:
    """``"SIGKILL"`` for a returncode of -9; ``"signal N"`` for one Python does not name."""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"
