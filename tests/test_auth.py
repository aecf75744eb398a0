"""Exposure: the app listens on 127.0.0.1 unless --host asks for more, and then says so in its
log; --auth protects the page and every API call; --metrics-token protects /metrics and /healthz."""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request

import httpx
import psutil
import pytest
from gradio_client import Client

from .conftest import RunningApp


def _status(url, token=None, scheme="Bearer"):
    req = urllib.request.Request(url, headers={"Authorization": f"{scheme} {token}"} if token else {})
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
        deadline = time.monotonic() + 120  # the app may take a while to listen on a loaded machine
        while time.monotonic() < deadline:
            try:
                code = _status(app.url + "healthz")
                break
            except urllib.error.URLError:
                time.sleep(0.5)
        assert code == 401  # /healthz needs the token
        assert _status(app.url + "healthz", "tok") == 200
        assert _status(app.url + "healthz", "wrong") == 401
        assert _status(app.url + "healthz", "tok", scheme="bearer") == 200  # schemes are case-insensitive
        assert _status(app.url + "healthz", "tok", scheme="Basic") == 401
        assert _status(app.url + "metrics") == 401 and _status(app.url + "metrics", "tok") == 200
        # Nothing that describes the API is readable without the login.
        for path in ("openapi.json", "gradio_api/openapi.json", "gradio_api/info", "config", "gradio_api/heartbeat/anysession"):
            assert _status(app.url + path) in (401, 404), path
        with pytest.raises(Exception):
            Client(app.url, verbose=False).predict(api_name="/restart")
        # Nor the page's streamed audio (its playlist URL played the speech to anyone; helper-51).
        for path in ("gradio_api/stream/somesession/0/18/playlist.m3u8", "gradio_api/stream/somesession/0/18/x.aac",
                     "gradio_api/stream/somesession/0/18/playlist-file"):
            assert _status(app.url + path) == 401, path
        assert httpx.post(app.url + "gradio_api/stream/someevent/close").status_code == 401
        # A missing file in the temporary folder is "not on the server (any more)" only to a
        # logged-in caller: the answer names the time-to-live (helper-54).
        import tempfile
        missing = f"gradio_api/file={tempfile.gettempdir()}/cosyvoice_ui-{app.port}/{'0' * 64}/audio.wav"  # an upload's form
        assert _status(app.url + missing) == 401
        with httpx.Client(base_url=app.url, timeout=10) as browser:
            assert browser.post("login", data={"username": "alice", "password": "s3cret"}).status_code == 200
            r = browser.get(missing)
            assert r.status_code == 404 and "not on the server (any more)" in r.text, r.text
        # The page's heartbeat stream needs the login too (Gradio's own route checks none).
        with httpx.Client(base_url=app.url, timeout=10) as browser:
            assert browser.post("login", data={"username": "alice", "password": "s3cret"}).status_code == 200
            with browser.stream("GET", "gradio_api/heartbeat/mysession") as r:
                assert r.status_code == 200
        # Failed logins are refused, logged (without what was typed; at most a line a minute) and
        # counted; they left no trace (twenty-third newcomer session).
        with httpx.Client(base_url=app.url, timeout=10) as guesser:
            for user, password in (("alice", "guess"), ("Alice", "s3cret"), ("alice", "s3cret "), ("mallory", "x")):
                assert guesser.post("login", data={"username": user, "password": password}).status_code == 400
            metrics = guesser.get("metrics", headers={"Authorization": "Bearer tok"}).text
        assert "cosyvoice_ui_failed_logins_total 4.0" in metrics
        lines = [line for line in app.log_path.read_text().splitlines() if "failed login" in line]
        assert len(lines) == 1 and "wrong password" in lines[0], lines
        assert "failed login from 127.0.0.1: " in lines[0], lines  # it named no client (forty-fourth session)
        assert not any(secret in app.log_path.read_text() for secret in ("guess", "mallory", "s3cret"))
        client = Client(app.url, auth=("alice", "s3cret"), verbose=False)
        assert client.predict(api_name="/restart")["new_pid"]
        assert client.predict(text="hello", api_name="/synthesize")[1]["audio_s"] > 0
        # Gradio's /cancel checks no login; here a cancel without credentials is refused and the
        # logged-in client's job still delivers its result.
        job = client.submit(text="sleep:2 a job someone tries to cancel", api_name="/synthesize")
        time.sleep(0.5)
        fn_index = next(d.get("id", i) for i, d in enumerate(client.config["dependencies"])
                        if d.get("api_name") == "synthesize")
        # Gradio would cancel every task of (session, fn_index), whatever the event id.
        r = httpx.post(app.url + "gradio_api/cancel", json={"session_hash": client.session_hash,
                                                            "fn_index": fn_index, "event_id": "any"})
        assert r.status_code == 401, r.text
        assert job.result(timeout=30)[1]["audio_s"] > 1.0
    finally:
        app.stop()


