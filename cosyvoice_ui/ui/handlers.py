"""Event handlers: validate with :mod:`cosyvoice_ui.inputs`, call the supervisor, format.

Their parameter names are the public API (``gradio_client`` calls them by name), so they are
kept stable: ``/synthesize(text, prompt_audio, prompt_text, instruction, speed, seed, speaker)``,
``/synthesize_stream`` (same parameters, with ``--stream``), ``/restart()``, ``/status()``,
``/free_cache()``. The request itself runs in :mod:`cosyvoice_ui.synthesis`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import html
import logging
import math
import os
import threading
import time

import gradio as gr

from .. import synthesis
from ..engines.base import Capabilities
from ..errors import (BusyError, DuplicateRequest, InputError, RequestTimedOut, ServiceStopping, SynthesisFailed,
                      UnusablePromptAudio, UserFacingError, drop_locals)
from ..monitor.admission import Admission, AdmissionError
from ..monitor.sampler import MemoryMonitor
from ..settings import Settings, seconds_text
from ..synthesis import SynthesisService
from ..guards.arrival_order import ARRIVAL_HEADER
from ..guards.temp_space import TempSpace
from ..worker.supervisor import Supervisor, report_to_dict
from . import formatting
from .prompt_checks import CheckedPrompts

log = logging.getLogger(__name__)


def uploaded_path(prompt_audio):
    """The server path of an uploaded file as the synthesize events receive it without Gradio's
    preprocessing: a ``FileData`` dict (its file already checked to be in Gradio's upload folder
    and moved to its cache), ``None``, or a path string (callers in process). Anything else is
    returned as it is, for :func:`~cosyvoice_ui.inputs.request.build_request` to refuse."""
    if isinstance(prompt_audio, dict) and isinstance(prompt_audio.get("path"), str):
        return prompt_audio["path"]
    return prompt_audio


def _show_notes(result: dict, for_page: bool) -> None:
    """The result's notes as pop-ups in the page (API clients get them as log messages): in the
    stats JSON alone, a user missed that a failed upload meant the built-in voice was used."""
    for note in result.get("notes", [])[:4]:
        gr.Info(_as_text(note) if for_page else note, duration=12)


CHECKED_PROMPTS = CheckedPrompts()  # the page's early checks, remembered per upload

# The error's title by kind of refusal (Gradio's default is "Error"), in what the queue protocol
# sends. Gradio 6's page heads grouped pop-ups with their kind ("Error") instead, so the page's
# duplicate press is an Info pop-up (see _events). First match wins.
_TITLES = ((DuplicateRequest, "Already on its way"), (BusyError, "Busy"), (InputError, "Cannot use this input"),
           (UnusablePromptAudio, "Cannot clone this prompt"), (RequestTimedOut, "Timed out"),
           (SynthesisFailed, "Synthesis failed"), (ServiceStopping, "Stopping"),
           (AdmissionError, "Not enough memory"))


def _title(error: BaseException) -> str:
    """The pop-up title for a refusal or failure (see ``_TITLES``); "Error" for anything else."""
    return next((title for kind, title in _TITLES if isinstance(error, kind)), "Error")


def _as_text(message: str) -> str:
    """``message`` escaped for Gradio's pop-ups, which render their message as HTML (``gr.Error``'s
    and ``gr.Info``'s docstrings): a note quoting the tags removed from the text showed "Markup
    removed: , ," (the page drew ``<b>`` and ``</b>`` as tags), and any message quoting what a
    user typed must not become markup. API clients get the message unescaped."""
    return html.escape(message, quote=False)


# An API client has no Generate button, and its result comes with its first call (helper-59).
_DUPLICATE_FOR_API = ("This request is already being synthesized: this client sent the same request again while the "
                      "first one ran. The first call's result is the answer; wait for it.")


class _OnItsWay(Exception):
    """The page's duplicate Generate was told so in an Info pop-up; its event ends quietly."""


