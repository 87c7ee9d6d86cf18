"""serve's cycle behind the fault proxy (faultproxy.py, conftest.py's ``faults``): a vCenter that
trickles its answers holds a cycle no longer than --timeout per call, the cycle fails of kind
timeout and is counted; a cut or non-SOAP answer fails the cycle and keeps the last good report,
stale, never a good cycle with VMs missing."""

from __future__ import annotations

import random
import threading
import time

import pytest
from prometheus_client import CollectorRegistry

from esxdiag.cli import build_parser
from esxdiag.config import load_thresholds
from esxdiag.serve.cycle import CycleRunner
from esxdiag.serve.metrics import ServeCollector
from esxdiag.serve.schedule import Scheduler
from esxdiag.serve.state import State, VcenterState
from esxdiag.serve.store import Store

pytestmark = pytest.mark.lab


def serve_parts(proxy, tmp_path, timeout_s: float = 4, *extra: str):
    creds = proxy.creds()
    name = f"{creds.host}:{creds.port}"
    args = build_parser().parse_args(["serve", "--vcenter", proxy.url, "--user", proxy.lab.username, "--insecure",
                                      "--history", str(tmp_path / "h.sqlite"), "--timeout", str(timeout_s),
                                      "--page-size", "2", "--window", "60", "--interval", "60", *extra])
    state = State([VcenterState(name, proxy.url, 60)])
    runner = CycleRunner(args, load_thresholds(), Store(tmp_path / "h.sqlite", 3), tmp_path / "data",
                         threading.Lock())
    return Scheduler([creds], runner, state, 60, 0, 3600, rng=random.Random(1)), state, creds, name


def metric(state, name, **labels):
    registry = CollectorRegistry()
    registry.register(ServeCollector(state))
    return registry.get_sample_value(name, labels)


# the inventory's changes (WaitForUpdatesEx) faulted every time: the cycle's whole read too
WHOLE_EVERY_CYCLE = ("--inventory-max-age", "0")  # serve without a watch: the VM pages every cycle


@pytest.mark.parametrize("fault, extra", [(("QueryPerf", "trickle", {"size": 16, "every": 0.5}), ()),
                                          (("WaitForUpdatesEx", "cut", {"times": None}), ()),
                                          (("WaitForUpdatesEx", "html", {"times": None}), ()),
                                          (("ContinueRetrievePropertiesEx", "cut", {}), WHOLE_EVERY_CYCLE),
                                          (("ContinueRetrievePropertiesEx", "html", {}), WHOLE_EVERY_CYCLE),
                                          (("CurrentTime", "trickle", {"size": 16, "every": 0.5}), ())],
                         ids=["queryperf-trickle", "changes-cut", "changes-html", "vm-page-cut", "vm-page-html",
                              "clock-trickle"])
def test_a_faulty_answer_fails_the_cycle_and_keeps_the_last_good_report_stale(proxy, monkeypatch, tmp_path, fault,
                                                                              extra):
    monkeypatch.setenv("ESXDIAG_PASSWORD", proxy.lab.password)
    scheduler, state, creds, name = serve_parts(proxy, tmp_path, 4, *extra)
    scheduler.run_one(creds, name)
    good = state.get(name)
    assert good.last_ok is True and good.last_vms == 6
    method, action, params = fault
    proxy.add(method, action, **params)
    started = time.monotonic()
    scheduler.run_one(creds, name)
    entry = state.get(name)
    assert time.monotonic() - started < 12  # 4 s per call, not the 14 s and more a trickled answer takes whole
    kind = {"trickle": "timeout", "cut": "unreachable", "html": "bad-answer"}[action]
    assert entry.last_ok is False and entry.last_error_kind == kind and entry.stale, entry.last_error
    assert [r["name"] for r in entry.document.as_dict()["vms"]] == [r["name"] for r in good.document.as_dict()["vms"]]
    assert metric(state, "esxdiag_vcenter_scan_errors_total", vcenter=name, kind=kind) == 1
    assert metric(state, "esxdiag_vcenter_stale", vcenter=name) == 1
