"""Admission by predicted peak: the fit, re-splitting, refusing - and through the running app."""

from __future__ import annotations

import pytest

from cosyvoice_ui.monitor.admission import (DEFAULT_INTERCEPT_BYTES, Admission, AdmissionError, fit_peak)
from cosyvoice_ui.monitor.ledger import Ledger, LedgerRecord

MIB = 2**20


def record(chars: int, extra: int, before: int = 300 * MIB) -> LedgerRecord:
    return LedgerRecord(time_s=0, engine="e", device="cpu", text_chars=chars, segments=1, max_segment_chars=chars,
                        prompt_s=None, audio_s=1, synthesis_s=1, real_time_factor=1, peak_allocated_bytes=None,
                        peak_reserved_bytes=None, peak_rss_bytes=before + extra, worker_pid=1, outcome="ok",
                        memory_before_bytes=before)


def test_fit_recovers_the_line_and_never_under_predicts_the_data():
    recs = [record(c, 50 * MIB + c * MIB + (MIB if c % 2 else 0)) for c in (20, 40, 60, 81, 100, 151, 200)]
    fit = fit_peak(recs)
    assert fit.slope_bytes_per_char == pytest.approx(MIB, rel=0.05)
    assert fit.intercept_bytes == pytest.approx(50 * MIB, rel=0.1)
    assert all(fit.predict(r.max_segment_chars) >= r.peak_rss_bytes - r.memory_before_bytes for r in recs)


def test_conservative_default_before_records():
    assert fit_peak([]).predict(0) == DEFAULT_INTERCEPT_BYTES
    assert fit_peak([record(100, MIB)] * 3).records == 3  # too few: still the default
    assert fit_peak([record(100, MIB)] * 3).predict(100) > 100 * MIB


def _admission(available_mib):
    ledger = Ledger()
    for c in (25, 50, 100, 200, 400):
        ledger.add(record(c, 10 * MIB + c * MIB))
    return Admission(ledger, lambda: available_mib * MIB)


def test_fits_as_is():
    d = _admission(10_000).check(("x" * 200,))
    assert d.resplit_to_chars is None and d.segments == ("x" * 200,)


def test_resplits_when_smaller_segments_fit():
    text = "Word " * 80
    d = _admission(120).check((text.strip(),))
    assert d.resplit_to_chars is not None and d.resplit_to_chars <= 100
    assert all(len(s) <= d.resplit_to_chars for s in d.segments)
    assert d.predicted_peak_bytes <= 120 * MIB


def test_refuses_with_needed_and_available():
    with pytest.raises(AdmissionError) as e:
        _admission(15).check(("x" * 200,))
    message = str(e.value)
    assert "needs about 210 MiB" in message and "15 MiB is available" in message


def test_the_default_line_is_not_enforced_while_memory_is_free():
    """The default line asks 592 MiB for one short sentence; the embedded voice adds 20-70 MiB. With
    less free, every request was refused (or cut into 20-character segments), and a refused request
    adds no record, so nothing was ever learned (helper-141). Until a line is fitted, a request runs
    as it is while any memory is free; with none free, it is refused."""
    text = ("A sentence of about forty characters here.",)
    decision = Admission(Ledger(), lambda: 300 * MIB).check(text)
    assert decision.segments == text and decision.resplit_to_chars is None, decision
    with pytest.raises(AdmissionError):
        Admission(Ledger(), lambda: -MIB).check(text)
    fitted = _admission(15)  # five records: the fitted line is enforced
    with pytest.raises(AdmissionError):
        fitted.check(("x" * 200,))
    # Records of one length only (an uptime probe's sentence) kept the default line, so admission
    # was never enforced again (helper-144): the default slope goes through what was measured.
    probe = Ledger()
    for _ in range(500):
        probe.add(record(42, 30 * MIB))
    fit = Admission(probe, lambda: None).fit()
    assert not fit.prior and fit.predict(42) == 30 * MIB, fit
    decision = Admission(probe, lambda: 50 * MIB).check(("x" * 190 + ".",))  # 626 MiB predicted as is
    assert decision.resplit_to_chars is not None and decision.predicted_peak_bytes <= 50 * MIB, decision


