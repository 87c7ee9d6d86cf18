"""Issue 30 items 3, 4 and 5 through the fault proxy (faultproxy.py) in front of a small vcsim
(a vcsim of its own, like conftest.py's ``faults``): a deep check's proof under vCenter faults and races.

* 3: a QueryPerf the proxy faults (a SOAP fault for every VM QueryPerf, an answer cut without
  Content-Length, an HTML 503 page) keeps the proof: not retired, the VM not "recovered", and the
  next good scan still shows it proven;
* 4: a scan that started before another scan's deep check was recorded (held by a trickled
  QueryPerf meanwhile) does not lose that proof;
* 5: serve does not show a proof past --proof-max-age while every cycle of its vCenter fails.

vcsim's perf values are random, so the good scans answer QueryPerf from conftest's fake
PerformanceManager (inventory, paging and counter ids still come from vcsim through the proxy); the
faulted scans send the real QueryPerf through the proxy. Scans are `esxdiag scan` with a history,
the deep check recorded the way `scan --deep` records it."""

from __future__ import annotations

import importlib
import json
import os
import random
import threading
import time
from pathlib import Path
from types import MappingProxyType

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from esxdiag.cli import build_parser, main
from esxdiag.collectors.credentials import resolve_credentials
from esxdiag.collectors.fleet import ScanOptions
from esxdiag.collectors.fleet import scan as api_scan
from esxdiag.config import load_thresholds
from esxdiag.fleet.model import DeepEvidence
from esxdiag.fleet.analysis import Evidence, build_report
from esxdiag.fleet.history import changes_and_record, vm_history
from esxdiag.fleet.snapshot import snapshot_from_dict
from esxdiag.scanning.deep import DeepCheck
from esxdiag.serve.cycle import CycleRunner
from esxdiag.serve.metrics import ServeCollector
from esxdiag.serve.schedule import Scheduler
from esxdiag.serve.state import State, VcenterState
from esxdiag.serve.store import Store

from .conftest import _faultproxy_module
from .test_classes import wildcard

pytestmark = pytest.mark.lab
PROVEN = "ring-proven"  # a vmxnet3 VM of this module's vcsim (vcsim's own VMs have e1000 NICs)
PROOF_FLAGS = ("-cluster", "1", "-host", "1", "-vm", "2", "-standalone-host", "0")
VMS = 3  # vcsim's 2 and PROVEN
TABLE = {PROVEN: wildcard(300, drops=300, packets=30_000)}  # 15 drops/s, 10 per 1,000 packets: ring-suspect
QUERYPERF_FAULTS = {
    # the VM pass's QueryPerf of the 3 VMs refused, then each VM's alone: every VM's figures lost, the
    # vCenter scanned (the host's QueryPerf after them passes: a refused single host fails the vCenter)
    "soap-fault": dict(action="fault", text="InvalidArgument", times=1 + VMS),
    "cut": dict(action="cut", size=200, times=None),  # close-delimited, 200 bytes short: the vCenter fails
    "html-503": dict(action="html", status=503, times=None),  # a proxy's "service unavailable" page: the same
}


@pytest.fixture(scope="module")
def proof_faults(lab_module, tmp_path_factory):
    """A FaultProxy in front of a vcsim of 3 VMs, one of them PROVEN (conftest's ``faults`` has no vmxnet3 VM)."""
    lab = lab_module.start_vcsim(tmp_path_factory.mktemp("proofs-vcsim"), PROOF_FLAGS, timeout_s=120)
    try:
        lab.govc("vm.create", "-on=true", "-host", "DC0_C0_H0", "-c", "1", "-net", "DC0_DVPG0",
                 "-net.adapter", "vmxnet3", PROVEN)
        proxy = _faultproxy_module().FaultProxy(lab.port, tmp_path_factory.mktemp("proofs-proxy"))
    except BaseException:
        lab.stop()
        raise
    proxy.lab = lab
    proxy.creds = lambda: resolve_credentials(proxy.url, lab.username, env={"ESXDIAG_PASSWORD": lab.password},
                                              config_path=os.devnull, insecure=True)
    yield proxy
    proxy.stop()
    lab.stop()


@pytest.fixture
def proxy(proof_faults):
    """This module's fault proxy with no rule, cleared again after the test."""
    proof_faults.clear()
    yield proof_faults
    proof_faults.clear()


