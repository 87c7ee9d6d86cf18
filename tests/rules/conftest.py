"""Builders for rule inputs: facts are plain frozen dataclasses, so rules are tested without
bundles or parsers."""

from __future__ import annotations

import dataclasses

import pytest

from esxdiag.config import DEFAULT_THRESHOLDS
from esxdiag.join.facts import CounterWindow, CpuFacts, RingSetting, VmFacts, VnicFacts


def _counter(what, start, end, seconds=60.0):
    return None if start is None and end is None else CounterWindow(what, start, end, seconds, "f.txt", what)


def _cpu(ready=1.0, costop=0.0, limited=0.0, swap=0.0, samples=6):
    flat = lambda v: {"per-vCPU average": tuple([v] * samples)}  # noqa: E731
    return CpuFacts("esxtop", "esxtop.csv", tuple(f"t{i}" for i in range(samples)), flat(ready), flat(costop),
                    flat(limited), flat(swap), "test")


def _vnic(ring1=(100, 200), ring2=(0, 0), oob=(100, 300), size1=256, size2=256, queues=2, nic_type="vmxnet3",
          guest_os="linux", rss=None, **over):
    base = VnicFacts(
        vm="vm1", mac="00:50:56:00:00:01", label="Network adapter 1", type=nic_type, portset="vSwitch0",
        port=33554464, guest_os=guest_os, guest_interface="eth0",
        ring1_full=_counter("1st ring full", *ring1) if ring1 else None,
        ring2_full=_counter("2nd ring full", *ring2) if ring2 else None,
        host_out_of_buffers=_counter("running out of buffers", *oob) if oob else None,
        dropped_rx=None, guest_oob=None, guest_discards=None, lro_packets=None,
        ring1_size=size1, ring2_size=size2, ring_size_source="status.txt", ring1_max=4096, ring2_max=4096,
        rx_queues=queues, rx_queues_source="ls.txt", mtu=1500, rss_enabled=rss, windows_adapter="Ethernet0",
        small_rx_buffers=None, ethtool_current_rx=None, driver="vmxnet3", driver_version=None)
    if "rings_persisted" in over:  # shorthand: True = one boot-time setting of this ring size, False = none
        persisted = over.pop("rings_persisted")
        over["ring_settings"] = None if persisted is None else (
            (RingSetting("/etc/udev/rules.d/60-rings.rules", 1, "udev", "eth0", rx=size1),) if persisted else ())
    return dataclasses.replace(base, **over)


def _vm(vnics=(), cpu="default", vcpus=2, limit=None, guest_os="linux", retrans=None, sent=None, **over):
    base = VmFacts(
        name="vm1", host="esx0", power_state="poweredOn", vcpus=vcpus, vcpus_source="vcenter", cpu_limit_mhz=limit,
        cpu_reservation_mhz=0, guest_os=guest_os, guest_os_name=None, inventory_file="vcenter/vm.json",
        cpu=_cpu() if cpu == "default" else cpu, retransmits=_counter("retrans", *retrans) if retrans else None,
        segments_sent=_counter("sent", *sent) if sent else None, vnics=tuple(vnics))
    return dataclasses.replace(base, **over)


@pytest.fixture
def thresholds():
    return dict(DEFAULT_THRESHOLDS)


@pytest.fixture
def make():
    class Make:
        counter = staticmethod(_counter)
        cpu = staticmethod(_cpu)
        vnic = staticmethod(_vnic)
        vm = staticmethod(_vm)
    return Make
