"""`esxdiag scan --deep 5` against the lab (issue 22, "every drop explained"): the uplink VM is named
as uplink loss by the fleet scan too. iperf-uplink-loss runs alone on esx1.lab.local, whose vmnic1
misses 307 frames/s; the lab's vCenter reports that per vmnic (net.droppedRx of instance vmnic1, the
same model the emulated host prints), esx0's uplinks are clean. So esx1's VM is `uplink-loss`, the
host rollup says the loss once, and every VM on esx0 keeps its own class.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab

SCENARIOS = json.loads((Path(__file__).resolve().parents[1] / "lab" / "scenarios.json").read_text())
VMS = {vm["name"]: vm for vm in SCENARIOS["vms"]}
HOSTS = {h["name"]: h for h in SCENARIOS["hosts"]}
LOSS = VMS["iperf-uplink-loss"]
LOSS_HOST = HOSTS[LOSS["host"]]
RATE = sum(u["rates_per_s"].get("Receive missed errors", 0) for u in LOSS_HOST["uplinks"])  # 307/s, vmnic1 only

# Each VM's class from vCenter's counters alone (the snapshot analysed offline), and after the deep check
# of the five drop suspects: the per-VM verdict (scenarios.json expected_verdict) decides it
# (docs/fleet-scan.md "Deep check"): raise-ring1 / raise-ring2 / enable-rss -> ring-exhaustion,
# cpu-limit-first -> cpu-limit; iperf-test2 and app-healthy01 drop nothing (healthy), legacy-e1000 is an
# e1000 without drops (emulated-nic), iperf-uplink-loss's own port drops nothing but its host's
# vmnic1 loses 307 frames/s (uplink-loss, never a deep-check candidate).
SUSPECTED = {"iperf-test1": "ring-suspect", "iperf-test2": "healthy", "iperf-cpu-limited": "cpu-and-drops",
             "iperf-test1-ring4096": "ring-suspect", "app-healthy01": "healthy", "win2012r2-file01": "ring-suspect",
             "legacy-e1000": "emulated-nic", "iperf-uplink-loss": "uplink-loss", "iperf-v7-jumbo": "ring-suspect"}
DEEP = {"iperf-test1", "iperf-cpu-limited", "iperf-test1-ring4096", "win2012r2-file01", "iperf-v7-jumbo"}
CONFIRMED = {**SUSPECTED, "iperf-test1": "ring-exhaustion", "iperf-cpu-limited": "cpu-limit",
             "iperf-test1-ring4096": "ring-exhaustion", "win2012r2-file01": "ring-exhaustion",
             "iperf-v7-jumbo": "ring-exhaustion"}
WORDS = (f"uplink loss on {LOSS['host']} vmnic1: {RATE:.2f} received frames/s lost "
         f"(droppedRx {RATE:.2f}/s, errorsRx 0.00/s)")


@pytest.fixture(scope="module")
def scanned(vcsim, sshd, tmp_path_factory):
    """One `esxdiag scan --deep 5` (JSON report, snapshot kept), its snapshot analysed again offline
    (vCenter's classes before the deep check), and the lab commands it sent."""
    sshd.clear_faults()
    work = tmp_path_factory.mktemp("fleet-uplink")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ESXDIAG_", "GOVC_")) and k != "SSH_AUTH_SOCK"}
    env.update(HOME=str(work), XDG_CONFIG_HOME=str(work / "cfg"), ESXDIAG_PASSWORD=vcsim.password)
    logins = [a for name, address in sshd.host_addresses.items()
              for a in ("--deep-host-ssh", f"{name}={sshd.user}@{address}:{sshd.port}")]
    argv = [sys.executable, "-m", "esxdiag", "scan", "--vcenter", vcsim.url, "--user", vcsim.username,
            "--thumbprint", vcsim.thumbprint, "--no-history", "--save-snapshot", "snap.json",
            "--format", "json", "-o", "fleet.json", "--deep", "5", "--deep-window", "3", "--esxtop-delay", "1",
            *logins, "--ssh-key", str(sshd.key_file), "--known-hosts", str(sshd.known_hosts), "--deep-dir", "deep"]
    before = len(sshd.commands())
    done = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    sent = sshd.commands()[before:]
    offline = subprocess.run([sys.executable, "-m", "esxdiag", "scan", "--snapshot", "snap.json", "--format", "json",
                              "-o", "offline.json", "--no-history"], env=env, cwd=work, capture_output=True, text=True,
                             timeout=120, check=False)
    assert offline.returncode == 0, offline.stdout + offline.stderr
    text = subprocess.run([sys.executable, "-m", "esxdiag", "scan", "--snapshot", "snap.json", "--format", "text",
                           "-o", "fleet.txt", "--no-history"], env=env, cwd=work, capture_output=True, text=True,
                          timeout=120, check=False)
    assert text.returncode == 0, text.stdout + text.stderr
    return {"report": json.loads((work / "fleet.json").read_text()),
            "offline": json.loads((work / "offline.json").read_text()), "text": (work / "fleet.txt").read_text(),
            "stdout": done.stdout, "sent": sent}


def rows(report: dict) -> dict[str, dict]:
    return {r["name"]: r for r in report["vms"]}


def test_the_uplink_vm_is_uplink_loss_naming_esx1_and_vmnic1(scanned):
    row = rows(scanned["report"])[LOSS["name"]]
    assert (row["class"], row["severity"], row["confirmed"], row["host"]) == (
        "uplink-loss", "info", False, LOSS["host"])  # no drops of its own: the host's 307/s is the host's row
    assert row["reason"].startswith(f"{WORDS}: before the vSwitch, not the ring, and not seen at this VM's port (the "
                                    "host's finding, in its rollup); the VM itself: no receive drops"), row["reason"]
    assert row["uplink_loss"] == [{"host": LOSS["host"], "vmnic": "vmnic1", "per_s": RATE, "drops_per_s": RATE,
                                   "errors_per_s": 0.0}]
    assert row["drops"] == 0 and row["deep"] is None  # its own port drops nothing; no ring to check


def test_the_host_rollup_states_the_loss_once_and_esx0_is_clean(scanned):
    report = scanned["report"]
    hosts = {h["name"]: h for h in report["rollups"]["hosts"]}
    assert sorted(hosts) == sorted(HOSTS)
    esx1 = hosts[LOSS["host"]]
    assert esx1["uplink"] == f"{WORDS}: before the vSwitch, not the ring: one finding for the host, not one per VM on it"
    assert esx1["uplink_loss_per_s"] == RATE
    assert (esx1["pnic_drops_per_s"], esx1["pnic_errors_per_s"], esx1["source"]) == (RATE, 0.0, "vcenter-realtime")
    assert esx1["counts"]["uplink-loss"] == 1 and esx1["vms"] == 1
    esx0 = hosts["esx0.lab.local"]
    assert (esx0["uplink"], esx0["uplink_loss"], esx0["pnic_drops_per_s"], esx0["pnic_errors_per_s"]) == (
        None, [], 0.0, 0.0)
    for name, host in hosts.items():  # host CPU usage: the emulated host's esxtop figure
        assert host["cpu_usage_avg_pct"] == HOSTS[name]["cpu_used_pct"], name
    assert report["counts"]["uplink-loss"] == 1
    assert scanned["text"].count(esx1["uplink"]) == 1, scanned["text"]
    assert "Uplink loss on 1 host" in scanned["text"]


def test_every_other_vm_keeps_its_class_before_and_after_the_deep_check(scanned):
    assert {name: r["class"] for name, r in rows(scanned["offline"]).items()} == SUSPECTED
    assert {name: r["class"] for name, r in rows(scanned["report"]).items()} == CONFIRMED
    deep = {v["name"]: v for v in scanned["report"]["deep"]["vms"]}
    assert set(deep) == DEEP
    for name in DEEP:
        assert deep[name]["verdicts"] == [VMS[name]["expected_verdict"]] and deep[name]["error"] is None, deep[name]
    for name, row in rows(scanned["report"]).items():
        if name != LOSS["name"]:
            assert row["uplink_loss"] == [] and "uplink loss" not in row["reason"], row


def test_the_deep_check_sampled_esx0_only(scanned, sshd):
    hosts = {h["host"]: h for h in scanned["report"]["deep"]["hosts"]}
    assert list(hosts) == ["esx0.lab.local"] and hosts["esx0.lab.local"]["error"] is None
    addresses = {e["address"] for e in scanned["sent"] if e["target"] == "esxi"}
    assert addresses == {sshd.host_addresses["esx0.lab.local"]}  # no suspect on esx1: never contacted
