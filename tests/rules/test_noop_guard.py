"""The no-op guard: no command is printed when the fact it changes is already in the state it would put
it in. Every remediation esxdiag.rules.remediation can build is listed here (found by inspecting the
module: a new one without a case fails), with

- a signature: what its change command looks like in the printed text,
- a sample call, which must print that signature (so the signature is really the function's),
- facts where the change is needed (the signature is printed: the rules reach it), and
- facts where the thing is already in the target state (the signature must not be printed by the ring
  verdict or any rule's finding)."""

from __future__ import annotations

import dataclasses
import inspect
import re

import pytest

from esxdiag.join.facts import PoolFacts, RingSetting, UplinkFacts
from esxdiag.result import Finding, Remediation
from esxdiag.rules import VM_RULES, VNIC_RULES
from esxdiag.rules import remediation as fix
from esxdiag.rules.verdict import decide

MAC = "00:50:56:00:00:01"
MTU_LABEL = "number of packets dropped due to pkt length exceeds vNic mtu"  # an rxSummary label (ESXi 8)


def remediation_functions() -> set[str]:
    return {name for name, f in inspect.getmembers(fix, inspect.isfunction)
            if f.__module__ == fix.__name__ and inspect.signature(f).return_annotation in ("Remediation", Remediation)}


def printed(vm, t) -> list[Remediation]:
    """Every remediation the report would show for this VM: VM rules, vNIC rules, the ring verdicts."""
    out = [r for rule in VM_RULES for o in rule(vm, t) if isinstance(o, Finding) for r in o.remediation]
    for nic in vm.vnics:
        out += [r for rule in VNIC_RULES for o in rule(vm, nic, t) if isinstance(o, Finding) for r in o.remediation]
        out += list(decide(vm, nic, t).remediation)
    return out


def text(remedies, part: str = "commands") -> str:
    return "\n".join(line for r in remedies for line in (r.title, *getattr(r, part))) if part != "title" else \
        "\n".join(r.title for r in remedies)


def pools(*limits, names=("inner", "tenant")):
    """The VM's pool chain, nearest first, then the cluster's root pool (its 'limit' is the capacity)."""
    chain = tuple(PoolFacts(name, f"resgroup-{70 + i}", "/DC0/host/C0/Resources/" + "/".join(reversed(names[i:])),
                            "pool", limit) for i, (name, limit) in enumerate(zip(names, limits)))
    return chain + (PoolFacts("Resources", "resgroup-8", "/DC0/host/C0/Resources", "pool", 41_210, root=True),)


def _flat(make, **over):
    return make.vnic(ring1=(100, 100), oob=(300, 300), **over)


def _queues(make, deltas):
    return {q: make.counter(f"q{q}", 0, d) for q, d in enumerate(deltas)}


