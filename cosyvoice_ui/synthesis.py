"""One synthesis request from the user's fields to the finished audio, as a stream of events.

Between the UI handlers and the worker: validation (:mod:`.inputs`), admission by predicted
memory (:mod:`.monitor.admission`), the supervisor's queue, and what comes back while the request
runs - segment progress and audio as the worker sends it. The handlers turn the events into a
return value (one WAV) or into streamed chunks (``--stream``).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import itertools
import logging
import queue
import threading
import time
from typing import Iterator

import numpy as np

from .engines.base import Capabilities, SynthesisOutput
from .log_throttle import printable
from .errors import (STOPPING_MESSAGE, BusyError, DuplicateRequest, RequestCancelled, ServiceStopping,
                     SynthesisFailed, UnusablePromptAudio, UserFacingError)
from .inputs.request import build_request, counted_text_chars
from .monitor.admission import Admission, AdmissionError
from .settings import Settings
from .worker.protocol import RequestStats
from .worker.supervisor import Supervisor

log = logging.getLogger(__name__)

_POLL_S = 0.25
# A request that arrived but whose handler Gradio has not started after this long is not waited for
# (Gradio refused or cancelled it); a handler that started is waited for up to _MAX_TURN_WAIT_S.
_START_GRACE_S = 3.0
_MAX_TURN_WAIT_S = 60.0
_DONE = object()


@dataclasses.dataclass(frozen=True)
class Progress:
    """``done`` of ``total`` segments are synthesized."""

    done: int
    total: int


@dataclasses.dataclass(frozen=True)
class AudioReady:
    """Joined audio ready to play: float32 ``(n,)`` at ``sample_rate_hz``. ``restarted``: the worker
    started the request over (crash retry or out-of-memory retry) and this piece is its beginning."""

    samples: np.ndarray
    sample_rate_hz: int
    restarted: bool


@dataclasses.dataclass(frozen=True)
class Waiting:
    """Nothing new yet (every 0.25 s). Handlers yield on it so Gradio notices a client that left."""


@dataclasses.dataclass(frozen=True)
class Finished:
    """The whole audio (float32 ``(n,)``) and the result JSON shown as stats."""

    audio: np.ndarray
    sample_rate_hz: int
    result: dict


class SynthesisService:
    """Runs requests for the UI and the API.

    Args:
        settings: limits (text length, segment length).
        supervisor: the worker's supervisor.
        capabilities: of the configured engine.
        admission: memory admission, or ``None`` to admit everything.
    """

    def __init__(self, settings: Settings, supervisor: Supervisor, capabilities: Capabilities,
                 admission: Admission | None = None) -> None:
        self.settings = settings
        self.supervisor = supervisor
        self.capabilities = capabilities
        self.admission = admission
        self._open_lock = threading.Lock()
        # (client id, the request's fields) -> the arrival numbers of those waiting or running
        self._open: dict[tuple, list] = {}
        self._open_per_client: collections.Counter = collections.Counter()  # client id -> requests open
        self._turns = threading.Condition()
        self._arrivals = itertools.count(1)
        # client id -> {arrival number: [arrival time (monotonic), started by a handler]}, for the
        # requests not yet in the worker's queue
        self._pending_turns: dict[str, dict[int, list]] = {}
        self._checking = 0  # requests between their turn and the worker's queue (a prompt decoding)

    def being_checked(self) -> int:
        """How many requests are being validated (their prompt audio decoded, up to
        ``MAX_PYAV_DECODE_S`` each) on their way to the worker's queue. The shutdown waits for them:
        ended mid-decode, a request's client got Gradio's "Server stopped unexpectedly" instead of
        the drain's answer (helper-113)."""
        with self._open_lock:
            return self._checking

    @contextlib.contextmanager
    def _being_checked(self):
        with self._open_lock:
            self._checking += 1
        try:
            yield
        finally:
            with self._open_lock:
                self._checking -= 1

    def speakers(self) -> tuple[str, ...]:
        """The loaded model's pretrained speakers (empty for engines without any)."""
        return tuple(self.supervisor.status()["engine_facts"].get("speakers") or ())

    def run(self, text, prompt_audio, prompt_text, instruction, speed, seed, speaker=None, stream: bool = False,
            client_id: str | None = None, turn: "_Turn | None" = None,
            newest_wins: bool = False) -> Iterator[Progress | AudioReady | Waiting | Finished]:
        """Validate, admit and run one request, yielding what happens until it is finished.

        ``stream`` asks the engine for its streaming mode (chunks sooner; CosyVoice then keeps
        speed at 1.0); audio events come either way.

        Closing the generator early (the client disconnected) withdraws the request if it is
        still waiting in the queue, so abandoned requests hold neither a queue slot nor the worker;
        one already running stops before its next segment (a segment cannot be cut short safely).

        ``client_id`` (Gradio's session hash: one browser tab or one ``gradio_client.Client``)
        refuses a request identical to one the same client still has waiting or running: a
        double click on Generate queued the same synthesis twice (third newcomer session), as
        Gradio's own once-per-click guard leaves a gap while the click's inputs are gathered.

        ``turn`` (from :meth:`turn`, taken when the request arrived) keeps a client's requests in
        the order they were sent; without one, the request takes its place when it gets here.

        ``newest_wins`` (the page, where a newer press replaces the tab's older request) refuses a
        repeat only of the client's latest request: pressed with texts A, B, then A again, the
        third was refused as "already being synthesized, its result will appear", though that
        first A was being replaced by B, whose result then showed under A's text (helper-90).

        Raises:
            UserFacingError: invalid input (:class:`~.errors.InputError`), busy, a duplicate
                (:class:`~.errors.DuplicateRequest`), failed or timed out; the message is for the
                user. Refusals before the worker are also written to the ledger.
            AdmissionError: the request would not fit in free memory even re-split.
        """
        key = None if client_id is None else (client_id, repr((text, prompt_audio, prompt_text, instruction, speed,
                                                                seed, speaker, stream)))
        arrival = None if turn is None else turn.arrival
        with self._claim(key, self._counted_chars(text), arrival if newest_wins else None):
            yield from self._run(text, prompt_audio, prompt_text, instruction, speed, seed, speaker, stream, turn)

    @contextlib.contextmanager
    def _claim(self, key, text_chars: int = 0, newest_arrival: int | None = None):
        limit = self.settings.per_client_limit
        with self._open_lock:
            duplicate = key is not None and key in self._open and not self._sent_since(key, newest_arrival)
            open_before = 0 if key is None else self._open_per_client[key[0]]
            over = not duplicate and limit is not None and open_before >= limit
            if not duplicate and not over and key is not None:
                self._open.setdefault(key, []).append(newest_arrival)
                self._open_per_client[key[0]] += 1
        if over:
            # One tab pressing Generate with new texts, or one script, could fill the whole queue and
            # leave every other visitor "busy"; a share per client keeps room for the others.
            message = per_client_refusal(open_before, limit)
            self.record_refusal("refused:busy", message, text_chars)
            log.info("refused:busy: a client already had %s waiting or running", _requests(open_before))
            raise BusyError(message)
        if duplicate:
            self.record_refusal("refused:duplicate", "the same client sent the same request again while it ran",
                                text_chars)
            log.info("refused:duplicate: the same client sent the same request again while it ran")
            raise DuplicateRequest("This request is already being synthesized (Generate was pressed more than "
                                   "once); its result will appear when it is done.")
        try:
            yield
        finally:
            if key is not None:
                with self._open_lock:
                    holders = self._open.get(key, [])
                    holders.remove(newest_arrival)
                    if not holders:
                        del self._open[key]
                    self._open_per_client[key[0]] -= 1
                    if self._open_per_client[key[0]] <= 0:
                        del self._open_per_client[key[0]]

    def _sent_since(self, key, arrival: int | None) -> bool:
        """Whether the client sent another request, still waiting or running, after the last of
        those identical to ``key`` and before ``arrival`` (the newest one then replaces it)."""
        if arrival is None or None in self._open[key]:
            return False
        last_same = max(self._open[key])
        with self._turns:
            pending = set(self._pending_turns.get(key[0], ()))
        others = pending | {n for k, ns in self._open.items() if k[0] == key[0] and k != key for n in ns}
        return any(n is not None and last_same < n < arrival for n in others)

    def arrived(self, client_id: str) -> int:
        """Register a request of ``client_id`` as it arrives; returns its arrival number, which its
        handler passes to :meth:`turn` (see ``guards/arrival_order.py``)."""
        with self._turns:
            now = time.monotonic()
            for client, pending in list(self._pending_turns.items()):  # arrivals no handler ever took
                for number in [n for n, (at, started) in pending.items() if not started and now - at > _MAX_TURN_WAIT_S]:
                    del pending[number]
                if not pending:
                    del self._pending_turns[client]
            number = next(self._arrivals)
            self._pending_turns.setdefault(client_id, {})[number] = [now, False]
            return number

    @contextlib.contextmanager
    def turn(self, client_id: str | None, arrival: int | None = None, client_left=None):
        """A place in line for one request of ``client_id``: take it when the request arrives and
        pass it to :meth:`run`, which waits for the client's earlier requests to enter the worker's
        queue before this one does. Leaving the block gives the place up (also unused).

        Each request's checks (its prompt decoded, resampled, measured) take their own time, so
        a tab's third Generate, with no prompt to decode, was queued before its second and ran
        first; the page then kept the second's result under the third's text (helper-52).

        ``client_left()``, when given, says whether the request's client has cancelled it or gone:
        asked before its prompt is decoded and again before it enters the worker's queue.
        """
        place = _Turn(self, client_id, arrival, client_left)
        try:
            yield place
        finally:
            place.done()

    def _run(self, text, prompt_audio, prompt_text, instruction, speed, seed, speaker, stream, turn=None):
        try:
            with contextlib.ExitStack() as stack:
                turn = turn or stack.enter_context(self.turn(None))
                turn.wait()
                if self.supervisor.stopping:
                    # Not decoded: each prompt decode starts a child process, and ones started after
                    # SIGTERM outlived the app (helper-117). The worker's queue would refuse it anyway.
                    raise ServiceStopping(STOPPING_MESSAGE)
                stack.enter_context(self._being_checked())
                _unless_client_left(turn)
                request, notes, predicted, refusal_hint = self._admit(text, prompt_audio, prompt_text, instruction,
                                                                      speed, seed, speaker)
                # A cancel that came during the decode was lost: the request was queued, ran a whole
                # segment for no one and was recorded "abandoned" (helper-146). Gradio lets the
                # handler's thread finish its step before the cancel takes effect.
                _unless_client_left(turn)
                request = dataclasses.replace(request, stream=stream)
                events: queue.Queue = queue.Queue()
                future = self.supervisor.submit(
                    request, predicted_peak_bytes=predicted,
                    on_progress=lambda done, total: events.put(Progress(done, total)),
                    on_audio=lambda samples, rate, restarted: events.put(AudioReady(samples, rate, restarted)))
                turn.done()  # queued: the client's next request may follow
            # Wakes the loop below the moment the request ends (after its last audio callback).
            future.add_done_callback(lambda _: events.put(_DONE))
        except (UserFacingError, AdmissionError) as e:
            if not isinstance(e, SynthesisFailed):  # refused before the worker: leave a trace too
                outcome = {"BusyError": "refused:busy", "AdmissionError": "refused:memory",
                           "InputError": "refused:input", "RequestCancelled": "cancelled"}.get(type(e).__name__,
                                                                                                "refused")
                self.record_refusal(outcome, str(e), self._counted_chars(text))
                log.info("%s: %s", outcome, printable(e, 300))  # one line, escaped: a message may quote what was sent
            raise
        restarted = False
        try:
            while True:
                try:
                    event = events.get(timeout=_POLL_S)
                except queue.Empty:
                    yield Waiting()
                    continue
                if event is _DONE:
                    break
                if isinstance(event, AudioReady):
                    restarted = restarted or event.restarted
                yield event
        finally:
            if not future.done():  # the client left: withdrawn if queued, stopped early if running
                self.supervisor.withdraw(future, because=getattr(turn, "withdrawn_because", None))
        try:
            output, stats = future.result()
        except UnusablePromptAudio as e:
            if refusal_hint:
                # The engine refused the prompt after it was scaled here; the engine's reason alone
                # blamed the speaker (twenty-seventh newcomer session).
                raise UnusablePromptAudio(f"{e} {refusal_hint}") from None
            raise
        if restarted or stats.runs > 1:
            # restarted alone: an out-of-memory retry inside the worker (which also adds its own note).
            cause = ("the worker was replaced (it crashed, hung or was restarted)" if stats.runs > 1
                     else "it ran out of memory")
            notes.append(f"This request ran again from the start because {cause}"
                         # API stream clients get no finished audio: "the finished audio has no
                         # repeat" promised them one (helper-106).
                         + ("; the stream started over, so its beginning was streamed twice (the page's "
                            "finished recording holds it once)."
                            if stream and restarted else "."))
        yield Finished(output.audio, output.sample_rate_hz, self._result(request, notes, predicted, output, stats))

    def _counted_chars(self, text) -> int:
        return counted_text_chars(text, self.settings.max_text_chars, self.capabilities)

    def record_refusal(self, outcome: str, message: str, text_chars: int = 0) -> None:
        """Write a request turned away before it reached the worker to the ledger (and so to
        ``/metrics``), so every request sent leaves a trace.

        Args:
            outcome: ``refused:input``, ``refused:busy``, ``refused:memory``, ``refused:duplicate``.
            message: why, as told to the caller (cut to 300 characters by the ledger).
            text_chars: the request's text length in characters, 0 where unknown.
        """
        # The device it would have run on (the loaded worker's, else the configured one); it was
        # "", which a ledger reader grouping by device could not place.
        self.supervisor.ledger.add_event(self.supervisor.engine, self.supervisor.status()["device"], outcome, message,
                                         text_chars=text_chars)

    def _admit(self, text, prompt_audio, prompt_text, instruction, speed, seed, speaker):
        request, notes, refusal_hint = build_request(
            text, prompt_audio, prompt_text, instruction, speed, seed,
            max_text_chars=self.settings.max_text_chars, capabilities=self.capabilities,
            max_segment_chars=self.settings.max_segment_chars, speaker=speaker, speakers=self.speakers())
        predicted = None
        if self.admission is not None:
            decision = self.admission.check(request.segments or (request.text,))
            predicted = decision.predicted_peak_bytes
            if decision.resplit_to_chars:
                request = dataclasses.replace(request, segments=decision.segments)
                notes.append(f"Split into segments of at most {decision.resplit_to_chars} characters so the "
                             f"request fits in free memory (about {predicted / 2**20:,.0f} MiB needed, "
                             f"{decision.available_bytes / 2**20:,.0f} MiB available).")
        return request, notes, predicted, refusal_hint

    def _result(self, request, notes: list[str], predicted: int | None, output: SynthesisOutput,
                stats: RequestStats) -> dict:
        peak = stats.peak_allocated_bytes if stats.peak_allocated_bytes is not None else stats.peak_rss_bytes
        return {
            "sample_rate_hz": output.sample_rate_hz,
            "audio_s": round(stats.audio_s, 3),
            "synthesis_s": round(stats.synthesis_s, 3),
            "real_time_factor": round(stats.real_time_factor, 4),
            "peak_memory_bytes": peak,
            "peak_memory_kind": "torch peak allocated" if stats.peak_allocated_bytes is not None else "worker peak RSS",
            "peak_allocated_bytes": stats.peak_allocated_bytes,
            "peak_reserved_bytes": stats.peak_reserved_bytes,
            "peak_rss_bytes": stats.peak_rss_bytes,
            "predicted_extra_bytes": predicted,
            "worker_pid": stats.pid,
            "device": stats.device,
            "engine": self.supervisor.engine,
            "mode": output.details.get("mode"),
            "text_chars": len(request.text),
            "segments": stats.segments,
            "seed": output.details.get("seed"),  # the one used, also when -1 asked for a random one
            "prompt_s": round(len(request.prompt.samples) / request.prompt.sample_rate_hz, 3) if request.prompt else None,
            "notes": notes + list(output.notes),
            "details": output.details,
        }


