"""Raw HTTP calls to the app's Gradio API, for what ``gradio_client`` will not send: a file
parameter naming a path on the server, or a client that goes away in the middle of a request.

The ``/call/<api_name>`` protocol: ``POST /gradio_api/call/<name>`` with ``{"data": [...]}``
answers an ``event_id``; ``GET /gradio_api/call/<name>/<event_id>`` streams server-sent events
ending in ``event: complete`` (data: the outputs) or ``event: error`` (data: the message).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path


def file_data(path: str) -> dict:
    """A ``gradio.FileData`` payload naming ``path`` as it would be on the server."""
    return {"path": path, "meta": {"_type": "gradio.FileData"}}


def endpoint_data(url: str, api_name: str, **values) -> list:
    """The positional ``data`` list for ``api_name``: ``values`` by parameter name, the endpoint's
    defaults for the rest (so the call keeps working when optional parameters are added)."""
    with urllib.request.urlopen(url + "gradio_api/info", timeout=10) as r:
        info = json.loads(r.read())
    params = info["named_endpoints"]["/" + api_name]["parameters"]
    unknown = set(values) - {p["parameter_name"] for p in params}
    assert not unknown, f"/{api_name} has no parameter {unknown}"
    return [values.get(p["parameter_name"], p.get("parameter_default")) for p in params]


def start_call(url: str, api_name: str, data: list) -> str:
    """POST the call; returns its event id."""
    req = urllib.request.Request(url + f"gradio_api/call/{api_name}", data=json.dumps({"data": data}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())["event_id"]


def open_result_stream(url: str, api_name: str, event_id: str, timeout_s: float):
    """The open SSE response for a started call (closing it is a client disconnect)."""
    return urllib.request.urlopen(url + f"gradio_api/call/{api_name}/{event_id}", timeout=timeout_s)


def parse_sse(text: str) -> tuple[str | None, str]:
    """The last ``(event, data)`` of a server-sent-event stream."""
    event, data = None, ""
    for line in text.splitlines():
        if line.startswith("event:"):
            event = line[len("event:"):].strip()
        elif line.startswith("data:"):
            data = line[len("data:"):].strip()
    return event, data


def call(url: str, api_name: str, timeout_s: float = 60.0, **values) -> tuple[str | None, str]:
    """One whole call: ``(event, data)`` where event is ``"complete"`` or ``"error"``."""
    event_id = start_call(url, api_name, endpoint_data(url, api_name, **values))
    with open_result_stream(url, api_name, event_id, timeout_s) as r:
        return parse_sse(r.read().decode("utf-8", "replace"))


def http_get(url: str, timeout_s: float = 10.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def files_under(folder: Path) -> dict[str, int]:
    """Every regular file below ``folder``: relative path -> size in bytes."""
    out = {}
    for root, _dirs, names in os.walk(folder):
        for name in names:
            p = Path(root) / name
            try:
                out[str(p.relative_to(folder))] = p.stat().st_size
            except FileNotFoundError:
                pass
    return out


def queue_calls(url: str, api_name: str, data: list, times: int = 1, timeout_s: float = 60.0) -> list[dict]:
    """``times`` joins of the same call over the page's protocol (``queue/join`` with one session,
    then its ``queue/data`` stream); returns their ``process_completed`` messages, which carry a
    refusal's ``output.title`` (the ``/call`` protocol sends only the message)."""
    return queue_calls_each(url, api_name, [data] * times, timeout_s)


def queue_calls_each(url: str, api_name: str, datas: list[list], timeout_s: float = 60.0) -> list[dict]:
    """One join per entry of ``datas``, in that order, in one session (see :func:`queue_calls`);
    returns the ``process_completed`` messages, each with ``"sent": i``, its index in ``datas``, and
    ``"logs"``: the event's pop-up messages (``gr.Info`` and ``gr.Warning``)."""
    import uuid

    with urllib.request.urlopen(url + "config", timeout=10) as r:
        config = json.loads(r.read())
    fn_index = next(d["id"] for d in config["dependencies"] if d.get("api_name") == api_name)
    session = uuid.uuid4().hex
    sent = {}
    for i, data in enumerate(datas):
        body = json.dumps({"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None,
                           "trigger_id": None}).encode()
        req = urllib.request.Request(url + "gradio_api/queue/join", data=body, headers={"Content-Type": "application/json"})
        sent[json.loads(urllib.request.urlopen(req, timeout=10).read())["event_id"]] = i
    completed, logs = [], {}
    with urllib.request.urlopen(url + f"gradio_api/queue/data?session_hash={session}", timeout=timeout_s) as stream:
        for line in stream:
            if line.startswith(b"data:"):
                message = json.loads(line[len(b"data:"):])
                if message.get("msg") == "log":
                    logs.setdefault(message.get("event_id"), []).append(message.get("log"))
                if message.get("msg") == "process_completed":
                    event = message.get("event_id")
                    completed.append({**message, "sent": sent.get(event), "logs": logs.get(event, [])})
                if len(completed) == len(datas):
                    break
    return completed
