"""Shared fixtures: the real prompts in ../shared/prompts and a running app on a free port."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROMPTS_DIR = Path(os.environ.get("COSYVOICE_UI_PROMPTS", ROOT.parent / "shared" / "prompts"))


TEST_TEMP_PREFIX = "cosyvoice-ui-tests-"


def pytest_configure(config) -> None:
    """Give the whole run, and every app and browser it starts, one temporary folder of its own.

    gradio_client keeps every result it downloads in ``<temp>/gradio`` for good and leaves an empty
    ``<temp>/<40 hex digits>`` folder per download: a day of test runs left 2.3 GB and 12,800
    folders in /tmp. Runs before the test modules import gradio_client (which reads the folder at
    import). Folders of earlier runs older than a day are removed; a failed run keeps its own.
    """
    base = tempfile.gettempdir()
    for entry in Path(base).glob(TEST_TEMP_PREFIX + "*"):
        with contextlib.suppress(OSError):
            if time.time() - entry.stat().st_mtime > 86400:
                shutil.rmtree(entry, ignore_errors=True)
    folder = tempfile.mkdtemp(prefix=TEST_TEMP_PREFIX, dir=base)
    # A run started in the background by a script (`cmd &`) begins with SIGINT ignored, and every
    # app it starts would inherit that: the Ctrl-C tests then failed for the way they were run.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = folder
    config._cosyvoice_ui_temp = folder


def pytest_sessionfinish(session, exitstatus) -> None:
    folder = getattr(session.config, "_cosyvoice_ui_temp", None)
    if folder and exitstatus == 0:
        shutil.rmtree(folder, ignore_errors=True)
    elif folder:
        print(f"\ntemporary files of this run kept in {folder}")


def load_manifest() -> list[dict]:
    path = PROMPTS_DIR / "manifest.json"
    if not path.is_file():
        pytest.skip(f"the real prompts are missing: {path} not found (they live in ../shared/prompts)")
    return json.loads(path.read_text())


def prompt_files() -> list[Path]:
    path = PROMPTS_DIR / "manifest.json"
    if not path.is_file():
        return []
    return [PROMPTS_DIR / e["file"] for e in json.loads(path.read_text())]


@pytest.fixture(scope="session")
def manifest() -> list[dict]:
    return load_manifest()


def free_port() -> int:
    """A port free on every address: one free on 127.0.0.1 alone was held on this machine's network
    address by a client socket of an earlier test (thousands of connections from it), and an app
    on --host 0.0.0.0 could not listen there (final CI of the twentieth session)."""
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout_s: float, what: str):
    """Poll ``predicate`` every 50 ms until it returns something truthy, and return that; raise
    AssertionError naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def healthz(url: str) -> dict:
    """``/healthz``'s status JSON of the app at ``url`` (also when it answers 503)."""
    try:
        with urllib.request.urlopen(url + "healthz", timeout=10) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        return json.loads(e.read())


class RunningApp:
    """``python app.py`` in a subprocess on a free port, as a user would start it."""

    def __init__(self, *flags: str, env: dict | None = None, wrap: tuple[str, ...] = ()) -> None:
        """``wrap``: a command the app runs under (its last word followed by the app's command line),
        such as a shell that mounts a small file system first; it must ``exec`` the app."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = ROOT / ".pytest_cache" / f"app-{self.port}.log"
        self.log_path.parent.mkdir(exist_ok=True)
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [*wrap, sys.executable, str(ROOT / "app.py"), "--port", str(self.port), "--device", "cpu", *flags],
            cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})

    def wait_healthy(self, timeout_s: float = 120.0, token: str | None = None) -> dict:
        """``/healthz``'s status once it answers 200 (``token``: the app's --metrics-token)."""
        deadline = time.monotonic() + timeout_s
        last = None
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"app exited with {self.proc.returncode}:\n{self.log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(urllib.request.Request(self.url + "healthz", headers=headers), timeout=2) as r:
                    return json.loads(r.read())
            except Exception as e:  # not up yet, or 503 while loading
                last = e
            time.sleep(0.3)
        raise TimeoutError(f"app not healthy after {timeout_s} s ({last}):\n{self.log_path.read_text()[-3000:]}")

    def status(self) -> dict:
        """``/healthz``'s status JSON (also when it answers 503)."""
        return healthz(self.url)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def small_disk_wrap(folder, size_kib: int) -> tuple[str, ...]:
    """A command that mounts a ``size_kib`` tmpfs on ``folder`` in a mount namespace of the app's
    own, then runs the app: a disk that really fills, without touching the machine's. Skips where
    unshare(1) or mounting is not allowed."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare(1) is missing: a small disk for the app cannot be made")
    userns = () if os.geteuid() == 0 else ("--user", "--map-root-user")
    wrap = ("unshare", *userns, "--mount", "--propagation", "private", "sh", "-c",
            f'mount -t tmpfs -o size={size_kib}k tmpfs "$0" && exec "$@"', str(folder))
    probe = subprocess.run([*wrap, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs in a mount namespace here: {probe.stderr.strip()[:200]}")
    return wrap


@contextlib.contextmanager
def serving(*flags: str, env: dict | None = None, wrap: tuple[str, ...] = ()):
    """A :class:`RunningApp` that is healthy inside the block and stopped after it."""
    app = RunningApp(*flags, env=env, wrap=wrap)
    try:
        app.wait_healthy()
        yield app
    finally:
        app.stop()


def serve_with_ledger(tmp_path_factory, *flags: str):
    """Generator for module fixtures: an app writing ``--ledger`` to ``app.ledger_path``."""
    ledger = tmp_path_factory.mktemp("ledger") / "ledger.jsonl"
    with serving("--ledger", str(ledger), *flags) as app:
        app.ledger_path = ledger
        yield app


@pytest.fixture(scope="module")
def app_server():
    with serving() as app:
        yield app


def network_address() -> str | None:
    """An IPv4 address of this machine other than loopback (a page there is not a secure context;
    a connection from it is a remote address), or None."""
    import psutil

    for addresses in psutil.net_if_addrs().values():
        for a in addresses:
            if a.family == socket.AF_INET and not a.address.startswith("127."):
                return a.address
    return None
