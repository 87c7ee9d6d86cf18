"""The records the join's helpers hand each other while they build one vNIC's facts: a vNIC as a
listing names it (inventory, host port list or guest), and what the host's and the guest's captures
say of it. The rules never see these: they see esxdiag.join.facts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from esxdiag.join.facts import CounterWindow, RingSetting


@dataclass(frozen=True)
class VnicEntry:
    """One vNIC as the inventory, the host's port list or the guest lists it."""

    mac: str | None
    label: str | None
    type: str | None  # vmxnet3, e1000, sriov, passthrough, guest-only ...
    device_key: int | None = None  # vCenter's device key: its performance series' instance
    network: str | None = None
    guest_interface: str | None = None  # known when the guest listed it
    attachment: str | None = None  # "guest-only": a guest NIC no vNIC claims
    tied_by: str | None = None  # why a DirectPath device was tied to a guest NIC


class HostSide(TypedDict):
    """What the host's captures (vsish) say of the vNIC's port (esxdiag.join.host.host_side)."""

    ring1_full: CounterWindow | None
    ring2_full: CounterWindow | None
    out_of_buffers: CounterWindow | None
    dropped_rx: CounterWindow | None
    lro: CounterWindow | None
    ring1_size: int | None
    ring2_size: int | None
    ring_size_source: str | None
    rx_queues: int | None
    rx_queues_source: str | None
    series: dict[str, dict[str, Any]]  # chart series by name: times, values, source
    notes: list[str]


class GuestSide(TypedDict):
    """What the guest's captures say of the interface with the vNIC's MAC (esxdiag.join.guest.guest_side)."""

    interface: str | None
    oob: CounterWindow | None
    discards: CounterWindow | None
    ring1_size: int | None
    ring2_size: int | None
    ring_size_source: str | None
    ring1_max: int | None
    ring2_max: int | None
    rx_queues: int | None
    rx_queues_source: str | None
    mtu: int | None
    rss_enabled: bool | None
    windows_adapter: str | None
    small_rx_buffers: int | None
    large_rx_buffers: int | None
    ring_settings: tuple[RingSetting, ...] | None
    tx_ring_size: int | None
    ethtool_current_rx: int | None
    driver: str | None
    driver_version: str | None
    type: str | None
    series: dict[str, dict[str, Any]]
    notes: list[str]
    ring_note: str | None  # how ethtool -g was read; only shown when the host's vsish sizes are missing
    link_speed: str | None
    link_speed_source: str | None
    driver_version_tuple: tuple[int, ...] | None
    tx: dict[str, CounterWindow]  # guest tx drops (esxdiag.join.causes)
    queue_oob: dict[int, CounterWindow]  # pkts rx OOB per rx queue
    driver_counters: dict[str, CounterWindow]  # a non-vmxnet3 driver's own counters
    ring_rx_max: int | None  # a non-vmxnet3 driver's ethtool -g max
