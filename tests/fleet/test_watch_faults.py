"""The watched inventory behind the fault proxy (faultproxy.py, conftest.py's ``proxy``): a steady scan
asks only WaitForUpdatesEx for its inventory (no RetrieveProperties of any kind); any fault while
reading the changes (an answer cut off, an HTML page, a SOAP fault, InvalidCollectorVersion) makes
the same scan read whole and give the full read's snapshot; a fault in the whole read fails the
scan and drops the watch, and the next scan logs in again and reads whole."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from esxdiag.collectors.fleet import ScanOptions, scan
from esxdiag.collectors.fleet.watch import Watches

pytestmark = pytest.mark.lab
OPTIONS = ScanOptions(page_size=2, workers=1, timeout_s=4)
_spec = importlib.util.spec_from_file_location("watch_compare", Path(__file__).with_name("watch_compare.py"))
_compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_compare)
comparable = _compare.comparable
RETRIEVES = {"RetrieveProperties", "RetrievePropertiesEx", "ContinueRetrievePropertiesEx"}


@pytest.fixture
def watches():
    kept = Watches()
    yield kept
    kept.close()


def test_a_steady_scan_sends_no_retrieve_properties(proxy, watches):
    creds = proxy.creds()
    scan([creds], OPTIONS, watches=watches)
    proxy.clear()
    steady = scan([creds], OPTIONS, watches=watches)
    seen = list(proxy.seen)
    assert watches.get(creds).how == "changes"
    assert not RETRIEVES & set(seen), seen
    assert seen.count("WaitForUpdatesEx") == 1 and "CreateFilter" not in seen and "Login" not in seen
    assert steady["vcenters"][0]["requests"] == len(seen)
    proxy.clear()
    whole = scan([creds], OPTIONS)
    assert whole["vcenters"][0]["requests"] > steady["vcenters"][0]["requests"]
    assert comparable(steady) == comparable(whole)


@pytest.mark.parametrize("action, params", [("cut", {}), ("html", {}), ("not-envelope", {}),
                                            ("fault", {"text": "InvalidCollectorVersion"}),
                                            ("fault", {"text": "SystemError"})],
                         ids=["cut", "html", "not-envelope", "invalid-collector-version", "system-error"])
def test_a_fault_reading_the_changes_reads_whole_in_the_same_scan(proxy, watches, action, params):
    creds = proxy.creds()
    scan([creds], OPTIONS, watches=watches)
    proxy.add("WaitForUpdatesEx", action, **params)
    data = scan([creds], OPTIONS, watches=watches)
    watch = watches.get(creds)
    assert data["vcenters"][0]["status"] == "scanned", data["vcenters"][0]["error"]
    assert watch.how.startswith("whole: reading the changes failed"), watch.how
    assert "RetrievePropertiesEx" in proxy.seen and "CreateFilter" in proxy.seen
    assert comparable(data) == comparable(scan([creds], OPTIONS))
    assert scan([creds], OPTIONS, watches=watches)["vcenters"][0]["status"] == "scanned" and watch.how == "changes"


def test_a_fault_in_the_whole_read_fails_the_scan_and_drops_the_watch(proxy, watches):
    creds = proxy.creds()
    scan([creds], OPTIONS, watches=watches)
    watch = watches.get(creds)
    proxy.add("WaitForUpdatesEx", "cut", times=None)
    failed = scan([creds], OPTIONS, watches=watches)["vcenters"][0]
    assert failed["status"] == "failed" and failed["error_kind"] == "unreachable", failed["error"]
    assert watch.session is None and watch.kept is None
    proxy.clear()
    again = scan([creds], OPTIONS, watches=watches)
    assert again["vcenters"][0]["status"] == "scanned" and watch.how == "whole: first read"
    assert "Login" in proxy.seen


def test_serve_cycles_keep_the_login_and_read_changes_until_closed(proxy, monkeypatch, tmp_path):
    import random
    import threading

    from esxdiag.cli import build_parser
    from esxdiag.config import load_thresholds
    from esxdiag.serve.cycle import CycleRunner
    from esxdiag.serve.schedule import Scheduler
    from esxdiag.serve.state import State, VcenterState
    from esxdiag.serve.store import Store

    monkeypatch.setenv("ESXDIAG_PASSWORD", proxy.lab.password)
    creds = proxy.creds()
    name = f"{creds.host}:{creds.port}"
    args = build_parser().parse_args(["serve", "--vcenter", proxy.url, "--user", proxy.lab.username, "--insecure",
                                      "--history", str(tmp_path / "h.sqlite"), "--page-size", "2", "--window", "60"])
    assert args.inventory_max_age == 3600
    runner = CycleRunner(args, load_thresholds(), Store(tmp_path / "h.sqlite", 3), tmp_path / "data",
                         threading.Lock())
    state = State([VcenterState(name, proxy.url, 300)])
    scheduler = Scheduler([creds], runner, state, 300, 0, 3600, rng=random.Random(1))
    scheduler.run_one(creds, name)
    first = state.get(name).last_requests
    proxy.clear()
    scheduler.run_one(creds, name)
    assert state.get(name).last_ok and runner.watches.get(creds).how == "changes"
    assert state.get(name).last_requests == len(proxy.seen) < first and not RETRIEVES & set(proxy.seen)
    runner.close()
    assert "Logout" in proxy.seen and runner.watches.get(creds).session is None
