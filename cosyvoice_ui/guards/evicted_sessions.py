"""Gradio's table of sessions forgets a session whose request waits or runs last, and a message
for a session it has forgotten is kept, not a crash of Gradio's queue.

Gradio keeps each session's outgoing messages in an LRU of 2,000 sessions
(``Queue.pending_messages_per_session``) and forgot the oldest one as a new one joined, whether or
not it still had a request waiting or running. ``Queue.send_message`` then raised KeyError for it:
inside the loop that starts events (its estimate broadcast) that ended the loop, and from then on
every request of every user was answered 503 "Queue is stopped." while ``/healthz`` said ok
(helper-107: one client sent 3,000 REST calls, 30 at a time, and never read the results; 3 runs of
3). Inside an event's task it lost that event's result, and a visitor whose session was forgotten
while their request ran lost it ("session not found").

Here, when the table is full, the session forgotten is the oldest with nothing pending (a page
whose requests are done), else the oldest whose requests have all ended but whose results were
never read (unread REST calls, or joins whose stream was never opened: each stays "pending" in
Gradio for good, so its entry among Gradio's pending ids goes with it), else the oldest. A session
whose request waits or runs is forgotten only when every session in the table has one. A message
for a session forgotten all the same starts its message queue again, and is counted in the log (at
most one line a minute). Gradio's table of pending ids answers a session it no longer holds with
an empty set: a stream still reading a session forgotten a moment after its request ended looks
its ids up after delivering the result (a KeyError, and an error after the result, otherwise).
"""

from __future__ import annotations

import asyncio
import collections
import logging

from ..log_throttle import OncePerMinute

log = logging.getLogger(__name__)
_installed = False
_evicted = OncePerMinute(log, logging.WARNING,
                         "Gradio had forgotten the session of a waiting or running request (it keeps 2,000 sessions, "
                         "and as many with requests pending had joined since): its messages are kept in a new queue")


def _sessions_table(queue, max_size: int):
    from gradio.utils import LRUCache

    class SessionsKeepingWaitingOnes(LRUCache):
        """Gradio's ``LRUCache`` of session message queues whose eviction spares sessions with
        a request waiting or running (see the module docstring)."""

        def __setitem__(self, key, value) -> None:
            if key in self:
                self.move_to_end(key)
            elif len(self) >= self.max_size:
                victim = self._victim()
                del self[victim]
                # Its ids of requests that ended go too: Gradio drops them only when the result
                # is read, so each unread call kept an entry for good.
                ids = queue.pending_event_ids_session.get(victim)
                if ids is not None and not any(i in queue.event_ids_to_events for i in ids):
                    del queue.pending_event_ids_session[victim]
            collections.OrderedDict.__setitem__(self, key, value)

        def _victim(self) -> str:
            pending, live = queue.pending_event_ids_session, queue.event_ids_to_events
            unread = None
            for session in self:  # oldest first
                ids = pending.get(session)
                if not ids:
                    return session
                if unread is None and not any(i in live for i in ids):
                    unread = session
            return unread if unread is not None else next(iter(self))

    table = SessionsKeepingWaitingOnes(max_size)
    table.update(queue.pending_messages_per_session)
    return table


class PendingIds(dict):
    """Gradio's ``pending_event_ids_session`` (session -> ids of its requests not yet read), where
    a session it no longer holds reads as an empty set (not stored)."""

    def __missing__(self, session: str) -> set:
        return set()


def install() -> None:
    """Give every ``gradio.queueing.Queue`` made from now on the session table above, and wrap
    ``Queue.send_message`` so that a session missing from it gets a new message queue instead of
    a KeyError. Idempotent."""
    global _installed
    if _installed:
        return
    from gradio.queueing import Queue

    init, send_message = Queue.__init__, Queue.send_message

    def init_with_sessions_table(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        self.pending_event_ids_session = PendingIds(self.pending_event_ids_session)
        self.pending_messages_per_session = _sessions_table(self, self.pending_messages_per_session.max_size)

    def send_message_to_any_session(self, event, event_message):
        if event.alive and event.session_hash not in self.pending_messages_per_session:
            _evicted.note()
            self.pending_messages_per_session[event.session_hash] = asyncio.Queue()
        return send_message(self, event, event_message)

    Queue.__init__ = init_with_sessions_table
    Queue.send_message = send_message_to_any_session
    _installed = True
