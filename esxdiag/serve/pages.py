"""What serve's web side answers, built from the state (no HTTP here, esxdiag.serve.web serves it).

* the fleet report of every vCenter's last cycle (esxdiag.fleet.merge), rendered through the FLEET
  table: the fleet page at / (each VM linked to its page), /fleet.json, /fleet.csv, /fleet.txt.
  Built again only when a cycle ends, so a page load costs no analysis and no rendering.
* a VM's page (the HISTORY table's html): its row now, its past results from the history, its
  last deep check (this run's, else the history's).
* /healthz: one line per vCenter.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from html import escape
from urllib.parse import quote

from esxdiag.fleet.merge import failed_status, merge_reports, starting_status
from esxdiag.fleet.snapshot import VcenterStatus
from esxdiag.reports.formats import FLEET, HISTORY, RenderContext
from esxdiag.serve.state import State, VcenterState
from esxdiag.serve.store import Store

FLEET_FILES = {"fleet.json": "json", "fleet.csv": "csv", "fleet.txt": "text"}  # besides the html page at /
VM_PAGE_RESULTS = 500  # past results on a VM's page (a day and a half at 300 s)


def iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def vcenter_status(entry: VcenterState, now: float) -> str:
    """starting (its first cycle has not ended), ok, overdue (the running cycle has run past the
    interval: the figures shown are getting old), stale (failed, older figures shown) or failed."""
    if entry.overdue_s(now) > 0:
        return "overdue"
    if entry.last_ok is None:
        return "starting"
    return "ok" if entry.last_ok else "stale" if entry.stale else "failed"


def overdue_text(entry: VcenterState, now: float) -> str:
    return (f"{entry.name}: the cycle running since {iso(entry.running_since_ts)} has run "
            f"{entry.overdue_s(now):.0f} s past the {entry.interval_s:g} s interval")


def vm_href(row: dict) -> str:
    """A VM's page, relative to the fleet page at /."""
    return f"vm/{quote(row['vcenter'], safe='')}/{quote(row['moid'], safe='')}"


@dataclass
class Pages:
    state: State
    store: Store
    thresholds: dict
    window_s: float
    filters: dict
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _key: tuple = ()
    _rendered: dict = field(default_factory=dict)

    def _missing_stale_starting(self, entries: list[VcenterState]
                                ) -> tuple[list[VcenterStatus], dict, list[VcenterStatus]]:
        missing, stale, starting = [], {}, []
        for e in entries:
            if e.document is None and e.last_ok is None:
                starting.append(starting_status(e.name, e.url))
            elif e.document is None:
                missing.append(failed_status(e.name, e.url, e.last_error or f"{e.name}: not scanned",
                                             e.last_error_kind or "unknown"))
            elif e.stale:
                stale[e.name] = {"since": iso(e.good_ts), "error": e.last_error, "error_kind": e.last_error_kind}
        return missing, stale, starting

    def fleet(self, fmt: str) -> bytes:
        """The merged fleet report in a FLEET format, rendered once per change of the state; before
        any vCenter's first cycle ended, the fleet page and /fleet.txt say serve is starting."""
        entries = self.state.views()
        if fmt in ("html", "text") and all(e.last_ok is None for e in entries):
            return self.starting(entries, fmt)
        history_error = self.state.history_error
        key = tuple((e.name, e.document, e.last_ok, e.last_error) for e in entries) + (
            ("(history)", None, None, history_error),)  # documents by identity
        with self._lock:
            if len(key) != len(self._key) or any(a[0] != b[0] or a[1] is not b[1] or a[2:] != b[2:]
                                                 for a, b in zip(key, self._key)):
                missing, stale, starting = self._missing_stale_starting(entries)
                documents = [e.document for e in entries if e.document is not None]
                merged = merge_reports(documents, missing, stale, self.thresholds, self.window_s, self.filters,
                                       starting)
                if history_error:
                    merged = merged.with_note(f"Degraded: the history is not written ({history_error}); the VM pages' "
                                              "past stops at its last good write.")
                self._key, self._rendered = key, {"document": merged.as_dict()}
            if fmt not in self._rendered:
                context = RenderContext(vm_href=vm_href)
                self._rendered[fmt] = FLEET.formats[fmt].render(self._rendered["document"], context).encode()
            return self._rendered[fmt]

    def starting(self, entries: list[VcenterState], fmt: str) -> bytes:
        names = ", ".join(e.name for e in entries)
        since = f" (started {iso(self.state.started_ts)})" if self.state.started_ts else ""
        if fmt == "text":
            return f"esxdiag serve: starting{since}: the first cycle of {names} has not finished yet\n".encode()
        return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>esxdiag serve: starting</title>'
                f'</head><body><h1>esxdiag serve: starting</h1><p id="status">Starting{escape(since)}: the first cycle of '
                f'{escape(names)} has not finished yet. This page shows the fleet once it has.</p></body></html>\n'
                ).encode()

    def vm(self, vcenter: str, moid: str) -> bytes | None:
        """A VM's page; None when neither the last cycle nor the history knows it."""
        try:
            entry = self.state.get(vcenter)
        except KeyError:
            return None
        row = next((r for r in entry.document.rows if r.moid == moid), None) if entry.document is not None else None
        current = row.as_dict() if row is not None else None
        rows = self.store.vm_past(vcenter, moid, VM_PAGE_RESULTS)
        if current is None and not rows:
            return None
        shown = (current or {}).get("deep")  # the check its class rests on, as /metrics exports it
        deep = ({k: shown.get(k) for k in ("checked_at", "verdicts", "report", "error")} | {
                 "vnics": [dict(v) for v in shown["vnics"]]} if shown else self.store.last_deep(vcenter, moid))
        if deep is not None:
            deep["href"] = f"../../{quote(deep['report'])}" if deep.get("report") else None
            deep["rests"] = shown is not None  # the class above rests on it (and /metrics exports its verdicts)
        stale = (f"the last cycle of {vcenter} failed ({entry.last_error}); these figures are from its last good "
                 f"scan, {iso(entry.good_ts)}") if entry.stale else None
        page = {"vm": current["name"] if current else rows[0]["name"], "rows": rows, "current": current,
                "stale": stale, "deep": deep, "thresholds": entry.document.thresholds if entry.document is not None else self.thresholds,
                "fleet_href": "../../"}
        return HISTORY.formats["html"].render(page, RenderContext()).encode()

    def health(self) -> dict:
        """Liveness (always answered) with an honest status: starting until every vCenter's first
        cycle ended, degraded naming each vCenter whose last cycle failed and a history not written."""
        entries = self.state.views()
        now = time.time()
        degraded = [e.last_error or f"{e.name}: not scanned" for e in entries if e.last_ok is False]
        degraded += [overdue_text(e, now) for e in entries if e.overdue_s(now) > 0]
        if self.state.history_error:
            degraded.append(f"history: {self.state.history_error}")
        status = "degraded" if degraded else "starting" if any(e.last_ok is None for e in entries) else "ok"
        return {"status": status, "degraded": degraded, "history_error": self.state.history_error, "vcenters": [
            {"vcenter": e.name, "status": vcenter_status(e, now), "last_ok": e.last_ok,
             "stale": e.stale or e.overdue_s(now) > 0, "running": e.running,
             "overdue_s": round(e.overdue_s(now), 1),
             "last_cycle": iso(e.last_ts), "last_good_cycle": iso(e.good_ts), "error": e.last_error}
            for e in entries]}
