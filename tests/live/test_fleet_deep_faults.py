"""The fleet deep check faces the faults `esxdiag report` faces, through the same host sampler (issue 16,
point 8): a tool the preflight finds missing is skipped, never sent; a vCenter that trickles is cut off
at the vCenter deadline; a connection that dies mid-window is named and the host listed as not fully
sampled. Each runs esxdiag.collectors.fleet.deep.collect_groups in-process against the labs (vcsim for
vCenter, the lab sshd as ESXi host), with the words tests/live/test_preflight.py and test_bounded.py
check for `report`."""

from __future__ import annotations

import os
import time

import pytest

from esxdiag.bundle import Bundle
from esxdiag.collectors.credentials import resolve_credentials
from esxdiag.collectors.fleet.deep import DeepOptions, HostGroup, Suspect, collect_groups

pytestmark = pytest.mark.lab
VM = "iperf-test1"
HOST = "esx0.lab.local"


def deep(tmp_path, creds, sshd, **kw) -> tuple[HostGroup, list[str]]:
    said: list[str] = []
    opts = DeepOptions(output=tmp_path / "deep", window_s=3, esxtop_delay_s=1,
                       default_host_ssh=f"{sshd.user}@{sshd.host_address}:{sshd.port}", ssh_key=sshd.key_file,
                       known_hosts=sshd.known_hosts, env={}, **kw)
    key = f"{creds.host}:{creds.port}"
    (group,) = collect_groups([HostGroup(key, HOST, [Suspect(key, HOST, VM, VM)])], {key: creds}, opts, said.append)
    return group, said


@pytest.fixture
def vcenter(vcsim):
    return resolve_credentials(vcsim.url, vcsim.username, env={"ESXDIAG_PASSWORD": vcsim.password},
                               thumbprint=vcsim.thumbprint, config_path=os.devnull)


def captures(group: HostGroup, spec: str, sample: int | None = None) -> list:
    return [c for c in Bundle.load(group.bundle).captures if c.spec == spec and (sample is None or c.sample == sample)]


def test_a_missing_tool_is_skipped_after_the_preflight(tmp_path, vcenter, ssh_lab):
    ssh_lab.set_fault("missing", ssh_lab.host_address, "esxtop")
    before = len(ssh_lab.commands())
    group, said = deep(tmp_path, vcenter, ssh_lab)
    sent = ssh_lab.commands()[before:]
    (probe,) = captures(group, "esxtop_probe")
    assert (probe.error_kind, probe.rc) == ("not-found", 127) and "sh: esxtop: not found" in probe.error
    (esxtop,) = captures(group, "esxtop_batch")
    assert esxtop.error_kind == "skipped" and "esxtop not found" in esxtop.error, esxtop
    esxtops = [e["command"] for e in sent if e["address"] == ssh_lab.host_address and e["command"].startswith("esxtop")]
    assert esxtops == ["esxtop -b -d 2 -n 1"], esxtops  # the probe only, as for report
    (line,) = [s for s in said if "esxtop not found on" in s]
    assert "no %RDY/%CSTP/%MLMTD from the host; CPU from vCenter's 20 s statistics only" in line
    assert group.error is None and captures(group, "vsish_rxsummary", 1)  # the rest still sampled


def test_a_trickling_vcenter_is_cut_off_at_the_vcenter_deadline(tmp_path, trickle, ssh_lab):
    creds = resolve_credentials(f"https://127.0.0.1:{trickle.port}/sdk", "user", env={"ESXDIAG_PASSWORD": "pw"},
                                insecure=True, config_path=os.devnull)
    started = time.monotonic()
    group, said = deep(tmp_path, creds, ssh_lab, vcenter_timeout_s=3)
    assert time.monotonic() - started < 10
    assert f"127.0.0.1:{trickle.port}" in group.error and "no complete answer within 3 s" in group.error
    (inventory,) = captures(group, "vsphere_vm")
    assert inventory.error_kind == "timeout"
    assert trickle.bytes_sent > 0 and not captures(group, "net_stats_list")  # no host contacted for no VM


def test_a_dropped_connection_is_named_and_the_host_listed(tmp_path, vcenter, ssh_lab):
    ssh_lab.set_fault("drop", ssh_lab.host_address, "esxtop", command="esxtop -b -d 1 -n 3")  # the window's
    group, said = deep(tmp_path, vcenter, ssh_lab)
    (esxtop,) = captures(group, "esxtop_batch")
    assert esxtop.error_kind == "connection-lost" and "connection lost" in esxtop.error, esxtop
    assert captures(group, "vsish_rxsummary", 1) == []  # nothing sent on a dead connection
    notes = Bundle.load(group.bundle).manifest["notes"]
    assert any("connection lost" in n and "window end" in n for n in notes), notes
    assert "connection lost" in group.error  # listed: the scan exits 3, as report does
    assert any("connection lost" in s for s in said)
