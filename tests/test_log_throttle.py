"""What a client can make happen is logged at most once a minute per kind, with a count, and the
count is written even when no more come (cosyvoice_ui/log_throttle.py)."""

from __future__ import annotations

import logging
import time

from cosyvoice_ui.log_throttle import OncePerMinute, OncePerMinuteByKind


def _records_after(caplog, want: int, timeout_s: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while len(caplog.records) < want and time.monotonic() < deadline:
        time.sleep(0.05)
    return [r.getMessage() for r in caplog.records]


def test_a_burst_is_one_line_then_its_count_without_another_occurrence(caplog):
    throttle = OncePerMinute(logging.getLogger("throttle-test"), logging.WARNING, "refused %s", every_s=0.3)
    with caplog.at_level(logging.WARNING, logger="throttle-test"):
        for i in range(50):
            throttle.note(f"request {i}")
        lines = _records_after(caplog, 2)  # the flusher looks every few seconds
    # The first line is one occurrence, and says no count (it said "(1 since the last such line)").
    assert lines == ["refused request 0",
                     "refused request 49 (49 since the last such line)"], lines


def test_kinds_are_counted_apart_and_the_ones_past_the_limit_together(caplog):
    throttle = OncePerMinuteByKind(logging.getLogger("throttle-kinds"), logging.INFO, "refused %s", max_kinds=2)
    with caplog.at_level(logging.INFO, logger="throttle-kinds"):
        for _ in range(20):
            for kind in ("a", "b", "c", "d"):
                throttle.note(kind, kind)
    lines = [r.getMessage() for r in caplog.records]
    # a and b have a line each; c and d share the third throttle, whose first line is c's.
    assert lines == ["refused a", "refused b", "refused c"], lines