# name -> (which text to search: "commands" | "title", signature, sample call, needed, already there)
# needed / already: functions of (make) -> list of VmFacts
CASES = {
    "linux_raise_ring": (
        "commands", r"ethtool -G \S+ rx(-jumbo)? \d+",
        lambda: fix.linux_raise_ring("eth0", MAC, 1, 256, 4096, 2, 2.4, 1500),
        lambda make: [make.vm([make.vnic(size1=256)])],
        lambda make: [make.vm([make.vnic(size1=4096)]),  # ring 1 at its maximum
                      make.vm([make.vnic(ring1=(5, 5), ring2=(0, 40), size2=4096)]),  # ring 2 at its maximum
                      make.vm([make.vnic(size1=4032, mtu=9000, ring1_max=4032)]),  # pre-v7 jumbo maximum
                      make.vm([_flat(make, size1=4096, rings_persisted=False)])]),  # runs at 4096: persist only
    "linux_persist_ring": (
        "title", r"^Keep RX ring",
        lambda: fix.linux_persist_ring("eth0", MAC, 1, 4096),
        lambda make: [make.vm([_flat(make, size1=4096, rings_persisted=False)])],
        lambda make: [make.vm([_flat(make, size1=4096, rings_persisted=True)])]),
    "windows_raise_ring": (
        "commands", r"-RegistryKeyword (MaxRxRing[12]Length|NumRxBuffers(Small|Large)) ",
        lambda: fix.windows_raise_ring("Ethernet0", 1, 512, 4096, 2, 2.4),
        lambda make: [make.vm([make.vnic(size1=512, rss=True, guest_os="windows")], guest_os="windows"),
                      make.vm([make.vnic(size1=4096, small_rx_buffers=1024, rss=True, guest_os="windows")],
                              guest_os="windows")],
        lambda make: [make.vm([make.vnic(size1=4096, small_rx_buffers=8192, rss=True, guest_os="windows")],
                              guest_os="windows"),
                      make.vm([make.vnic(size1=4096, small_rx_buffers=8192, queues=1, rss=False,
                                         guest_os="windows")], guest_os="windows")]),  # enable-rss verdict
    "windows_enable_rss": (
        "commands", r"Enable-NetAdapterRss",
        lambda: fix.windows_enable_rss("Ethernet0", 4),
        lambda make: [make.vm([make.vnic(queues=1, rss=False, guest_os="windows")], guest_os="windows")],
        lambda make: [make.vm([make.vnic(size1=4096, small_rx_buffers=8192, queues=2, rss=True,
                                         guest_os="windows")], guest_os="windows"),
                      make.vm([make.vnic(size1=4096, small_rx_buffers=8192, queues=2, rss=None,
                                         guest_os="windows")], guest_os="windows"),  # 2 queues: RSS works
                      make.vm([make.vnic(size1=4096, small_rx_buffers=8192, queues=1, rss=True,
                                         guest_os="windows")], guest_os="windows", vcpus=4)]),  # on, one queue
    "windows_rss_queues": (
        "commands", r"Set-NetAdapterRss .*-NumberOfReceiveQueues",
        lambda: fix.windows_rss_queues("Ethernet0", 4),
        lambda make: [make.vm([make.vnic(size1=4096, small_rx_buffers=8192, queues=2, rss=True,
                                         guest_os="windows")], guest_os="windows", vcpus=4)],
        lambda make: [make.vm([make.vnic(size1=4096, small_rx_buffers=8192, queues=4, rss=True,
                                         guest_os="windows")], guest_os="windows", vcpus=4)]),
    "vsphere_remove_limit": (
        "commands", r"Set-VMResourceConfiguration|govc vm\.change .*-cpu\.limit",
        lambda: fix.vsphere_remove_limit("vm1", 800),
        lambda make: [make.vm([make.vnic()], limit=800, cpu=make.cpu(ready=20, limited=14.6))],
        lambda make: [make.vm([make.vnic()], cpu=make.cpu(ready=20, limited=14.6), resource_pools=pools(None, 2000)),
                      make.vm([make.vnic()], cpu=make.cpu(ready=20, limited=14.6)),  # pools not read
                      make.vm([make.vnic()], cpu=make.cpu(ready=20, limited=14.6), inventory_file=None)]),
    "vsphere_remove_pool_limit": (
        "commands", r"Set-ResourcePool|Set-VApp|govc pool\.change",
        lambda: fix.vsphere_remove_pool_limit("tenant", "resgroup-71", "/DC0/host/C0/Resources/tenant", 2000),
        lambda make: [make.vm([make.vnic()], cpu=make.cpu(ready=20, limited=14.6), resource_pools=pools(None, 2000))],
        lambda make: [make.vm([make.vnic()], limit=800, cpu=make.cpu(ready=20, limited=14.6),
                              resource_pools=pools(None, None)),  # only the root pool's capacity "limit"
                      make.vm([make.vnic()], cpu=make.cpu(ready=20, limited=0.0), resource_pools=pools(None, 2000))]),
    "vsphere_find_cpu_limit": (
        "title", r"^Find the CPU limit",
        lambda: fix.vsphere_find_cpu_limit("vm1", True),
        lambda make: [make.vm([make.vnic()], cpu=make.cpu(ready=20, limited=14.6))],
        lambda make: [make.vm([make.vnic()], limit=800, cpu=make.cpu(ready=20, limited=14.6)),
                      make.vm([make.vnic()], cpu=make.cpu(ready=20, limited=14.6), resource_pools=pools(None, 2000))]),
    "vsphere_relieve_contention": (
        "title", r"^Relieve CPU contention",
        lambda: fix.vsphere_relieve_contention("vm1", False),
        lambda make: [make.vm([make.vnic()], cpu=make.cpu(ready=20))],
        lambda make: [make.vm([make.vnic()], cpu=make.cpu(ready=1, costop=0))]),
    "linux_more_queues": (
        "commands", r"ethtool -L ",
        lambda: fix.linux_more_queues("eth0", 4),
        lambda make: [make.vm([make.vnic(size1=4096, queues=2)], vcpus=4)],
        lambda make: [make.vm([make.vnic(size1=4096, queues=4)], vcpus=4),  # a queue per vCPU already
                      make.vm([make.vnic(size1=4096, queues=8, guest_queue_oob=_queues(make, (9, 700, 0, 0, 0, 350,
                                                                                              0, 0)))], vcpus=16)]),
    "vsphere_add_vcpus": (
        "commands", r"govc vm\.change .* -c ",
        lambda: fix.vsphere_add_vcpus("vm1", 4, "eth0"),
        lambda make: [make.vm([make.vnic(size1=4096, queues=4)], vcpus=4)],
        lambda make: [make.vm([make.vnic(size1=4096, queues=8, guest_queue_oob=_queues(make, (9, 700, 0, 0, 0, 350,
                                                                                              0, 0)))], vcpus=8),
                      make.vm([make.vnic(size1=256, queues=4)], vcpus=4)]),  # the ring can still grow
    "replace_emulated_nic": (
        "commands", r"-Type Vmxnet3|-net\.adapter vmxnet3",
        lambda: fix.replace_emulated_nic("vm1", "Network adapter 1", MAC, "e1000", "VM Network", "linux"),
        lambda make: [make.vm([make.vnic(nic_type="e1000")])],
        lambda make: [make.vm([make.vnic(nic_type="vmxnet3")])]),
    "uplink_loss": (
        "commands", r"esxcli network nic ring current set",
        lambda: fix.uplink_loss("vmnic1", ["Receive missed errors"]),
        lambda make: [make.vm([_flat(make, uplinks=(UplinkFacts("vmnic1", "esx0", "Team Uplink", (
            make.counter("Receive missed errors", 0, 500),)),))])],
        lambda make: [make.vm([_flat(make, uplinks=(UplinkFacts("vmnic1", "esx0", "Team Uplink", (
            make.counter("Receive missed errors", 500, 500),)),))]),
                      # the wire's errors alone: a bigger pNIC ring changes nothing for them
                      make.vm([_flat(make, uplinks=(UplinkFacts("vmnic1", "esx0", "Team Uplink", (
                          make.counter("Receive CRC errors", 0, 500), make.counter("Receive length errors", 0, 90),
                          make.counter("Receive missed errors", 500, 500))),))])]),
    "align_mtu": (
        "title", r"^Align the MTU",
        lambda: fix.align_mtu("linux", "eth0", None, 1500),
        lambda make: [make.vm([_flat(make, rx_reasons={MTU_LABEL: make.counter(MTU_LABEL, 0, 40)})]),
                      make.vm([_flat(make, tx={"droppedTxExceedMTU": make.counter("droppedTxExceedMTU", 0, 40)})])],
        lambda make: [make.vm([_flat(make, rx_reasons={MTU_LABEL: make.counter(MTU_LABEL, 40, 40)},
                                     tx={"droppedTxExceedMTU": make.counter("droppedTxExceedMTU", 9, 9)})])]),
    "vsphere_relieve_memory": (
        "title", r"^Stop the host swapping",
        lambda: fix.vsphere_relieve_memory("vm1"),
        lambda make: [make.vm([make.vnic()], cpu=make.cpu(swap=20))],
        lambda make: [make.vm([make.vnic(rx_reasons={"droppedRxDueToPageAbsent": make.counter("page absent", 7, 7)})],
                              cpu=make.cpu(swap=0))]),
    "raise_tx_ring": (
        "commands", r"ethtool -G \S+ tx \d+|MaxTxRingLength",
        lambda: fix.raise_tx_ring("linux", "eth0", None),
        lambda make: [make.vm([_flat(make, tx={"guest tx ring full": make.counter("tx ring full", 0, 12)},
                                     tx_ring_size=512)])],
        lambda make: [make.vm([_flat(make, tx={"guest tx ring full": make.counter("tx ring full", 0, 12)},
                                     tx_ring_size=4096)]),
                      make.vm([_flat(make, tx={"guest tx ring full": make.counter("tx ring full", 0, 12)},
                                     tx_ring_size=4096, guest_os="windows")], guest_os="windows")]),
    # NICs outside the vSwitch (SR-IOV VF, DirectPath): their driver's own counters decide (esxdiag.rules.driver_nic)
    "driver_spread_receive": (
        "commands", r"ethtool -l ens224",
        lambda: fix.driver_spread_receive("ens224", 4, "mlx5_core"),
        lambda make: [make.vm([_vf(make, rx_out_of_buffer=(0, 41_900))])],
        lambda make: [make.vm([_vf(make, rx_out_of_buffer=(500, 500))]),  # flat: nothing to spread
                      make.vm([_vf(make, rx_out_of_buffer=(500, 503))])]),  # under the noise floor
    "guest_memory_for_receive": (
        "commands", r"/proc/meminfo",
        lambda: fix.guest_memory_for_receive("ens224"),
        lambda make: [make.vm([_vf(make, "ixgbevf", alloc_rx_buff_failed=(0, 9_000))])],
        lambda make: [make.vm([_vf(make, "ixgbevf", alloc_rx_buff_failed=(40, 40))]),
                      make.vm([_vf(make, rx_out_of_buffer=(0, 41_900))])]),  # out of buffers: not allocation
    "physical_port_drops": (
        "title", r"physical port",
        lambda: fix.physical_port_drops("ens224", "sriov"),
        lambda make: [make.vm([_vf(make, rx_discards_phy=(0, 30_000))])],
        lambda make: [make.vm([_vf(make, rx_discards_phy=(7, 7))]),
                      make.vm([_vf(make, rx_out_of_buffer=(0, 41_900))])]),  # the guest's buffers, not the port
}


