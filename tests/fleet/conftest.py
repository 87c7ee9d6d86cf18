"""Fixtures for the fleet scan tests: a small vcsim fleet, credentials, and a fixed fake
PerformanceManager.

vcsim's performance values are random and cannot be injected, so the class and ranking tests
put a fake PerformanceManager behind the real session: inventory, paging, filters and counter
ids still come from vcsim; only QueryPerf answers come from the table the test gives. The fake
answers both ways a server does: a real vCenter's expansion of instance "*" (aggregate "" plus
per-vCPU / per-vNIC series) and vcsim's single echoed "*" series.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from pyVmomi import vim, vmodl

from esxdiag.collectors.credentials import resolve_credentials

LAB_FILE = Path(__file__).resolve().parents[1] / "lab" / "vcsim_lab.py"
# 2 clusters x 2 hosts + 1 standalone host, 2 VMs per cluster / standalone host: 6 VMs, plus the test VMs
FLEET_FLAGS = ("-cluster", "2", "-host", "2", "-vm", "2", "-standalone-host", "1")
# name -> (vCPUs, NIC adapter, CPU limit MHz or None, power on)
TEST_VMS = {
    "ring-a": (2, "vmxnet3", None, True), "ring-b": (1, "vmxnet3", None, True),
    "limited": (1, "vmxnet3", 800, True), "contended": (2, "vmxnet3", None, True),
    "legacy": (1, "e1000", None, True), "quiet": (1, "vmxnet3", None, True),
    "rollup-only": (1, "vmxnet3", None, True), "refused": (1, "vmxnet3", None, True),
    "dropping-nocpu": (1, "vmxnet3", None, True), "stopped": (1, "vmxnet3", None, False),
}


def load_lab_module():
    spec = importlib.util.spec_from_file_location("esxdiag_fleet_vcsim_lab", LAB_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def lab_module():
    return load_lab_module()


@pytest.fixture(scope="session")
def fleet_lab(lab_module, tmp_path_factory):
    """vcsim with the default fleet plus TEST_VMS in cluster DC0_C0 (folder /DC0/vm/prod)."""
    lab = lab_module.start_vcsim(tmp_path_factory.mktemp("fleet-vcsim"), FLEET_FLAGS, timeout_s=120)
    try:
        lab.govc("folder.create", "/DC0/vm/prod")
        for name, (cpus, adapter, limit, power) in TEST_VMS.items():
            lab.govc("vm.create", f"-on={str(power).lower()}", "-host", "DC0_C0_H0", "-folder", "prod",
                     "-c", str(cpus), "-net", "DC0_DVPG0", "-net.adapter", adapter, name)
            if limit is not None:  # vcsim replaces the whole allocation: set it in one call
                lab.govc("vm.change", "-vm", name, "-cpu.limit", str(limit), "-cpu.reservation", "0",
                         "-cpu.shares", "normal")
    except BaseException:
        lab.stop()
        raise
    yield lab
    lab.stop()


@pytest.fixture(scope="session")
def creds_for():
    def make(lab, **overrides):
        return resolve_credentials(lab.url, lab.username, env={"ESXDIAG_PASSWORD": lab.password},
                                   config_path=os.devnull, insecure=overrides.pop("insecure", True), **overrides)
    return make


class FakePerfManager:
    """QueryPerf from a fixed table: {VM or host name: {(counter, instance): [values per 20 s sample]}}.

    instance "*" in the table is answered as vcsim does (one series named "*"); other instances
    as a real vCenter does. Names in `no_realtime` answer nothing at 20 s (and the table at 300 s);
    names in `refused` make the whole QueryPerf call fail, as a server does for a bad entity."""

    def __init__(self, table: dict[str, dict], counters: dict, names: dict[str, str],
                 no_realtime: set[str] = frozenset(), refused: set[str] = frozenset()):
        self.table, self.counters, self.names = table, counters, names
        self.no_realtime, self.refused = set(no_realtime), set(refused)
        self.calls: list[tuple[int, int, str]] = []  # (interval, entities, "vm" | "host") per QueryPerf call

    def QueryPerf(self, querySpec):
        kind = "vm" if isinstance(querySpec[0].entity, vim.VirtualMachine) else "host"
        self.calls.append((querySpec[0].intervalId, len(querySpec), kind))
        if any(self.names.get(s.entity._moId) in self.refused for s in querySpec):
            raise vmodl.fault.InvalidArgument(msg="entity refused by the fake", invalidProperty="entity")
        out = []
        for spec in querySpec:
            name = self.names.get(spec.entity._moId)
            rows = self.table.get(name)
            if rows is None or (spec.intervalId == 20 and name in self.no_realtime):
                out.append(vim.PerformanceManager.EntityMetricCSV(entity=spec.entity, sampleInfoCSV="", value=[]))
                continue
            samples = len(next(iter(rows.values())))
            stamps = [spec.endTime - timedelta(seconds=spec.intervalId * (samples - 1 - i)) for i in range(samples)]
            info = ",".join(f"{spec.intervalId},{t.strftime('%Y-%m-%dT%H:%M:%SZ')}" for t in reversed(stamps))
            wanted = {m.counterId for m in spec.metricId}
            values = [vim.PerformanceManager.MetricSeriesCSV(
                id=vim.PerformanceManager.MetricId(counterId=self.counters[c].key, instance=inst),
                value=",".join(str(v) for v in reversed(vals)))  # newest first, as vcsim answers
                for (c, inst), vals in rows.items() if self.counters[c].key in wanted]
            out.append(vim.PerformanceManager.EntityMetricCSV(entity=spec.entity, sampleInfoCSV=info, value=values))
        return out


class _Content:
    """The session's ServiceContent with perfManager replaced."""

    def __init__(self, real, perf):
        self._real, self.perfManager = real, perf

    def __getattr__(self, name):
        return getattr(self._real, name)


