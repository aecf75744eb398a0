"""The HTTP server: Gradio mounted at ``/`` on a FastAPI app that also serves ``/healthz``."""

from __future__ import annotations

import errno
import hmac
import inspect
import logging
import os
import tempfile

import fastapi
import gradio as gr
import gradio.routes
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from . import gradio_patches
from .engines import engine_capabilities
from .errors import STOPPING_MESSAGE
from .guards.arrival_order import NumberArrivals
from .guards.call_bodies import ApiCallBodies
from .guards.component_server import KnownServerFunctions
from .guards.file_links import FileLinks
from .guards.forwarded_prefix import ForwardedPrefix
from .guards.frame_ancestors import FrameAncestors
from .guards.heartbeats_per_address import HeartbeatsPerAddress, room_for_heartbeats
from .guards.http_errors import QuietRequestErrors
from .guards.login_check import LoginCheck, LoginClientAddress, LogoutThisSessionOnly, SameSiteLoginCookies
from .guards.login_required import LoginRequired
from .guards.loopback_host import LoopbackHostOnly, is_loopback
from .guards.own_origin import OwnOriginOnly
from .guards.precise_cancel import PreciseCancel
from .guards.queue_join import RefuseUnusableJoins
from .guards.request_size_limit import RequestSizeLimit
from .guards.rest_results import OneReaderPerResult
from .guards.session_streams import OneStreamPerSession
from .guards.slow_clients import DeadlineH11Protocol
from .guards.streamed_input import NoStreamedInput
from .guards.temp_space import TempSpace, UploadSpace
from .guards.unused_routes import UnusedGradioRoutes
from .guards.upload_progress import ShortUploadIds
from .guards.while_stopping import JoinsInFlight, RefuseWhileStopping
from .log_throttle import OncePerMinute, OncePerMinuteByKind, printable
from .monitor.admission import Admission, available_memory
from .monitor.metrics import Metrics
from .monitor.sampler import MemoryMonitor
from .settings import Settings
from .temp_files import CLAIM_FILE, start_upload_sweeper
from .ui.handlers import Handlers
from .ui.i18n import I18N
from .ui.layout import PAGE_CSS, PAGE_JS, build_blocks
from .worker.supervisor import HEALTHY_STATES, Supervisor

log = logging.getLogger(__name__)


def _event_owner(demo: gr.Blocks, event_id: str) -> str | None:
    """The session_hash that submitted ``event_id``, while Gradio's queue knows the event (waiting,
    or running and not yet answered); None otherwise. Reads Gradio's queue (gradio 6: the same
    tables its own /cancel route reads)."""
    queue = demo._queue
    event = queue.event_ids_to_events.get(event_id)
    if event is not None:
        return event.session_hash
    for session_hash, event_ids in list(queue.pending_event_ids_session.items()):
        if event_id in event_ids:
            return session_hash
    return None


def _running_events(demo: gr.Blocks) -> list:
    """Gradio's events being processed now (``Queue.active_jobs``: one list per worker slot)."""
    return [event for jobs in list(demo._queue.active_jobs) for event in list(jobs or ())]


def _mark_client_gone(demo: gr.Blocks, event_id: str) -> None:
    """Mark the running event ``event_id`` as one whose client has gone (``Event.alive``, which
    Gradio itself clears when a client's stream or heartbeat ends: ``Queue.clean_events``), so that
    its handler can tell before the request reaches the worker (:func:`_client_left`)."""
    for event in _running_events(demo):
        if event._id == event_id:
            event.alive = False


def _client_left(demo: gr.Blocks, request) -> bool:
    """Whether the event behind ``request`` (a handler's ``gr.Request``, whose ``request`` is the
    event's own ``fastapi.Request``) has been cancelled or its client has gone: Gradio marks it not
    alive, or, once its task is cancelled, no longer lists it as running while the handler's
    thread still works on it. False for a call made outside Gradio's queue (no request)."""
    inner = getattr(request, "request", None)
    if inner is None:
        return False
    for event in _running_events(demo):
        if event.request is inner:
            return not event.alive
    return True


