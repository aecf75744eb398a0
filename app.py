"""Entry point: ``python app.py [flags]`` (``./run.sh`` does this inside .venv).

The web process started here never initializes CUDA; the model runs in the worker process
that the supervisor spawns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
import threading
import time
import warnings

import uvicorn


def _own_gradio_temp_folder(port: int) -> bool:
    """Gradio keeps uploads and results in $GRADIO_TEMP_DIR, by default /tmp/gradio, shared by
    every Gradio app on the machine; the upload sweeper (temp_files.py) must only ever see this
    app's files (fourth newcomer session: it removed 540 stale files of other apps). Unless the
    user chose a folder, this app gets <temp>/cosyvoice_ui-<port>: one per port, so that two
    copies on two ports never sweep each other's files (forty-eighth newcomer session), and the
    next start on the same port finds what a killed one left. True when the app chose it."""
    import os
    import tempfile

    if not os.environ.get("GRADIO_TEMP_DIR"):
        os.environ["GRADIO_TEMP_DIR"] = os.path.join(tempfile.gettempdir(), f"cosyvoice_ui-{port}")
        return True
    return False


def _temp_folder_problem(ours: bool = False) -> str | None:
    """Why ``$GRADIO_TEMP_DIR`` cannot hold uploads and results, or ``None``. A file or an
    unwritable path there made Gradio raise after the model had loaded, and the process stayed
    up serving nothing (twenty-second newcomer session).

    The folder must belong to the user running the app: the default one's name is known
    (``/tmp/cosyvoice_ui-<port>``), and another local user who made it first could read and
    replace every upload and result in it, or hold its lock file so that the app would not start
    (helper-95). ``ours`` (the app chose the folder): it is also made private (mode 0700), and a
    link there is refused."""
    folder = os.environ["GRADIO_TEMP_DIR"]
    if os.path.exists(folder) and not os.path.isdir(folder):
        return f"GRADIO_TEMP_DIR={folder!r} is a file, not a folder; point it at a writable folder or unset it."
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError as e:
        return (f"GRADIO_TEMP_DIR={folder!r} cannot hold uploads and results ({e.strerror}); point it at a "
                "writable folder or unset it.")
    owner = os.stat(folder).st_uid
    if owner != os.getuid() or (ours and os.path.islink(folder)):
        what = "is a link" if owner == os.getuid() else f"belongs to another user (uid {owner})"
        return (f"the temporary folder {folder!r} {what}: whoever made it could read and replace this app's "
                "uploads and results. Remove it, or point GRADIO_TEMP_DIR at a folder of your own.")
    if ours:
        os.chmod(folder, 0o700)
    elif (foreign := _foreign_entry(folder)) is not None:
        # Gradio's /tmp/gradio, shared by every Gradio app, or a project folder: another app's
        # uploads were served to anyone, any file was taken as a prompt by its path and deleted
        # with the app's own (helper-150). What the app made there before has its lock file.
        return (f"GRADIO_TEMP_DIR={folder!r} holds {foreign!r}, which this app did not make: it serves uploads "
                "from that folder, takes any file in it as a prompt audio by its path, and deletes files older "
                "than --temp-file-ttl. Point it at an empty folder for this app alone, or unset it (each port "
                "then gets its own).")
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"GRADIO_TEMP_DIR={folder!r} is not writable; point it at a writable folder or unset it."
    return None


def _foreign_entry(folder: str) -> str | None:
    """The name of one entry of ``folder`` when the folder holds something and no lock file of
    this app (``temp_files.CLAIM_FILE``, which every run leaves there); else ``None``."""
    from cosyvoice_ui.temp_files import CLAIM_FILE

    if os.path.lexists(os.path.join(folder, CLAIM_FILE)):
        return None
    try:
        with os.scandir(folder) as entries:
            # lost+found: a file system of its own mounted there, made for the app (helper-152).
            return next((e.name for e in entries if e.name != "lost+found"), None)
    except OSError:
        return None  # unreadable: the checks after this one say so


def _cannot_listen(host: str, port: int) -> str | None:
    """Why the server could not listen on ``host:port`` (a bad address, a port in use), found by
    binding a socket the way uvicorn will (SO_REUSEADDR), or ``None`` when it can."""
    import errno
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as e:
        return f"--host {host!r} is not an address this machine can serve on ({e.strerror})."
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as e:
            if e.errno == errno.EADDRNOTAVAIL:
                return (f"cannot listen on {host}:{port} ({e.strerror}): this machine has no such address. "
                        "Use --host 127.0.0.1 (this machine only) or --host 0.0.0.0 (every network).")
            return (f"cannot listen on {host}:{port} ({e.strerror}). Is another copy running there? "
                    f"Choose a free --port.")
    return None


def main(argv: list[str] | None = None) -> int:
    from cosyvoice_ui.settings import parse_settings

    settings = parse_settings(argv)
    problem = _cannot_listen(settings.host, settings.port)
    if problem:  # before the model loads: that can take minutes with CosyVoice
        print(f"error: {problem}", file=sys.stderr)
        return 2
    from cosyvoice_ui.glibc_heap import serve_large_buffers_from_mmap

    serve_large_buffers_from_mmap()
    # Uploads, results, the ledger and logs are the user's own: results were 0644 in 0755
    # folders, readable by every local user (helper-95). The worker inherits this.
    os.umask(0o077)
    own_temp_folder = _own_gradio_temp_folder(settings.port)
    problem = _temp_folder_problem(ours=own_temp_folder)
    if not problem:
        from cosyvoice_ui.temp_files import claim_folder

        problem = claim_folder(os.environ["GRADIO_TEMP_DIR"])
    if problem:  # before the model loads, like the port
        print(f"error: {problem}", file=sys.stderr)
        return 2
    # Gradio 6.17 (the version requirements-cosyvoice.txt installs) names a status constant that
    # current Starlette deprecates; the warning was printed on requests and means nothing to a user.
    warnings.filterwarnings("ignore", message=".*HTTP_422_UNPROCESSABLE_ENTITY")
    from cosyvoice_ui import LOG_FORMAT

    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    # torch sets its loggers to WARNING once imported; a signal while it was still being imported left
    # its exit-time "FakeTensor cache stats" lines after our "stopped" line (helper-58).
    logging.getLogger("torch").setLevel(logging.WARNING)
    log = logging.getLogger("cosyvoice_ui")
    free_bytes = shutil.disk_usage(os.environ["GRADIO_TEMP_DIR"]).free
    if free_bytes < settings.temp_reserve_bytes:
        # A reserve typed in KB instead of MB refused every upload with no word at start (helper-53).
        log.warning("the temporary folder %s has %.0f MiB free, less than --temp-reserve-mb %.0f: every prompt upload "
                    "will be refused until space is freed; lower --temp-reserve-mb or free space",
                    os.environ["GRADIO_TEMP_DIR"], free_bytes / 2**20, settings.temp_reserve_bytes / 2**20)

    from cosyvoice_ui import log_throttle

    log_throttle.throttle_library_logger("python_multipart.multipart")  # a line per broken upload otherwise
    from cosyvoice_ui.duration_text import duration_text
    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.monitor.leak import LeakWatchdog
    from cosyvoice_ui.monitor.ledger import Ledger
    from cosyvoice_ui.monitor.sampler import MemoryMonitor
    from cosyvoice_ui.server import build_app, close_joins, end_streams, requests_being_checked, undelivered_answers
    from cosyvoice_ui.inputs.prompt_audio import stop_decoding
    from cosyvoice_ui.guards.slow_clients import DeadlineH11Protocol
    from cosyvoice_ui.worker.supervisor import FAILED, HEALTHY_STATES, UNLOADED, Supervisor

    try:
        engine_capabilities(settings.engine)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from cosyvoice_ui.temp_files import remove_folders_of_gone_processes, sweep_abandoned_uploads
    from cosyvoice_ui.ui.ffmpeg import FOLDER_PREFIX, ensure_ffmpeg_on_path

    if own_temp_folder:
        # A copy killed on this port (SIGKILL, a crash) left its uploads and results here, and no
        # copy uses the folder now (claim_folder): they go at once, not after --temp-file-ttl
        # (helper-145: "a stop deletes every upload" did not hold for a killed copy's). A folder
        # the user chose may hold other apps' files, which only the time-to-live removes.
        left = [p for p in sweep_abandoned_uploads(os.environ["GRADIO_TEMP_DIR"], ttl_s=-1.0) if not p.endswith(os.sep)]
        if left:
            log.info("removed %d upload(s) and result(s) that a stopped copy of the app left in %s", len(left),
                     os.environ["GRADIO_TEMP_DIR"])

    # Also without --stream: the folder of a --stream app killed with SIGKILL stayed until the
    # next --stream start (thirty-third newcomer session).
    if removed := remove_folders_of_gone_processes(FOLDER_PREFIX):
        log.info("removed %d ffmpeg folder(s) of web processes that had ended", removed)
    if settings.stream:  # before the model loads, like every configuration error
        try:
            log.info("--stream: audio chunks are encoded with %s", ensure_ffmpeg_on_path())
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    supervisor = Supervisor(
        settings.engine, settings.device, settings.fp16, max_queue=settings.max_queue,
        request_timeout_s=settings.request_timeout_s, restart_grace_s=settings.restart_grace_s,
        start_timeout_s=settings.worker_start_timeout_s, heartbeat_interval_s=settings.heartbeat_interval_s,
        ledger=Ledger(path=settings.ledger), idle_unload_after_s=settings.idle_unload_after_s,
        retry_failed_load_after_s=settings.retry_failed_load_after_s,
        leak_watchdog=LeakWatchdog(settings.leak_threshold_fraction, int(settings.leak_threshold_mb * 2**20),
                                   settings.leak_window),
        restart_on_leak=settings.restart_on_leak, engine_options=settings.engine_options,
        empty_cache_after_request=settings.empty_cache_after_request,
    )
    monitor = None
    try:
        # From before the worker starts: a Ctrl-C between "worker started" and the wait below hit
        # Python's default handler (exit by SIGINT, no log line; test_shutdown on a busy machine).
        with _signals_end_loading():
            supervisor.start()
            monitor = MemoryMonitor(supervisor.status, interval_s=settings.monitor_interval_s,
                                    history_s=settings.monitor_history_s, gpu_log_path=settings.gpu_log,
                                    gpu_log_max_bytes=round(settings.gpu_log_max_mb * 2**20)).start()
            if monitor.nvml_error:
                log.info("GPU monitor: NVML unavailable (%s); showing host memory instead", monitor.nvml_error)
            log.info("loading the %s engine in the worker process ...", settings.engine)
            import torchaudio.functional  # noqa: F401 - the prompt resampler; loaded now, not on the first request
            ready = supervisor.wait_ready(settings.worker_start_timeout_s + 5)
    except _StopWhileLoading as stop:
        # uvicorn's handlers (drain, then a "stopped" line) are not installed yet; without this
        # the default SIGTERM action ended the process with nothing in the log.
        if supervisor.status()["state"] in HEALTHY_STATES:  # loaded; the web process was still starting
            log.info("shutting down before the server was listening (%s): ending the worker", stop.signal_name)
        else:
            log.info("shutting down while the model loads (%s): ending the worker", stop.signal_name)
        supervisor.stop(grace_s=1)
        if monitor is not None:
            monitor.stop()
        log.info("stopped: the worker has ended; exiting")
        if stop.signum != signal.SIGINT:  # ended by SIGTERM/SIGHUP, as after a drain while serving
            signal.signal(stop.signum, signal.SIG_DFL)
            os.kill(os.getpid(), stop.signum)
        return 130  # SIGINT: as a shell reports a Ctrl-C, as after a drain while serving
    retrying = (not ready and settings.retry_failed_load_after_s is not None
                and supervisor.status()["state"] == "failed")
    if retrying:
        # Asked for an unattended page that heals by itself: the first load is no exception (it
        # exited with status 2, never tried again; helper-114).
        log.warning("the model could not be loaded (%s); serving anyway, in the failed state: it is loaded again %s "
                    "after each failure (--retry-failed-load-after), or at once with Restart",
                    supervisor.status()["last_error"], duration_text(settings.retry_failed_load_after_s))
    elif not ready:
        # A model that cannot load at start (no GPU for --device cuda, a bad engine) is a
        # configuration error: say so and exit instead of serving a page that cannot work.
        print(f"error: {supervisor.status()['last_error']}", file=sys.stderr)
        supervisor.stop(grace_s=1)
        monitor.stop()
        return 2
    try:
        if settings.ledger:
            device = supervisor.status()["device"]
            loaded = supervisor.ledger.read_back(supervisor.engine, device)
            others = supervisor.ledger.read_back_others
            if loaded or others:  # said also when none matched: the operator sees the file was read
                log.info("ledger: read back %d earlier record(s) of %s on %s from %s%s; admission's memory fit goes "
                         "on from them", loaded, supervisor.engine, device, settings.ledger,
                         f" ({others} of other engines or devices left out)" if others else "")
        app = build_app(settings, supervisor, monitor)
    except BaseException:
        # The worker thread would keep the process alive, holding the model and serving nothing
        # (forty-seventh newcomer session: a ledger line that broke reading it back).
        supervisor.stop(grace_s=1)
        monitor.stop()
        raise
    loopback = settings.host in ("127.0.0.1", "localhost", "::1")
    if not loopback:
        ipv6 = ":" in settings.host
        # asyncio's server sets IPV6_V6ONLY on an IPv6 socket: on "::" IPv4 clients got no connection,
        # and the line read "serving on :::" (forty-fourth newcomer session).
        log.warning("serving on %s port %d: the app is reachable from the network%s%s%s",
                    f"[{settings.host}]" if ipv6 else settings.host, settings.port,
                    " over IPv6 only (IPv4 clients cannot connect; --host 0.0.0.0 serves IPv4)" if ipv6 else "",
                    "" if settings.auth else ", without authentication (see --auth)",
                    "" if settings.metrics_token else "; /healthz and /metrics are open to it (see --metrics-token)")
        if settings.allowed_hosts:  # the proxy warning below was wrong for clients that connect directly (helper-111)
            log.warning("--allowed-host %s has no effect with --host %s: host names are checked only when serving "
                        "on a loopback address (behind a proxy on the same machine); here any Host is answered",
                        ", ".join(settings.allowed_hosts), settings.host)
    elif settings.allowed_hosts and not settings.metrics_token:
        # Behind a proxy the app is as public as the proxy makes it, and --auth leaves these two
        # routes open: a public demo showed its disk figures, queue and pids to anyone (helper-76).
        log.warning("answering to %s through a reverse proxy: /healthz and /metrics (the queue, pids, the "
                    "temporary folder's free space) are open to whoever the proxy lets through, --auth or not; "
                    "--metrics-token closes them", ", ".join(settings.allowed_hosts))
    if settings.allowed_hosts and not settings.forwarded_allow_ips and loopback:
        log.warning("answering to %s without --forwarded-allow-ips: every client counts as the proxy's address "
                    "(the log names it; its 256 open heartbeats are shared by all); give the proxy's address, "
                    "such as --forwarded-allow-ips 127.0.0.1, to take the client's from X-Forwarded-For",
                    ", ".join(settings.allowed_hosts))
    elif settings.forwarded_allow_ips:
        log.info("taking the client's address and scheme from X-Forwarded-For and X-Forwarded-Proto sent from %s; "
                 "a process that connects from there can name any address", ", ".join(settings.forwarded_allow_ips))
    drained = threading.Event()

    no_worker = threading.Event()  # unloaded when the drain began: "the worker has ended" would be wrong

    def drain(signal_name: str | None = None) -> None:
        if drained.is_set():
            return
        drained.set()
        status = supervisor.status()
        if status["state"] in (UNLOADED, FAILED):
            no_worker.set()
        log.info("%s", _drain_line(status, settings.restart_grace_s, signal_name, requests_being_checked(app)))
        stop_decoding()
        supervisor.stop()
        monitor.stop()

    def stopped() -> None:
        from gradio.utils import get_upload_folder

        from cosyvoice_ui.temp_files import remove_empty_folders
        from cosyvoice_ui.ui.ffmpeg import remove_private_ffmpeg

        remove_private_ffmpeg()
        remove_empty_folders(get_upload_folder())  # Gradio deleted their files at its shutdown
        log_throttle.flush_all()  # counts of the last minute, before the last line
        log.info("stopped: %s; exiting", "no worker was running" if no_worker.is_set() else "the worker has ended")

    def listening() -> None:
        host = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(settings.host, settings.host)
        log.info("ready: open http://%s:%d in a browser", f"[{host}]" if ":" in host and not host.startswith("[") else host,
                 settings.port)

    DeadlineH11Protocol.configure(settings.read_timeout_s, trusted_proxies=settings.forwarded_allow_ips)
    # uvicorn took X-Forwarded-For from any connection from 127.0.0.1 by default: a local client
    # named a new address in each request, past the per-address stream limit (helper-99).
    server = DrainingServer(uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning",
                                            timeout_graceful_shutdown=5, http=DeadlineH11Protocol,
                                            proxy_headers=bool(settings.forwarded_allow_ips),
                                            forwarded_allow_ips=list(settings.forwarded_allow_ips) or None),
                            drain, stopped, listening,
                            end_streams=lambda: end_streams(app), undelivered=lambda: undelivered_answers(app),
                            being_checked=lambda: requests_being_checked(app),
                            close_joins=lambda: close_joins(app),
                            abort=lambda: supervisor.kill_worker("ended by the app on a second Ctrl-C"))
    interrupted = False
    try:
        server.run()
    except KeyboardInterrupt:  # uvicorn raised the SIGINT it captured again, as it does after a signal
        interrupted = True
    finally:
        drain()  # no-op when the signal path already drained
    if not server.stopped_logged:
        stopped()
    # 130 (128 + SIGINT), as a shell reports a Ctrl-C; catching the KeyboardInterrupt made it 0,
    # which a process manager takes for a clean exit (fifteenth newcomer session).
    return 130 if interrupted else 0


# A closed terminal or ssh session sends SIGHUP to the whole process group: drained like SIGTERM
# (it ended the app at once, losing the running request and its ledger record). Left alone when
# it is ignored at start (nohup), so that the app outlives its terminal as asked.
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _drain_line(status: dict, grace_s: float, signal_name: str | None = None, checking: int = 0) -> str:
    """What the drain is about to do, from the supervisor's state (one line said "letting the
    running one finish" during a reload, a restart and while unloaded; newcomer sessions 22-23),
    the signal that asked for it, as the line of a stop while loading names it, and the requests
    whose prompt audio is still being checked (``checking``; "no request is running" was logged
    while they decoded, helper-117)."""
    from cosyvoice_ui.inputs.prompt_audio import MAX_PYAV_DECODE_S
    from cosyvoice_ui.worker.supervisor import FAILED, RESTARTING, STARTING, UNLOADED

    by = f" ({signal_name})" if signal_name else ""
    if checking and status["in_flight"] is None and status["state"] not in (UNLOADED, FAILED):
        return (f"shutting down{by}: no new requests; no request is running; {checking} request(s) whose prompt audio "
                f"is still being checked will be told the server is stopping (within {MAX_PYAV_DECODE_S:.0f} s): "
                "ending the worker")
    if status["in_flight"] is not None:
        return (f"shutting down{by}: no new requests; letting the running one finish (up to {grace_s:.0f} s), "
                "then ending the worker")
    if status["state"] == STARTING or (status["state"] == RESTARTING and status.get("pid")
                                       and status.get("load_s") is None):  # the restart's new worker
        return f"shutting down while the model loads{by}: ending the worker"
    if status["state"] == RESTARTING:
        return f"shutting down during a restart{by}: ending the worker"
    if status["state"] == UNLOADED:
        return f"shutting down{by}: no model is loaded (unloaded after idle time), no worker to end"
    if status["state"] == FAILED:  # the last attempt's worker has ended (helper-118)
        return f"shutting down{by}: no model is loaded (it could not be), no worker to end"
    return f"shutting down{by}: no new requests; no request is running: ending the worker"


class _StopWhileLoading(BaseException):
    """SIGTERM, SIGINT or SIGHUP arrived before the server was listening."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.signal_name = signal.Signals(signum).name


