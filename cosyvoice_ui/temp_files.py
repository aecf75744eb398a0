"""Deleting temporary files that nothing else would: uploads Gradio never tracks, and the folders
of processes killed before they could remove their own.

Gradio deletes the uploads and results it knows of (``delete_cache``), but an upload whose client
disconnects midway stays as a ``tmpXXXXXXXX`` file at the top of its upload folder, in no list;
finished uploads are moved into hashed subfolders. This sweeper removes such top-level files once
nothing has been written to them for ``--temp-file-ttl`` (a live upload keeps updating the time).
Gradio's list lives in the process: a web process killed with SIGKILL left its uploads and results
in their hashed folders for good (thirty-third newcomer session), so files there older than the
time-to-live go too, the age ``delete_cache`` itself uses (Gradio touches a cached copy it hands
out again, so a file in use is never that old).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time

import psutil

log = logging.getLogger(__name__)


def _hash_folder(entry: os.DirEntry) -> bool:
    """Gradio's folder for one cached file is named by the file's SHA-256 (64 hex digits)."""
    return len(entry.name) == 64 and all(c in "0123456789abcdef" for c in entry.name) and \
        entry.is_dir(follow_symlinks=False)


def sweep_abandoned_uploads(folder: str, ttl_s: float, now: float | None = None) -> list[str]:
    """Delete regular files named ``tmp*`` directly in ``folder`` not modified for ``ttl_s`` seconds,
    regular files in Gradio's hashed subfolders (64 hex digits) not modified (nor touched by
    Gradio) for ``ttl_s`` seconds (those of a process killed before its ``delete_cache`` ran), and the empty
    subfolders Gradio leaves behind once ``delete_cache`` removed their file (one per upload or
    result: over days they pile up by the thousand).

    Returns:
        The paths deleted. Missing folders and files that vanish meanwhile are not errors.
    """
    now = time.time() if now is None else now
    deleted = []
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return deleted
    for entry in entries:
        try:
            old = now - entry.stat(follow_symlinks=False).st_mtime > ttl_s
            if _hash_folder(entry):
                for inner in os.scandir(entry.path):
                    if inner.is_file(follow_symlinks=False) and now - inner.stat(follow_symlinks=False).st_mtime > ttl_s:
                        os.unlink(inner.path)
                        deleted.append(inner.path)
                        old = True  # its folder goes now if that emptied it
            if old and entry.name.startswith("tmp") and entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                deleted.append(entry.path)
            elif old and entry.is_dir(follow_symlinks=False) and not any(os.scandir(entry.path)):
                os.rmdir(entry.path)  # fails harmlessly if a file arrived meanwhile
                deleted.append(entry.path)
        except (FileNotFoundError, OSError):
            continue
    return deleted


def start_upload_sweeper(ttl_s: float, interval_s: float) -> threading.Thread:
    """Run :func:`sweep_abandoned_uploads` on Gradio's upload folder every ``interval_s`` seconds
    in a daemon thread."""
    from gradio.utils import get_upload_folder

    def loop() -> None:
        while True:
            time.sleep(interval_s)
            deleted = sweep_abandoned_uploads(get_upload_folder(), ttl_s)
            if deleted:
                log.info("deleted %d abandoned partial upload(s), left-behind file(s) or empty folder(s) older than %.0f s",
                         len(deleted), ttl_s)

    thread = threading.Thread(target=loop, name="upload-sweeper", daemon=True)
    thread.start()
    return thread


def remove_folders_of_gone_processes(prefix: str, folder: str | None = None) -> int:
    """Remove the folders named ``<prefix><pid>-...`` in ``folder`` (default: the system's
    temporary folder) whose process ``pid`` is gone: a process killed with SIGKILL never removes
    its own. Returns how many were removed."""
    folder = folder or tempfile.gettempdir()
    removed = 0
    for name in os.listdir(folder):
        owner = name[len(prefix):].split("-", 1)[0] if name.startswith(prefix) else ""
        if owner.isdigit() and not psutil.pid_exists(int(owner)):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
            removed += 1
    return removed