def _arrival(request: gr.Request | None) -> int | None:
    """The number ``guards/arrival_order.py`` gave this request on arrival, or ``None``."""
    try:
        return int(request.headers[ARRIVAL_HEADER])
    except (AttributeError, KeyError, TypeError, ValueError):
        return None


def _session(request: gr.Request | None) -> str | None:
    """Gradio's session hash: one browser tab, or one ``gradio_client.Client``."""
    return getattr(request, "session_hash", None) if request is not None else None


def _who(request: gr.Request | None) -> str:
    """The client's address (from X-Forwarded-For of a proxy named by --forwarded-allow-ips) and, under
    --auth, the user name: for the log lines of operations that affect everyone."""
    client = getattr(request, "client", None)
    who = getattr(client, "host", None) or "an unknown address"
    user = getattr(request, "username", None)
    return f"{who} (user {user})" if user else who


class _SegmentProgress:
    """Gradio's progress bar over a request's segments ("2/5 segment"). Each yield of the handler
    (every 0.25 s while it waits: :class:`synthesis.Waiting`) replaced the bar with the outputs, so
    it showed for a moment after each segment and the page looked idle in between (helper-86):
    it is shown again after each yield."""

    def __init__(self, progress) -> None:
        self.progress, self.shown = progress, None

    def update(self, event) -> None:
        if event.total > 1:
            self.shown = (event.done, event.total)
            self.again()

    def again(self) -> None:
        if self.shown is not None:
            self.progress(self.shown, desc="segments", unit="segment")


REPLACED = "replaced by a newer request from its tab"


class _NewestOfTab:
    """A page request gives way to a newer one from the same tab.

    Gradio's page shows the outputs of a button's newest press only: the result of a request made
    before Generate was pressed again (a new text while the first ran) was made, recorded ``ok``
    and never shown (helper-88). So once a newer request of the tab is in the worker's queue, the
    older one is withdrawn (ledger ``cancelled`` or ``abandoned``, "replaced by a newer request
    from its tab"), and the newer one says so in a pop-up. API clients keep every request.
    """

    def __init__(self, newest: dict, lock: threading.Lock, client_id: str | None, turn) -> None:
        self._newest, self._lock, self._client, self._turn = newest, lock, client_id, turn
        self._queued = False

    def queued(self) -> None:
        """This request is in the worker's queue: the tab's older ones give way."""
        if self._queued or self._client is None or self._turn.arrival is None:
            return
        self._queued = True
        with self._lock:
            older = self._newest.get(self._client)
            self._newest[self._client] = max(older or 0, self._turn.arrival)
        if older is not None and older < self._turn.arrival:
            gr.Info("Your earlier request from this tab was stopped: the page shows one result at a time, and "
                    "this newer request replaces it.", duration=10, title="Earlier request replaced")

    def replaced(self) -> bool:
        """A newer request of the tab is in the worker's queue."""
        with self._lock:
            newer = self._queued and self._newest.get(self._client, 0) > self._turn.arrival
        if newer:
            self._turn.withdrawn_because = REPLACED
        return newer

    def end(self) -> None:
        with self._lock:
            if self._queued and self._newest.get(self._client) == self._turn.arrival:
                del self._newest[self._client]


