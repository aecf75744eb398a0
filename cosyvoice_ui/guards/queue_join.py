"""ASGI middleware: a ``POST .../queue/join`` that Gradio would mishandle is refused at the door,
and Gradio's lists of answers no one can read are pruned as joins arrive.

- An empty ``session_hash`` (400): Gradio files its event under the event's own id and its
  messages under "", so its lookup failed (KeyError), the caller got a 404 naming a random id as
  an ``fn_index`` and the log a traceback (helper-76).
- A join of one of the page's browser-only events (no server function; 404): Gradio queued it
  and logged a 14-line traceback for each (helper-82: 4,500 joins, 3.7 MB of log).

A ``session_hash`` too long is refused before this, by the rule of every route that names a
session (``call_bodies.py``). Every :data:`FORGET_EVERY` joins, the lists of sessions whose
messages Gradio's own LRU has already dropped (answers no one can read any more) are dropped too
(``forget``).
"""

from __future__ import annotations

from .asgi_requests import answer_json, lax_int, read_json, replay, with_length

FORGET_EVERY = 64  # joins
EMPTY_SESSION = ("The session_hash is empty: a join needs an id of its own for its session, the same one the "
                 "client then reads with GET /gradio_api/queue/data?session_hash=... (gradio_client and the page "
                 "make one; any random string of letters and digits does).")


def is_join(scope) -> bool:
    """True for an HTTP ``POST`` to Gradio's ``.../queue/join``."""
    return (scope["type"] == "http" and scope["method"] == "POST"
            and scope.get("path", "").rstrip("/").endswith("/queue/join"))


def join_fields(payload: dict | None) -> tuple[object, int | None]:
    """A join body's ``session_hash`` (as sent) and its ``fn_index`` read as Gradio reads it
    (pydantic's lax int: ``"5"``, ``5.0`` and ``"5.0"`` are 5), or None when it is none. A string
    skipped the checks and the arrival numbering, and still ran (helper-82)."""
    if not payload:
        return None, None
    return payload.get("session_hash"), lax_int(payload.get("fn_index"))


class RefuseUnusableJoins:
    """Pure ASGI middleware; anything that is not a join passes through untouched.

    Args:
        app: the ASGI app inside.
        browser_only: the ``fn_index`` values of events with no server function (filled in once
            the page is built).
        forget: called every :data:`FORGET_EVERY` joins to drop Gradio's lists of unanswered
            events that can no longer be read (``server._forget_unreadable_sessions``).
    """

    def __init__(self, app, browser_only: set[int] = frozenset(), forget=lambda: None) -> None:
        self.app, self.browser_only, self.forget = app, browser_only, forget
        self._joins = 0

    async def __call__(self, scope, receive, send) -> None:
        if not is_join(scope):
            await self.app(scope, receive, send)
            return
        body, payload = await read_json(receive, scope)
        session, fn_index = join_fields(payload)
        if session == "":
            await answer_json(send, 400, EMPTY_SESSION)
            return
        if fn_index in self.browser_only:
            await answer_json(send, 404, f"The event with fn_index {fn_index} runs in the browser only; the "
                                         "server has nothing to run for it. Call the endpoints listed at "
                                         "GET /gradio_api/info by name.")
            return
        self._joins += 1
        if self._joins % FORGET_EVERY == 0:
            self.forget()
        await self.app(with_length(scope, len(body)), replay(body, receive), send)