@contextlib.contextmanager
def _signals_end_loading():
    """While the model loads, SIGTERM, SIGINT and SIGHUP raise :class:`_StopWhileLoading` in the
    main thread; the previous handlers come back afterwards (uvicorn installs its own later)."""
    def handler(signum, frame):
        raise _StopWhileLoading(signum)

    previous = {sig: signal.signal(sig, handler) for sig in _STOP_SIGNALS
                if signal.getsignal(sig) is not signal.SIG_IGN}  # ignored ones (nohup, &) stay ignored
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


# At most this long for answers still on their way at shutdown (a client that left never reads its own).
ANSWERS_LEAVE_S = 3.0


async def wait_for_answers(undelivered, being_checked, answers_leave_s: float, checks_s: float) -> None:
    """Wait while answers are on their way out (``undelivered() > 0``), at most ``answers_leave_s``
    seconds; a request whose prompt is still being checked (``being_checked() > 0``: a decode, up to
    ``MAX_PYAV_DECODE_S``) gets up to ``checks_s`` more, and its answer ``answers_leave_s`` after
    its check ends, so that it gets the drain's answer, not "Server stopped unexpectedly"
    (helper-113). Before, a check that ended past the first ``answers_leave_s`` left its answer no
    time at all: under load its client got gradio_client's ``KeyError: 'unexpected_error'``
    (session 27's CI neighbours)."""
    deadline = time.monotonic() + answers_leave_s
    checks_deadline = deadline + checks_s
    while undelivered():
        now = time.monotonic()
        if being_checked() and now < checks_deadline:
            deadline = max(deadline, now + answers_leave_s)
        if now >= deadline:
            return
        await asyncio.sleep(0.05)