class Handlers:
    def __init__(self, settings: Settings, supervisor: Supervisor, monitor: MemoryMonitor,
                 capabilities: Capabilities, admission: Admission | None = None,
                 temp_space: TempSpace | None = None) -> None:
        self.settings = settings
        self.temp_space = temp_space
        self.supervisor = supervisor
        self.monitor = monitor
        self.capabilities = capabilities
        self.service = SynthesisService(settings, supervisor, capabilities, admission)
        # client_left(request): whether the client of the event behind a handler's gr.Request has
        # cancelled it or gone; set by server.build_app, which holds Gradio's queue.
        self.client_left = lambda request: False
        self._restart_lock = threading.Lock()
        self._restart_under_way: concurrent.futures.Future | None = None  # of the RestartReport
        self._last_restart_end: float | None = None  # time.monotonic()
        self._last_restart_only_loaded = False  # that restart had no worker to replace (it loaded the model)
        self._newest_page_request: dict[str, int] = {}  # tab -> arrival number (_NewestOfTab)
        self._newest_lock = threading.Lock()

    def synthesize(self, text: str, prompt_audio: dict | str | None = None, prompt_text: str | None = None,
                   instruction: str | None = None, speed: float | None = None, seed: int | None = None,
                   speaker: str | None = None, progress=gr.Progress(), request: gr.Request = None):
        """Speak ``text`` in the voice of ``prompt_audio`` (or a pretrained ``speaker``).

        The same request sent again by the same tab or client while it still runs is refused
        (:class:`~cosyvoice_ui.synthesis.SynthesisService`).

        A generator, so that Gradio notices a client that leaves while the request waits (the
        request is then withdrawn): it yields ``(None, None)`` while waiting, then once (not
        ``gr.skip()``: Gradio then post-processes the result with a copy of the output component
        whose files its ``delete_cache`` never deletes). It yields ``(None, None)`` first, so that the
        page clears the previous result before a refusal:

        Yields:
            ``((sample_rate_hz, int16 samples), stats)`` - Gradio writes the audio as WAV (whole,
            then renamed into place: :mod:`.atomic_audio_cache`).
            stats: sample_rate_hz, audio_s, synthesis_s, real_time_factor, peak_memory_bytes
            (torch peak allocated on CUDA, else peak worker RSS), worker_pid, device, mode, notes, ...

        Raises:
            gr.Error: with the validation or synthesis message (the page and worker keep running).
        """
        yield from self._whole(text, prompt_audio, prompt_text, instruction, speed, seed, speaker,
                               progress=progress, request=request, for_page=False)

    def synthesize_page(self, text: str, prompt_audio: dict | str | None = None, prompt_text: str | None = None,
                        instruction: str | None = None, speed: float | None = None, seed: int | None = None,
                        speaker: str | None = None, progress=gr.Progress(), request: gr.Request = None):
        """The page's Generate: :meth:`synthesize` with its pop-up messages escaped (:func:`_as_text`)."""
        yield from self._whole(text, prompt_audio, prompt_text, instruction, speed, seed, speaker,
                               progress=progress, request=request, for_page=True)

    def check_prompt_page(self, prompt_audio: dict | str | None = None) -> None:
        """The page's check of a prompt as soon as it is uploaded or recorded: one that Generate
        would refuse (not audio, silent, too short or long, ...) says so at once, in a pop-up that
        stays until closed. A text file named .wav showed a 0:00 player and was refused only at
        Generate (helper-78). Generate checks again; nothing is returned or changed.

        Args:
            prompt_audio: Gradio's ``FileData`` dict of the file (not preprocessed), or None.
        """
        path = uploaded_path(prompt_audio)
        if not isinstance(path, str) or not path or self.supervisor.stopping:
            return  # after SIGTERM a decode would only delay the exit (helper-117)
        try:
            problem = CHECKED_PROMPTS.problem(path)
            if problem is not None:
                # Named: replaced at once, the file's warning came after the next one was shown, as if
                # about that one (helper-79).
                name = prompt_audio.get("orig_name") if isinstance(prompt_audio, dict) else None
                name = name if isinstance(name, str) and name else os.path.basename(path)
                gr.Warning(_as_text(f"{name}: {problem}"), duration=None, title="This prompt audio cannot be used")
        except ServiceStopping:
            return  # SIGTERM came while it waited for a decode slot: nothing to say about the file
        except Exception as e:  # noqa: BLE001 - Generate's own check answers it
            log.warning("checking an uploaded prompt failed: %s", e)

    def _whole(self, *fields, progress, request, for_page: bool):
        # The page clears the last result first: a refused Generate left the previous request's
        # audio and stats under the error, as if they were its answer (thirty-sixth newcomer session).
        client_id = _session(request)
        # Its place in line is the number it got on arrival (guards/arrival_order.py): Gradio started
        # a press carrying a prompt after a later one without (helper-52).
        with self.service.turn(client_id, _arrival(request), client_left=lambda: self.client_left(request)) as turn, \
                contextlib.suppress(_OnItsWay):
            yield None, None
            shown = _SegmentProgress(progress)
            events = self._events(*fields, client_id=client_id, turn=turn, for_page=for_page)
            tab = self._newest_of_tab(client_id, turn, for_page)
            try:
                for event in events:
                    if tab.replaced():
                        return  # the page shows the newer one's outputs only; closing withdraws this one
                    if isinstance(event, synthesis.Progress):
                        tab.queued()
                        shown.update(event)
                    elif isinstance(event, synthesis.Finished):
                        _show_notes(event.result, for_page)
                        yield (event.sample_rate_hz, synthesis.to_int16(event.audio)), event.result
                        return
                    else:
                        tab.queued()
                        yield None, None
                        shown.again()
            finally:
                events.close()
                tab.end()
            raise gr.Error("The request ended without a result; please try again.", print_exception=False)

    def synthesize_stream(self, text: str, prompt_audio: dict | str | None = None, prompt_text: str | None = None,
                          instruction: str | None = None, speed: float | None = None, seed: int | None = None,
                          speaker: str | None = None, progress=gr.Progress(), request: gr.Request = None):
        """Like :meth:`synthesize`, but yields ``((sample_rate_hz, int16 chunk), None)`` as audio
        becomes ready, ``(None, None)`` while waiting, then ``(None, stats)``.

        Raises:
            gr.Error: as :meth:`synthesize`.
        """
        yield from self._streamed(text, prompt_audio, prompt_text, instruction, speed, seed, speaker,
                                  progress=progress, request=request, for_page=False)

    def synthesize_stream_page(self, text: str, prompt_audio: dict | str | None = None, prompt_text: str | None = None,
                               instruction: str | None = None, speed: float | None = None, seed: int | None = None,
                               speaker: str | None = None, progress=gr.Progress(), request: gr.Request = None):
        """The page's Generate under ``--stream``: :meth:`synthesize_stream` with its pop-up messages escaped."""
        yield from self._streamed(text, prompt_audio, prompt_text, instruction, speed, seed, speaker,
                                  progress=progress, request=request, for_page=True)

    def _streamed(self, *fields, progress, request, for_page: bool):
        client_id = _session(request)
        with self.service.turn(client_id, _arrival(request), client_left=lambda: self.client_left(request)) as turn, \
                contextlib.suppress(_OnItsWay):  # as in _whole
            yield None, None  # as in synthesize: no earlier result left under a refusal
            shown = _SegmentProgress(progress)
            events = self._events(*fields, stream=True, client_id=client_id, turn=turn, for_page=for_page)
            tab = self._newest_of_tab(client_id, turn, for_page)
            try:
                for event in events:
                    if tab.replaced():
                        return  # as in _whole
                    if not isinstance(event, synthesis.Finished):
                        tab.queued()
                    if isinstance(event, synthesis.Progress):
                        shown.update(event)
                    elif isinstance(event, synthesis.AudioReady) and len(event.samples):
                        yield (event.sample_rate_hz, synthesis.to_int16(event.samples)), None
                        shown.again()
                    elif isinstance(event, synthesis.Finished):
                        _show_notes(event.result, for_page)
                        yield None, event.result
                    elif isinstance(event, synthesis.Waiting):
                        yield None, None
                        shown.again()
            finally:
                events.close()
                tab.end()

    def _newest_of_tab(self, client_id: str | None, turn, for_page: bool) -> _NewestOfTab:
        # API clients keep every request: each job gets its own result.
        return _NewestOfTab(self._newest_page_request, self._newest_lock, client_id if for_page else None, turn)

    def _events(self, text, prompt_audio, *fields, stream: bool = False, client_id: str | None = None,
                turn=None, for_page: bool = False):
        try:
            yield from self.service.run(text, uploaded_path(prompt_audio), *fields, stream=stream, client_id=client_id,
                                        turn=turn, newest_wins=for_page)
        except (UserFacingError, AdmissionError) as e:
            if for_page and isinstance(e, DuplicateRequest):
                # Gradio 6 groups pop-ups under their kind's name: an "Error" for a press whose
                # result is on its way read as a fault (helper-49). The page shows it as news.
                drop_locals(e)
                gr.Info(_as_text(str(e)), duration=10)
                raise _OnItsWay from None
            # A request that waited or ran may end long after the click, when its user looked
            # away: that message stays until closed (Gradio's 10 s pop-up left only "Error" badges;
            # fifteenth newcomer session). So does "busy": the press was fine and others' load
            # turned it away; once its pop-up closed, nothing said why nothing ran (helper-77).
            # Refusals of the input come at once, while the user looks at it.
            lasting = isinstance(e, (SynthesisFailed, ServiceStopping, BusyError, AdmissionError))
            drop_locals(e)
            message = str(e) if for_page or not isinstance(e, DuplicateRequest) else _DUPLICATE_FOR_API
            raise gr.Error(_as_text(message) if for_page else message, print_exception=False,
                           duration=None if lasting else 10, title=_title(e)) from None

    def restart(self, request: gr.Request = None):
        """Replace the worker process. Returns the restart report as a dict (JSON), with
        ``since_press_s``: seconds from this press to the end, which also counts the wait for
        the running request (up to ``--restart-grace``; ``waited_for_request`` says whether one
        ran at the press) and the old worker's end; ``duration_s`` counts from the old worker's
        end to the new one's model load.

        Presses while a restart is under way join it (the same report for all of them).

        Raises:
            gr.Error: within ``--restart-cooldown`` seconds after the last restart ended, or when
                the application is stopping.
        """
        pressed_at = time.monotonic()
        # An operator could not tell who restarted the worker for everyone (helper-72).
        log.info("Restart pressed by %s", _who(request))
        request_running = self.supervisor.status()["in_flight"] is not None
        with self._restart_lock:
            under_way = self._restart_under_way
            if under_way is None:
                self._refuse_within_cooldown()
                under_way = self._restart_under_way = concurrent.futures.Future()
                owner = True
            else:
                owner = False
                # The supervisor logs "1 request for it": presses that join are only seen here.
                log.info("a Restart press joined the restart under way")
        if owner:
            try:
                under_way.set_result(self.supervisor.restart(reason="user"))
            except BaseException as e:  # noqa: BLE001 - handed to every press that joined
                under_way.set_exception(e)
            finally:
                with self._restart_lock:
                    self._restart_under_way = None
                    self._last_restart_end = time.monotonic()
                    done = under_way.done() and under_way.exception() is None
                    self._last_restart_only_loaded = done and under_way.result().old_pid is None
        try:
            report = under_way.result()
        except UserFacingError as e:
            raise gr.Error(str(e), print_exception=False) from None
        out = report_to_dict(report)
        out["since_press_s"] = round(time.monotonic() - pressed_at, 3)
        out["waited_for_request"] = request_running
        out["old_pid_gpu_bytes"] = self._gpu_bytes_of(report.old_pid)
        return out

    def _refuse_within_cooldown(self) -> None:
        # Every restart reloads the model (minutes for CosyVoice); without a limit, anyone who can
        # reach the page could keep the worker restarting (third newcomer session).
        cooldown_s = self.settings.restart_cooldown_s
        since_s = None if self._last_restart_end is None else time.monotonic() - self._last_restart_end
        if since_s is not None and since_s < cooldown_s:
            wait_s = math.ceil(cooldown_s - since_s)
            # A press while no worker was loaded (idle unload) only loaded the model: "the worker
            # was restarted" named a replacement that never happened (thirty-third newcomer session).
            what = ("The model was loaded by a Restart" if self._last_restart_only_loaded
                    else "The worker was restarted")
            message = (f"{what} {int(since_s)} s ago; Restart is allowed once every "
                       f"{seconds_text(cooldown_s)} s (--restart-cooldown). Try again in {wait_s} s.")
            log.info("refused a restart: %s", message)
            # The pop-up closes when Restart is allowed again: "Try again in 9 s" stayed up past that.
            raise gr.Error(message, print_exception=False, duration=max(1, min(wait_s, 3600)),
                           title="Please wait")

    def restart_ui(self, request: gr.Request = None):
        """The page's Restart: first what the restart waits for, then the report. Gradio's own
        progress showed an estimate from earlier, quicker restarts ("processing | 21.6/2.5s")
        while the press waited for a running request (seventeenth newcomer session)."""
        try:
            self._refuse_within_cooldown()  # before saying "restarting" (restart() checks again)
        except gr.Error as e:
            # As an error, the refusal also marked the Restart box "Error" for good, over the last
            # report, which is still true (helper-77); the pop-up says why and for how long.
            gr.Warning(e.message, duration=e.duration, title=e.title)
            yield gr.skip()
            return
        yield formatting.restart_pending_markdown(self.supervisor.status()["in_flight"] is not None,
                                                  self.settings.restart_grace_s)
        try:
            report = self.restart(request)
        except gr.Error:
            yield ""
            raise
        yield formatting.restart_markdown(report, report.get("old_pid_gpu_bytes"))

    def record_refused_call(self, api_name: str | None, message: str, text_chars: int = 0) -> None:
        """A synthesis call whose payload Gradio could not prepare (a URL or foreign path as the
        prompt, a file parameter that is no file) goes to the ledger as ``refused:input``, like a
        refusal by the input checks; other events' refusals are only logged."""
        if api_name and api_name.startswith("synthesize"):
            self.service.record_refusal("refused:input", message, text_chars=text_chars)

    def free_cache(self, request: gr.Request = None) -> dict:
        """Ask the worker to empty its allocator caches; returns reserved/RSS before and after."""
        log.info("Free cache pressed by %s", _who(request))
        try:
            return self.supervisor.free_cache()
        except UserFacingError as e:
            raise gr.Error(str(e), print_exception=False) from None

    def free_cache_ui(self, request: gr.Request = None):
        """The page's Free cache: what it waits for (a running request), then the report."""
        yield formatting.free_cache_pending_markdown(self.supervisor.status()["in_flight"] is not None)
        try:
            report = self.free_cache(request)
        except gr.Error:
            yield ""
            raise
        yield formatting.free_cache_markdown(report)

    def status(self) -> dict:
        """Supervisor status plus the latest monitor sample (GPU figures or why there are none)."""
        status = self.supervisor.status()
        sample = self.monitor.latest()
        status["nvml_error"] = self.monitor.nvml_error
        status.update(self.monitor.gpu_log_status)
        if self.temp_space is not None:
            status.update(self.temp_space.status())
            if status["temp_folder_error"]:  # uploads are refused: the service cannot clone voices
                status["degraded"] = True
        # Voices are still cloned, but records are being lost: a monitor reading only "status" saw "ok"
        # (helper-137).
        if status.get("ledger_error") or status.get("gpu_log_error"):
            status["degraded"] = True
        if sample is not None:
            status["gpus"] = [
                {"index": g.index, "name": g.name, "used_bytes": g.used_bytes, "total_bytes": g.total_bytes,
                 "utilization_gpu_pct": g.utilization_gpu_pct} for g in sample.gpus]
            status["worker_gpu_bytes"] = sample.worker_gpu_bytes
            status["worker_rss_bytes"] = sample.worker_rss_bytes
            status["web_rss_bytes"] = sample.web_rss_bytes
        return status

    def refresh_monitor(self):
        """Timer tick: the panel text and the plot. Reads buffers only; never waits on synthesis."""
        status = self.supervisor.status()
        sample = self.monitor.latest()
        return (formatting.status_markdown(status, sample, self.monitor.nvml_error),
                formatting.memory_frame(self.monitor.history()),
                formatting.ledger_frame(self.supervisor.ledger.records()))

    def _gpu_bytes_of(self, pid: int | None) -> int | None:
        return None if pid is None else self.monitor.nvml.process_bytes(pid)