SESSION_STATES = 1000  # sessions whose Gradio state is kept in memory (Gradio's default: 10,000)
# Requests waiting in Gradio's own queue (all kinds; synthesis is bounded first by --max-queue):
# under half of Gradio's table of 2,000 sessions, so the table is never all sessions whose request
# waits. 3,000 unread REST calls, 30 at a time, built a backlog past 2,000 and every new message
# then pushed out another waiting session (guards/evicted_sessions.py): a livelock, no request
# answered for minutes (this session's test). A flood past it is answered "Queue is full" (503).
GRADIO_QUEUE_MAX = 1000


def _forget_unreadable_sessions(demo: gr.Blocks) -> None:
    """Drop Gradio's lists of unanswered events (``Queue.pending_event_ids_session``) of sessions
    whose message queue its LRU (``pending_messages_per_session``, 2,000 sessions) has dropped:
    their answers are gone, so nothing would ever empty those lists, which grew with every
    session that joined and never read (helper-82)."""
    queue = demo._queue
    for session_hash in list(queue.pending_event_ids_session):
        if session_hash not in queue.pending_messages_per_session:
            queue.pending_event_ids_session.pop(session_hash, None)


# Gradio's run history (6.31 has it) made routes with no login check that call the Hugging Face Hub
# with the host's own token, and kept every user's text and audio in the browser (helper-110). A
# Gradio before it has neither the feature nor the argument.
_NO_RUN_HISTORY = ({"run_history": False} if "run_history" in inspect.signature(gr.mount_gradio_app).parameters
                   else {})