@pytest.fixture
def fake_perf(monkeypatch):
    """install(table, **kw) -> FakePerfManager: every session the scan opens answers QueryPerf from it."""
    scan_module = importlib.import_module("esxdiag.collectors.fleet.scan")
    from esxdiag.collectors.vsphere_perf import perf_counters
    from esxdiag.collectors.vsphere_session import connect as real_connect

    holder = {}

    def install(table, **kw):
        def connect(creds, timeout_s=30):
            session = real_connect(creds, timeout_s=timeout_s)
            counters = perf_counters(session)  # real counter ids from vcsim, read before the swap
            view = session.content.viewManager.CreateContainerView(session.content.rootFolder,
                                                                   [vim.VirtualMachine, vim.HostSystem], True)
            names = {entity._moId: entity.name for entity in view.view}  # hosts too: a table may name one
            view.DestroyView()
            fake = FakePerfManager(table, counters, names, **kw)
            holder["fake"] = fake
            session._content = _Content(session._content, fake)
            session.request_count = 0
            return session
        monkeypatch.setattr(scan_module, "connect", connect)
        return holder
    return install


# --- the fault tests (test_faults_*.py): a small vcsim behind faultproxy.py ----------------------------
FAULT_FLAGS = ("-cluster", "1", "-host", "2", "-vm", "6", "-standalone-host", "0")  # 6 VMs on 2 hosts


def _faultproxy_module():
    spec = importlib.util.spec_from_file_location("faultproxy", Path(__file__).with_name("faultproxy.py"))
    module = sys.modules.setdefault("faultproxy", importlib.util.module_from_spec(spec))
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def faults(lab_module, tmp_path_factory):
    """A FaultProxy (its .lab the vcsim behind it), shared by the fault tests."""
    lab = lab_module.start_vcsim(tmp_path_factory.mktemp("faults-vcsim"), FAULT_FLAGS, timeout_s=120)
    proxy = _faultproxy_module().FaultProxy(lab.port, tmp_path_factory.mktemp("faults-proxy"))
    proxy.lab = lab
    proxy.creds = lambda: resolve_credentials(proxy.url, lab.username, env={"ESXDIAG_PASSWORD": lab.password},
                                              config_path=os.devnull, insecure=True)
    yield proxy
    proxy.stop()
    lab.stop()


@pytest.fixture
def proxy(faults):
    """The fault proxy with no rule, cleared again after the test."""
    faults.clear()
    yield faults
    faults.clear()

