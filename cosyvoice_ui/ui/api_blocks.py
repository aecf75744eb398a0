"""``gr.Blocks`` that answers a malformed API payload as the caller's mistake.

Before an event handler runs, Gradio checks and moves the payload's files (a ``FileData`` for
each file parameter) and runs each component's preprocessing. When that fails, it prints a
full traceback (20-100 lines) and answers with its own wording ("Could not preprocess input
component at index 4", a pydantic report), so a client sending junk in a loop could flood the
log cheaply (second newcomer session). Here every such failure becomes a message that names the
parameter and says what would work, and a log line (at most one a minute per endpoint, with a count).

The server also never downloads a URL given as a file: Gradio would fetch it with no size
limit, bypassing ``--max-upload-mb``; and a prompt is meant to be uploaded.
"""

from __future__ import annotations

import inspect
import logging
import os

import gradio as gr
import pydantic
from gradio.exceptions import ComponentProcessingError, InvalidPathError
from gradio_client import utils as client_utils

from ..log_throttle import OncePerMinuteByKind

log = logging.getLogger(__name__)
# Wrong values sent in a loop wrote a line each (helper-56): one a minute per endpoint, with a count.
_refused_calls = OncePerMinuteByKind(log, logging.INFO, "refused a call to %s: %s")

_FILE_HINT = "upload the file first (gradio_client: handle_file('voice.wav')) or send null"


class PayloadError(Exception):
    """A payload that cannot be an input to its event; ``str()`` is the message for the caller."""


