"""The lab's two ESXi hosts (issue 22): esx0.lab.local (127.0.0.2) runs every scenario VM but
iperf-uplink-loss, which runs alone on esx1.lab.local (127.0.0.3), whose vmnic1 misses 307 frames/s;
esx0's uplinks are clean. One lab sshd answers both addresses, each as its own host: every per-host
output lists only that host's VMs and ports. The lab's vCenter (vcsim behind tests/lab/vcenter_proxy.py)
puts each VM on its host and answers QueryPerf for both hosts from the same model and time origin as
the emulated hosts: per vmnic, net.droppedRx = "Receive packets dropped" + "Receive missed errors"
gained over the 20 s sample, net.errorsRx = "Total receive errors" gained; cpu.usage.average = the
host's esxtop Physical Cpu % (cpu_used_pct). Expected figures come from scenarios.json.
"""

from __future__ import annotations

import csv
import json
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pyVmomi import vim

from esxdiag.collectors.credentials import resolve_credentials
from esxdiag.collectors.ssh import SshConnection, SshOptions, SshTarget
from esxdiag.collectors.vsphere_host_perf import collect_host_perf
from esxdiag.collectors.vsphere_inventory import collect_inventory, find_vm
from esxdiag.collectors.vsphere_perf import perf_counters
from esxdiag.collectors.vsphere_session import connect
from esxdiag.parsers.esxcli import parse_nic_stats, parse_vm_list, parse_vm_ports
from esxdiag.parsers.netstats import parse_net_stats_list

pytestmark = pytest.mark.lab

SCENARIOS = json.loads((Path(__file__).resolve().parents[1] / "lab" / "scenarios.json").read_text())
HOSTS = {h["name"]: h for h in SCENARIOS["hosts"]}
VMS = {vm["name"]: vm for vm in SCENARIOS["vms"]}
LOSS = VMS["iperf-uplink-loss"]
ESX0, ESX1 = "esx0.lab.local", "esx1.lab.local"
DROPS, ERRORS = "net.droppedRx.summation", "net.errorsRx.summation"
DROP_KEYS = ("Receive packets dropped", "Receive missed errors")  # what vCenter's host net.droppedRx counts


def on(host: str) -> list[dict]:
    return [vm for vm in SCENARIOS["vms"] if vm["host"] == host]


def uplink_value(uplink: dict, key: str, t: float) -> int:
    """A vmnic's esxcli counter t seconds after the lab started (the emulator README: start + rate x t)."""
    return int(uplink.get("counters_start", {}).get(key, 0) + uplink.get("rates_per_s", {}).get(key, 0) * t)


@pytest.fixture
def host_ssh(ssh_lab, tmp_path):
    """host_ssh(name) -> a connection to that lab host, its key checked against the lab's known_hosts."""
    opened = []
    options = SshOptions(key_file=ssh_lab.key_file, known_hosts=ssh_lab.known_hosts,
                         own_known_hosts=tmp_path / "own_known_hosts", connect_timeout_s=5, command_timeout_s=30)

    def open_host(name: str) -> SshConnection:
        conn = SshConnection(SshTarget(ssh_lab.user, ssh_lab.host_addresses[name], ssh_lab.port), "esxi",
                             options).connect()
        opened.append(conn)
        return conn

    yield open_host
    for conn in opened:
        conn.close()
    assert not (tmp_path / "own_known_hosts").exists()  # both addresses were already known: nothing learnt


def text(result) -> str:
    assert result.ok, (result.command, result.error, result.stderr)
    return result.stdout.decode()


def test_the_scenario_puts_the_uplink_vm_alone_on_the_second_host(sshd):
    assert [(h["name"], h["address"]) for h in SCENARIOS["hosts"]] == [(ESX0, "127.0.0.2"), (ESX1, "127.0.0.3")]
    assert sshd.host_addresses == {ESX0: "127.0.0.2", ESX1: "127.0.0.3"}
    assert [vm["name"] for vm in on(ESX1)] == ["iperf-uplink-loss"]
    assert LOSS["nics"][0]["uplink"] == "vmnic1"
    assert HOSTS[ESX1]["uplinks"][1]["rates_per_s"]["Receive missed errors"] == 307
    lossy = [(h["name"], u["client"]) for h in SCENARIOS["hosts"] for u in h["uplinks"]
             if any(u.get("rates_per_s", {}).get(k) for k in (*DROP_KEYS, "Total receive errors"))]
    assert lossy == [(ESX1, "vmnic1")]  # esx0's uplinks are clean


