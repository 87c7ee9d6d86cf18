"""Cumulative counters read at both ends of the window: pairing two readings into a
CounterWindow, the real time between them, and MAC normalisation for the joins."""

from __future__ import annotations

from esxdiag.facts import CounterWindow
from esxdiag.parsers.netstats import normalize_mac
from esxdiag.readings import Reading

RX_SUMMARY_RING1 = "# of times the 1st ring is full"
RX_SUMMARY_RING2 = "# of times the 2nd ring is full"
RX_SUMMARY_OOB = "running out of buffers"
RX_SUMMARY_LRO = "LRO pkts rx ok"


def norm_mac(mac: str | None) -> str | None:
    """Lower-case colon form, or None for a missing or malformed MAC (it then joins nothing)."""
    try:
        return normalize_mac(mac) if mac else None
    except ValueError:
        return None


def seconds_between(a: Reading | None, b: Reading | None, fallback: float | None) -> float | None:
    if a is None or b is None:
        return None
    ta, tb = a.capture.time, b.capture.time
    if ta and tb and tb > ta:
        return (tb - ta).total_seconds()
    return fallback


def counter(what: str, start: Reading | None, end: Reading | None, get, seconds: float | None,
            locator: str | None) -> CounterWindow | None:
    """A CounterWindow from two readings and an accessor; None when neither end has the value."""
    vs = get(start.record) if start else None
    ve = get(end.record) if end else None
    if vs is None and ve is None:
        return None
    source = (end or start).file  # type: ignore[union-attr]
    return CounterWindow(what, vs, ve, seconds, source, locator)


def sample_time(reading: Reading | None) -> str | None:
    if reading is None:
        return None
    t = reading.capture.time
    return t.isoformat().replace("+00:00", "Z") if t else None