def _listening_addresses(pid: int, port: int) -> set[str]:
    return {c.laddr.ip for c in psutil.Process(pid).net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == port}


@pytest.mark.parametrize("flags,addresses,warns", [
    ((), {"127.0.0.1"}, False),
    (("--host", "0.0.0.0", "--allowed-host", "voices.example.org"), {"0.0.0.0"}, True),
], ids=["default", "0.0.0.0"])
def test_listens_on_loopback_unless_asked_and_then_says_so(tmp_path, monkeypatch, flags, addresses, warns):
    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", *flags)
    try:
        app.wait_healthy()
        assert _listening_addresses(app.proc.pid, app.port) == addresses
        log = app.log_path.read_text()
        assert ("reachable from the network, without authentication" in log) == warns, log
        assert ("/healthz and /metrics are open to it (see --metrics-token)" in log) == warns, log
        # --allowed-host does nothing off loopback: said so, not the proxy warning (helper-111).
        assert ("--allowed-host voices.example.org has no effect with --host 0.0.0.0" in log) == warns, log
        assert "every client counts as the proxy's address" not in log, log
        # On loopback, a request naming a foreign host (a page that rebound its DNS name to
        # 127.0.0.1) is refused; helper-51's got 200 and CORS headers for that origin.
        foreign = httpx.post(app.url + "gradio_api/call/status", json={"data": []},
                             headers={"Host": f"evil.example:{app.port}", "Origin": f"http://evil.example:{app.port}"})
        if warns:  # serving the network: its names are not known here
            assert foreign.status_code == 200, foreign.text
        else:
            detail = foreign.json()["detail"]
            assert foreign.status_code == 403 and "--allowed-host" in detail, foreign.text
            # A visitor on another machine is told what works from there (helper-72).
            assert "From another machine" in detail and f"ssh -L {app.port}:127.0.0.1:{app.port}" in detail, detail
        for host in (f"localhost:{app.port}", f"127.0.0.1:{app.port}", f"localhost.:{app.port}"):  # last: helper-54
            assert httpx.get(app.url + "healthz", headers={"Host": host}).status_code == 200, host
        # Not a host name: it was read as "localhost" (helper-91).
        for host in ("localhost:1@evil.example", f"localhost:{app.port}/x", "local host"):
            assert httpx.get(app.url + "healthz", headers={"Host": host}).status_code == (200 if warns else 403), host
    finally:
        app.stop()


def test_a_reverse_proxys_host_name_can_be_allowed(tmp_path, monkeypatch):
    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    # Given with a port, as nginx's $http_host sends it: the port was compared too, and matched nothing (helper-53).
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", "--allowed-host", "Voices.example.org:8443")
    try:
        app.wait_healthy()
        for host in ("voices.example.org", "voices.example.org:8443", "VOICES.example.org", "voices.example.org."):
            assert httpx.get(app.url + "config", headers={"Host": host}).status_code == 200, host
        refused = httpx.get(app.url + "config", headers={"Host": "other.example.org"})
        assert refused.status_code == 403 and "voices.example.org" in refused.json()["detail"], refused.text
        # A public demo behind the proxy showed its disk figures, queue and pids on /healthz and
        # /metrics to anyone, --auth or not: the log says so (helper-76).
        assert "/healthz and /metrics (the queue, pids" in app.log_path.read_text()
        # Without --forwarded-allow-ips the proxy's X-Forwarded-For is ignored (anyone could send
        # one: helper-99): the log says what to give.
        assert "without --forwarded-allow-ips: every client counts as the proxy's address" in app.log_path.read_text()
    finally:
        app.stop()