def test_known_hosts_knows_both_host_addresses(sshd):
    known = sshd.known_hosts.read_text()
    for address in sshd.host_addresses.values():
        assert f"[{address}]:{sshd.port} ssh-ed25519 " in known


@pytest.mark.parametrize("host", [ESX0, ESX1])
def test_each_host_lists_only_its_own_vms_and_ports(host_ssh, ssh_lab, host):
    conn = host_ssh(host)
    mine, others = on(host), [vm for vm in SCENARIOS["vms"] if vm["host"] != host]
    ports = parse_net_stats_list(text(conn.run_spec("net_stats_list")))
    assert sorted(p.port for p in ports.ports if p.kind == "vnic") == sorted(n["port"] for vm in mine for n in vm["nics"])
    assert sorted((p.port, p.client) for p in ports.ports if p.kind == "uplink") == sorted(
        (u["port"], u["client"]) for u in HOSTS[host]["uplinks"])
    listed = parse_vm_list(text(conn.run_spec("esxcli_vm_list")))
    assert [(v.world_id, v.name) for v in listed.vms] == [(vm["world_id"], vm["name"]) for vm in mine]
    for vm in mine:
        (record,) = parse_vm_ports(text(conn.run_spec("esxcli_vm_ports", {"world": vm["world_id"]}))).ports
        uplink = next(u for u in HOSTS[host]["uplinks"] if u["client"] == vm["nics"][0].get("uplink", "vmnic0"))
        assert (record.port_id, record.team_uplink) == (vm["nics"][0]["port"], uplink["client"])
    for vm in others:  # another host's world and port are unknown here
        refused = conn.run_spec("esxcli_vm_ports", {"world": vm["world_id"]})
        assert refused.rc == 1 and b"Invalid World ID" in refused.stderr, refused
        missing = conn.run_spec("vsish_clientstats", {"portset": HOSTS[host]["portset"], "port": vm["nics"][0]["port"]})
        assert missing.rc == 1 and b"Not found" in missing.stderr, missing
    version = text(conn.run_spec("esxi_version"))
    assert version == HOSTS[host]["version"] + "\n" and version.startswith("VMware ESXi 8.0.2 ")
    esxtop = text(conn.run_spec("esxtop_batch", {"delay": 1, "iterations": 1}, timeout_s=20))
    header = esxtop.splitlines()[0]
    assert all(f"Group Cpu({vm['group_id']}:{vm['name']})" in header for vm in mine)
    assert not any(f":{vm['name']})" in header for vm in others)
    assert {f"Network Port({HOSTS[host]['portset']}:{u['port']}:{u['client']})" in header
            for u in HOSTS[host]["uplinks"]} == {True}
    columns, row = (next(csv.reader([line])) for line in esxtop.splitlines()[:2])
    assert columns[1] == f"\\\\{host}\\Physical Cpu(_Total)\\% Processor Time"
    assert float(row[1]) == HOSTS[host]["cpu_used_pct"]


@pytest.fixture
def session(vcsim):
    creds = resolve_credentials(vcsim.url, vcsim.username, env={"ESXDIAG_PASSWORD": vcsim.password},
                                thumbprint=vcsim.thumbprint, config_path=os.devnull)
    return connect(creds)


