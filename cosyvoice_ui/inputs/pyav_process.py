"""Decoding prompt audio with FFmpeg (through PyAV) in a short-lived child process.

What libsndfile cannot read (M4A/AAC, WebM, Matroska, most of what a phone or browser records)
goes to FFmpeg, and FFmpeg trusts a file's tables: an 18 KB M4A listing 20 million packets took
the web process up 1.1 GB when FFmpeg opened it (helper-113), and a walk of the MP4 boxes in
front of it was got past eight ways (helper-115: +700 MB per 60 KB upload). Memory that a C
library allocates in the web process stays there; a limit on one process does not. So FFmpeg
runs in a child process of its own, started for one file, under an address-space limit
(RLIMIT_AS) and a deadline, and only the samples come back, through a pipe.

MP3 goes to a child too, decoded there exactly as in the web process (libsndfile, whose
libmpg123 parses ID3 tags in time that grows with the square of their frames, and with FFmpeg
for the join check): a damaged MPEG file made libmpg123 write ~75,000 log lines to the web
process's stderr per 576 KB upload (helper-140), and every tag trick held the web process with
no deadline (helper-135, helper-138). See ``whole`` in :func:`decode_in_child`.

The child is a new interpreter (``subprocess``: fork and exec, so nothing of the web process's
threads or state carries over), in a session of its own so that a Ctrl-C at the terminal reaches only the web
process, whose drain then waits for it. It imports numpy, PyAV and :mod:`.prompt_audio`, never
torch.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from ..errors import STOPPING_MESSAGE, BusyError, InputError, ServiceStopping
from ..child_processes import die_with_parent, is_stopped, no_core_dumps, signal_name

# Address space the child may add once numpy, PyAV and FFmpeg's libraries are mapped. The largest
# file the caps let through (two channels at 48 kHz for 119 s, as AAC, Opus or FLAC: 46 MB of
# float32 out) decoded within 200 MiB and was refused at 100; files built to make FFmpeg index
# millions of packets took 1.1 GB of the web process before, and stop here.
DECODE_MEMORY_MIB = 512
# Seconds past the deadline at which the child's own alarm ends it: a backstop for a child whose
# web process could not kill it.
_ALARM_MARGIN_S = 5
_HEADER_LIMIT_BYTES = 64 * 1024
_LOGGED_STDERR_BYTES = 2000
# What the child may write to its stderr file: libmpg123 writes lines per damaged frame, 150 MB
# for a 20 MB upload of them, and only the end is logged.
_STDERR_FILE_LIMIT_BYTES = 1024 * 1024
# Children decoding at once: each may take DECODE_MEMORY_MIB and a core until its deadline.
_CHILD_SLOTS = threading.BoundedSemaphore(2)

log = logging.getLogger(__name__)


def decode_in_child(path: str, deadline_s: float, memory_mib: int | None = None,
                    before_slot_freed=None, stopping: threading.Event | None = None, whole: bool = False,
                    ) -> tuple[np.ndarray, int, str | None, float | str | None]:
    """Decode ``path`` with PyAV in a child process (see the module docstring), or with ``whole``
    every way the web process would (:func:`.prompt_audio.decode_audio_file` in the child).

    Args:
        path: the prompt audio file.
        deadline_s: wall time for the whole child (start, decode, reply), in seconds; past it the
            child is killed. At most two children run at once (a third call waits for one to end).
        memory_mib: address space the child may add once started, in MiB; default
            :data:`DECODE_MEMORY_MIB`.
        before_slot_freed: called once the child has ended (or could not start), before its slot
            is given to the next decode, whatever happened; the caller takes back its own slot
            there, so that replies waiting for it stay bounded by the child slots.
        stopping: once set, a call that gets its slot starts no child (the application is
            shutting down; requests that waited for a slot were decoded one after another).
        whole: run :func:`.prompt_audio.decode_audio_file` in the child, libsndfile first (used for
            MPEG, whose decoder libmpg123 is slow on tags and loud on damaged frames).

    Returns:
        ``(samples, sample_rate_hz, note, damaged_at_s)``: float32 of shape ``(frames, channels)``
        at the file's own rate, a note (the track used of a file with several audio tracks, data
        cut off) or ``None``, and the seconds decoded before damaged data ended the track or
        ``None``, as :func:`decode_with_pyav` returns them. With ``whole``, the last is
        :func:`.prompt_audio.decode_audio_file`'s ``cut`` sentence instead.

    Raises:
        InputError: a refusal :func:`decode_with_pyav` made (too long, too many samples or
            packets), or the child ended with no reply (killed by a signal, such as a crash inside
            FFmpeg); :class:`DecoderLimit`, an InputError, when the file took more than
            ``deadline_s`` or more than ``memory_mib`` of memory.
        ServiceStopping: ``stopping`` was set when the slot came.
        BusyError: the child could not be started (no process, file handle or memory free), or
            was ended or stopped from outside twice (once, it is started again).
        ValueError: FFmpeg could not decode the file (its message): the caller tries other ways
            and says the file is not audio. With ``whole``, an InputError instead.
    """
    memory_mib = DECODE_MEMORY_MIB if memory_mib is None else memory_mib
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    # One thread and arena each: every thread's malloc arena reserves 64 MiB of address space, which
    # counts against the limit without holding anything.
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MALLOC_ARENA_MAX="2")
    command = [sys.executable, "-c",
               "import sys; sys.path.insert(0, sys.argv[1]); "
               "from cosyvoice_ui.inputs.pyav_process import child_main; child_main()",
               root, "whole" if whole else "pyav", path, str(deadline_s), str(memory_mib), str(os.getpid())]
    try:
        # stderr to a file, not a pipe: what the child says there is read only when it fails, and
        # only its end, however much it wrote.
        with _CHILD_SLOTS, tempfile.TemporaryFile() as stderr:
            try:
                if stopping is not None and stopping.is_set():
                    raise ServiceStopping(STOPPING_MESSAGE)
                for attempt in (1, 2):
                    started = time.monotonic()  # the deadline is the child's own, not the wait for a slot
                    returncode, stdout, outside = _run(command, env, stderr, deadline_s)
                    if outside is None:
                        break
                    # Not the file's doing: a SIGKILLed decoder was told "took more than 10 s" after
                    # 0.3 s, and the upload ledgered as bad input (helper-130).
                    log.warning("FFmpeg's child process for a prompt %s, not by the file's doing%s", outside,
                                "; decoding again" if attempt == 1 else "")
                    if attempt == 2:
                        raise BusyError(f"The server's audio decoder {outside} twice while reading this file: "
                                        "something on the server ends or stops processes (an operator, or the "
                                        "system short of memory); the file is not the cause. Send it again.")
                if returncode:
                    stderr.seek(max(0, stderr.seek(0, os.SEEK_END) - _LOGGED_STDERR_BYTES))
                    log.warning("FFmpeg's child process for a prompt ended with status %s: %s", returncode,
                                stderr.read().decode(errors="replace").strip() or "(nothing on stderr)")
            finally:
                if before_slot_freed is not None:
                    before_slot_freed()
    except subprocess.TimeoutExpired:
        raise _took_too_long(deadline_s, whole) from None
    except OSError as e:
        raise BusyError(f"The server could not start its audio decoder just now ({e.strerror or e}). Send the "
                        "request again in a minute, or upload the prompt as WAV or FLAC, which is read without it.") \
            from None
    done = subprocess.CompletedProcess(command, returncode, stdout)
    end = done.stdout.find(b"\n")
    try:
        reply = json.loads(done.stdout[:end]) if 0 <= end < _HEADER_LIMIT_BYTES else None
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        if done.returncode == -signal.SIGALRM or time.monotonic() - started > deadline_s:
            raise _took_too_long(deadline_s, whole)
        how = (f"was stopped by {signal.Signals(-done.returncode).name}" if done.returncode < 0
               else f"ended with status {done.returncode}")
        decoder = "the MP3 decoder (libmpg123 or FFmpeg)" if whole else "FFmpeg"
        raise InputError(f"The prompt audio file could not be decoded: {decoder} {how} reading it (a damaged file, or "
                         f"one that needs more than {memory_mib} MiB to read, far more than any recording). "
                         "Export the recording again as WAV, FLAC or MP3.")
    if "refused" in reply:
        raise InputError(str(reply["refused"]))
    if "memory" in reply:
        raise too_much_memory(memory_mib)
    if "failed" in reply:
        if whole:  # decode_audio_file raises InputError for every file it cannot read: this is a fault of ours
            raise InputError("The prompt audio file could not be decoded: the decoder failed on it "
                             f"({str(reply['failed'])[:200]}). Upload it as WAV or FLAC.")
        raise ValueError(str(reply["failed"]))
    frames, channels = (int(n) for n in reply["shape"])
    if len(done.stdout) - end - 1 != frames * channels * 4:
        raise InputError("The prompt audio file could not be decoded: the decoder's reply was cut short. "
                         "Send the request again.")
    # One copy out of the reply, read in place (slicing the reply first made a third: helper-117).
    samples = np.frombuffer(done.stdout, dtype=np.float32, offset=end + 1).reshape(frames, channels).copy()
    return samples, int(reply["rate"]), reply.get("note"), reply.get("cut" if whole else "damaged_at_s")


# Signals of a crash inside FFmpeg (the file's doing) or of the child's own alarm; others (SIGKILL,
# SIGTERM, SIGINT, SIGHUP) came from outside.
_OWN_SIGNALS = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE, signal.SIGILL,
                          signal.SIGALRM})


def _run(command: list[str], env: dict, stderr, deadline_s: float) -> tuple[int, bytes, str | None]:
    """Run the child to its end: ``(returncode, stdout, None)``, or ``(returncode, b"", how)`` when
    it was ended or stopped from outside (``how``: "was ended by SIGKILL", "was stopped (SIGSTOP)").

    Raises:
        subprocess.TimeoutExpired: past ``deadline_s`` (the child is killed).
        OSError: the child could not be started.
    """
    started = time.monotonic()
    deadline = started + max(deadline_s, 0.001)
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, env=env,
                             start_new_session=True)
    with child:
        while True:
            left = deadline - time.monotonic()
            try:
                stdout, _ = child.communicate(timeout=max(0.001, min(left, 1.0)))
                break
            except subprocess.TimeoutExpired:
                # A SIGSTOPped decoder held the request for the whole deadline and was then told
                # the file took too long (helper-130): seen within a second.
                stopped = is_stopped(child.pid)
                if stopped or time.monotonic() >= deadline:
                    child.kill()
                    child.communicate()
                    if stopped:
                        return child.returncode, b"", "was stopped (SIGSTOP)"
                    raise
    # The child's alarm rings past the deadline: one before it was sent from outside (helper-132: a
    # decode so ended after 0.8 s was told it took more than 10 s).
    early_alarm = child.returncode == -signal.SIGALRM and time.monotonic() - started < deadline_s
    if child.returncode < 0 and (-child.returncode not in _OWN_SIGNALS or early_alarm):
        return child.returncode, b"", f"was ended by {signal_name(child.returncode)}"
    return child.returncode, stdout, None


class DecoderLimit(InputError):
    """The child passed its deadline or its memory limit on the file: what FFmpeg could not do
    within them, libsndfile would do in the web process with none (helper-135: an MP3 FFmpeg gave
    up on after 10 s held libsndfile 70 s more)."""


def too_much_memory(memory_mib: int) -> DecoderLimit:
    """The refusal of a file whose decoding needed more than ``memory_mib`` MiB."""
    return DecoderLimit(f"The prompt audio file needs more than {memory_mib} MiB of memory to decode (a recording "
                        "needs under 200): it holds far more than its sound, such as tables of millions of packets. "
                        "Export the recording again as WAV, FLAC or MP3.")


def _took_too_long(deadline_s: float, whole: bool = False) -> InputError:
    if whole:
        # A 20 MB AVI named .mp3 was scanned by libmpg123 for 15 s, and was told of "millions of
        # packets in other tracks" (helper-142).
        return DecoderLimit(
            f"The prompt audio file took more than {deadline_s:.0f} s to decode (a recording takes well under one). "
            "It was read as MP3, as its name or first bytes say: a file of another kind named .mp3 is scanned "
            "slowly, frame by frame, and so is one that holds far more than its sound. Name the file for its own "
            "format (.wav, .m4a, ...), or export the recording again as WAV, FLAC or MP3.")
    return DecoderLimit(
        f"The prompt audio file took more than {deadline_s:.0f} s to decode (a recording takes well under one): it "
        "holds far more than its sound, such as millions of packets in other tracks. Export the recording again as "
        "WAV, FLAC or MP3.")


def child_main() -> None:
    """The child's side: end with the web process, limit its own memory and time, decode, write
    one JSON line, then the samples as raw float32 (C order, ``(frames, channels)``) to stdout.
    Arguments: ``root mode path deadline_s memory_mib parent_pid``, mode ``pyav`` or ``whole``
    (see :func:`decode_in_child`)."""
    mode, path = sys.argv[-5], sys.argv[-4]
    deadline_s, memory_mib, parent = float(sys.argv[-3]), int(sys.argv[-2]), int(sys.argv[-1])
    # Killed with the web process (the thread that started it waits for it, so it is the process
    # that ends): children of a SIGKILLed app lived on for good, asleep, where a CPU-time limit
    # never fired (helper-117). And, whatever happens, ended a little after the deadline by an alarm.
    die_with_parent(parent)
    no_core_dumps()
    signal.alarm(int(deadline_s) + _ALARM_MARGIN_S)
    # Writes to the stderr file past the limit fail (EFBIG) instead of ending the child.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (_STDERR_FILE_LIMIT_BYTES, _STDERR_FILE_LIMIT_BYTES))
    import importlib

    import psutil

    importlib.import_module("av")  # mapped before the limit: FFmpeg's libraries take ~150 MiB of address space

    from . import prompt_audio

    # Set here, not in the parent between fork and exec (preexec_fn is unsafe in a threaded
    # process); what the interpreter and its libraries already map is not counted against it.
    address_space = psutil.Process().memory_info().vms + memory_mib * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    out = sys.stdout.buffer
    try:
        if mode == "whole":
            prompt_audio.decode_here()
            data, rate, note, cut = prompt_audio.decode_audio_file(path)
            extra = {"cut": cut}
        else:
            data, rate, note, damaged_at_s = prompt_audio.decode_with_pyav(path)
            extra = {"damaged_at_s": damaged_at_s}
    except InputError as e:
        reply, data = {"refused": str(e)}, None
    except MemoryError:  # PyAV's own (av.error.MemoryError, ENOMEM) is one too
        reply, data = {"memory": True}, None
    except Exception as e:  # noqa: BLE001 - FFmpeg's message goes back as it is
        reply, data = {"failed": str(e)[:500]}, None
    else:
        data = np.ascontiguousarray(data, dtype=np.float32)
        reply = {"shape": list(data.shape), "rate": int(rate), "note": note, **extra}
    out.write(json.dumps(reply).encode() + b"\n")
    if data is not None:
        out.write(memoryview(data).cast("B"))
    out.flush()
