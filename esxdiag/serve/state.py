"""What `serve` knows now, per vCenter: the last good fleet report, how the last cycle went, the
counters since start, and each VM's last deep check. /metrics and the web pages read it; only the
cycle threads write it.

Entries are immutable: a cycle builds a new entry and swaps it in under the lock, so a reader
holds a consistent view (one document, its deep checks, its status) without locking while it
renders. A failed cycle keeps the last good document: its figures stay, marked stale, but no deep
check in it is shown past --proof-max-age: an entry read after its oldest shown check expired is
judged again without it (esxdiag.scanning.proofs.expire) and swapped in, whatever the vCenter's state.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from esxdiag.fleet.model import FleetReport, FleetRow
from esxdiag.scanning.deep import DeepCheck
from esxdiag.scanning.proofs import expire, shown_until, unproven_rows


@dataclass(frozen=True)
class Expiry:
    """What a good cycle's document needs to be shown without a deep check once it expires."""

    unproven: Mapping[tuple[str, str], FleetRow]  # each row showing a check, as its vCenter counters alone judge it
    max_age_s: float
    until: float | None  # epoch: when the oldest deep check shown passes max_age_s (None: none shown)

    @classmethod
    def of(cls, report: FleetReport, snapshot, thresholds: dict, max_age_s: float) -> "Expiry":
        return cls(MappingProxyType(unproven_rows(report, snapshot, thresholds)), max_age_s,
                   shown_until(report, max_age_s))


@dataclass(frozen=True)
class VcenterState:
    name: str  # host:port, as in the snapshot
    url: str
    interval_s: float
    tls_verified: bool = True  # False: --insecure or its like, no thumbprint pinned
    document: FleetReport | None = None  # the last good cycle's fleet report (this vCenter only)
    good_ts: float | None = None  # epoch: when the last good cycle ended
    last_ts: float | None = None  # epoch: when the last cycle ended
    last_ok: bool | None = None  # None: no cycle finished yet
    last_error: str | None = None
    last_error_kind: str | None = None
    last_seconds: float | None = None  # the last cycle's wall time (scan, analysis, deep check, history)
    last_scan_seconds: float | None = None  # the API pass alone, as the snapshot measured it
    last_requests: int | None = None
    last_vms: int | None = None
    running: bool = False
    running_since_ts: float | None = None  # epoch: when the cycle now running started
    cycles: int = 0  # cycles finished, good or not
    failures: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))  # by error kind
    skipped: int = 0  # cycles not started because the one before was still running
    overran: int = 0  # cycles that ran longer than the interval (each call is bounded; their sum is not)
    requests: int = 0  # SOAP requests since start
    deep_checked: int = 0  # VMs deep-checked since start
    deep_host_errors: int = 0  # deep-check hosts that could not be sampled since start
    deep: Mapping[str, DeepCheck] = field(default_factory=lambda: MappingProxyType({}))  # by MOID
    expiry: Expiry | None = None  # the document's deep checks' age limit (None: none to check)

    @property
    def stale(self) -> bool:
        """The figures shown are from an older cycle: the last one failed."""
        return self.document is not None and self.last_ok is False

    def overdue_s(self, now: float) -> float:
        """How long the running cycle has run past its interval (its figures older than they should
        be, its next cycle late), 0 when none is running or it is within its interval."""
        if not self.running or self.running_since_ts is None:
            return 0.0
        return max(0.0, now - self.running_since_ts - self.interval_s)


def expired(entry: VcenterState, now: float) -> VcenterState:
    """The entry as it may be shown at ``now``: no deep check older than --proof-max-age, in its
    document (the VM judged on its vCenter counters again) nor in its deep checks."""
    x = entry.expiry
    if x is None or x.until is None or now <= x.until or entry.document is None:
        return entry
    document = expire(entry.document, x.unproven, now, x.max_age_s)
    deep = MappingProxyType({m: c for m, c in entry.deep.items() if now - c.checked_ts <= x.max_age_s})
    return dataclasses.replace(entry, document=document, deep=deep,
                               expiry=dataclasses.replace(x, until=shown_until(document, x.max_age_s)))


class State:
    def __init__(self, entries: list[VcenterState], clock=time.time):
        self._lock = threading.Lock()
        self.clock = clock  # wall time: when a shown deep check expires
        self._entries = {e.name: e for e in entries}
        self.started_ts: float | None = None
        self.history_error: str | None = None  # the last history write failed: why
        self.history_written_ts: float | None = None  # when a cycle last wrote the history
        self.history_errors = 0  # cycles whose history write failed

    def note_history(self, error: str | None, ts: float) -> None:
        with self._lock:
            self.history_error = error
            if error is None:
                self.history_written_ts = ts
            else:
                self.history_errors += 1

    def names(self) -> list[str]:
        return list(self._entries)

    def _current(self, name: str) -> VcenterState:
        """The entry, its expired deep checks taken out first (under the lock)."""
        entry = self._entries[name]
        shown = expired(entry, self.clock())
        if shown is not entry:
            self._entries[name] = shown
        return shown

    def get(self, name: str) -> VcenterState:
        with self._lock:
            return self._current(name)

    def views(self) -> list[VcenterState]:
        with self._lock:
            return [self._current(name) for name in list(self._entries)]

    def update(self, name: str, **changes) -> VcenterState:
        with self._lock:
            entry = dataclasses.replace(self._current(name), **changes)
            self._entries[name] = entry
            return entry

    def count_failure(self, name: str, kind: str, **changes) -> None:
        with self._lock:
            entry = self._current(name)
            failures = dict(entry.failures)
            failures[kind] = failures.get(kind, 0) + 1
            self._entries[name] = dataclasses.replace(entry, failures=MappingProxyType(failures), **changes)

    def add(self, name: str, **increments: int) -> None:
        """Add to counters (skipped, requests, deep_checked, deep_host_errors)."""
        with self._lock:
            entry = self._current(name)
            self._entries[name] = dataclasses.replace(
                entry, **{k: getattr(entry, k) + v for k, v in increments.items()})


def keep_deep(previous: Mapping[str, DeepCheck], fresh: list[DeepCheck], report: FleetReport, now: float,
              max_age_s: float, retired: frozenset = frozenset()) -> Mapping[str, DeepCheck]:
    """The deep checks to show after a good cycle: this cycle's, else the previous one's when it is
    younger than max_age_s and not retired; only for VMs still in the document (gone VMs disappear)."""
    present = {r.moid for r in report.rows}
    kept = {moid: c for moid, c in previous.items() if moid in present and moid not in retired and
            now - c.checked_ts <= max_age_s}
    kept.update({c.moid: c for c in fresh if c.moid in present})
    return MappingProxyType(kept)