class DrainingServer(uvicorn.Server):
    """Drains before uvicorn shuts down: on the first SIGTERM/SIGINT/SIGHUP the supervisor stops taking
    requests, fails queued ones with a retry hint and lets the running one finish (bounded), while
    HTTP stays up so that its answer reaches the client; then uvicorn shuts down as usual. A second
    signal exits at once.

    After a signal, uvicorn raises that signal again once it has shut down (so the exit status
    says "terminated by SIGTERM"), and nothing after ``run()`` executes: ``stopped`` is called at
    the end of the shutdown instead, so the log always ends with a "stopped" line."""

    def __init__(self, config: uvicorn.Config, drain, stopped, listening, end_streams=lambda: None,
                 abort=lambda: None, undelivered=lambda: 0, close_joins=lambda: None,
                 being_checked=lambda: 0) -> None:
        super().__init__(config)
        self._end_streams = end_streams
        self._undelivered, self._close_joins, self._being_checked = undelivered, close_joins, being_checked
        self._abort = abort
        self._exit_lock = threading.Lock()
        self._drain = drain
        self._stopped = stopped
        self._listening = listening
        self._draining = False
        self.stopped_logged = False

    @contextlib.contextmanager
    def capture_signals(self):
        # uvicorn captures SIGINT and SIGTERM only; SIGHUP is added here. Its handler goes before
        # uvicorn's exit raises the captured signals again, so that SIGHUP ends the process.
        # A SIGINT the process began with ignored (a script's `python app.py &`) stays ignored, as
        # while the model loads: uvicorn's handler obeyed it once the server was up, and its exit
        # then raised the ignored signal again and ended with status 0 (helper-58).
        interrupt_ignored = (threading.current_thread() is threading.main_thread()
                             and signal.getsignal(signal.SIGINT) is signal.SIG_IGN)
        with super().capture_signals():
            if interrupt_ignored:
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # uvicorn's exit restores SIG_IGN itself
            hangup = (threading.current_thread() is threading.main_thread()
                      and signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN)  # nohup: stays ignored
            previous = signal.signal(signal.SIGHUP, self.handle_exit) if hangup else None
            try:
                yield
            finally:
                if hangup:
                    signal.signal(signal.SIGHUP, previous)

    async def startup(self, sockets=None) -> None:
        from cosyvoice_ui.guards.slow_clients import quiet_accept_errors

        quiet_accept_errors(asyncio.get_running_loop())
        await super().startup(sockets=sockets)
        if self.started:  # "ready" only once the port is really listening
            self._listening()

    async def shutdown(self, sockets=None) -> None:
        # Answers still on their way go out before the streams end (ending them replaces each with
        # "Server stopped unexpectedly."; helper-77). Meanwhile a new request is refused at the
        # door: one joined now would be answered on a stream its client has yet to open.
        self._close_joins()
        from cosyvoice_ui.inputs.prompt_audio import MAX_PYAV_DECODE_S

        await wait_for_answers(self._undelivered, self._being_checked, ANSWERS_LEAVE_S, MAX_PYAV_DECODE_S)
        self._end_streams()  # open tabs' heartbeats would hold the shutdown for its whole timeout
        await super().shutdown(sockets=sockets)
        self._drain()  # no-op when already drained
        self._stopped()
        self.stopped_logged = True

    def handle_exit(self, sig, frame) -> None:
        if self._draining:
            # SIGTERM often arrives twice (to the process group and forwarded by run.sh): only a
            # second Ctrl-C means "exit now".
            if sig == signal.SIGINT:
                threading.Thread(target=self._exit_now, args=(sig, frame), name="exit-now", daemon=True).start()
            return None
        self._draining = True

        def drain_then_exit() -> None:
            self._drain(signal.Signals(sig).name)
            time.sleep(1.0)  # let the last answers leave before connections close
            self._request_exit(sig, frame)

        threading.Thread(target=drain_then_exit, name="drain", daemon=True).start()

    def _exit_now(self, sig, frame) -> None:
        # A second Ctrl-C waited for the running request anyway (uvicorn only set should_exit),
        # then logged a CancelledError traceback (thirteenth newcomer session). Ending the worker
        # fails that request at once ("shut down while this request ran"); half a second lets
        # the answer leave, then uvicorn is told to exit.
        self._abort()
        time.sleep(0.5)
        self._request_exit(sig, frame)

    def _request_exit(self, sig, frame) -> None:
        # uvicorn raises every signal it captured again once it has stopped; a SIGINT captured
        # twice made asyncio's runner raise KeyboardInterrupt with a traceback. Capture it once.
        # (Nor uvicorn's force_exit: it skips the lifespan shutdown, whose cancelled task then
        # logged a traceback; with the worker gone, the connections close by themselves.)
        with self._exit_lock:
            if not self.should_exit:
                super().handle_exit(sig, frame)


if __name__ == "__main__":
    sys.exit(main())