def build_app(settings: Settings, supervisor: Supervisor, monitor: MemoryMonitor) -> fastapi.FastAPI:
    """The ASGI app for uvicorn.

    ``GET /healthz`` answers 200 with the status JSON while the worker is ready, busy or unloaded
    (idle by design), 503 otherwise (loading, restarting, crashed, failed, stopped). ``GET /metrics`` is Prometheus
    text format.
    """
    admission = Admission(supervisor.ledger,
                          available_memory(supervisor.status, monitor.nvml.read, settings.memory_reserve))
    temp_space = TempSpace(os.environ.get("GRADIO_TEMP_DIR") or tempfile.gettempdir(), settings.temp_reserve_bytes)
    handlers = Handlers(settings, supervisor, monitor, engine_capabilities(settings.engine), admission,
                        temp_space=temp_space)
    # No FastAPI schema (here or in Gradio's mounted app, app_kwargs below): /openapi.json listed
    # the routes to anyone, also under --auth. Gradio's /gradio_api/openapi.json asks for the login.
    app = fastapi.FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    synthesis_events: set[int] = set()  # filled once the page is built, below
    browser_only_events: set[int] = set()  # likewise
    app.add_middleware(NumberArrivals, arrived=handlers.service.arrived,  # a tab's presses queue in order
                       numbered=synthesis_events)
    app.add_middleware(RefuseUnusableJoins, browser_only=browser_only_events,  # Gradio would mishandle these
                       forget=lambda: _forget_unreadable_sessions(demo))  # and answers no one can read go
    app.add_middleware(PreciseCancel, owner_of=lambda event_id: _event_owner(demo, event_id),  # only one's own
                       on_cancel=lambda event_id: _mark_client_gone(demo, event_id))
    handlers.client_left = lambda request: _client_left(demo, request)
    app.add_middleware(OneStreamPerSession,  # a session's messages go to one reader, a REST call's to its GET
                       owner_of=lambda event_id: _event_owner(demo, event_id),
                       pending=lambda session: bool(demo._queue.pending_event_ids_session.get(session)))
    server_functions: dict[int, set[str]] = {}  # likewise
    app.add_middleware(KnownServerFunctions, functions=server_functions)  # an unknown one: 404, not a 500
    app.add_middleware(ApiCallBodies)  # no megabyte-long session hash, no number Gradio cannot answer about
    app.add_middleware(UnusedGradioRoutes)  # deep links (a file per call) and the dev-mode reload stream
    app.add_middleware(NoStreamedInput)  # no event takes streamed input: no one can swap another's
    app.add_middleware(LoginRequired)  # under --auth, also for Gradio's heartbeat stream
    app.add_middleware(LoginClientAddress)  # a failed login's log line names the client
    app.add_middleware(LogoutThisSessionOnly)  # one visitor's logout leaves the others logged in
    app.add_middleware(SameSiteLoginCookies)  # no other site's page or frame carries the login
    app.add_middleware(OneReaderPerResult,  # a REST result read twice is told so, not left hanging,
                       owner_of=lambda event_id: _event_owner(demo, event_id))  # nor one of another session
    app.state.joins_closed = False  # set by close_joins at the end of a shutdown
    app.state.joins_in_flight = JoinsInFlight()  # see undelivered_answers
    app.state.being_checked = handlers.service.being_checked  # see requests_being_checked
    app.add_middleware(RefuseWhileStopping, stopping=lambda: supervisor.stopping,  # REST calls in a drain: 503
                       joins_closed=lambda: app.state.joins_closed,  # and, at its very end, every request
                       joins=app.state.joins_in_flight,
                       on_refused=lambda path, fn_index=None:
                       handlers.service.record_refusal("refused", STOPPING_MESSAGE)
                       if "/call/synthesize" in path or fn_index in synthesis_events else None)
    app.add_middleware(ShortUploadIds)  # an upload id is a name, not a store of memory
    app.add_middleware(UploadSpace, space=temp_space)  # an upload the temporary folder has no room for: 507
    app.add_middleware(RequestSizeLimit, max_upload_bytes=settings.max_upload_bytes,  # Gradio's is per file
                       max_text_chars=settings.max_text_chars)  # outside UploadSpace: "too large" comes first
    app.add_middleware(FileLinks, folder=temp_space.folder)  # only the app's own files; an expired one says so
    app.add_middleware(QuietRequestErrors)  # junk requests cannot flood the log
    app.add_middleware(HeartbeatsPerAddress,  # one address, or all, cannot hold every connection with heartbeats
                       total=lambda: room_for_heartbeats(DeadlineH11Protocol.max_connections))
    app.add_middleware(ForwardedPrefix)  # behind a proxy at https://host/tts/, URLs keep the /tts
    app.add_middleware(OwnOriginOnly,  # no page at another address acts as a visitor
                       forwarded_host=bool(settings.forwarded_allow_ips))
    if is_loopback(settings.host):  # a page elsewhere cannot reach it by DNS rebinding (outermost)
        app.add_middleware(LoopbackHostOnly, port=settings.port, allowed_hosts=settings.allowed_hosts)
    app.add_middleware(FrameAncestors, sources=settings.frame_ancestors)  # no page elsewhere frames it (on every answer)

    def token_ok(request: fastapi.Request) -> bool:
        if not settings.metrics_token:
            return True
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        # The scheme is case-insensitive (RFC 9110, 11.1); the token is compared in constant time.
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), settings.metrics_token.encode())

    unauthorized = JSONResponse({"error": "missing or wrong bearer token (--metrics-token)"}, status_code=401)

    @app.api_route("/healthz", methods=["GET", "HEAD"])  # uptime monitors probe with HEAD (helper-53)
    def healthz(request: fastapi.Request) -> JSONResponse:
        if not token_ok(request):
            return unauthorized
        status = handlers.status()
        healthy = status["state"] in HEALTHY_STATES
        word = ("degraded" if status.get("degraded") else "ok") if healthy else "unavailable"
        body = {"status": word, **status}
        return JSONResponse(body, status_code=200 if healthy else 503)

    metrics = Metrics(handlers.status, monitor)
    supervisor.ledger.subscribe(metrics.observe)

    @app.api_route("/metrics", methods=["GET", "HEAD"])
    def prometheus_metrics(request: fastapi.Request) -> Response:
        if not token_ok(request):
            return unauthorized
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    gradio_patches.install_all()  # the changes made inside Gradio, listed there
    demo = build_blocks(handlers)
    synthesis_events.update(i for i, fn in demo.fns.items() if (fn.api_name or "").startswith("synthesize"))
    browser_only_events.update(i for i, fn in demo.fns.items() if fn.fn is None)
    server_functions.update({i: {fn.__name__ for fn in getattr(block, "server_fns", ())}
                             for i, block in demo.blocks.items()})
    # The supervisor's queue is the bound on synthesis (it answers "busy" at once); Gradio's is
    # bounded for everything else (GRADIO_QUEUE_MAX).
    demo.queue(max_size=GRADIO_QUEUE_MAX, default_concurrency_limit=4, api_open=False)
    _refuse_direct_calls(app, demo)
    auth = LoginCheck(*settings.auth.split(":", 1), on_failure=metrics.failed_logins.inc) if settings.auth else None
    # The temporary folder's claim file (temp_files.claim_folder) lies in Gradio's upload area, from
    # which /gradio_api/file= serves: it gave anyone the web process's pid (helper-51).
    claim_file = os.path.join(temp_space.folder, CLAIM_FILE)
    page_js = PAGE_JS.replace("__APP_PORT__", str(settings.port))  # the SSH tunnel the microphone note names
    # Gradio keeps a state of about 100 KB for each session it has seen, up to 10,000 of them: a
    # script joining with new session hashes and never reading grew the web process by 585 MiB in
    # 6,000 joins, for good (helper-82; /tmp measurement in the session note). No page state lives
    # there (no gr.State): a tab whose state was dropped gets a fresh one at its next event.
    demo.state_session_capacity = SESSION_STATES
    mounted = gr.mount_gradio_app(app, demo, path="/", i18n=I18N, auth=auth, blocked_paths=[claim_file],
                               max_file_size=int(settings.max_upload_bytes),
                               server_name=settings.host, server_port=settings.port,
                               footer_links=["api"], css=PAGE_CSS, js=page_js,
                               app_kwargs={"openapi_url": None}, **_NO_RUN_HISTORY)
    # Gradio refuses API file parameters outside its upload folder only for a Blocks that has
    # "launched"; mounting never sets the flag, so without this any caller could make the server
    # read (or hang on) any file it can open: /etc/passwd, /dev/zero (tests/test_api_file_paths.py).
    demo.has_launched = True
    _name_bad_keyword_calls(mounted)
    _say_disk_full(mounted, temp_space)
    _name_unknown_endpoints(mounted, demo)
    start_upload_sweeper(settings.temp_file_ttl_s, settings.temp_file_check_s)
    return mounted


