"""Fixtures for the serve tests: fleet reports built the way a cycle builds them (a snapshot ->
build_report), a fake clock, and a serve web server on 127.0.0.1 over a state with one good and one
stale vCenter, a history and a deep report."""

from __future__ import annotations

import json
import sqlite3
import threading
from contextlib import closing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import MappingProxyType

import pytest

from esxdiag.config import load_thresholds
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.snapshot import snapshot_from_dict
from esxdiag.fleet.analysis import Evidence
from esxdiag.serve.metrics import Exposition
from esxdiag.serve.pages import Pages
from esxdiag.serve.state import DeepCheck, State, VcenterState
from esxdiag.serve.store import Store
from esxdiag.serve.web import WebServer
from esxdiag.serve.webconfig import load_web_config
from esxdiag.vocabulary import SCHEMA_SNAPSHOT

HOSTILE = '<img src=x onerror=alert(1)>'
VNIC = {"label": "Network adapter 1", "mac": "00:50:56:00:00:01", "verdict": "raise-ring1", "ring1_full": 23.6,
        "ring2_full": 10.9, "host_out_of_buffers": 34.614, "ring1_size": 256, "ring2_size": 256}

SAMPLES = 15
STAMPS = [f"2026-11-23T02:{m:02d}:{s:02d}Z" for m in range(40, 45) for s in (0, 20, 40)]


def perf(name: str, ready_ms: int, drops: int, packets: int = 100_000, limited: int = 0, costop: int = 0) -> dict:
    series = [{"counter": c, "instance": "", "unit": u, "values": [v] * SAMPLES} for c, u, v in (
        ("cpu.ready.summation", "millisecond", ready_ms), ("cpu.costop.summation", "millisecond", costop),
        ("cpu.maxlimited.summation", "millisecond", limited), ("net.droppedRx.summation", "number", drops),
        ("net.packetsRx.summation", "number", packets))]
    return {"schema": "esxdiag.vsphere_perf/1", "vm": name, "interval_s": 20, "rollup": "realtime", "note": None,
            "start": STAMPS[0], "end": STAMPS[-1], "timestamps": STAMPS, "series": series}


def vm(name: str, moid: str, vcenter: str = "vc1:443", ready_ms: int = 100, drops: int = 0, nic: str = "vmxnet3",
       host: str = "esx1", limit: int | None = None, limited: int = 0, power: str = "poweredOn") -> dict:
    return {
        "vcenter": vcenter, "moid": moid, "name": name, "power_state": power, "host": host, "host_moid": "host-1",
        "cluster": "C1", "datacenter": "DC", "num_cpu": 1,
        "cpu_allocation": {"limit_mhz": limit, "reservation_mhz": 0, "shares": 1000, "shares_level": "normal"},
        "latency_sensitivity": "normal", "guest": {"family": "linuxGuest", "ip_address": None}, "num_vnics": 1,
        "vnics": [{"label": "Network adapter 1", "type": nic, "mac": "00:50:56:00:00:01", "device_key": 4000,
                   "network": "VM Network", "connected": True}],
        "missing": [], "perf": perf(name, ready_ms, drops, limited=limited) if power == "poweredOn" else None,
        "perf_error": None if power == "poweredOn" else "powered off",
    }


def snapshot(vcenter: str, vms: list[dict], failed: bool = False, collected_at: str = "2026-11-23T02:45:00Z") -> dict:
    status = {"url": f"https://{vcenter.split(':')[0]}/sdk", "name": vcenter, "status": "scanned", "error": None,
              "error_kind": None, "requests": 12, "seconds": 0.5, "max_query_metrics": 64,
              "max_query_metrics_source": "default", "vms": len(vms), "perf_errors": 0, "unmatched_filters": []}
    if failed:
        status.update(status="failed", error=f"{vcenter}: unreachable (Connection refused)", error_kind="unreachable",
                      vms=0)
        vms = []
    return {"schema": SCHEMA_SNAPSHOT, "collected_at": collected_at, "window_s": 300, "nic_types": "all",
            "filters": {}, "vcenters": [status], "hosts": [], "vms": vms}


