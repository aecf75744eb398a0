"""Gradio's queue keeps room for synthesis: each of the page's other queued events (the prompt
check, Restart, Free cache) may hold at most :data:`SIDE_WAITING_MAX` waiting places in it.

Gradio's queue is one list of :data:`server.GRADIO_QUEUE_MAX` places (1000) for every queued event.
Synthesis is bounded by the supervisor's own queue, which answers "busy" at once, so its events
leave Gradio's quickly; nothing bounded the others. helper-146 uploaded one 100 s MP3 and sent
1,040 prompt checks naming it (each decoded it again, 3 s in a child, before refusing it as too
long): the queue stayed full for about 25 minutes, and every Generate, Restart and Free cache got
"Queue is full". 1,020 Free cache calls, each waiting for the running request, did the same.
With this bound, the three of them hold at most 96 places together (``tests/test_queue_room.py``).
The events the page runs outside the queue (the status, the monitor's refresh, the presets) take a
moment each, but anyone can still join them to the queue: 2,500 joins of the monitor's refresh,
32 at a time, refused 20 of 35 Generates with "Queue is full" (helper-147). Together they hold at
most :data:`UNQUEUED_WAITING_MAX` places, enough for a flood of 4,000 unread REST status calls to
reach Gradio's session table (``tests/test_load_faults.py``; at 400, 3,000 calls got 1,837 places
on a loaded machine, short of the 2,000 sessions that test needs). That leaves speech at least 404
of the 1,000. Synthesis events are not limited here.

The bound is kept in ``Queue.push``, which both the page's ``/queue/join`` and the REST
``/call/<name>`` go through; a refusal is Gradio's own "queue full" answer (HTTP 503) with this
message.
"""

from __future__ import annotations

SIDE_WAITING_MAX = 32  # waiting events per concurrency id of a queued event other than synthesis
UNQUEUED_WAITING_MAX = 500  # waiting events of all the page's unqueued events (queue=False) together
UNBOUNDED_HERE = "synthesize"  # the concurrency id the supervisor's queue bounds
# How the refusal names each kind of event (the concurrency ids in ui/layout.py).
_KINDS = {"prompt_check": "prompt checks", "restart": "Restart presses", "free_cache": "Free cache calls"}

_installed = False


def refusal(concurrency_id: str, waiting: int) -> str:
    """The message for a call refused because ``waiting`` events of its kind already wait."""
    kind = _KINDS.get(concurrency_id, f"calls of {concurrency_id!r}")
    return (f"Too many {kind} are waiting already ({waiting}; at most {SIDE_WAITING_MAX} may wait): the queue keeps "
            "its other places for speech requests. Try again in a minute.")


def _unqueued_ids(blocks) -> frozenset:
    """The concurrency ids of ``blocks``' unqueued events, worked out once per page: a flood of
    joins would otherwise walk every event of the page for each call."""
    ids = getattr(blocks, "_cosyvoice_unqueued_ids", None)
    if ids is None:
        ids = frozenset(f.concurrency_id for f in blocks.fns.values() if not f.queue)
        blocks._cosyvoice_unqueued_ids = ids
    return ids


def install() -> None:
    """Wrap ``gradio.queueing.Queue.push``: a call of a queued event whose concurrency id is not
    :data:`UNBOUNDED_HERE` and has :data:`SIDE_WAITING_MAX` events waiting already, or of an
    unqueued one while :data:`UNQUEUED_WAITING_MAX` of those wait, is refused as Gradio refuses one
    when the queue is full. Idempotent."""
    global _installed
    if _installed:
        return
    from gradio import route_utils
    from gradio.queueing import Queue

    push = Queue.push

    async def push_keeping_room_for_synthesis(self, body, request, username):
        try:
            fn = route_utils.get_fn(self.blocks, None, body) if body.fn_index is not None else None
        except Exception:  # noqa: BLE001 - an unknown event: Gradio's own push answers it
            fn = None
        concurrency_id = getattr(fn, "concurrency_id", None)
        if concurrency_id is not None and concurrency_id != UNBOUNDED_HERE:
            if getattr(fn, "queue", True):
                events = self.event_queue_per_concurrency_id.get(concurrency_id)
                waiting = len(events.queue) if events is not None else 0
                if waiting >= SIDE_WAITING_MAX:
                    return False, refusal(concurrency_id, waiting), "queue_full"
            else:
                unqueued = _unqueued_ids(self.blocks)
                waiting = sum(len(events.queue) for cid, events in self.event_queue_per_concurrency_id.items()
                              if cid in unqueued)
                if waiting >= UNQUEUED_WAITING_MAX:
                    return False, (f"Too many status and monitor calls are waiting already ({waiting}): the queue "
                                   "keeps its other places for speech requests. Try again in a minute."), "queue_full"
        return await push(self, body, request, username)

    Queue.push = push_keeping_room_for_synthesis
    _installed = True