# The page's own events and the API endpoint that does the same for a client.
_API_TWINS = {"synthesize_page": "synthesize", "restart_ui": "restart", "free_cache_ui": "free_cache",
              "refresh_monitor": "status"}


def _refuse_direct_calls(app: fastapi.FastAPI, demo: gr.Blocks) -> None:
    """``POST /gradio_api/run/<name>`` (and ``/api/<name>``) for the queued endpoints, and
    ``/gradio_api/call/<name>`` for the page's private events, answer 404 with what works instead.

    Gradio's one-shot route skipped the queue and answered a synthesis with its first update,
    ``[null, null]``, while the worker made audio for no one and the ledger recorded it as ``ok``
    (found in the fifth session). ``api_open=False`` makes Gradio refuse it too, with "Please join
    the queue". The page's own ``queue=False`` events (the memory monitor) keep using the route.
    The page's events are private (not in the API page) but were callable through ``/call``
    (``restart_ui`` restarted the worker; twenty-first newcomer session); the page itself joins
    the queue instead.
    """
    queued = sorted({fn.api_name for fn in demo.fns.values() if fn.queue and fn.api_name})
    private = sorted({fn.api_name for fn in demo.fns.values() if fn.api_visibility == "private" and fn.api_name})

    public = _public_endpoints(demo)

    def refuse(request: fastapi.Request) -> JSONResponse:
        name = request.url.path.rstrip("/").rsplit("/", 1)[-1]
        if name in private and name not in _API_TWINS:
            # Told to "use POST /gradio_api/call/lambda", the very call refused (helper-51).
            return JSONResponse({"error": (
                f"POST {request.url.path} is not served: {name!r} is one of the page's own events, not an API "
                f"endpoint. The endpoints are {', '.join(public)} (their parameters: GET /gradio_api/info).")},
                status_code=404)
        name = "/" + _API_TWINS.get(name, name)
        # Through /call/ it is a page event ("a direct call that skips the queue" was untrue; helper-68).
        why = ("it is one of the page's own events" if "/call/" in request.url.path else
               "it is a direct call that skips the queue")
        return JSONResponse({"error": (
            f"POST {request.url.path} is not served: {why}. Use gradio_client "
            f"(Client(url).predict(..., api_name=\"{name}\")) or the two-step REST call: "
            f"POST /gradio_api/call{name} with {{\"data\": [...]}}, then GET /gradio_api/call{name}/<event_id>.")},
            status_code=404)

    paths = [f"/gradio_api/{prefix}/{name}" for prefix in ("run", "api") for name in queued]
    paths += [f"/gradio_api/call/{name}" for name in private]
    for path in paths:
        for variant in (path, path + "/"):
            app.add_api_route(variant, refuse, methods=["POST"], include_in_schema=False)


