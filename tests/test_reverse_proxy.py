"""Behind a reverse proxy that serves the app under a path prefix (``https://host/tts/``).

The page named its styles and API calls from the host's root (404s, an unstyled page, an empty
monitor; helper-72). A proxy's ``X-Forwarded-Prefix`` is the request's root path now
(``guards/forwarded_prefix.py``), whether the proxy strips the prefix from the path or keeps
it; the app's own address still answers without one, and the limits hold under a prefix.
"""

from __future__ import annotations

import json
import re

import httpx
import pytest

from . import gradio_http as gh
from .conftest import PROMPTS_DIR, serving

PREFIX = {"X-Forwarded-Prefix": "/tts"}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with serving("--engine", "tests.fault_engines:FaultEngine", "--forwarded-allow-ips", "127.0.0.1",
                 env={"FAULT_ENGINE_DIR": str(tmp_path_factory.mktemp("fault"))}) as app:
        yield app


def _root(text: str) -> str:
    return re.search(r'"root":\s*"([^"]*)"', text).group(1)


@pytest.mark.parametrize("path", ["", "tts/"])  # the proxy stripped the prefix, or kept it
def test_the_page_under_a_prefix_names_its_urls_with_it(app, path):
    base = app.url.rstrip("/")
    page = httpx.get(app.url + path, headers=PREFIX, timeout=10)
    assert page.status_code == 200 and _root(page.text) == base + "/tts", _root(page.text)
    for asset in ("theme.css", "config", "gradio_api/info"):
        assert httpx.get(app.url + path + asset, headers=PREFIX, timeout=10).status_code == 200, asset
    # Gradio's page named its manifest from the host's root (helper-80).
    assert 'href="/tts/manifest.json"' in page.text and 'href="/manifest.json"' not in page.text
    assert httpx.get(app.url + path + "manifest.json", headers=PREFIX, timeout=10).status_code == 200
    # The app's own address (an SSH tunnel, a script on the box) still has no prefix.
    own = httpx.get(app.url, timeout=10).text
    assert _root(own) == base and 'href="/manifest.json"' in own


@pytest.mark.parametrize("prefix", ["//evil.example", "https://evil.example/x", "/a/../b", "/tts?x=1", "tts", "/"])
def test_a_prefix_that_is_not_a_plain_path_is_ignored(app, prefix):
    page = httpx.get(app.url, headers={"X-Forwarded-Prefix": prefix}, timeout=10)
    assert _root(page.text) == app.url.rstrip("/"), (prefix, _root(page.text))


@pytest.mark.parametrize("path", ["", "tts/"])
def test_a_request_made_through_the_prefix_works_and_its_result_link_has_the_prefix(app, path):
    """A proxy that strips the prefix (the README's nginx example) gave result links without it:
    404, no visitor could play or download a result (helper-74)."""
    with httpx.Client(timeout=30, headers=PREFIX) as http:
        uploaded = http.post(app.url + path + "gradio_api/upload",
                             files={"files": ("xtts_female.wav", (PROMPTS_DIR / "xtts_female.wav").read_bytes())})
        assert uploaded.status_code == 200, uploaded.text
        data = gh.endpoint_data(app.url, "synthesize", text="through the proxy",
                                prompt_audio=gh.file_data(uploaded.json()[0]))
        event_id = http.post(app.url + path + "gradio_api/call/synthesize", json={"data": data}).json()["event_id"]
        event, body = gh.parse_sse(http.get(app.url + path + f"gradio_api/call/synthesize/{event_id}").text)
        assert event == "complete", body
        result = json.loads(body)[0]
        assert result["url"].startswith(app.url + "tts/gradio_api/file="), result["url"]
        assert http.get(result["url"]).status_code == 200


def test_the_upload_limit_holds_under_a_prefix(app):
    """The total upload limit matched the path /gradio_api/upload exactly: under a prefix the path
    is /tts/gradio_api/upload, and a body over --max-upload-mb went through to Gradio."""
    body = b"x" * (21 * 2**20)
    r = httpx.post(app.url + "tts/gradio_api/upload", content=body, timeout=30,
                   headers={**PREFIX, "Content-Type": "multipart/form-data; boundary=x"})
    assert r.status_code == 413 and "Upload too large" in r.text, (r.status_code, r.text[:300])


@pytest.mark.parametrize("path", ["", "tts/"])
@pytest.mark.parametrize("route", ["gradio_api/queue/join/", "gradio_api/upload/"])
def test_a_trailing_slash_redirect_keeps_the_prefix(app, path, route):
    """Starlette redirects a path with a stray ``/`` to the path without it, and named that path
    without the prefix: through the proxy the redirect left the app (helper-74)."""
    r = httpx.post(app.url + path + route, headers=PREFIX, timeout=10, follow_redirects=False)
    assert r.status_code == 307, (r.status_code, r.text[:200])
    assert httpx.URL(r.headers["location"]).path == "/tts/" + route.rstrip("/"), r.headers["location"]
    # Without the header the app's own address is left as it was.
    r = httpx.post(app.url + route, timeout=10, follow_redirects=False)
    assert httpx.URL(r.headers["location"]).path == "/" + route.rstrip("/"), r.headers["location"]


def test_a_redirect_to_another_host_is_left_alone():
    from cosyvoice_ui.guards.forwarded_prefix import location_under_prefix

    scope = {"headers": [(b"host", b"127.0.0.1:7860")]}
    assert location_under_prefix("https://login.example/x", "/tts", scope) == "https://login.example/x"
    assert location_under_prefix("http://127.0.0.1:7860/tts", "/tts", scope) == "http://127.0.0.1:7860/tts/"
    assert location_under_prefix("/gradio_api/info", "/tts", scope) == "/tts/gradio_api/info"


@pytest.mark.parametrize("path", ["tts/", ""])
def test_a_cancel_is_one_only_on_its_own_route(app, path):
    """The cancel guard took any path ending in /gradio_api/cancel for a cancel: an unroutable one
    was answered 401 "Not authenticated" without --auth (helper-74). Gradio's 404 now; under the
    prefix the cancel is still checked (an id no one has: the guard's 404 and message)."""
    body = {"session_hash": "x" * 12, "fn_index": 0, "event_id": "0" * 32}
    r = httpx.post(app.url + "elsewhere/gradio_api/cancel", json=body, timeout=10)
    assert r.status_code == 404 and "No request with that event id" not in r.text, (r.status_code, r.text)
    r = httpx.post(app.url + path + "gradio_api/cancel", json=body, headers=PREFIX, timeout=10)
    assert r.status_code == 404 and "No request with that event id" in r.text, (r.status_code, r.text)


def test_a_page_at_the_proxys_address_is_its_own_origin(app):
    """Behind a proxy named by --forwarded-allow-ips, a page at the address the proxy names in
    X-Forwarded-Host is the app's own (the Host the proxy sends may be the app's address)."""
    headers = {"Origin": "https://voices.example.org", "X-Forwarded-Host": "voices.example.org"}
    r = httpx.post(app.url + "gradio_api/call/status", headers=headers, json={"data": []}, timeout=30)
    assert r.status_code == 200 and "event_id" in r.json(), r.text
    r = httpx.post(app.url + "gradio_api/call/status", headers={**headers, "X-Forwarded-Host": "evil.example"},
                   json={"data": []}, timeout=30)
    assert r.status_code == 403 and "only from its own page" in r.json()["detail"], r.text
