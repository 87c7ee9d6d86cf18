"""serve's own faults are its own: a history that cannot be written leaves the scan's results
served, with its own metric and /healthz saying what is degraded; the web side answers 500 with
one line on an internal error, never a closed connection."""

from __future__ import annotations

import http.client
import json
import random
import sqlite3
import threading
from pathlib import Path
from types import SimpleNamespace

from prometheus_client import CollectorRegistry, generate_latest

from esxdiag.cli import build_parser
from esxdiag.config import load_thresholds
from esxdiag.serve.cycle import CycleRunner
from esxdiag.serve.metrics import ServeCollector
from esxdiag.serve.pages import Pages
from esxdiag.serve.schedule import Scheduler
from esxdiag.serve.state import State, VcenterState
from esxdiag.serve.store import Store
from esxdiag.serve.webconfig import load_web_config

from .conftest import snapshot, vm

VC = SimpleNamespace(host="vc1", port=443, url="https://vc1/sdk")


def get(server, path: str) -> tuple[int, bytes]:
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def serve_parts(tmp_path: Path, monkeypatch):
    """A scheduler whose cycle is serve's own (CycleRunner), its scan answered by a snapshot."""
    monkeypatch.setattr("esxdiag.collectors.fleet.scan",
                        lambda *a, **k: snapshot("vc1:443", [vm("ring01", "vm-1", drops=300)]))
    history = tmp_path / "h.sqlite"
    args = build_parser().parse_args(["serve", "--vcenter", VC.url, "--user", "u", "--history", str(history)])
    store = Store(history, 3)
    state = State([VcenterState("vc1:443", VC.url, 300)])
    runner = CycleRunner(args, load_thresholds(), store, tmp_path / "data", threading.Lock())
    return Scheduler([VC], runner, state, 300, 0, 7200, rng=random.Random(1)), state, store


def test_a_corrupt_history_is_its_own_fault_and_the_scan_is_still_served(tmp_path, monkeypatch, start_web):
    scheduler, state, store = serve_parts(tmp_path, monkeypatch)
    scheduler.run_one(VC, "vc1:443")
    assert state.history_error is None and state.history_written_ts is not None
    store.path.write_bytes(random.Random(3).randbytes(8192))  # the file under a running serve
    scheduler.run_one(VC, "vc1:443")
    entry = state.get("vc1:443")
    assert entry.last_ok is True and not entry.stale and entry.failures == {}
    assert "h.sqlite" in state.history_error and state.history_errors == 1
    registry = CollectorRegistry()
    registry.register(ServeCollector(state))
    text = generate_latest(registry).decode()
    assert 'esxdiag_vcenter_last_scan_success{vcenter="vc1:443"} 1.0' in text
    assert "esxdiag_history_last_write_success 0.0" in text and "esxdiag_history_write_errors_total 1.0" in text
    assert 'esxdiag_fleet_vm_class{class="ring-suspect"' in text
    server = start_web(state, store, tmp_path / "data", load_web_config(None))
    health = json.loads(get(server, "/healthz")[1])
    assert health["status"] == "degraded" and health["degraded"] == [f"history: {state.history_error}"]
    assert health["vcenters"][0]["last_ok"] is True
    status, body = get(server, "/")
    assert status == 200 and b"ring01" in body
    status, body = get(server, "/vm/vc1%3A443/vm-1")  # its past is in the broken history
    assert status == 500 and body == b"internal error (see serve's log)\n"


def test_a_read_only_history_is_its_own_fault_too(tmp_path, monkeypatch):
    scheduler, state, store = serve_parts(tmp_path, monkeypatch)
    scheduler.run_one(VC, "vc1:443")
    def read_only(self, document, retired=frozenset()):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(Store, "record", read_only)
    scheduler.run_one(VC, "vc1:443")
    assert state.get("vc1:443").last_ok is True and "readonly" in state.history_error
    scheduler.run_one(VC, "vc1:443")
    assert state.history_errors == 2 and state.get("vc1:443").failures == {}


def test_before_the_first_cycle_the_page_and_healthz_say_starting(tmp_path, start_web):
    state = State([VcenterState("vc1:443", VC.url, 300), VcenterState("vc2:443", "https://vc2/sdk", 300)])
    state.started_ts = 1_790_000_000.0
    server = start_web(state, Store(tmp_path / "h.sqlite", 3), tmp_path / "data", load_web_config(None))
    status, body = get(server, "/")
    assert status == 200 and b"Starting (started 2026-09-21T" in body and b"vc1:443, vc2:443" in body
    assert b"not scanned" not in body and b"ending ;" not in body
    assert get(server, "/fleet.txt")[1] == (b"esxdiag serve: starting (started 2026-09-21T14:13:20Z): the first "
                                           b"cycle of vc1:443, vc2:443 has not finished yet\n")
    health = json.loads(get(server, "/healthz")[1])
    assert (health["status"], health["degraded"]) == ("starting", [])


def test_a_vcenter_waiting_for_its_first_cycle_reads_as_starting_beside_a_finished_one(tmp_path, fleet_document,
                                                                                      start_web):
    """Not the red "not scanned" banner of a failed vCenter: it has failed nothing yet."""
    good = fleet_document("vc1:443", [vm("ring01", "vm-1", drops=300)])
    state = State([VcenterState("vc1:443", VC.url, 300, document=good, good_ts=1_790_000_000.0, last_ok=True),
                   VcenterState("vc2:443", "https://vc2/sdk", 300)])
    server = start_web(state, Store(tmp_path / "h.sqlite", 3), tmp_path / "data", load_web_config(None))
    status, body = get(server, "/")
    assert status == 200 and b"ring01" in body
    assert b'<p class="starting"><strong>Starting: vc2:443</strong>' in body
    assert b"Not scanned" not in body and b'class="failed"' not in body and b"1 of 2 vCenter(s)" in body
    text = get(server, "/fleet.txt")[1].decode()
    assert "not scanned" not in text and "vc2:443: starting, its first cycle has not finished yet" in text
    report = json.loads(get(server, "/fleet.json")[1])
    assert report["not_scanned"] == [] and [v["status"] for v in report["vcenters"]] == ["scanned", "starting"]
    health = json.loads(get(server, "/healthz")[1])
    assert (health["status"], health["degraded"]) == ("starting", [])
    assert [v["status"] for v in health["vcenters"]] == ["ok", "starting"]


def test_healthz_is_degraded_naming_the_vcenter_that_failed(web_server):
    health = json.loads(get(web_server, "/healthz")[1])
    assert health["status"] == "degraded" and health["degraded"] == ["vc2:443: unreachable (refused)"]


def test_the_fleet_page_says_the_history_is_not_written(tmp_path, monkeypatch, start_web):
    scheduler, state, store = serve_parts(tmp_path, monkeypatch)
    scheduler.run_one(VC, "vc1:443")
    server = start_web(state, store, tmp_path / "data", load_web_config(None))
    assert b"Degraded" not in get(server, "/")[1]
    store.path.write_bytes(b"\x00" * 4096)
    scheduler.run_one(VC, "vc1:443")
    status, body = get(server, "/")
    assert status == 200 and b"Degraded: the history is not written" in body and b"ring01" in body