def _public_endpoints(demo: gr.Blocks) -> list[str]:
    """The API's endpoint names, as ``api_name`` takes them: ``["/free_cache", "/restart", ...]``."""
    return sorted({f"/{fn.api_name}" for fn in demo.fns.values() if fn.api_name and fn.api_visibility == "public"})


def _gradio_apps(app: fastapi.FastAPI) -> list[gradio.routes.App]:
    return [r.app for r in app.routes if isinstance(getattr(r, "app", None), gradio.routes.App)]


def _name_bad_keyword_calls(app: fastapi.FastAPI) -> None:
    """Gradio's keyword-argument route (``POST /gradio_api/call/v2/<name>``, its "Use via API"
    cURL example) raises ``TypeError`` for a parameter name it cannot map ("Parameter `txt` is not
    a valid key-word argument"), which reached the client as a bare 500 (seventeenth newcomer
    session). There it is a 422 with that message; elsewhere the error goes on as before."""
    async def keyword_error(request: fastapi.Request, error: Exception):
        if request.method != "POST" or "/call/v2/" not in request.url.path:
            raise error
        _refused.note("keyword", request.method, printable(request.url.path), printable(error))
        return JSONResponse({"error": str(error)}, status_code=422)

    for gradio_app in _gradio_apps(app):
        gradio_app.add_exception_handler(TypeError, keyword_error)


_disk_full = OncePerMinute(log, logging.WARNING, "could not serve %s %s: %s")
# Calls a client can repeat in a loop (an unknown endpoint or fn_index): a line each wrote 300 lines
# for 300 requests (helper-56); one line a minute per kind, with a count.
_refused = OncePerMinuteByKind(log, logging.INFO, "refused %s %s: %s")


def _say_disk_full(app: fastapi.FastAPI, temp_space: TempSpace) -> None:
    """A file that cannot be written because the disk (or a quota) is full, in any Gradio route
    (an upload that passed temp_space's check while another filled the disk), is a 507 "The
    server's disk is full"; it was a bare 500. The handler sits on Gradio's own app: its
    ServerErrorMiddleware had sent the 500 before any middleware of ours saw the error."""
    async def disk_full(request: fastapi.Request, error: Exception):
        if getattr(error, "errno", None) not in (errno.ENOSPC, errno.EDQUOT):
            raise error
        _disk_full.note(request.method, printable(request.url.path), error)
        message = "The server's disk is full: the file could not be written. Try again later."
        if request.url.path.rstrip("/").endswith("/gradio_api/upload"):
            temp_space.refuse(message)  # counted with the refusals for space (it was not; helper-60)
        return JSONResponse({"detail": message}, status_code=507)

    for gradio_app in _gradio_apps(app):
        gradio_app.add_exception_handler(OSError, disk_full)