def test_vcenter_puts_each_vm_on_its_scenario_host(session):
    for vm in SCENARIOS["vms"]:
        assert collect_inventory(session, find_vm(session, vm["name"]))["host"] == vm["host"], vm["name"]


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def test_vcenter_host_counters_are_the_emulated_uplinks_gains_per_sample(session, sshd, host_ssh):
    """vCenter's per-vmnic net.droppedRx of esx1 is vmnic1's missed errors gained per 20 s sample
    (307/s x 20 = 6140, within the counters' integer rounding), exactly the difference of what
    `esxcli network nic stats get -n vmnic1` prints at the sample's two ends (one time origin); vmnic0
    and every esx0 uplink stay 0, "" is the sum over the vmnics, net.errorsRx is 0 throughout."""
    end = datetime.now(timezone.utc).replace(microsecond=0)
    for host in (ESX0, ESX1):
        ref = collect_inventory(session, find_vm(session, on(host)[0]["name"]))
        perf = collect_host_perf(session, ref["host_moid"], host, end - timedelta(seconds=300), end)
        assert (perf["host"], perf["interval_s"], perf["rollup"], perf["note"]) == (host, 20, "realtime", None)
        stamps = [epoch(t) for t in perf["timestamps"]]
        assert len(stamps) == 15 and all(b - a == 20 for a, b in zip(stamps, stamps[1:]))
        series = {(s["counter"], s["instance"]): s["values"] for s in perf["series"]}
        vmnics = [u["client"] for u in HOSTS[host]["uplinks"]]
        assert sorted(series) == sorted((c, i) for c in (DROPS, ERRORS) for i in ["", *vmnics])
        for uplink in HOSTS[host]["uplinks"]:
            expected = [sum(uplink_value(uplink, k, t - sshd.started) - uplink_value(uplink, k, t - 20 - sshd.started)
                            for k in DROP_KEYS) for t in stamps]
            assert series[(DROPS, uplink["client"])] == expected, (host, uplink["client"])
            rate = sum(uplink.get("rates_per_s", {}).get(k, 0) for k in DROP_KEYS)
            assert all(abs(v - rate * 20) <= 1 for v in expected)
            assert series[(ERRORS, uplink["client"])] == [0] * len(stamps)
        assert series[(DROPS, "")] == [sum(v) for v in zip(*(series[(DROPS, n)] for n in vmnics))]
    assert set(series[(DROPS, "vmnic1")]) <= {6139, 6140, 6141}  # esx1: 307/s x 20 s
    # and what esx1 prints now lies on the same line: start + 307/s x seconds since the same origin
    conn = host_ssh(ESX1)
    vmnic1 = HOSTS[ESX1]["uplinks"][1]
    before = time.time()
    printed = parse_nic_stats(text(conn.run_spec("esxcli_nic_stats", {"vmnic": "vmnic1"}))).counters
    after = time.time()
    key = "Receive missed errors"
    assert uplink_value(vmnic1, key, before - sshd.started) <= printed[key] <= uplink_value(vmnic1, key,
                                                                                           after - sshd.started)


def test_vcenter_host_cpu_usage_is_the_hosts_esxtop_figure_and_unknown_counters_have_no_series(session):
    counters = perf_counters(session)
    wanted = ("cpu.usage.average", DROPS, "net.packetsRx.summation")
    end = datetime.now(timezone.utc).replace(microsecond=0)
    for host in (ESX0, ESX1):
        moid = collect_inventory(session, find_vm(session, on(host)[0]["name"]))["host_moid"]
        spec = vim.PerformanceManager.QuerySpec(
            entity=vim.HostSystem(moid, session.si._stub), startTime=end - timedelta(seconds=60), endTime=end,
            intervalId=20, metricId=[vim.PerformanceManager.MetricId(counterId=counters[n].key, instance="*")
                                     for n in wanted])
        (answer,) = session.content.perfManager.QueryPerf(querySpec=[spec])
        assert answer.entity._moId == moid and len(answer.sampleInfo) == 3
        names = {counters[n].key: n for n in wanted}
        got = {(names[v.id.counterId], v.id.instance): list(v.value) for v in answer.value}
        assert got[("cpu.usage.average", "")] == [round(HOSTS[host]["cpu_used_pct"] * 100)] * 3
        assert sorted(i for c, i in got if c == DROPS) == sorted(["", *(u["client"] for u in HOSTS[host]["uplinks"])])
        assert not [k for k in got if k[0] == "net.packetsRx.summation"]  # the model has no host packet count here
