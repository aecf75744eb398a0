"""Errors a user can see. Each carries a message meant to be shown as it is."""

from __future__ import annotations


class UserFacingError(Exception):
    """Base class: ``str(error)`` is a complete sentence naming the problem and what would work."""


class InputError(UserFacingError):
    """The request itself is unusable (text or prompt audio); nothing was sent to the worker."""


class BusyError(UserFacingError):
    """The queue is full; the request was not accepted and may be sent again later."""


class DuplicateRequest(UserFacingError):
    """The same client already has this very request waiting or running (Generate pressed twice)."""


class SynthesisFailed(UserFacingError):
    """The worker could not produce audio for this request (after any retry)."""


class UnusablePromptAudio(SynthesisFailed):
    """The engine could not clone from the prompt audio (it raised ``engines.base.PromptAudioRefused``)."""


class RequestTimedOut(SynthesisFailed):
    """The request ran past its deadline; the worker was restarted."""


class RequestCancelled(UserFacingError):
    """Its client cancelled the request, or left, before it reached the worker's queue."""


class ServiceStopping(UserFacingError):
    """The application is shutting down and takes no new requests."""


# What a request sent during a shutdown is told, wherever it is turned away (at the door, before
# its prompt is decoded, at the worker's queue).
STOPPING_MESSAGE = "The application is shutting down and takes no new requests. Try again shortly."


def drop_locals(error: BaseException) -> None:
    """Clear the local variables of every finished frame in ``error``'s traceback and in those of
    the exceptions it was raised from or during (``__cause__``, ``__context__``).

    A refusal stays referenced after it was answered (``raise gr.Error(...) from None`` still sets
    ``__context__``, and the error sent stays reachable once per client), and its traceback keeps
    alive the frames that raised it, with everything they held: a 119 s prompt refused as too long
    kept ~200-300 MB of decoded and resampled samples per client, and the web process grew from
    639 MiB to 1.8 GiB with 4 clients (``bench/refused_upload_memory.py``; a newcomer session saw
    8.9 GB with 12).
    File names and line numbers stay; frames still running are left as they are
    (:func:`traceback.clear_frames` skips them)."""
    import traceback

    seen: set[int] = set()
    pending = [error]
    while pending:
        error = pending.pop()
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        traceback.clear_frames(error.__traceback__)
        pending += [error.__cause__, error.__context__]
