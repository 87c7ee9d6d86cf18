"""Issue 29, the no-op guard, end to end: bundles built by tests/fixtures/situations/build_guard.py (and the
v7-jumbo-ring example), analyzed as a user would. Each says the right place for the fix and prints no
command that would leave the thing it changes as it is."""

from __future__ import annotations

from pathlib import Path

from esxdiag.config import DEFAULT_THRESHOLDS
from esxdiag.engine import analyze
from esxdiag.reports.json_report import to_jsonable
from esxdiag.reports.text import render_text

ROOT = Path(__file__).resolve().parents[2]
SITUATIONS = ROOT / "tests" / "fixtures" / "situations"


def run(path: Path):
    result = analyze(path, dict(DEFAULT_THRESHOLDS))
    return to_jsonable(result), render_text(result, width=200)


def every_command(doc: dict) -> list[str]:
    vm = doc["vms"][0]
    remedies = [r for n in vm["vnics"] for r in n["verdict"]["remediation"]] + [
        r for f in vm["findings"] for r in f["remediation"]]
    return [c for r in remedies for c in r["commands"]]


def test_item2_pool_limit_gets_the_pools_command():
    doc, text = run(SITUATIONS / "pool-limit")
    nic = doc["vms"][0]["vnics"][0]
    assert nic["ring_verdict"] == "cpu-limit-first"
    assert "resource pool tenant-a (/DC0/host/DC0_C0/Resources/tenant-a) limits CPU to 2,000 MHz" in \
        nic["verdict"]["summary"]
    shown = every_command(doc)
    assert "Get-ResourcePool -Id 'ResourcePool-resgroup-74' | Set-ResourcePool -CpuLimitMhz $null" in shown
    assert "govc pool.change -cpu.limit -1 /DC0/host/DC0_C0/Resources/tenant-a" in shown
    assert not any("vm.change" in c or "Set-VMResourceConfiguration" in c for c in shown)
    assert "Resources'" not in " ".join(shown) and "41210" not in " ".join(shown)  # the root pool is capacity
    assert "tenant-a" in text


def test_item2_pool_limit_seen_only_in_esxtop_says_which_to_find():
    doc, _ = run(SITUATIONS / "pool-limit-esxtop-only")
    verdict = doc["vms"][0]["vnics"][0]["verdict"]
    assert "a resource pool (or vApp) above this VM limits it; the VM has no limit of its own" in verdict["summary"]
    shown = every_command(doc)
    assert any("govc find / -type p" in c for c in shown)
    assert not any("-cpu.limit" in c or "Set-VMResourceConfiguration" in c or "Set-ResourcePool" in c for c in shown)


def test_item3_windows_ring_at_max_small_buffers_default_raises_the_buffers():
    doc, _ = run(SITUATIONS / "windows-ring-max-buffers-default")
    nic = doc["vms"][0]["vnics"][0]
    assert nic["ring_verdict"] == "at-max"
    assert "Small Rx Buffers" in nic["verdict"]["summary"] and "half-applied" in nic["verdict"]["summary"]
    shown = every_command(doc)
    assert shown[0] == "Set-NetAdapterAdvancedProperty -Name 'Ethernet0' -RegistryKeyword NumRxBuffersSmall " \
                       "-RegistryValue 8192"
    assert not any("MaxRxRing1Length" in c or "govc vm.change" in c or "NumberOfReceiveQueues" in c for c in shown)


def test_item6_two_hot_queues_of_eight_named_and_no_more_queues():
    doc, _ = run(SITUATIONS / "two-hot-queues-of-eight")
    nic = doc["vms"][0]["vnics"][0]
    assert nic["ring_verdict"] == "at-max"
    assert "Rx queues 1 and 5 of 8 take 97% of the drops" in nic["verdict"]["summary"]
    hot = next(f for f in doc["vms"][0]["findings"] if f["rule"] == "hot-queue")
    assert hot["title"].startswith("Drops on rx queues 1 and 5 of 8")
    assert "A bigger ring helps" not in hot["summary"]  # it is at its maximum
    shown = every_command(doc)
    assert not any("ethtool -L" in c or "govc vm.change" in c or "ethtool -G" in c for c in shown)


def test_item6_three_hot_queues_of_eight():
    doc, _ = run(SITUATIONS / "three-hot-queues-of-eight")
    assert "Rx queues 1, 2 and 4 of 8 take 99% of the drops" in doc["vms"][0]["vnics"][0]["verdict"]["summary"]
    assert not any("ethtool -L" in c or "govc vm.change" in c for c in every_command(doc))


def test_item9_the_unit_that_sets_the_ring_is_edited():
    doc, text = run(ROOT / "examples" / "v7-jumbo-ring")
    nic = doc["vms"][0]["vnics"][0]
    assert nic["ring_verdict"] == "raise-ring1"
    linux = next(r for r in nic["verdict"]["remediation"] if r["os"] == "linux")
    assert linux["persistence"][0] == ("edit /etc/systemd/system/ethtool-rings.service line 7 (systemd unit): it "
                                       "sets rx 4032 (a v7 vmxnet3 device runs 4032 as 2048) -> change it to 4096")
    assert not any("nmcli" in p or "udev" in p for p in linux["persistence"])
    check = next(c for c in doc["vms"][0]["checks"] if c["rule"] == "ring-persistence")
    assert "ethtool-rings.service line 7 (systemd unit) sets rx 4032" in check["reason"]
    assert "defaults or persisted" not in text


def test_item11_tx_only_drops_point_at_the_tx_finding():
    doc, text = run(SITUATIONS / "tx-ring-full-only")
    nic = doc["vms"][0]["vnics"][0]
    assert nic["ring_verdict"] == "not-needed"
    assert "keep the default rings" not in nic["verdict"]["summary"]
    assert "The rx rings are fine" in nic["verdict"]["summary"] and "tx-drops finding" in nic["verdict"]["summary"]
    assert any(f["rule"] == "tx-drops" for f in doc["vms"][0]["findings"])
