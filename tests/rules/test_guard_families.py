"""Issue 29 items 2, 3, 6, 9 and 11, each as a family of variants: where a CPU limit lives (the VM, a pool,
a parent pool, a vApp, unknown), Windows buffer pools behind a ring at its maximum, K hot queues of N,
ring sizes already set at boot, transmit-only drops."""

from __future__ import annotations

from esxdiag.config import load_thresholds
from esxdiag.join.facts import DropSymptom, PoolFacts, RingSetting
from esxdiag.result import Finding
from esxdiag.rules import causes, cpu, nic as nic_rules
from esxdiag.rules.verdict import decide

ROOT = PoolFacts("Resources", "resgroup-8", "/DC0/host/C0/Resources", "pool", 41_210, root=True)


def pool(name, limit, path=None, kind="pool", moid=None):
    return PoolFacts(name, moid or f"resgroup-{len(name)}", path or f"/DC0/host/C0/Resources/{name}", kind, limit)


def commands(verdict_or_finding) -> str:
    return "\n".join(c for r in verdict_or_finding.remediation for c in r.commands)


def limited_vm(make, **over):
    return make.vm([make.vnic()], cpu=make.cpu(ready=16, limited=14.6), **over)


# ------------------------------------------------------------------ item 2: where the CPU limit lives

def test_pool_limit_gets_the_pools_command_naming_the_pool(make, thresholds):
    vm = limited_vm(make, resource_pools=(pool("tenant-a", 2000, moid="resgroup-74"), ROOT))
    verdict = decide(vm, vm.vnics[0], thresholds)
    assert verdict.verdict == "cpu-limit-first"
    assert "the VM has no limit of its own; resource pool tenant-a (/DC0/host/C0/Resources/tenant-a) limits CPU to " \
           "2,000 MHz" in verdict.summary
    shown = commands(verdict)
    assert "Get-ResourcePool -Id 'ResourcePool-resgroup-74' | Set-ResourcePool -CpuLimitMhz $null" in shown
    assert "govc pool.change -cpu.limit -1 /DC0/host/C0/Resources/tenant-a" in shown
    assert "vm.change" not in shown and "Set-VMResourceConfiguration" not in shown
    finding = next(f for f in cpu.cpu_limit(vm, thresholds) if isinstance(f, Finding))
    assert "tenant-a" in finding.summary and "Set-ResourcePool" in commands(finding)


def test_parent_pool_limit_is_named_not_the_vms_own_pool(make, thresholds):
    chain = (pool("inner", None, "/DC0/host/C0/Resources/tenant/inner"), pool("tenant", 1500), ROOT)
    verdict = decide(limited_vm(make, resource_pools=chain), make.vnic(), thresholds)
    assert "resource pool tenant (/DC0/host/C0/Resources/tenant) limits CPU to 1,500 MHz" in verdict.summary
    assert "inner" not in commands(verdict) and "Resources/tenant" in commands(verdict)


def test_every_limited_pool_on_the_path_is_named(make, thresholds):
    chain = (pool("inner", 800, "/DC0/host/C0/Resources/outer/inner"), pool("outer", 3000), ROOT)
    verdict = decide(limited_vm(make, resource_pools=chain), make.vnic(), thresholds)
    assert [r.title.split(" on the resource pool ")[1].split(" ")[0] for r in verdict.remediation] == ["inner", "outer"]


def test_vapp_limit_gets_the_vapp_command(make, thresholds):
    chain = (pool("erp-vapp", 4000, kind="vapp", moid="resgroup-v21"), ROOT)
    shown = commands(decide(limited_vm(make, resource_pools=chain), make.vnic(), thresholds))
    assert "Get-VApp -Id 'VirtualApp-resgroup-v21' | Set-VApp -CpuLimitMhz $null" in shown
    assert "pool.change" not in shown and "vm.change" not in shown


def test_root_pool_capacity_is_not_a_limit(make, thresholds):
    verdict = decide(limited_vm(make, resource_pools=(pool("inner", None), ROOT)), make.vnic(), thresholds)
    assert "Set-ResourcePool" not in commands(verdict) and "vm.change" not in commands(verdict)
    assert "no resource pool on its path (Resources > inner) has one" in verdict.summary
    assert verdict.remediation[0].title.startswith("Find the CPU limit")