def test_one_record_far_above_the_rest_does_not_refuse_every_request():
    """One "ok" record of 20 GiB among 98 (a line copied into --ledger, or a one-off spike) padded
    every prediction: every request was refused, for good, as refusals add no records (helper-111).
    From 10 records the largest under-estimate is set aside; a spike seen twice still counts."""
    ledger = Ledger()
    for c in (25, 50, 100, 200, 400) * 4:
        ledger.add(record(c, 10 * MIB + c * MIB))
    ledger.add(record(100, 20 * 1024 * MIB))
    admission = Admission(ledger, lambda: 18_000 * MIB)
    decision = admission.check(("x" * 200,))
    assert decision.resplit_to_chars is None and decision.predicted_peak_bytes < 3_000 * MIB, decision
    ledger.add(record(100, 20 * 1024 * MIB))  # twice: a real pattern, padded for
    with pytest.raises(AdmissionError, match="Not enough free memory"):
        admission.check(("x" * 200,))
    few = Ledger()  # under 10 records every under-estimate counts
    for c in (25, 50, 100, 200, 400):
        few.add(record(c, 10 * MIB + c * MIB))
    few.add(record(100, 20 * 1024 * MIB))
    with pytest.raises(AdmissionError):
        Admission(few, lambda: 18_000 * MIB).check(("x" * 200,))


def test_running_app_refuses_when_reserve_leaves_nothing():
    from gradio_client import Client

    from .conftest import RunningApp

    app = RunningApp("--memory-reserve", "0.999")
    try:
        app.wait_healthy()
        client = Client(app.url, verbose=False)
        with pytest.raises(Exception, match="Not enough free memory.*needs about"):
            client.predict(text="Hello there.", api_name="/synthesize")
        assert client.predict(api_name="/status")["state"] == "ready"
    finally:
        app.stop()


def test_ledger_file_is_read_back_for_this_engine_and_device(tmp_path):
    """Admission started from its conservative prior after every start, though --ledger held
    what earlier runs measured (twenty-first newcomer session). Only records of the same engine
    and device count; lines that are not records are skipped."""
    import dataclasses
    import json

    path = tmp_path / "ledger.jsonl"
    rows = [record(c, 10 * MIB + c * MIB) for c in (25, 50, 100, 200, 400)]
    rows += [dataclasses.replace(rows[0], device="cuda:0"), dataclasses.replace(rows[1], engine="cosyvoice")]
    lines = [json.dumps(dataclasses.asdict(r)) for r in rows]
    lines[3:3] = ["not json", "[1, 2]", '{"outcome": "ok"}']
    path.write_text("\n".join(lines) + '\n{"time_s": 5, "engine": "e", "trunc')
    ledger = Ledger(path=str(path))
    ledger.add(record(30, 40 * MIB))  # one of this run, before the read-back
    assert ledger.read_back("e", "cpu") == 5 and ledger.read_back_others == 2  # the cuda:0 and cosyvoice ones
    assert Ledger(path=str(path)).read_back("e", "cuda:0") == 1
    kept = ledger.records()
    assert [r.max_segment_chars for r in kept] == [25, 50, 100, 200, 400, 30]  # oldest first, this run's last
    fit = Admission(ledger, lambda: None).fit()
    assert fit.records == 6 and fit.predict(100) < DEFAULT_INTERCEPT_BYTES
    assert Ledger(path=str(tmp_path / "none.jsonl")).read_back("e", "cpu") == 0


