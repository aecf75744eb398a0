"""Admission by predicted peak memory: refuse or re-split a request that would not fit.

The ledger says how much memory each finished request added on top of what the worker already
held (``peak - memory before``: torch peak allocated on CUDA, RSS on the CPU). Peak activation
memory grows with the longest segment the model sees, so a least-squares line
``extra_bytes = a + b * max_segment_chars`` is fitted to the last records of this engine and
device, refreshed as records arrive. Until there are :data:`MIN_RECORDS` records a conservative
default line is used, but not enforced: a request it would refuse or re-split runs as it is while
any memory is free, or nothing would ever be learned (the embedded voice adds 20-70 MiB, the
default line asks 592 MiB for one short sentence, and on a small machine every request was
refused, for good, or cut into 20-character segments; helper-141). The prediction adds the
fit's largest under-estimate seen so far; from
:data:`MIN_RECORDS_TO_SET_ONE_ASIDE` records on, the single largest is set aside (the second
largest counts). One record far above the rest (a one-off spike, or a line copied from another
machine into ``--ledger``) otherwise padded every prediction: every request was refused, and a
refused request adds no record, so it stayed so, across Restarts and app restarts (helper-111).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from ..inputs.segments import split_text, spoken_chars
from .ledger import Ledger, LedgerRecord

MIB = 2**20
MIN_RECORDS = 5
DEFAULT_INTERCEPT_BYTES = 512 * MIB
DEFAULT_SLOPE_BYTES_PER_CHAR = 4 * MIB
MIN_SEGMENT_CHARS = 20
MIN_RECORDS_TO_SET_ONE_ASIDE = 10


def extra_bytes(record: LedgerRecord) -> int | None:
    peak = record.peak_allocated_bytes if record.peak_allocated_bytes is not None else record.peak_rss_bytes
    if record.outcome != "ok" or peak is None or record.memory_before_bytes is None:
        return None
    return max(0, peak - record.memory_before_bytes)


@dataclasses.dataclass(frozen=True)
class PeakFit:
    intercept_bytes: float
    slope_bytes_per_char: float
    margin_bytes: float  # largest under-prediction on the fitted records (second largest from 10 on)
    records: int
    prior: bool = False  # the default line: too few records to fit one

    def predict(self, max_segment_chars: int) -> int:
        return int(max(0.0, self.intercept_bytes + self.slope_bytes_per_char * max_segment_chars) + self.margin_bytes)


def fit_peak(records: list[LedgerRecord], last: int = 200) -> PeakFit:
    """Fit ``extra = a + b * chars`` to the last ``last`` usable records (see module doc)."""
    pts = [(r.max_segment_chars, e) for r in records[-last:] if (e := extra_bytes(r)) is not None]
    if len(pts) < MIN_RECORDS:
        return PeakFit(DEFAULT_INTERCEPT_BYTES, DEFAULT_SLOPE_BYTES_PER_CHAR, 0.0, len(pts), prior=True)
    x = np.array([c for c, _ in pts], dtype=float)
    y = np.array([e for _, e in pts], dtype=float)
    if len(set(x)) < 2:
        # One length only (an uptime probe's sentence): no slope to fit, so the default one through
        # what was measured. Kept on the default line, admission was never enforced (helper-144).
        slope, intercept = DEFAULT_SLOPE_BYTES_PER_CHAR, float(np.mean(y)) - DEFAULT_SLOPE_BYTES_PER_CHAR * x[0]
    else:
        try:
            with np.errstate(all="ignore"):
                slope, intercept = np.polyfit(x, y, 1)
        except (np.linalg.LinAlgError, ValueError):
            slope = intercept = float("nan")
    if not (math.isfinite(slope) and math.isfinite(intercept)):  # no line through these points: the safe prior
        return PeakFit(DEFAULT_INTERCEPT_BYTES, DEFAULT_SLOPE_BYTES_PER_CHAR, 0.0, len(pts), prior=True)
    slope = max(slope, 0.0)  # memory does not shrink with longer text
    # The line stays fitted to every point (a spike pulls it up a little); only the pad sets one aside.
    residuals = np.sort(y - (intercept + slope * x))
    margin = float(residuals[-2] if len(residuals) >= MIN_RECORDS_TO_SET_ONE_ASIDE else residuals[-1])
    return PeakFit(float(intercept), float(slope), max(margin, 0.0), len(pts))


@dataclasses.dataclass(frozen=True)
class Decision:
    segments: tuple[str, ...]
    predicted_peak_bytes: int
    available_bytes: int
    resplit_to_chars: int | None = None


class AdmissionError(Exception):
    """The request cannot fit even in the smallest segments; ``str()`` gives needed vs available."""


class Admission:
    """Checks requests against the free memory of the worker's device.

    Args:
        ledger: the records to fit.
        available_bytes: returns the memory a request may use now: free memory of the worker's
            device minus the reserve (see :func:`available_memory`).
        engine / device: which ledger records count (device as the worker reports it).
    """

    def __init__(self, ledger: Ledger, available_bytes: Callable[[], int | None]) -> None:
        self.ledger = ledger
        self.available_bytes = available_bytes

    def fit(self) -> PeakFit:
        return fit_peak(self.ledger.records())

    def check(self, segments: tuple[str, ...]) -> Decision:
        """Admit as is, admit re-split into shorter segments, or raise :class:`AdmissionError`. On the
        default line (:attr:`PeakFit.prior`), admit as is while any memory is available (see the
        module docstring)."""
        fit = self.fit()
        available = self.available_bytes()
        longest = max(spoken_chars(s) for s in segments)
        predicted = fit.predict(longest)
        if available is None or predicted <= available or (fit.prior and available > 0):
            return Decision(segments, predicted, available if available is not None else -1)
        limit = longest
        while limit > MIN_SEGMENT_CHARS:
            limit = max(MIN_SEGMENT_CHARS, limit // 2)
            if fit.predict(limit) <= available:
                resplit = tuple(p for s in segments for p in split_text(s, limit))
                return Decision(resplit, fit.predict(max(spoken_chars(s) for s in resplit)), available, limit)
        raise AdmissionError(
            f"Not enough free memory for this request: it needs about {predicted / MIB:,.0f} MiB, "
            f"{max(available, 0) / MIB:,.0f} MiB is available (after the reserve), and even "
            f"shorter segments would need {fit.predict(MIN_SEGMENT_CHARS) / MIB:,.0f} MiB. "
            "Try again when other work on this machine has freed memory, or lower --memory-reserve.")


def available_memory(status: Callable[[], dict], gpus: Callable[[], list], reserve_fraction: float) -> Callable[[], int | None]:
    """Memory a request may use now, for :class:`Admission`.

    On CUDA: NVML free bytes of the worker's GPU plus the worker's cached-but-unallocated memory
    (its allocator reuses that first), minus ``reserve_fraction`` of the card. On the CPU: the
    host's available memory (psutil) minus ``reserve_fraction`` of the total. ``None`` when the
    figure cannot be read (then nothing is refused).
    """
    import psutil

    def read() -> int | None:
        s = status()
        device = str(s.get("device") or "cpu")
        if device.startswith("cuda"):
            index = int(device.partition(":")[2] or 0)
            match = [g for g in gpus() if g.index == index]
            if not match:
                return None
            g = match[0]
            mem = s.get("memory") or {}
            cached = max(0, (mem.get("reserved_bytes") or 0) - (mem.get("allocated_bytes") or 0))
            return int(g.total_bytes - g.used_bytes + cached - reserve_fraction * g.total_bytes)
        vm = psutil.virtual_memory()
        return int(vm.available - reserve_fraction * vm.total)

    return read
