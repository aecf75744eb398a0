"""The web process's glibc heap: both calls are no-ops where libc is not glibc (musl, macOS)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys

MMAP_THRESHOLD_BYTES = 262144  # the workers get the same through MALLOC_MMAP_THRESHOLD_ (supervisor)


@functools.lru_cache(maxsize=1)
def _glibc():
    name = ctypes.util.find_library("c") if sys.platform == "linux" else None
    try:
        lib = ctypes.CDLL(name) if name else None
        return lib if lib is not None and hasattr(lib, "malloc_trim") else None
    except OSError:
        return None


def serve_large_buffers_from_mmap() -> None:
    """Make glibc serve buffers of 256 KiB and more from mmap (``mallopt(M_MMAP_THRESHOLD)``,
    malloc.h; also stops the threshold's dynamic growth): decoded uploads are large numpy arrays,
    and without this a burst of big refused uploads left the web process at 1.6 GiB (newcomer
    session: 640 -> 1673 MiB after ~1000 uploads, back to 643 MiB after malloc_trim)."""
    lib = _glibc()
    if lib is not None:
        lib.mallopt(-3, MMAP_THRESHOLD_BYTES)


def return_freed_heap() -> None:
    """Give freed heap pages back to the system (``malloc_trim(0)``, which trims every arena).
    PyAV decodes into thousands of frame-sized buffers, under the mmap threshold, in whichever
    thread's arena served the upload: 8 clients sending 119 s MP3s left the web process 380 MiB
    larger, held as free heap (``bench/refused_upload_memory.py --clients 4,4,4,8 --repeats 1``)."""
    lib = _glibc()
    if lib is not None:
        lib.malloc_trim(0)