@pytest.fixture
def real_perf(monkeypatch):
    """put() -> QueryPerf goes to vcsim through the proxy again (after fake_perf)."""
    scan_module = importlib.import_module("esxdiag.collectors.fleet.scan")
    from esxdiag.collectors.vsphere_session import connect
    return lambda: monkeypatch.setattr(scan_module, "connect", connect)


@pytest.fixture
def user_env(proxy, tmp_path, monkeypatch):
    monkeypatch.setenv("ESXDIAG_PASSWORD", proxy.lab.password)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path


def cli_scan(proxy, tmp_path: Path, out: str = "fleet.json", timeout_s: float = 20) -> dict:
    """One `esxdiag scan` through the proxy, recorded in tmp_path/h.sqlite: its report."""
    main(["scan", "--vcenter", proxy.url, "--user", proxy.lab.username, "--insecure", "--history",
          str(tmp_path / "h.sqlite"), "--window", "60", "--timeout", str(timeout_s), "--format", "json",
          "-o", str(tmp_path / out), "--quiet"])
    return json.loads((tmp_path / out).read_text())


def row_of(document: dict, name: str = PROVEN) -> dict | None:
    return next((r for r in document["vms"] if r["name"] == name), None)


def proven_report(proxy, age_s: float) -> tuple[dict, dict]:
    """A scan through the proxy (QueryPerf from the fake) whose deep check of PROVEN said raise-ring1
    ``age_s`` ago: (the report as `scan --deep` records it, the check's deep.vms entry)."""
    data = api_scan([proxy.creds()], ScanOptions(window_s=60, timeout_s=20))
    assert data["vcenters"][0]["status"] == "scanned", data["vcenters"]
    snapshot = snapshot_from_dict(data)
    ring = row_of(build_report(snapshot, load_thresholds(), "snap.json").as_dict())
    assert ring["class"] == "ring-suspect", ring
    nic = next(v for v in snapshot.vms if v.name == PROVEN).vnics[0]
    deep = {"verdicts": ["raise-ring1"], "worst_severity": "critical", "report": None, "bundle": None, "error": None,
            "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - age_s)),
            "vnics": [{"label": nic.label, "mac": nic.mac, "type": "vmxnet3", "verdict": "raise-ring1",
                       "causes": [], "ring1_full": 12.0}]}
    document = build_report(snapshot, load_thresholds(), "snap.json", evidence=Evidence(checks={(ring["vcenter"], ring["moid"]): DeepEvidence.of(deep)})).as_dict()
    entry = {"vcenter": ring["vcenter"], "name": PROVEN, "moid": ring["moid"], "host": ring["host"], **deep}
    document["deep"] = {"hosts": [], "vms": [entry]}
    assert row_of(document)["class"] == "ring-exhaustion"
    return document, entry


def assert_still_proven(document: dict, checked_at: str) -> None:
    ring = row_of(document)
    assert (ring["class"], ring["confirmed"]) == ("ring-exhaustion", True), (ring["class"], ring["reason"],
                                                                             ring["notes"])
    assert ring["deep"]["checked_at"] == checked_at
    assert "not proven" not in ring["reason"]


# --- 3. a failed QueryPerf keeps the proof ----------------------------------------------------------

@pytest.mark.parametrize("fault", list(QUERYPERF_FAULTS))
def test_a_queryperf_faulted_by_the_proxy_keeps_the_proof(proxy, user_env, fake_perf, real_perf, fault):
    history = user_env / "h.sqlite"
    fake_perf(TABLE)
    proven, entry = proven_report(proxy, 600)
    changes_and_record(history, proven)  # as `scan --deep` records its check
    checked_at = entry["checked_at"]

    real_perf()
    rule = proxy.add("QueryPerf", **QUERYPERF_FAULTS[fault])
    document = cli_scan(proxy, user_env, "faulted.json")
    assert rule.fired >= 1 and "QueryPerf" in proxy.seen
    ring = row_of(document)
    if fault == "soap-fault":  # the vCenter scanned, the VM's figures lost: its proof kept, and said
        assert document["vcenters"][0]["status"] == "scanned", document["vcenters"]
        assert ring is not None and ring["drops"] is None, ring
        assert not [n for n in ring["notes"] if "retired" in n], ring["notes"]
        assert (ring["class"], ring["confirmed"]) == ("ring-exhaustion", True), ring["notes"]
        assert ring["deep"]["checked_at"] == checked_at
        assert any("kept" in n and "InvalidArgument" in n for n in ring["notes"]), ring["notes"]
    else:  # the whole vCenter failed (a cut or non-SOAP answer): nothing of it listed
        assert document["vcenters"][0]["status"] == "failed", document["vcenters"]
    changes = document.get("changes") or {}
    assert not any(c["name"] == PROVEN for k in ("recovered", "changed", "gone") for c in changes.get(k) or []), \
        changes

    proxy.clear()
    fake_perf(TABLE)
    assert_still_proven(cli_scan(proxy, user_env, "after.json"), checked_at)
    assert all(r["proven_at"] == checked_at for r in vm_history(history, PROVEN)), vm_history(history, PROVEN)


