"""ASGI middleware: a cancel ends only the event it names.

Gradio's ``POST /gradio_api/cancel`` (``{"session_hash", "fn_index", "event_id"}``, sent by
``gradio_client``'s ``Job.cancel()``) cancels every running task of that function in that
session (``gradio.utils.cancel_tasks({f"{session_hash}_{fn_index}"})``), and answers only the
named event. A client with two ``/synthesize`` jobs that cancelled one lost the other: its
request ran to the end in the worker, but the result never reached the client, which waited
forever (fourth newcomer session).

Here the caller must pass Gradio's login check (``--auth``; Gradio's /cancel checks none: in the
fifth newcomer session a cancel without credentials ended another user's job), then the named event's own task is
cancelled (Gradio names it
``"{session_hash}_{fn_index}<gradio-sep>{event_id}"``), then the request goes on to Gradio
with an ``fn_index`` that matches no task, so the rest of Gradio's handler (dequeue the event if
it is still waiting, answer its client, close its iterator) runs for that event alone.

A cancel that names another session's event, or one Gradio does not know (finished, never
made), is refused (404; Gradio answered success for any id). The task name carries the session,
but Gradio's dequeue and iterator close go by event id alone, so a stranger holding an event id
ended a waiting request, whose client was told it completed with no audio (or, in a race, it ran
again from the start: two ledger records; helper-69). A REST call's event is refused too: its
session is its id, so the id alone would do (helper-95); its caller closes its GET instead.
"""

from __future__ import annotations

import asyncio
import json
import logging

from .asgi_requests import answer_json, logged_in, read_json, replay, route_path, with_length

log = logging.getLogger(__name__)

_NO_FUNCTION = -1  # an fn_index no task carries
NOT_YOURS = ("No request with that event id in this session (it may have finished already): a cancel "
             "names a waiting or running event that this session_hash submitted (gradio_client's Job.cancel() "
             "does so).")


REST_CALL = ("That event id is a REST call's (POST /gradio_api/call/<name>): it is not cancelled through "
             "/gradio_api/cancel. Its caller ends it by closing its GET /gradio_api/call/<name>/<event_id>.")


class PreciseCancel:
    """Pure ASGI middleware; anything that is not a well-formed cancel passes through untouched.

    Args:
        app: the ASGI app below.
        owner_of: ``owner_of(event_id)`` is the ``session_hash`` that submitted the event while
            Gradio still knows it (waiting or running), else None.
        on_cancel: called with the event id of a cancel about to be carried out, so that a handler
            still checking its request (a prompt decoding) does not queue it (helper-146).
    """

    def __init__(self, app, owner_of=lambda event_id: None, on_cancel=lambda event_id: None) -> None:
        self.app, self.owner_of, self.on_cancel = app, owner_of, on_cancel

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or route_path(scope) != "/gradio_api/cancel":
            await self.app(scope, receive, send)
            return
        body, payload = await read_json(receive, scope)
        if payload is not None and not {"session_hash", "fn_index", "event_id"} <= payload.keys():
            payload = None  # Gradio answers a malformed body (422)
        if payload is not None:
            if not await logged_in(self.app, scope, "/gradio_api/cancel"):
                await answer_json(send, 401, "Not authenticated")
                return
            owner = self.owner_of(str(payload["event_id"]))
            # An unknown id too: Gradio answered {"success": true} for it, so a caller was told a
            # cancel worked that did nothing, and the two answers told an outsider which ids were live.
            if owner != payload["session_hash"]:  # None too: an id Gradio does not know
                await answer_json(send, 404, NOT_YOURS)
                return
            if owner == payload["event_id"]:
                # A REST call's session is its event id, so the id alone was enough: anyone holding
                # it ended the call, whose GET then said "complete" with no result (helper-95).
                await answer_json(send, 404, REST_CALL)
                return
            self.on_cancel(str(payload["event_id"]))  # before the task: its handler runs until its next step
            cancelled = await cancel_task_named(
                f"{payload['session_hash']}_{payload['fn_index']}<gradio-sep>{payload['event_id']}")
            log.debug("cancel of event %s: %d running task(s) cancelled", payload["event_id"], cancelled)
            body = json.dumps({**payload, "fn_index": _NO_FUNCTION}).encode()
        await self.app(with_length(scope, len(body)), replay(body, receive), send)


async def cancel_task_named(name: str) -> int:
    """Cancel the running asyncio tasks called ``name`` and wait until they have unwound (as
    Gradio's ``cancel_tasks`` does: the rest of Gradio's handler deletes what their cleanup
    still uses); returns how many there were."""
    tasks = [t for t in asyncio.all_tasks() if t.get_name() == name]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return len(tasks)