def record_deep(store: Store, vcenter: str, checks: list[dict], checked_at: str, held: bool | None = None) -> None:
    """Deep checks in the history as a cycle records them (its report's deep.vms), at ``checked_at``;
    with ``held`` given, a scan too whose rows rest on them (True), or that retired them (False: the
    drops stopped since)."""
    rows = [(vcenter, c["moid"], c["name"], checked_at, json.dumps(c["verdicts"]), c["worst_severity"], c["report"],
             c["error"], json.dumps(c["vnics"]), checked_at if held is False else None) for c in checks]
    with closing(sqlite3.connect(store.path)) as db, db:
        db.executemany("INSERT INTO deep_checks (vcenter, moid, name, checked_at, verdicts, worst_severity, report, "
                       "error, vnics, retired_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        if held is None:
            return
        scan = db.execute("INSERT INTO scans (collected_at, scope, vcenters, counts, status) VALUES "
                          "(?, '{}', ?, '{}', 'complete')", (checked_at, json.dumps([vcenter]))).lastrowid
        db.executemany("INSERT INTO vm_results (scan_id, vcenter, moid, name, class, proven_at) VALUES "
                       "(?, ?, ?, ?, ?, ?)", [(scan, vcenter, c["moid"], c["name"], "ring-exhaustion" if held else
                                               "healthy", checked_at if held else None) for c in checks])


@pytest.fixture
def fleet_document():
    """(vcenter, [vm(...)...], failed=False, collected_at=..., deep={MOID: DeepCheck}) -> that vCenter's
    fleet report, each deep check folded into its VM's row as a cycle folds it."""
    def make(vcenter: str, vms: list[dict], failed: bool = False, collected_at: str = "2026-11-23T02:45:00Z",
             deep: dict | None = None):
        data = snapshot(vcenter, [dict(v, vcenter=vcenter) for v in vms], failed, collected_at)
        folded = {(vcenter, moid): c.evidence() for moid, c in (deep or {}).items()}
        return build_report(snapshot_from_dict(data), load_thresholds(), "snap.json", Evidence(checks=folded))
    return make


class FakeClock:
    """Time that moves only when the code under test waits or a cycle 'takes' time."""

    def __init__(self, start: float = 1_000.0):
        self.now = start
        self.waits: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return 1_790_000_000.0 + self.now

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        self.waits.append(seconds)
        self.now += max(0.0, seconds)
        return stop.is_set()


@pytest.fixture
def fake_clock():
    return FakeClock()


@pytest.fixture
def make_vm():
    """vm(name, moid, ready_ms=100, drops=0, nic="vmxnet3", host="esx1", limit=None, limited=0, power="poweredOn")"""
    return vm


@pytest.fixture
def web_server(tmp_path, fleet_document, make_vm, start_web):
    """A serve web server over a state with one good and one stale vCenter, and a history."""
    store = Store(tmp_path / "h.sqlite", retention_days=7)
    now = datetime.now(timezone.utc)
    for minutes in (10, 5):
        at = (now - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
        store.record(fleet_document("vc1:443", [make_vm("ring01", "vm-1", drops=300 + minutes)], collected_at=at))
    report = tmp_path / "data" / "deep" / "vc1_443" / "20261123T024500Z" / "esx1" / "report.html"
    report.parent.mkdir(parents=True)
    report.write_text("<!DOCTYPE html><title>deep report</title>")
    (tmp_path / "secret.txt").write_text("outside")
    (report.parent / "escape").symlink_to(tmp_path / "secret.txt")
    check = DeepCheck("vc1:443", "vm-1", "ring01", "2026-11-23T02:46:00Z", now.timestamp(), ("raise-ring1",),
                      "critical", "deep/vc1_443/20261123T024500Z/esx1/report.html", None, (VNIC,))
    good = fleet_document("vc1:443", [make_vm("ring01", "vm-1", drops=300), make_vm(HOSTILE, "vm-2")],
                          deep={"vm-1": check})
    state = State([
        VcenterState("vc1:443", "https://vc1/sdk", 300, document=good, good_ts=now.timestamp(), last_ok=True,
                     deep=MappingProxyType({"vm-1": check})),
        VcenterState("vc2:443", "https://vc2/sdk", 300, document=fleet_document("vc2:443", [make_vm("db01", "vm-9")]),
                     good_ts=now.timestamp() - 900, last_ok=False, last_error="vc2:443: unreachable (refused)",
                     last_error_kind="unreachable")])
    return start_web(state, store, tmp_path / "data", load_web_config(None))


@pytest.fixture
def start_web():
    """(state, store, data_dir, web config) -> a serve web server on 127.0.0.1, stopped after the test."""
    started = []

    def start(state, store, data_dir: Path, web):
        pages = Pages(state, store, load_thresholds(), 300, {})
        server = WebServer("127.0.0.1", 0, pages, Exposition(state), data_dir / "deep", web)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.shutdown()
        server.server_close()