class ApiBlocks(gr.Blocks):
    """Refuses malformed inputs with one log line and a clear :class:`gr.Error`.

    Server faults met while preparing inputs (a full disk while copying an upload) are not the
    caller's mistake and keep Gradio's usual traceback.

    Args:
        on_refused: called as ``on_refused(api_name, message, text_chars)`` for each refusal
            (``api_name`` without the slash, ``None`` for unnamed events; ``text_chars`` the first
            value's length when it is a string, else 0), so refused syntheses reach the
            request ledger like every other refusal; its failures are logged, never raised.
        **kwargs: passed to :class:`gr.Blocks`.
    """

    def __init__(self, *args, on_refused=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._on_refused = on_refused

    async def preprocess_data(self, block_fn, inputs, *args, **kwargs):
        try:
            _refuse_extra_values(block_fn, inputs)
            _refuse_bad_files(block_fn, inputs)
            return await super().preprocess_data(block_fn, inputs, *args, **kwargs)
        except gr.Error as e:
            if not e.print_exception:
                raise
            # Gradio's own checks (a dropdown value, a slider bound) print a traceback by default.
            raise self._refused(block_fn, e.message, inputs) from None
        except PayloadError as e:
            raise self._refused(block_fn, str(e), inputs) from None
        except (ComponentProcessingError, InvalidPathError, pydantic.ValidationError, ValueError, TypeError) as e:
            raise self._refused(block_fn, describe_payload_error(block_fn, inputs, e), inputs) from None

    def _refused(self, block_fn, message: str, inputs) -> gr.Error:
        _refused_calls.note(block_fn.api_name, f"/{block_fn.api_name}" if block_fn.api_name else "an event", message)
        if self._on_refused is not None:
            try:
                # The text's length when the first value is one: a wrong value count was ledgered with 0.
                text = inputs[0] if isinstance(inputs, (list, tuple)) and inputs else None
                self._on_refused(block_fn.api_name, message, len(text) if isinstance(text, str) else 0)
            except Exception:
                log.exception("recording a refused call failed")
        # The title the input checks' refusals carry (ui/handlers.py); this one was "Error" (helper-56).
        return gr.Error(message, print_exception=False, title="Cannot use this input")


def parameter_names(block_fn) -> list[str]:
    """The handler's parameter names in input order (its public API names), ``input N`` when
    the handler does not name them (a lambda with ``*args``)."""
    try:
        params = [p.name for p in inspect.signature(block_fn.fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"input {i}" for i in range(len(block_fn.inputs))]


def describe_payload_error(block_fn, inputs: list, error: Exception) -> str:
    """The caller-facing message for a payload Gradio could not prepare.

    Args:
        block_fn: Gradio's ``BlockFunction`` of the event (its ``fn``, ``inputs``, ``api_name``).
        inputs: the payload's positional values, as sent.
        error: what Gradio raised while preparing them.

    Returns:
        One sentence naming the event and the parameter, and what would work.
    """
    names = parameter_names(block_fn)
    event = f"/{block_fn.api_name}" if block_fn.api_name else "this event"
    if len(inputs) < len(names):
        return f"{event} takes {len(names)} values ({', '.join(names)}); got {len(inputs)}."
    if isinstance(error, InvalidPathError):
        bad = next((i for i, v in enumerate(inputs) if _file_paths(v)), None)
        name = names[bad] if bad is not None else "a file parameter"
        if bad is not None and not getattr(block_fn.inputs[bad], "data_model", None):
            # A file object sent as the speed was told to upload the file first (helper-66).
            return f"The {name} takes a value of its own (a number or text), not a file object."
        return f"The {name} names a file that was not uploaded to this server; {_FILE_HINT}."
    if isinstance(error, pydantic.ValidationError):
        # Raised for the first file parameter whose value is not a FileData object.
        bad = next((i for i, b in enumerate(block_fn.inputs)
                    if getattr(b, "data_model", None) and inputs[i] is not None
                    and not client_utils.is_file_obj_with_meta(inputs[i])), None)
        name = names[bad] if bad is not None else "a file parameter"
        shown = _short(inputs[bad]) if bad is not None else ""
        return f"The {name} must be a file object, not {shown}; {_FILE_HINT}."
    return f"{event} could not read its inputs ({_short(str(error), 160)}); check each parameter's type."


def _refuse_extra_values(block_fn, inputs: list) -> None:
    # Gradio drops values beyond the event's inputs without a word; a caller who sends more
    # has the order wrong, and would get a synthesis of something else than meant.
    names = parameter_names(block_fn)
    if len(inputs) > len(names):
        event = f"/{block_fn.api_name}" if block_fn.api_name else "this event"
        raise PayloadError(f"{event} takes {len(names)} values ({', '.join(names)}); got {len(inputs)}.")


def _refuse_bad_files(block_fn, inputs: list) -> None:
    """One check per file value: a URL (never downloaded), or something in the upload area that
    is not a file.

    A folder inside the upload area passes Gradio's path check and joins the files it deletes
    later, where os.remove() fails on it: the scheduled deletion and the shutdown then logged a
    traceback and "Application shutdown failed" for good (nineteenth newcomer session). Only
    paths inside the upload area are looked at: others get Gradio's refusal, which says nothing
    about what exists on this server."""
    from gradio.utils import abspath, get_upload_folder, is_in_or_equal

    names = parameter_names(block_fn)
    upload_folder = get_upload_folder()
    for i, value in enumerate(inputs[:len(names)]):
        for path in _file_paths(value):
            if client_utils.is_http_url_like(path):
                raise PayloadError(f"The {names[i]} is a URL ({_short(path)}); this server does not download files. "
                                   f"Download it, then upload it (gradio_client: handle_file('voice.wav')).")
            full = str(abspath(path))
            if is_in_or_equal(full, upload_folder) and os.path.lexists(full) and not os.path.isfile(full):
                what = "a folder" if os.path.isdir(full) else "something"
                raise PayloadError(f"The {names[i]} names {what}, not a file; {_FILE_HINT}.")


def _file_paths(value) -> list[str]:
    found: list[str] = []

    def collect(d):
        if isinstance(d.get("path"), str):
            found.append(d["path"])
        return d

    client_utils.traverse(value, collect, client_utils.is_file_obj_with_meta)
    return found


def _short(value, limit: int = 60) -> str:
    # JSON's spelling for JSON's constants: "not True" for a prompt_audio of true (helper-66).
    text = (value if isinstance(value, str) and limit > 60 else
            {True: "true", False: "false"}[value] if isinstance(value, bool) else "null" if value is None else repr(value))
    return text if len(text) <= limit else text[:limit - 3] + "..."