def test_a_page_from_another_origin_cannot_act_as_the_logged_in_visitor(tmp_path, monkeypatch):
    """Gradio let a page on any localhost port read the API's answers, and the --auth cookie went
    with its requests (browsers count all ports of a host as one site): a page on localhost:9999
    could synthesize and restart as the logged-in visitor (helper-91). A browser request whose
    Origin is another address is refused; the app's own page, scripts and the proxy's name work."""
    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    monkeypatch.setenv("COSYVOICE_UI_AUTH", "alice:s3cret")
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", "--allowed-host", "voices.example.org")
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                login = httpx.post(app.url + "login", data={"username": "alice", "password": "s3cret"})
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline
                time.sleep(0.5)
        cookies = login.cookies
        assert cookies, login.text
        call = {"json": {"data": []}, "cookies": cookies}
        for origin, host in ((f"http://localhost:{app.port + 1}", None), ("http://127.0.0.1:9999", None),
                             ("null", None), ("http://evil.example", None),
                             (f"http://127.0.0.1:{app.port}@evil.example", None),
                             # Another port of the proxy's name passed (helper-95).
                             ("http://voices.example.org:9999", "voices.example.org"),
                             # An X-Forwarded-Host with no proxy named by --forwarded-allow-ips (helper-116).
                             (f"http://localhost:{app.port + 1}", {"X-Forwarded-Host": f"localhost:{app.port + 1}"})):
            headers = {"Origin": origin, **(host if isinstance(host, dict) else {"Host": host} if host else {})}
            r = httpx.post(app.url + "gradio_api/call/restart", headers=headers, **call)
            assert r.status_code == 403 and "only from its own page" in r.json()["detail"], (origin, r.text)
            assert "access-control-allow-origin" not in r.headers, r.headers
            preflight = httpx.options(app.url + "gradio_api/call/restart",
                                      headers={**headers, "Access-Control-Request-Method": "POST"})
            assert preflight.status_code == 403, (origin, preflight.text)
        # Two Origins: the guard judged the last, Starlette (so Gradio) reads the first; every guard
        # now reads a header's first value.
        two = [("Origin", "http://evil.example"), ("Origin", f"http://127.0.0.1:{app.port}")]
        r = httpx.post(app.url + "gradio_api/call/restart", headers=two, **call)
        assert r.status_code == 403 and "evil.example" in r.json()["detail"], r.text
        # The app's own page, a script with no Origin, and a page from the proxy's name.
        for headers in ({"Origin": f"http://127.0.0.1:{app.port}"}, {"Origin": f"http://localhost:{app.port}",
                        "Host": f"localhost:{app.port}"}, {},
                        {"Origin": "https://voices.example.org", "Host": "voices.example.org"}):
            r = httpx.post(app.url + "gradio_api/call/status", headers=headers, **call)
            assert r.status_code == 200 and "event_id" in r.json(), (headers, r.text)
    finally:
        app.stop()