def _vf(make, driver: str = "mlx5_core", **counters):
    """An SR-IOV VF in the guest: no port, no vmxnet3 rings, its driver's counters over 60 s."""
    return make.vnic(ring1=None, ring2=None, oob=None, nic_type="sriov", attachment="sriov", driver=driver,
                     guest_interface="ens224", size1=None, size2=None, ring1_max=0, ring2_max=0,
                     ethtool_current_rx=1024, ring_rx_max=8192,
                     driver_counters={name: make.counter(name, a, b) for name, (a, b) in
                                      {**counters, "rx_packets": (0, 40_000_000)}.items()})


def test_every_remediation_has_a_guard_case():
    assert remediation_functions() == set(CASES), \
        "each remediation function needs a no-op guard case in CASES (facts where the change is already made)"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_signature_is_the_functions_own(name):
    part, signature, sample, _, _ = CASES[name]
    assert re.search(signature, text([sample()], part), re.M), f"{name}'s sample does not print {signature!r}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_printed_when_needed(name, make, thresholds):
    part, signature, _, needed, _ = CASES[name]
    for vm in needed(make):
        assert re.search(signature, text(printed(vm, thresholds), part), re.M), f"{name}: not printed when needed"


@pytest.mark.parametrize("name", sorted(CASES))
def test_never_printed_when_already_done(name, make, thresholds):
    part, signature, _, _, already = CASES[name]
    for i, vm in enumerate(already(make)):
        shown = text(printed(vm, thresholds), part)
        assert not re.search(signature, shown, re.M), f"{name}, case {i}: a command that changes nothing:\n{shown}"


def test_a_ring_setting_fact_is_typed(make):
    """The rings_persisted shorthand of the test builder is a typed setting: file, line, mechanism, values."""
    nic = make.vnic(rings_persisted=True)
    assert nic.ring_settings == (RingSetting("/etc/udev/rules.d/60-rings.rules", 1, "udev", "eth0", rx=256),)
    assert dataclasses.replace(nic, ring_settings=()).rings_persisted is False
