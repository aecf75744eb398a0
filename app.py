"""Entry point: ``python app.py [flags]`` (``./run.sh`` does this inside .venv).

The web process started here never initializes CUDA; the model runs in the worker process
that the supervisor spawns.
"""

from __future__ import annotations

import logging
import sys


def main(argv: list[str] | None = None) -> int:
    from cosyvoice_ui.settings import parse_settings

    settings = parse_settings(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("cosyvoice_ui")

    import uvicorn

    from cosyvoice_ui.engines import engine_capabilities
    from cosyvoice_ui.monitor.leak import LeakWatchdog
    from cosyvoice_ui.monitor.ledger import Ledger
    from cosyvoice_ui.monitor.sampler import MemoryMonitor
    from cosyvoice_ui.server import build_app
    from cosyvoice_ui.worker.supervisor import Supervisor

    try:
        engine_capabilities(settings.engine)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    supervisor = Supervisor(
        settings.engine, settings.device, settings.fp16, max_queue=settings.max_queue,
        request_timeout_s=settings.request_timeout_s, restart_grace_s=settings.restart_grace_s,
        start_timeout_s=settings.worker_start_timeout_s, heartbeat_interval_s=settings.heartbeat_interval_s,
        ledger=Ledger(path=settings.ledger), idle_unload_after_s=settings.idle_unload_after_s,
        leak_watchdog=LeakWatchdog(settings.leak_threshold_fraction, int(settings.leak_threshold_mb * 2**20),
                                   settings.leak_window),
        restart_on_leak=settings.restart_on_leak,
    ).start()
    monitor = MemoryMonitor(supervisor.status, interval_s=settings.monitor_interval_s,
                            history_s=settings.monitor_history_s, gpu_log_path=settings.gpu_log).start()
    if monitor.nvml_error:
        log.info("GPU monitor: NVML unavailable (%s); showing host memory instead", monitor.nvml_error)
    app = build_app(settings, supervisor, monitor)
    if settings.host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("serving on %s: the app is reachable from the network, without authentication", settings.host)
    log.info("open http://%s:%d in a browser", "127.0.0.1" if settings.host == "0.0.0.0" else settings.host, settings.port)
    try:
        uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning",
                    timeout_graceful_shutdown=int(settings.restart_grace_s))
    finally:
        log.info("shutting down: letting the running request finish, then ending the worker")
        supervisor.stop()
        monitor.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