def test_an_ipv6_host_is_said_to_serve_ipv6_only(tmp_path, monkeypatch):
    """asyncio sets IPV6_V6ONLY: on "::" IPv4 clients got no connection while the log said "serving
    on :::" (forty-fourth newcomer session)."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("this machine has no IPv6 loopback to serve on")
    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", "--host", "::")
    app.url = f"http://[::1]:{app.port}/"
    try:
        app.wait_healthy()
        log = app.log_path.read_text()
        assert f"serving on [::] port {app.port}: the app is reachable from the network over IPv6 only" in log, log
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", app.port), timeout=2).close()
    finally:
        app.stop()


def test_failed_logins_are_summarized_not_flooded(caplog):
    import logging

    from cosyvoice_ui.guards.login_check import LoginCheck

    failures = []
    check = LoginCheck("alice", "s3cret", on_failure=lambda: failures.append(1), log_every_s=0.3)
    with caplog.at_level(logging.WARNING, logger="cosyvoice_ui.guards.login_check"):
        assert check("alice", "s3cret")
        assert not any(check("alice", f"guess{i}") for i in range(50))
        assert not check("bob", "s3cret")
        # No failure follows: the count is written all the same, by the log throttle's thread (it
        # waited for the next failure, maybe days later), with each reason counted (it named only
        # the last one's; helper-56).
        deadline = time.monotonic() + 10
        while len(caplog.records) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["failed login: wrong password",
                     "50 failed logins since the last such line: 49 wrong password, 1 unknown user name"], lines
    assert len(failures) == 51


def test_summarized_failed_logins_name_their_addresses(caplog):
    """The summary line names the clients behind the failures it counts, at most five."""
    import logging

    from cosyvoice_ui.guards.login_check import LoginCheck, _client_address

    check = LoginCheck("alice", "s3cret", log_every_s=0.3)
    with caplog.at_level(logging.WARNING, logger="cosyvoice_ui.guards.login_check"):
        token = _client_address.set("10.0.0.1")
        assert not check("alice", "guess")
        for i in range(8):
            _client_address.set(f"10.0.0.{i + 2}")
            assert not check("alice", "guess")
        time.sleep(0.35)
        _client_address.set("10.0.0.99")
        assert not check("alice", "guess")
        _client_address.reset(token)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["failed login from 10.0.0.1: wrong password",
                     "9 failed logins from 10.0.0.2, 10.0.0.3, 10.0.0.4, 10.0.0.5, 10.0.0.6 and others since the "
                     "last such line: 9 wrong password"], lines


def test_counts_not_yet_written_are_written_at_shutdown(tmp_path, monkeypatch):
    """Failed logins of the last minute were lost with the process: only the first line appeared
    (helper-60). The shutdown writes the counts before its "stopped" line."""
    import signal

    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine", "--auth", "alice:s3cret")
    try:
        app.wait_healthy()
        with httpx.Client(base_url=app.url, timeout=10) as guesser:
            for password in ("one", "two", "three"):
                assert guesser.post("login", data={"username": "alice", "password": password}).status_code == 400
            assert guesser.post("login", data={"username": "bob", "password": "x"}).status_code == 400
        app.proc.send_signal(signal.SIGTERM)
        app.proc.wait(timeout=30)
        lines = app.log_path.read_text().splitlines()
        failed = [line for line in lines if "failed login" in line]
        assert len(failed) == 2 and "3 failed logins" in failed[1] and "2 wrong password, 1 unknown user name" in failed[1], failed
        assert "stopped: the worker has ended" in lines[-1], lines[-3:]
    finally:
        app.stop()


def test_one_visitors_logout_leaves_the_others_logged_in(tmp_path, monkeypatch):
    """--auth has one user name, and Gradio's logout ended every login of it: one visitor's logout
    logged out all the others, whose next call and result file got 401 (helper-74). Behind a
    proxy's prefix, the logout's redirect keeps the prefix (it went to the host's root)."""
    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    monkeypatch.setenv("COSYVOICE_UI_AUTH", "alice:s3cret")
    app = RunningApp("--engine", "tests.fault_engines:FaultEngine")
    try:
        app.wait_healthy(120)
        one, other = httpx.Client(timeout=10), httpx.Client(timeout=10)
        for visitor in (one, other):
            r = visitor.post(app.url + "login", data={"username": "alice", "password": "s3cret"})
            assert r.status_code == 200 and visitor.get(app.url + "config").status_code == 200, r.text
            # Gradio's secure login cookie was SameSite=None: behind https it went with requests
            # from any site's page or frame (helper-105).
            cookies = r.headers.get_list("set-cookie")
            assert len(cookies) == 2 and all("samesite=lax" in c.lower() for c in cookies), cookies
        # A page at another address (another port: same-site; or another site) cannot log a
        # visitor out with a plain GET, which carries no Origin (helper-97).
        for site in ("same-site", "cross-site"):
            assert one.get(app.url + "logout", headers={"Sec-Fetch-Site": site}).status_code == 403
        two = [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Site", "same-origin")]  # the first counts
        assert one.get(app.url + "logout", headers=two).status_code == 403
        assert one.get(app.url + "config").status_code == 200, "a page elsewhere logged the visitor out"
        assert one.get(app.url + "logout", headers={"Sec-Fetch-Site": "same-origin"}).status_code == 302
        assert one.get(app.url + "config").status_code == 401, "the visitor who logged out is out"
        r = one.post(app.url + "login", data={"username": "alice", "password": "s3cret"})
        assert r.status_code == 200, r.text
        assert one.get(app.url + "logout").status_code == 302
        assert one.get(app.url + "config").status_code == 401, "the visitor who logged out is out"
        assert other.get(app.url + "config").status_code == 200, "another visitor was logged out too"
        assert other.get(app.url + "logout?all_session=true").status_code == 302
        assert other.get(app.url + "config").status_code == 401
        # Behind the prefix the login's cookies are the prefix's (Path=/ sent them to every app
        # on a shared host; helper-75), and the logout goes back to "/tts/" ("/tts" is outside a
        # proxy's "location /tts/": a 404; helper-74, helper-75).
        proxied = httpx.Client(timeout=10, headers={"X-Forwarded-Prefix": "/tts"})
        r = proxied.post(app.url + "tts/login", data={"username": "alice", "password": "s3cret"})
        cookies = r.headers.get_list("set-cookie")
        assert cookies and all("Path=/tts/" in c for c in cookies), cookies
        assert proxied.get(app.url + "tts/config").status_code == 200
        r = proxied.get(app.url + "tts/logout")
        assert r.status_code == 302 and r.headers["location"].endswith("/tts/"), r.headers
        assert all("Path=/tts/" in c for c in r.headers.get_list("set-cookie")), r.headers
        assert proxied.get(app.url + "tts/config").status_code == 401
    finally:
        app.stop()


def test_nothing_reaches_the_hugging_face_hub_and_there_is_no_run_history(tmp_path):
    """Gradio's run history served routes with no login check that called the Hugging Face Hub
    with the host's own token (HF_TOKEN), and a header on any call made the server create a bucket
    in another account with it; its analytics reached the Hub at every start (helper-110). Here a
    stand-in Hub records every request: none may come, with a call naming a history bucket too."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from .gradio_http import endpoint_data

    reached: list[str] = []

    class Hub(BaseHTTPRequestHandler):
        def _any(self):
            reached.append(f"{self.command} {self.path} {self.headers.get('authorization')}")
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = do_HEAD = do_PUT = _any

        def log_message(self, *args):
            pass

    hub = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    env = {"HF_ENDPOINT": f"http://127.0.0.1:{hub.server_port}", "HF_TOKEN": "hf_THE_OWNERS_TOKEN",
           "HF_HOME": str(tmp_path / "hf"), "GRADIO_ANALYTICS_ENABLED": "True", "HF_HUB_OFFLINE": "0"}
    app = RunningApp(env=env)
    try:
        app.wait_healthy()
        with httpx.Client(base_url=app.url, timeout=30) as http:
            for path in ("/gradio_api/run-history/buckets", "/gradio_api/run-history/records?bucket=owner/private",
                         "/gradio_api/runs"):
                assert http.get(path).status_code == 404, path
            r = http.post("/gradio_api/run-history/connect", json={"bucket_id": "owner/new"})
            assert r.status_code in (404, 405), r.text[:300]
            event_id = http.post("/gradio_api/call/synthesize", headers={"x-gradio-history-bucket": "someone/loot"},
                                 json={"data": endpoint_data(app.url, "synthesize", text="Hello there.")}).json()["event_id"]
            result = http.get(f"/gradio_api/call/synthesize/{event_id}").text
            assert "event: complete" in result, result
            assert not json.loads(http.get("/config").text).get("run_history"), "the page would keep runs in the browser"
        time.sleep(2)  # background uploads and analytics run after the answer
    finally:
        app.stop()
        hub.shutdown()
    assert reached == [], reached
