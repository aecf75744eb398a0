"""Durations as a person reads them in a message: "45 s", "5 minutes", "1 hour", "2.5 hours"."""

from __future__ import annotations


def duration_text(seconds: float) -> str:
    """``seconds`` (>= 0) in words: under 2 minutes in seconds ("45 s", "1.5 s"), under 2 hours
    in whole minutes ("1 hour" for exactly 3600 s), else in hours to three figures."""
    if seconds < 120:
        return f"{seconds:.3g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 7200:
        return "1 hour" if seconds == 3600 else f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.3g} hours"
