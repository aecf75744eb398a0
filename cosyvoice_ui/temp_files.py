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

import errno
import logging
import os
import shutil
import stat
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
        The paths deleted, folders with a trailing ``os.sep``. Missing folders and files that
        vanish meanwhile are not errors.
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
                deleted.append(entry.path + os.sep)
        except (FileNotFoundError, OSError):
            continue
    return deleted


def remove_empty_folders(folder: str) -> int:
    """Remove Gradio's empty subfolders of ``folder``: the hashed ones (64 hex digits) each upload
    and result was kept in, and its ``vibe_edit_history``. At shutdown, after Gradio deleted the
    files: they stayed, 5 and 11 after two runs, until a later start's sweep (helper-73). Other
    folders are left (``GRADIO_TEMP_DIR`` may be shared). Returns how many were removed."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        if _hash_folder(entry) or (entry.name == "vibe_edit_history" and entry.is_dir(follow_symlinks=False)):
            try:
                os.rmdir(entry.path)  # only if empty
                removed += 1
            except OSError:
                pass
    return removed


_upload_ttl_s: float | None = None  # set by start_upload_sweeper: the running app's --temp-file-ttl


def upload_ttl_text() -> str:
    """How long this app keeps uploads, for a user's message: "60 s", "1 hour", "2.5 hours";
    "a limited time" before :func:`start_upload_sweeper` ran."""
    from .duration_text import duration_text

    return "a limited time" if _upload_ttl_s is None else duration_text(_upload_ttl_s)


def start_upload_sweeper(ttl_s: float, interval_s: float) -> threading.Thread:
    """Run :func:`sweep_abandoned_uploads` on Gradio's upload folder every ``interval_s`` seconds
    in a daemon thread, and :func:`keep_claim` every :data:`CLAIM_CHECK_S` (or ``interval_s`` if
    shorter). An error out of either is logged (once while it repeats) and both go on."""
    from gradio.utils import get_upload_folder

    global _upload_ttl_s
    _upload_ttl_s = ttl_s

    def loop() -> None:
        next_sweep = time.monotonic() + interval_s
        claim_error = sweep_error = None  # the latest error of each, logged once while it repeats
        while True:
            # One stat: often, so that a copy started on a folder deleted under this one finds it
            # claimed within seconds (at the sweep's pace, 10 minutes by default, it did not).
            time.sleep(max(0.0, min(CLAIM_CHECK_S, next_sweep - time.monotonic())))
            claim_error = guarded(keep_claim, claim_error, "checking the temporary folder's lock file",
                                  min(CLAIM_CHECK_S, interval_s))
            if time.monotonic() < next_sweep:
                continue
            next_sweep = time.monotonic() + interval_s
            sweep_error = guarded(lambda: sweep(get_upload_folder()), sweep_error, "deleting old temporary files",
                                  interval_s)

    def guarded(call, last_error: str | None, what: str, again_s: float) -> str | None:
        # An error out of keep_claim or the sweep ended this thread: old uploads and results were
        # never deleted again, without a word after the first (helper-125).
        try:
            call()
        except Exception as e:
            if repr(e) != last_error:
                log.exception("%s failed; tried again every %g s", what, again_s)
            return repr(e)
        return None

    def sweep(folder: str) -> None:
        deleted = sweep_abandoned_uploads(folder, ttl_s)
        folders = sum(path.endswith(os.sep) for path in deleted)
        # Empty folders are Gradio's leftovers after it deleted its own files on time: routine,
        # and with a short --temp-file-ttl they were most of the log, called "abandoned partial
        # uploads" (forty-fourth newcomer session). Files are worth a line, but most are uploads and
        # results whose time ran out, found here before Gradio's own sweep: blaming disconnected
        # clients and a killed app sent an operator looking for a crash (helper-50).
        if len(deleted) > folders:
            log.info("temporary files: deleted %d file(s) older than --temp-file-ttl (%.0f s): uploads and results "
                     "whose time ran out, and any partial uploads; and %d empty folder(s)",
                     len(deleted) - folders, ttl_s, folders)
        elif folders:
            log.debug("temporary files: deleted %d empty folder(s) Gradio left behind", folders)

    thread = threading.Thread(target=loop, name="upload-sweeper", daemon=True)
    thread.start()
    return thread


CLAIM_FILE = ".cosyvoice_ui.lock"
CLAIM_CHECK_S = 5.0  # how often the lock file is checked (keep_claim)
_claimed: list[int] = []  # the open lock files: held until the process ends
_claim_folder: str | None = None  # the folder claimed (by claim_folder); its lock file is _claimed[-1]
_claim_folder_was_link = False  # GRADIO_TEMP_DIR named a link when claimed: the user's choice, not a plant
_claim_lost_to: str | None = None  # the pid that holds the folder's new lock file, once said


def _lock(path: str, dir_fd: int | None = None) -> tuple[int | None, str]:
    """``(descriptor, "")`` with an exclusive ``flock`` on ``path`` (created if missing; relative
    to ``dir_fd`` if given) and this process's pid written in it, or ``(None, the holder's pid)``
    when another process holds it.

    Raises:
        OSError: when ``path`` cannot be opened or locked, or is a symbolic link, not a regular
            file (a FIFO), or a file of another user.
    """
    import fcntl

    # The pid is written over what the file held: a link planted at the path made the app
    # truncate and overwrite the file it pointed to, any file of the app's user (helper-125).
    # O_NOFOLLOW refuses the link itself; a file of another user is refused as the folder is.
    # A FIFO there took the lock, failed in ftruncate and kept its descriptor (and the lock);
    # the next check waited in read() for good, and the sweeper with it (helper-125):
    # O_NONBLOCK keeps the open from waiting, and anything but a regular file is refused.
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, 0o644,
                     dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise OSError(e.errno, "a symbolic link is in its place, not the app's own file", path) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "a FIFO, device or socket is in its place, not a regular file", path)
        if info.st_uid != os.getuid():
            raise OSError(errno.EPERM, f"it belongs to another user (uid {info.st_uid})", path)
        # A hard link planted there is the file it names: it was cut to the pid like a symbolic
        # link's (helper-129). The app's own lock file has one name.
        if info.st_nlink > 1:
            raise OSError(errno.EMLINK, f"a hard link is in its place ({info.st_nlink} names for one file), "
                          "not the app's own file", path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 20).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            return None, owner
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
    except BaseException:
        os.close(fd)
        raise
    return fd, ""


def claim_folder(folder: str) -> str | None:
    """Make ``folder`` this process's own for its lifetime, or say why it cannot be.

    A second copy of the app started on the same ``GRADIO_TEMP_DIR`` with a shorter
    ``--temp-file-ttl`` deleted the first copy's uploads and results while it ran: its result
    links answered 403 (forty-eighth newcomer session). The claim is an exclusive ``flock`` on
    :data:`CLAIM_FILE` in the folder (holding this process's pid), released by the system when the
    process ends however it ends, so a killed app's folder is free again at once; the descriptor
    is not inherited by the worker processes (Python opens files non-inheritable).
    :func:`keep_claim` takes it again if the file is deleted meanwhile.

    Returns:
        ``None`` when claimed; otherwise the message to print (another running process holds it).
    """
    global _claim_folder, _claim_folder_was_link

    path = os.path.join(folder, CLAIM_FILE)
    try:
        fd, owner = _lock(path)
    except OSError as e:
        if os.path.lexists(path) and e.errno in (errno.ELOOP, errno.EINVAL, errno.EMLINK, errno.EPERM):
            # What stands at the path is the problem, not the folder (helper-129: a link there was
            # told to point the folder at a writable one).
            return (f"GRADIO_TEMP_DIR={folder!r} cannot hold the app's lock file: at {path} {e.strerror}. Remove it "
                    "(the app makes its own), or point GRADIO_TEMP_DIR at a writable folder of your own.")
        return f"GRADIO_TEMP_DIR={folder!r} cannot hold the app's lock file ({e.strerror}); point it at a writable folder."
    if fd is None:
        return (f"GRADIO_TEMP_DIR={folder!r} is in use by another running copy of this app (pid {owner}); each copy "
                "deletes old uploads and results there, so two would delete each other's. Give this copy its own "
                "folder, or unset GRADIO_TEMP_DIR (each port then gets its own).")
    _claimed.append(fd)
    _claim_folder = folder
    _claim_folder_was_link = os.path.islink(folder)
    return None


def _lock_again(folder: str) -> tuple[int | None, str]:
    """:func:`_lock` on the lock file in ``folder``, made again if need be, once the folder is
    found to be this user's, and a link only if it was one when claimed.

    Raises:
        OSError: the folder cannot be made or opened, belongs to another user, or has become a
            link; or as :func:`_lock`.
    """
    # After an rm -rf another local user could make the folder (its name is known) or a link
    # there before Gradio did; the start's check (app.py) refuses such a folder, this must too
    # (helper-125). The lock file is opened relative to the folder checked, so it cannot be
    # swapped between the check and the open.
    os.makedirs(folder, mode=0o700, exist_ok=True)
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC |
                         (0 if _claim_folder_was_link else os.O_NOFOLLOW))
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(folder):
            raise OSError(e.errno, "the folder is now a symbolic link", folder) from None
        raise
    try:
        owner_uid = os.fstat(dir_fd).st_uid
        if owner_uid != os.getuid():
            raise OSError(errno.EPERM, f"the folder belongs to another user (uid {owner_uid})", folder)
        return _lock(CLAIM_FILE, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def keep_claim() -> None:
    """Take the claim of :func:`claim_folder` again when its lock file was deleted or replaced.

    The temporary folder deleted under a running app (``rm -rf``) took the lock file with it:
    Gradio made the folder again at the next upload, but not the file, and a second copy then
    started on the folder and served (helper-122). The held file is compared with the one at the
    path (device and inode); another one there is locked anew, the folder made again if need be.
    When another process holds the new file, an ERROR names it (once). Errors are logged, not
    raised: the sweeper calls this.
    """
    global _claim_lost_to

    if _claim_folder is None or not _claimed:
        return
    path = os.path.join(_claim_folder, CLAIM_FILE)
    held = os.fstat(_claimed[-1])
    try:
        on_disk = os.stat(path, follow_symlinks=False)  # a link to the held file is not the file
        if (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino):
            return
    except OSError:  # gone with its folder, or the folder made unreadable: taken again below, or said why not
        pass
    try:
        fd, owner = _lock_again(_claim_folder)
    except OSError as e:
        fd, owner = None, None
        problem = f"cannot take it again ({e.strerror or e})"
    else:
        problem = (f"another running copy of this app (pid {owner}) holds it now: each deletes old uploads and "
                   "results there, so the two delete each other's; stop one") if fd is None else None
    if fd is None:
        if _claim_lost_to != problem:
            _claim_lost_to = problem
            log.error("the temporary folder's lock file %s was deleted or replaced, and %s", path, problem)
        return
    os.close(_claimed.pop())  # a lock on a deleted file keeps no one out
    _claimed.append(fd)
    _claim_lost_to = None
    log.warning("the temporary folder's lock file %s was deleted or replaced; it is this app's again", path)


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