def _name_unknown_endpoints(app: fastapi.FastAPI, demo: gr.Blocks) -> None:
    """A call to an endpoint name that does not exist (``/gradio_api/call/synthesise``) raised
    Gradio's ``FnIndexInferError`` and reached the client as a bare 500 "Internal Server Error"
    with a traceback in the log (forty-ninth newcomer session). It is a 404 naming the endpoints
    that exist."""
    from gradio.route_utils import FnIndexInferError

    public = _public_endpoints(demo)

    async def unknown(request: fastapi.Request, error: Exception):
        name = request.url.path.rstrip("/").rsplit("/", 1)[-1]
        _refused.note("endpoint", request.method, printable(request.url.path), "no such endpoint")
        return JSONResponse({"error": f"No API endpoint is named {name[:100]!r}. The endpoints are "
                                      f"{', '.join(public)} (their parameters: GET /gradio_api/info)."},
                            status_code=404)

    async def unknown_keyword_call(request: fastapi.Request, error: Exception):
        # The keyword route looks the name up in its API info: a KeyError there, a 500 as well.
        if request.method == "POST" and "/call/v2/" in request.url.path:
            return await unknown(request, error)
        # An fn_index that no event has (queue/join, run): Gradio's dict lookup, a bare 500 (helper-51).
        path = request.url.path.rstrip("/")
        if request.method == "POST" and (path.endswith("/queue/join") or "/run/" in path or "/api/" in path):
            key = repr(error.args[0])[:50] if error.args else "?"
            _refused.note("fn_index", request.method, printable(path), f"no event has fn_index {key}")
            return JSONResponse({"error": f"No event has fn_index {key}. Call the "
                                          f"endpoints by name: {', '.join(public)} (their parameters: GET "
                                          f"/gradio_api/info)."}, status_code=404)
        raise error

    for gradio_app in _gradio_apps(app):
        gradio_app.add_exception_handler(FnIndexInferError, unknown)
        gradio_app.add_exception_handler(KeyError, unknown_keyword_call)


def close_joins(app: fastapi.FastAPI) -> None:
    """From now on a request joining Gradio's queue is refused at the door (503, ``Retry-After``):
    for the last moments of a shutdown, while :func:`undelivered_answers` go out."""
    app.state.joins_closed = True


def undelivered_answers(app: fastapi.FastAPI) -> int:
    """How many events Gradio still owes their client an answer on the session's stream: waiting,
    running, or finished with the answer not yet sent (``Queue.pending_event_ids_session``, from
    which Gradio's ``/queue/data`` removes an event once its ``process_completed`` has gone out),
    and joins let in that Gradio has yet to queue (``guards.while_stopping.JoinsInFlight``).

    Wait for this to reach 0 before :func:`end_streams`: once the queue is closed, Gradio's stream
    replaces any answer still waiting with "Server stopped unexpectedly." (``routes.queue_data``),
    so a request that arrived in the drain's last second was refused in the ledger while its
    client got an empty error (helper-77: 2 of 25 refusals, 4 clients, one SIGTERM)."""
    return app.state.joins_in_flight.count + sum(len(ids) for sub in _gradio_apps(app)
                                                 for ids in sub.get_blocks()._queue.pending_event_ids_session.values())


def requests_being_checked(app: fastapi.FastAPI) -> int:
    """How many synthesis requests are still being validated on their way to the worker's queue
    (``SynthesisService.being_checked``): a prompt decoding takes up to ``MAX_PYAV_DECODE_S``,
    longer than the shutdown waits for other answers."""
    return app.state.being_checked()


def end_streams(app: fastapi.FastAPI) -> None:
    """End Gradio's long-lived streams: each open tab's heartbeat and clients' ``/queue/data``.

    Otherwise uvicorn's graceful shutdown waits its whole timeout for them and then logs a
    ``CancelledError`` traceback per stream: with one tab open, every SIGTERM took 5 s longer and
    ended in a traceback (eleventh newcomer session; seen first in the eighth). This is what
    Gradio's own ``Blocks.close()`` does for a launched app (``queue.close()``, ``stop_event``),
    which a mounted app never gets. Call it in the event loop's thread, after the drain.
    """
    for sub in _gradio_apps(app):
        sub.get_blocks()._queue.close()
        sub.stop_event.set()