# --- 4. two scans at once do not lose a proof -------------------------------------------------------

def test_a_scan_held_by_a_trickled_queryperf_while_a_deep_check_is_recorded_does_not_lose_it(
        proxy, user_env, fake_perf, real_perf):
    history = user_env / "h.sqlite"
    fake_perf(TABLE)
    proven, entry = proven_report(proxy, 1)

    real_perf()
    rule = proxy.add("QueryPerf", "trickle", size=256, every=0.2)  # the first QueryPerf takes seconds
    slow = threading.Thread(target=cli_scan, args=(proxy, user_env, "slow.json", 60), name="slow-scan")
    slow.start()
    deadline = time.monotonic() + 60
    while rule.fired == 0 and slow.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rule.fired == 1, proxy.seen  # the slow scan read the history (no proof) and is collecting
    changes_and_record(history, proven)  # the other scan's deep check ends meanwhile
    slow.join(90)
    assert not slow.is_alive()
    slow_report = json.loads((user_env / "slow.json").read_text())
    assert slow_report["vcenters"][0]["status"] == "scanned", slow_report["vcenters"]
    assert row_of(slow_report) is not None  # it recorded the VM's newest row, without the proof it never saw

    proxy.clear()
    fake_perf(TABLE)
    assert_still_proven(cli_scan(proxy, user_env, "after.json"), entry["checked_at"])


# --- 5. serve does not show a proof past --proof-max-age while its vCenter fails ---------------------

MAX_AGE_S = 30


def test_serve_drops_a_proof_past_its_age_while_the_proxy_fails_every_cycle(proxy, user_env, fake_perf):
    fake_perf(TABLE)
    _, entry = proven_report(proxy, MAX_AGE_S - 8)  # shown for the next few seconds only
    creds = proxy.creds()
    name = f"{creds.host}:{creds.port}"
    assert entry["vcenter"] == name
    args = build_parser().parse_args(["serve", "--vcenter", proxy.url, "--user", proxy.lab.username, "--insecure",
                                      "--history", str(user_env / "h.sqlite"), "--timeout", "4", "--window", "60",
                                      "--interval", "60", "--proof-max-age", str(MAX_AGE_S)])
    check = DeepCheck.of(entry)
    state = State([VcenterState(name, proxy.url, 60, deep=MappingProxyType({check.moid: check}))])
    runner = CycleRunner(args, load_thresholds(), Store(user_env / "h.sqlite", 3), user_env / "data",
                         threading.Lock())
    scheduler = Scheduler([creds], runner, state, 60, 0, MAX_AGE_S, rng=random.Random(1))
    registry = CollectorRegistry()
    registry.register(ServeCollector(state))

    scheduler.run_one(creds, name)
    assert state.get(name).last_ok is True
    assert row_of(state.get(name).document.as_dict())["class"] == "ring-exhaustion"
    assert 'verdict="raise-ring1"' in generate_latest(registry).decode()

    proxy.add("RetrievePropertiesEx", "html", status=503, times=None)  # every cycle fails from now on
    proxy.add("WaitForUpdatesEx", "html", status=503, times=None)  # serve's kept inventory: its changes too
    scheduler.run_one(creds, name)
    entry_state = state.get(name)
    assert entry_state.last_ok is False and entry_state.stale, entry_state.last_error
    time.sleep(max(0.0, check.checked_ts + MAX_AGE_S + 1 - time.time()))  # the proof is past its age now
    scheduler.run_one(creds, name)
    entry_state = state.get(name)
    assert entry_state.last_ok is False and entry_state.stale, entry_state.last_error
    text = generate_latest(registry).decode()
    assert 'verdict="raise-ring1"' not in text, [line for line in text.splitlines() if "raise-ring1" in line]
    assert 'esxdiag_fleet_vm_class{class="ring-exhaustion"' not in text
    assert 'esxdiag_vcenter_stale{vcenter="' + name + '"} 1.0' in text