def test_mlmtd_seen_only_in_esxtop_says_a_pool_limits_it_and_how_to_find_which(make, thresholds):
    """The VM's limit unset in the inventory, no pool data (an older bundle): still a pool's (or parent's)."""
    verdict = decide(limited_vm(make), make.vnic(), thresholds)
    assert verdict.verdict == "cpu-limit-first"
    assert "a resource pool (or vApp) above this VM limits it; the VM has no limit of its own" in verdict.summary
    shown = commands(verdict)
    assert "govc find / -type p" in shown and "resourcePool" in shown
    assert "vm.change" not in shown and "Set-VMResourceConfiguration" not in shown and "pool.change" not in shown


def test_no_inventory_finds_the_limit_on_the_vm_or_a_pool(make, thresholds):
    verdict = decide(limited_vm(make, inventory_file=None), make.vnic(), thresholds)
    shown = commands(verdict)
    assert "govc vm.info -r vm1" in shown and "govc find / -type p" in shown
    assert "-cpu.limit" not in shown


def test_vm_limit_keeps_the_vm_command_and_names_a_pool_limit_too(make, thresholds):
    verdict = decide(limited_vm(make, limit=800, resource_pools=(pool("tenant", 2000), ROOT)), make.vnic(), thresholds)
    shown = commands(verdict)
    assert "govc vm.change -vm vm1 -cpu.limit -1" in shown and "pool.change -cpu.limit -1" in shown


def test_pool_names_are_quoted_for_each_shell(make, thresholds):
    name = "gold*'a"
    chain = (PoolFacts(name, None, f"/DC0/host/C0/Resources/{name}", "pool", 2000), ROOT)
    shown = commands(decide(limited_vm(make, resource_pools=chain), make.vnic(), thresholds))
    assert "Get-ResourcePool -Name 'gold`*''a'" in shown
    assert "govc pool.change -cpu.limit -1 '/DC0/host/C0/Resources/gold\\*'\"'\"'a'" in shown


# ------------------------------------------------------------------ item 3: Windows buffer pools

def windows(make, **over):
    base = dict(size1=4096, queues=4, rss=True, guest_os="windows")
    base.update(over)
    return make.vm([make.vnic(**base)], guest_os="windows", vcpus=4)


def test_windows_ring_at_max_with_small_buffers_at_default_raises_the_buffers_first(make, thresholds):
    vm = windows(make, small_rx_buffers=1024)
    verdict = decide(vm, vm.vnics[0], thresholds)
    assert verdict.verdict == "at-max"
    assert "Small Rx Buffers, the pool ring 1 is filled from, is 1,024 of 8,192" in verdict.summary
    assert "half-applied" in verdict.summary
    shown = commands(verdict)
    assert "-RegistryKeyword NumRxBuffersSmall -RegistryValue 8192" in shown
    assert "MaxRxRing1Length" not in shown and "vm.change" not in shown and "NumberOfReceiveQueues" not in shown


def test_windows_small_buffers_not_read_are_named_not_skipped(make, thresholds):
    vm = windows(make, small_rx_buffers=None)
    verdict = decide(vm, vm.vnics[0], thresholds)
    assert "Small Rx Buffers" in verdict.summary and "was not read" in verdict.summary
    assert "NumRxBuffersSmall" in commands(verdict)


def test_windows_ring2_at_max_raises_large_rx_buffers(make, thresholds):
    vm = windows(make, ring1=(5, 5), ring2=(0, 60), size2=4096, small_rx_buffers=8192, large_rx_buffers=768)
    verdict = decide(vm, vm.vnics[0], thresholds)
    assert "Large Rx Buffers" in verdict.summary
    assert "NumRxBuffersLarge -RegistryValue 8192" in commands(verdict)
    assert "MaxRxRing2Length" not in commands(verdict)


def test_windows_raise_below_max_leaves_buffers_already_at_max_alone(make, thresholds):
    vm = windows(make, size1=512, small_rx_buffers=8192)
    shown = commands(decide(vm, vm.vnics[0], thresholds))
    assert "MaxRxRing1Length -RegistryValue 4096" in shown and "NumRxBuffersSmall" not in shown


# ------------------------------------------------------------------ item 6: K hot queues of N

def queues(make, deltas):
    return {q: make.counter(f"q{q}", 0, d) for q, d in enumerate(deltas)}


def test_two_hot_queues_of_eight_are_named_and_get_no_more_queues(make, thresholds):
    nic = make.vnic(size1=4096, queues=8, guest_queue_oob=queues(make, (200, 5100, 0, 0, 0, 4600, 0, 100)))
    vm = make.vm([nic], vcpus=8)
    verdict = decide(vm, nic, thresholds)
    assert verdict.verdict == "at-max"
    assert "Rx queues 1 and 5 of 8 take 97% of the drops" in verdict.summary
    assert "split" in verdict.summary and verdict.remediation == ()
    finding = causes.one_hot_queue(vm, nic, thresholds)[0]
    assert finding.title.startswith("Drops on rx queues 1 and 5 of 8")


