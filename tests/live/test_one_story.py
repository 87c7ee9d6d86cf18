"""The lab tells one story: `esxdiag rings --vm X --no-host-ssh --no-guest` (vCenter only) reads the
same drops and CPU figures as the run over SSH (the emulated ESXi host and guest).

Where the lab's numbers come from: tests/lab/scenarios.json gives each VM's steady state
(iperf-test1: "running out of buffers" 34.6/s; iperf-cpu-limited: max_limited_pct 69.52 per
vCPU). The emulated host (tests/lab/emulator/, model.py) prints counters advancing at those
rates and esxtop at those percentages; the lab's vCenter is vcsim behind tests/lab/vcenter_proxy.py,
which answers QueryPerf for the scenario VMs from the same model (emulator/vcenter_perf.py):
drops per 20 s sample = rate x 20 per vNIC, cpu.ready / maxlimited = pct x 200 ms per vCPU.
The expected figures here are read from scenarios.json, not from the proxy's code. Verdict words
of vCenter-only runs are not asserted (their wording is another change's); numbers and severities are.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pyVmomi import vim

from esxdiag.collectors.credentials import resolve_credentials
from esxdiag.collectors.vsphere_perf import perf_counters
from esxdiag.collectors.vsphere_session import connect

pytestmark = pytest.mark.lab

SCENARIOS = {vm["name"]: vm for vm in json.loads(
    (Path(__file__).resolve().parents[1] / "lab" / "scenarios.json").read_text())["vms"]}
RING, LIMITED = SCENARIOS["iperf-test1"], SCENARIOS["iperf-cpu-limited"]
TOLERANCE = 0.10
VCENTER_ONLY = ("--no-host-ssh", "--no-guest")


def near(observed: float, expected: float) -> bool:
    return abs(observed - expected) <= TOLERANCE * expected


@pytest.fixture(scope="module")
def runs(make_esxdiag, sshd, tmp_path_factory):
    """(vm, "vcenter" | "ssh") -> (Run, report JSON): both VMs both ways, all four at once."""
    sshd.clear_faults()
    esxdiag = make_esxdiag(tmp_path_factory.mktemp("story-home"), tmp_path_factory.mktemp("story"))
    started, t0 = {}, time.monotonic()
    for vm in (RING["name"], LIMITED["name"]):
        for way, extra, kwargs in (("vcenter", VCENTER_ONLY, {"ssh": [], "window": ("--window", "60")}),
                                   ("ssh", (), {})):
            answer = esxdiag.workdir / f"{vm}-{way}.json"
            started[(vm, way, answer)] = esxdiag.start("rings", vm, *extra, "--format", "json", "-o", str(answer),
                                                       **kwargs)
    out = {}
    for (vm, way, answer), handle in started.items():
        run = esxdiag.finish(handle, t0)
        assert run.returncode == 0, run.explain()
        out[(vm, way)] = (run, json.loads(answer.read_text())["vms"][0])
    return out


def perf_record(run) -> dict:
    (capture,) = run.captures("vsphere_perf")
    return json.loads(capture.path.read_text())


def vcenter_drops_per_s(run, report: dict) -> float:
    (vnic,) = report["vnics"]
    dropped = vnic["metrics"]["vcenter_dropped_rx"]
    assert dropped["samples"] >= 1, vnic
    return dropped["delta"] / (dropped["samples"] * perf_record(run)["interval_s"])


def severities(report: dict, rule: str) -> list[str]:
    return [f["severity"] for f in report["findings"] if f["rule"] == rule]


def test_vcenter_counters_are_the_scenario_rates_per_20s_sample(runs):
    run, _ = runs[(RING["name"], "vcenter")]
    record = perf_record(run)
    assert (record["interval_s"], record["rollup"]) == (20, "realtime"), record
    stamps = [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in record["timestamps"]]
    assert len(stamps) == 3 and all(t.second % 20 == 0 for t in stamps), stamps  # 60 s = three 20 s samples
    series = {(s["counter"], s["instance"]): s["values"] for s in record["series"]}
    nic, per_sample = RING["nics"][0], 20
    (device_key,) = {i for c, i in series if c == "net.droppedRx.summation"}
    for counter, rate in (("net.droppedRx.summation", nic["rates_per_s"]["running out of buffers"]),
                          ("net.packetsRx.summation", nic["rates_per_s"]["pkts rx ok"])):
        assert all(abs(v - rate * per_sample) <= 1 for v in series[(counter, device_key)]), (counter, series)
    for vcpu in map(str, range(RING["num_cpu"])):
        assert series[("cpu.ready.summation", vcpu)] == [round(RING["cpu"]["ready_pct"] * 200)] * 3


def test_ring_vm_vcenter_only_sees_the_drops_the_host_counts(runs):
    rate = RING["nics"][0]["rates_per_s"]["running out of buffers"]
    vc_run, vc = runs[(RING["name"], "vcenter")]
    ssh_run, ssh = runs[(RING["name"], "ssh")]
    vcenter = vcenter_drops_per_s(vc_run, vc)
    assert near(vcenter, rate), (vcenter, rate)
    (vnic,) = vc["vnics"]
    assert vnic["ring_verdict"] != "not-needed", vc_run.explain()
    assert set(severities(vc, "port-drops")) & {"warning", "critical"}, vc["findings"]
    (host_nic,) = ssh["vnics"]
    for counter in ("host_out_of_buffers", "dropped_rx"):
        assert near(host_nic["metrics"][counter]["per_s"], vcenter), (counter, host_nic["metrics"][counter], vcenter)
    assert severities(ssh, "ring-exhaustion") == ["critical"], ssh["findings"]
    assert vc["cpu"]["source"] == "vcenter-realtime" and ssh["cpu"]["source"] == "esxtop"
    assert near(vc["cpu"]["ready_pct_max"], RING["cpu"]["ready_pct"]) and near(ssh["cpu"]["ready_pct_max"],
                                                                               RING["cpu"]["ready_pct"])


def test_cpu_limited_vm_is_critical_from_vcenter_as_over_ssh(runs):
    limited = LIMITED["cpu"]["max_limited_pct"]
    vc_run, vc = runs[(LIMITED["name"], "vcenter")]
    _, ssh = runs[(LIMITED["name"], "ssh")]
    assert vc["cpu"]["source"] == "vcenter-realtime" and ssh["cpu"]["source"] == "esxtop"
    for report in (vc, ssh):  # per vCPU (cpu.maxlimited per vCPU instance / esxtop Vcpu rows)
        assert near(report["cpu"]["max_limited_pct_max"], limited), report["cpu"]
        assert near(report["cpu"]["ready_pct_max"], LIMITED["cpu"]["ready_pct"]), report["cpu"]
        assert severities(report, "cpu-limit") == ["critical"], report["findings"]
    assert near(vcenter_drops_per_s(vc_run, vc), LIMITED["nics"][0]["rates_per_s"]["running out of buffers"])


@pytest.fixture
def unmodelled_vm(vcsim):
    """A VM that is not in the scenarios (created here, destroyed afterwards): vcsim answers for it."""
    name = f"esxdiag-unmodelled-{uuid.uuid4().hex[:8]}"
    vcsim.govc("vm.create", "-on=true", "-host", "esx0.lab.local", "-ds", "LocalDS_0", "-net", "VM Network", name)
    yield name
    vcsim.govc("vm.destroy", name)


def test_one_query_mixing_scenario_entities_and_another_vm_gets_every_answer(vcsim, unmodelled_vm):
    """The proxy answers the scenario VM's and the scenario host's querySpecs (here in the default,
    non-CSV format, newest two samples) and passes the other VM's to vcsim; esxdiag pins the proxy's
    certificate like vcsim's."""
    creds = resolve_credentials(vcsim.url, vcsim.username, env={"ESXDIAG_PASSWORD": vcsim.password},
                                config_path=os.devnull, thumbprint=vcsim.thumbprint)
    session = connect(creds, timeout_s=30)
    try:
        content = session.content
        counters = perf_counters(session)
        entities = {}
        for kind in (vim.VirtualMachine, vim.HostSystem):
            view = content.viewManager.CreateContainerView(content.rootFolder, [kind], True)
            entities.update({e.name: e for e in view.view})
            view.DestroyView()

        def spec(name: str, counter: str):
            return vim.PerformanceManager.QuerySpec(
                entity=entities[name], maxSample=2, intervalId=20,
                metricId=[vim.PerformanceManager.MetricId(counterId=counters[counter].key, instance="*")])

        specs = [spec(LIMITED["name"], "cpu.maxlimited.summation"), spec("esx0.lab.local", "net.droppedRx.summation"),
                 spec(unmodelled_vm, "cpu.maxlimited.summation")]
        answers = {a.entity.name: a for a in content.perfManager.QueryPerf(querySpec=specs)}
    finally:
        session.close()
    vm = answers[LIMITED["name"]]
    stamps = [s.timestamp for s in vm.sampleInfo]
    assert len(stamps) == 2 and stamps[0] - stamps[1] == timedelta(seconds=20)  # newest first, as vcsim
    assert all(t.tzinfo and t.astimezone(timezone.utc).second % 20 == 0 for t in stamps), stamps
    series = {v.id.instance: list(v.value) for v in vm.value}
    ms = round(LIMITED["cpu"]["max_limited_pct"] * 200)
    assert series == {"": [ms * LIMITED["num_cpu"]] * 2, **{str(i): [ms] * 2 for i in range(LIMITED["num_cpu"])}}
    host = {v.id.instance: list(v.value) for v in answers["esx0.lab.local"].value}
    assert host == {"": [0, 0], "vmnic0": [0, 0], "vmnic1": [0, 0]}  # the model's clean esx0 uplinks, per vmnic
    assert answers[unmodelled_vm].value, "vcsim's own answer for the other VM was lost"