def test_running_app_reads_its_ledger_back_at_start(tmp_path, monkeypatch):
    import json

    from gradio_client import Client

    from .conftest import serving

    monkeypatch.setenv("FAULT_ENGINE_DIR", str(tmp_path))
    ledger = tmp_path / "ledger.jsonl"
    flags = ("--engine", "tests.fault_engines:FaultEngine", "--ledger", str(ledger))
    with serving(*flags) as app:
        client = Client(app.url, verbose=False)
        for n in (10, 20, 40, 80, 120, 160):
            client.predict(text="a" * n, api_name="/synthesize")
        first = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert first[0]["predicted_peak_bytes"] >= DEFAULT_INTERCEPT_BYTES  # the prior, with nothing learned
    with serving(*flags) as app:
        assert "read back 6 earlier record(s) of tests.fault_engines:FaultEngine on cpu" in app.log_path.read_text()
        Client(app.url, verbose=False).predict(text="after the restart", api_name="/synthesize")
    last = json.loads(ledger.read_text().splitlines()[-1])
    assert last["predicted_peak_bytes"] < DEFAULT_INTERCEPT_BYTES, last  # fitted on the last run's records


def test_damaged_ledger_lines_are_skipped_when_read_back(tmp_path, caplog):
    """One edited line ("peak_rss_bytes": "lots", a null length, 1e308) made every request fail in
    the fit with Python's own error text, /healthz "ok" (twenty-fifth newcomer session)."""
    import dataclasses
    import json
    import logging

    good = [dataclasses.asdict(record(c, 10 * MIB + c * MIB)) for c in (25, 50, 100, 200, 400)]
    bad = [{**good[0], "peak_rss_bytes": "lots"}, {**good[0], "max_segment_chars": None},
           {**good[0], "max_segment_chars": 1e308}, {**good[0], "peak_rss_bytes": True},
           {**good[0], "audio_s": -1}, {**good[0], "engine": 5},
           # A 31-digit pid broke every monitor refresh of the page (Gradio cannot send it), and an
           # integer past a float's range raised OverflowError and stopped the start (helper-152).
           {**good[0], "worker_pid": 10**30}, {**good[0], "prompt_s": 10**400}]
    path = tmp_path / "ledger.jsonl"
    # Nested 3000 deep: json raised RecursionError, which ended the start with the worker loaded
    # and the process alive, serving nothing (forty-seventh newcomer session).
    deep = "[" * 3000 + "]" * 3000
    path.write_text("\n".join([json.dumps(r) for r in good + bad] + [deep]) + "\n")
    ledger = Ledger(path=str(path))
    with caplog.at_level(logging.WARNING, logger="cosyvoice_ui.monitor.ledger"):
        assert ledger.read_back("e", "cpu") == 5
    assert "9 line(s) that are not records were skipped" in caplog.text
    assert Admission(ledger, lambda: None).fit().records == 5


def test_fit_without_a_line_keeps_the_prior():
    """Points no line fits (numerically) keep the conservative prior instead of failing requests."""
    recs = [record(c, MIB) for c in (5, 6, 7, 8)] + [record(float("inf"), MIB)]  # numpy: "SVD did not converge"
    fit = fit_peak(recs)
    assert fit.predict(100) >= DEFAULT_INTERCEPT_BYTES


def test_digits_count_as_the_words_they_are_read_as():
    """Fifteen 12-digit numbers (209 characters) made 111 s of audio in one segment, with a peak
    four times the prediction made from 209 characters (twenty-ninth newcomer session)."""
    numbers = " ".join(["999999999999."] * 15)
    letters = "x" * len(numbers)
    assert _admission(10_000).check((numbers,)).predicted_peak_bytes > 5 * _admission(10_000).check((letters,)).predicted_peak_bytes


def test_symbols_count_as_the_words_they_are_read_as():
    """Forty "≥" in 87 characters were 37 s of audio; a 300-symbol text added twice the memory
    admission predicted (thirty-second newcomer session)."""
    symbols = "Go " + " ".join(["≥"] * 40) + " end."
    letters = "x" * len(symbols)
    assert _admission(10_000).check((symbols,)).predicted_peak_bytes > 5 * _admission(10_000).check((letters,)).predicted_peak_bytes