def to_int16(samples: np.ndarray) -> np.ndarray:
    """float32 in [-1, 1] -> int16 PCM (clipped), what Gradio writes as WAV."""
    return (np.clip(samples, -1.0, 1.0) * 32767.0).astype(np.int16)


class _Turn:
    """One request's place among its client's requests not yet in the worker's queue (see
    :meth:`SynthesisService.turn`)."""

    def __init__(self, service: SynthesisService, client_id: str | None, arrival: int | None,
                 client_left=None) -> None:
        self._service, self._client_id, self._done = service, client_id, client_id is None
        self.client_left = client_left or (lambda: False)
        self.arrival: int | None = None
        self.withdrawn_because: str | None = None  # set by a handler that gives its request up
        if self._done:
            return
        with service._turns:
            pending = service._pending_turns.setdefault(client_id, {})
            if arrival is None or arrival not in pending:
                arrival = next(service._arrivals)
                pending[arrival] = [time.monotonic(), False]
            pending[arrival][1] = True
            self.arrival = arrival

    def wait(self) -> None:
        """Block until every request of the same client that arrived earlier has been queued or has
        ended. One that Gradio never started (refused or cancelled before its handler ran) is not
        waited for after :data:`_START_GRACE_S`, and no wait lasts beyond :data:`_MAX_TURN_WAIT_S`."""
        if self._done:
            return
        deadline = time.monotonic() + _MAX_TURN_WAIT_S
        with self._service._turns:
            pending = self._service._pending_turns[self._client_id]
            while time.monotonic() < deadline:
                now = time.monotonic()
                for number in [n for n, (at, started) in pending.items()
                               if n < self.arrival and not started and now - at > _START_GRACE_S]:
                    del pending[number]
                if not any(n < self.arrival for n in pending):
                    return
                self._service._turns.wait(timeout=0.2)
            log.warning("a request waited %g s for its client's earlier requests and went ahead", _MAX_TURN_WAIT_S)

    def done(self) -> None:
        """Give the place up (idempotent)."""
        if self._done:
            return
        self._done = True
        with self._service._turns:
            pending = self._service._pending_turns.get(self._client_id, {})
            pending.pop(self.arrival, None)
            if not pending:
                self._service._pending_turns.pop(self._client_id, None)
            self._service._turns.notify_all()


CLIENT_LEFT = "Its client cancelled the request or left before it reached the worker; it was not synthesized."


def _unless_client_left(turn: _Turn) -> None:
    """Raise :class:`~.errors.RequestCancelled` (ledger ``cancelled``) if ``turn``'s client has gone."""
    if turn.client_left():
        raise RequestCancelled(CLIENT_LEFT)


def _requests(n: int) -> str:
    return f"{n} request" if n == 1 else f"{n} requests"  # "1 requests" (helper-68)


def per_client_refusal(open_before: int, limit: int) -> str:
    """The message for a client already holding ``open_before`` of its ``limit`` places
    (``--max-per-client``) in the queue."""
    return (f"You already have {_requests(open_before)} waiting or running; each visitor may have {limit} at a "
            f"time (--max-per-client), so that others get a turn. Wait for one to finish, then send this again.")
