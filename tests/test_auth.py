"""--auth protects the page and every API call; --metrics-token protects /metrics and /healthz."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from gradio_client import Client

from .conftest import RunningApp


def _status(url, token=None):
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_auth_and_metrics_token(tmp_path, monkeypatch):
    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    monkeypatch.setenv("COSYVOICE_UI_AUTH", "alice:s3cret")
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", "--metrics-token", "tok")
    try:
        with pytest.raises(Exception):
            app.wait_healthy(timeout_s=15)  # /healthz needs the token
        assert _status(app.url + "healthz", "tok") == 200
        assert _status(app.url + "healthz", "wrong") == 401
        assert _status(app.url + "metrics") == 401 and _status(app.url + "metrics", "tok") == 200
        with pytest.raises(Exception):
            Client(app.url, verbose=False).predict(api_name="/restart")
        client = Client(app.url, auth=("alice", "s3cret"), verbose=False)
        assert client.predict(api_name="/restart")["new_pid"]
        assert client.predict(text="hello", api_name="/synthesize")[1]["audio_s"] > 0
    finally:
        app.stop()
