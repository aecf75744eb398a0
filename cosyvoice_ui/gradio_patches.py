"""Every change this app makes inside Gradio, installed in one place before the page is built.

Gradio gives no hook for these, so each replaces or wraps one Gradio function or object; the
code of each lives beside the guard or UI piece it serves. Written against Gradio 6.x
(``requirements.txt``: ``gradio>=6.0,<7``; run here on 6.31). When Gradio is upgraded, these are
the places that read its internals: each ``install()`` imports its target by name, so a renamed
one fails at start (ImportError/AttributeError), not at the first request.

==============================  =====================================================================
patch                           what it changes, and why
==============================  =====================================================================
``ui.atomic_audio_cache``       result files appear only once written, named ``speech-<hash>.wav``,
                                and a full disk is said in words
``guards.forwarded_prefix``     result links and the logout redirect keep a proxy's path prefix
``guards.failed_uploads``       an upload that fails midway leaves no partial file; unused parts
                                are deleted
``guards.upload_progress``      the upload ids tracked for progress bars are bounded
``guards.evicted_sessions``     unread REST calls are forgotten first; a forgotten session does not
                                stop the queue
``guards.side_event_places``    the prompt check, Restart and Free cache hold at most 32 waiting
                                places each in Gradio's queue, which keeps the rest for speech
==============================  =====================================================================
"""

from __future__ import annotations

from .guards import evicted_sessions, failed_uploads, forwarded_prefix, side_event_places, upload_progress
from .ui import atomic_audio_cache

PATCHES = (atomic_audio_cache, forwarded_prefix, failed_uploads, upload_progress, evicted_sessions,
           side_event_places)


def install_all() -> None:
    """Install every patch in :data:`PATCHES` (each is idempotent, so calling this twice is safe).

    Raises:
        ImportError, AttributeError: the installed Gradio lacks a function or object one patch
            replaces (a Gradio outside the range the patches were written for).
    """
    for patch in PATCHES:
        patch.install()
