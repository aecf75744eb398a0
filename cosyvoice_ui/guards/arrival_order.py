"""ASGI middleware: each ``POST .../queue/join`` is numbered as it arrives, for its session.

Gradio starts the events of one session in its own time: an event carrying a file (the prompt)
goes through Gradio's file handling first and started after a later press without one, so a
tab's third Generate ran before its second and the page kept the older result under the newer
text (helper-52). The number, taken here in arrival order, travels in a request header
(:data:`ARRIVAL_HEADER`) that Gradio hands to the handler with the request; the synthesis
service then queues a session's requests in that order (``SynthesisService.turn``).

A join with an empty ``session_hash`` is refused here (400): Gradio files its event under the
event's own id and its messages under "", so its lookup failed (KeyError), the caller got a 404
naming a random id as an ``fn_index`` and the log a traceback (helper-76). So is one longer than
:data:`MAX_SESSION_CHARS`: Gradio keeps every session's list of unanswered events, keyed by the
hash, until its stream reads them, and unread joins with 1 MB hashes grew the web process by
1.1 GB in a minute, for good (helper-82); every so many joins, the lists of sessions whose
messages Gradio's own LRU has already dropped (answers no one can read any more) are dropped too
(``forget``). A join of one of the page's browser-only events (no server function) is refused
too: Gradio queued it and logged a 14-line traceback for each (helper-82: 4,500 joins, 3.7 MB of log).
"""

from __future__ import annotations

import json

from .asgi_requests import answer_json, read_body, replay, with_length

ARRIVAL_HEADER = "x-cosyvoice-ui-arrival"
_HEADER = ARRIVAL_HEADER.encode()
MAX_SESSION_CHARS = 128  # the page's are 11 characters, gradio_client's 36 (a UUID)
LONG_SESSION = (f"The session_hash is longer than {MAX_SESSION_CHARS} characters: send a short random id "
                "(gradio_client and the page make one of 11-36 characters).")
_FORGET_EVERY = 64  # joins
EMPTY_SESSION = ("The session_hash is empty: a join needs an id of its own for its session, the same one the "
                 "client then reads with GET /gradio_api/queue/data?session_hash=... (gradio_client and the page "
                 "make one; any random string of letters and digits does).")


class NumberArrivals:
    """Pure ASGI middleware.

    Args:
        app: the ASGI app inside.
        arrived: ``arrived(session_hash) -> int``: registers a request of that session and returns
            its number (``SynthesisService.arrived``).
        numbered: the ``fn_index`` values of the events to number (the synthesis events; filled in
            once the page is built). Others (Restart, Free cache) are not synthesis requests: a
            number no synthesis handler takes would hold the session's next request for a while.
        browser_only: the ``fn_index`` values of events with no server function (filled in with
            ``numbered``).
        forget: called every :data:`_FORGET_EVERY` joins to drop Gradio's lists of unanswered
            events that can no longer be read (``server._forget_unreadable_sessions``).
    """

    def __init__(self, app, arrived, numbered: set[int], browser_only: set[int] = frozenset(),
                 forget=lambda: None) -> None:
        self.app, self.arrived, self.numbered, self.forget = app, arrived, numbered, forget
        self.browser_only = browser_only
        self._joins = 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Only this middleware sets the header: one a client sends is dropped.
        scope = {**scope, "headers": [(k, v) for k, v in scope.get("headers", []) if k.lower() != _HEADER]}
        if not (scope["method"] == "POST" and scope.get("path", "").rstrip("/").endswith("/queue/join")):
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        try:
            payload = json.loads(body)
            session, fn_index = payload.get("session_hash"), payload.get("fn_index")
        except (ValueError, AttributeError):
            session = fn_index = None  # Gradio answers a malformed body itself
        if session == "":
            await answer_json(send, 400, EMPTY_SESSION)
            return
        if isinstance(session, str) and len(session) > MAX_SESSION_CHARS:
            await answer_json(send, 400, LONG_SESSION)
            return
        if isinstance(fn_index, int) and fn_index in self.browser_only:
            await answer_json(send, 404, f"The event with fn_index {fn_index} runs in the browser only; the "
                                         "server has nothing to run for it. Call the endpoints listed at "
                                         "GET /gradio_api/info by name.")
            return
        self._joins += 1
        if self._joins % _FORGET_EVERY == 0:
            self.forget()
        if isinstance(session, str) and session and isinstance(fn_index, int) and fn_index in self.numbered:
            scope["headers"].append((_HEADER, str(self.arrived(session)).encode()))
        await self.app(with_length(scope, len(body)), replay(body, receive), send)
