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


class ServiceStopping(UserFacingError):
    """The application is shutting down and takes no new requests."""