def test_three_hot_queues_of_eight_below_max_raise_the_ring_for_them(make, thresholds):
    nic = make.vnic(size1=1024, queues=8, guest_queue_oob=queues(make, (0, 3000, 2900, 0, 3100, 10, 0, 0)))
    verdict = decide(make.vm([nic], vcpus=8), nic, thresholds)
    assert verdict.verdict == "raise-ring1"
    assert "Rx queues 1, 2 and 4 of 8 take 100% of the drops: the raise helps those queues" in verdict.summary
    assert "ethtool -L" not in commands(verdict)


def test_drops_spread_over_most_queues_are_not_hot(make, thresholds):
    nic = make.vnic(size1=4096, queues=8, guest_queue_oob=queues(make, (0, 100, 100, 100, 100, 100, 100, 100)))
    vm = make.vm([nic], vcpus=16)
    assert causes.hot_queues(nic, thresholds) is None
    assert "ethtool -L eth0 combined 16" in commands(decide(vm, nic, thresholds))


def test_hot_queue_cut_is_a_threshold(make):
    nic = make.vnic(guest_queue_oob=queues(make, (0, 500, 500, 500, 500, 0, 0, 0)))  # 4 of 8 hold all
    assert causes.hot_queues(nic, load_thresholds(None, [])).queues == (1, 2, 3, 4)
    assert causes.hot_queues(nic, load_thresholds(None, ["ring.hot_queues_max_pct=25"])) is None


# ------------------------------------------------------------------ item 9: ring sizes already set at boot

UNIT = RingSetting("/etc/systemd/system/ethtool-rings.service", 7, "systemd", "eth0", rx=4032)


def test_existing_unit_is_edited_not_added_to_with_the_rounding_named(make, thresholds):
    nic = make.vnic(size1=2048, mtu=9000, device_version="v7", ring_settings=(UNIT,))
    verdict = decide(make.vm([nic]), nic, thresholds)
    steps = "\n".join(verdict.remediation[0].persistence)
    assert ("edit /etc/systemd/system/ethtool-rings.service line 7 (systemd unit): it sets rx 4032 (a v7 vmxnet3 "
            "device runs 4032 as 2048) -> change it to 4096") in steps
    assert "nmcli" not in steps and "udev" not in steps
    assert "ethtool-rings.service line 7: rx 4032): edit that setting" in verdict.summary


def test_each_mechanism_is_named_in_its_own_words(make, thresholds):
    for mechanism, words in (("networkmanager", "NetworkManager connection"), ("udev", "udev rule"),
                             ("ifupdown", "ifupdown stanza"), ("network-scripts", "ifcfg file")):
        setting = RingSetting(f"/etc/x/{mechanism}", 3, mechanism, None, rx=512)
        nic = make.vnic(size1=512, ring_settings=(setting,))
        steps = decide(make.vm([nic]), nic, thresholds).remediation[0].persistence
        assert steps[0] == f"edit /etc/x/{mechanism} line 3 ({words}): it sets rx 512 -> change it to 4096"


def test_a_tx_only_setting_does_not_count_as_ring1_persisted(make, thresholds):
    nic = make.vnic(ring1=(5, 5), oob=(3, 3), size1=4096,
                    ring_settings=(RingSetting("/etc/udev/rules.d/9.rules", 1, "udev", "eth0", tx=4096),))
    found = nic_rules.ring_persistence(make.vm([nic]), nic, thresholds)[0]
    assert isinstance(found, Finding) and found.remediation[0].title.startswith("Keep RX ring 1 = 4096")


def test_boot_setting_that_differs_from_the_running_ring_is_said(make, thresholds):
    nic = make.vnic(ring1=(5, 5), oob=(3, 3), size1=4096, ring_settings=(UNIT,), mtu=1500)
    found = nic_rules.ring_persistence(make.vm([nic]), nic, thresholds)[0]
    assert isinstance(found, Finding) and "the next boot puts that back" in found.summary
    same = make.vnic(ring1=(5, 5), oob=(3, 3), size1=2048, mtu=9000, device_version="v7", ring_settings=(UNIT,))
    check = nic_rules.ring_persistence(make.vm([same]), same, thresholds)[0]
    assert check.status == "pass" and "ethtool-rings.service line 7" in check.reason


# ------------------------------------------------------------------ item 11: transmit-only drops

def test_tx_only_drops_do_not_get_keep_the_default_rings(make, thresholds):
    nic = make.vnic(ring1=(0, 0), oob=(0, 0), tx={"guest tx ring full": make.counter("guest tx ring full", 0, 90)})
    verdict = decide(make.vm([nic]), nic, thresholds)
    assert verdict.verdict == "not-needed"
    assert "keep the default rings" not in verdict.summary
    assert verdict.summary.startswith("The rx rings are fine.") and "see the tx-drops finding" in verdict.summary


def test_drptx_evidence_speaks_of_transmitted_packets():
    tx = DropSymptom("esxtop %DRPTX", (0.0, 2.5), "%", "esxtop.csv", "% Outbound Packets Dropped", direction="tx")
    assert tx.evidence().unit == "% of transmitted packets dropped, peak sample"
    rx = DropSymptom("esxtop %DRPRX", (0.0, 2.5), "%", "esxtop.csv", "% Received Packets Dropped")
    assert rx.evidence().unit == "% of received packets dropped, peak sample"


def test_pool_limit_that_did_not_throttle_is_an_info_finding_with_the_pool_named(make, thresholds):
    vm = make.vm([make.vnic()], cpu=make.cpu(limited=0.0), resource_pools=(pool("tenant", 2000), ROOT))
    (found,) = cpu.cpu_limit(vm, thresholds)
    assert isinstance(found, Finding) and found.severity == "info" and "tenant" in found.summary
    unmeasured = make.vm([make.vnic()], cpu=None, resource_pools=(pool("tenant", 2000), ROOT))
    (found,) = cpu.cpu_limit(unmeasured, thresholds)
    assert found.severity == "warning" and "Set-ResourcePool" in commands(found)


def test_windows_rss_on_with_one_queue_gets_the_queue_count_not_enable(make, thresholds):
    vm = windows(make, queues=1, rss=True)
    (found,) = nic_rules.windows_single_queue(vm, vm.vnics[0], thresholds)
    assert "Set-NetAdapterRss -Name 'Ethernet0' -NumberOfReceiveQueues 4" in commands(found)
    assert "Enable-NetAdapterRss" not in commands(found)


def test_a_boot_setting_already_at_the_target_is_not_edited_to_itself(make, thresholds):
    setting = RingSetting("/etc/systemd/system/rings.service", 5, "systemd", "eth0", rx=4096)
    nic = make.vnic(size1=1024, ring_settings=(setting,))
    steps = decide(make.vm([nic]), nic, thresholds).remediation[0].persistence
    assert steps[0].startswith("/etc/systemd/system/rings.service line 5 (systemd unit) already sets rx 4096 at boot")
    assert "change it to" not in steps[0]


def test_fewer_vcpus_is_never_advised_to_a_one_vcpu_vm(make, thresholds):
    one = make.vm([make.vnic()], vcpus=1, cpu=make.cpu(ready=20, costop=8))
    shown = commands(decide(one, one.vnics[0], thresholds)) + "\n".join(
        commands(f) for f in cpu.cpu_costop(one, thresholds) if isinstance(f, Finding))
    assert "fewer vCPUs" not in shown and "vm.migrate" in shown
    two = make.vm([make.vnic()], vcpus=2, cpu=make.cpu(ready=20, costop=8))
    assert "fewer vCPUs" in commands(decide(two, two.vnics[0], thresholds))


def test_a_pool_limit_with_cpu_not_measured_is_not_ruled_out_by_a_ring_raise(make, thresholds):
    """Drops rising, no CPU figures, no limit on the VM but a limited pool above it: the limit could be what
    starves the vCPUs, so the verdict is the limit's (on the pool), never a confident ring raise."""
    from esxdiag.join.facts import PoolFacts
    from esxdiag.rules.verdict import decide

    pools = (PoolFacts("tenant", "resgroup-71", "/DC0/host/C0/Resources/tenant", "pool", 2000),
             PoolFacts("Resources", "resgroup-8", "/DC0/host/C0/Resources", "pool", 41_210, root=True))
    nic = make.vnic()
    vm = make.vm([nic], cpu=None, resource_pools=pools)
    verdict = decide(vm, nic, thresholds)
    assert verdict.verdict == "cpu-limit-first", verdict.summary
    commands = [c for r in verdict.remediation for c in r.commands]
    assert any("pool.change" in c or "Set-ResourcePool" in c for c in commands)
    assert not any("vm.change" in c and "cpu.limit" in c for c in commands)
    unlimited = make.vm([nic], cpu=None, resource_pools=pools[1:])
    assert decide(unlimited, nic, thresholds).verdict == "raise-ring1"  # the root pool's capacity is no limit
