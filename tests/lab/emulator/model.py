"""The lab's state: which scenario target an address is, and its counters at this moment.

Counters are cumulative and advance in real time: value = start + rate * seconds since the lab
started (scenarios.json ``counters_start`` / ``rates_per_s``), so two samples give real deltas.
The lab has several ESXi hosts (scenarios.json ``hosts``); each VM runs on the one its ``host``
names, and an ``EsxiHost`` is what one host sees: its own uplinks, ports and VMs only.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

# Average received frame size behind "bytes rx ok": seed 002 iperf-test1 rxSummary
# (1670920359206 bytes / 50714621 pkts with LRO); full-MTU frames (MTU + 14-byte Ethernet header) without LRO.
LRO_BYTES_PER_PKT = 32948
ETHERNET_HEADER = 14
DEFAULT_UPLINK = "vmnic0"  # a NIC without "uplink" rides the host's first uplink
BROADCAST_PKTS, BROADCAST_BYTES = 195, 26464  # seed 002 rxSummary, constant in the lab


@dataclass(frozen=True)
class Lab:
    scenario: dict
    started: float
    runtime: Path

    @classmethod
    def load(cls, runtime: Path) -> "Lab":
        state = json.loads((runtime / "state.json").read_text())
        scenario = json.loads((runtime / "scenarios.json").read_text())
        return cls(scenario, float(state["started"]), runtime)

    @property
    def elapsed(self) -> float:
        return max(0.0, time.time() - self.started)

    def faults(self) -> dict:
        path = self.runtime / "faults.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def target(self, address: str) -> tuple[str, dict | None]:
        """("esxi", host) for a host's address, ("linux"|"windows", vm) for a guest NIC address."""
        for host in self.scenario["hosts"]:
            if address == host["address"]:
                return "esxi", host
        for vm in self.scenario["vms"]:
            if any(nic.get("ip") == address for nic in vm["nics"]):
                return vm["guest"]["os"], vm
        return "unknown", None

    def esxi_host(self, host: dict) -> "EsxiHost":
        return EsxiHost(self, host)


@dataclass(frozen=True)
class EsxiHost:
    """One emulated ESXi host: its scenarios.json ``hosts`` entry and the VMs whose ``host`` names it."""
    lab: Lab
    host: dict

    @property
    def vms(self) -> list[dict]:
        return [vm for vm in self.lab.scenario["vms"] if vm["host"] == self.host["name"]]

    @property
    def elapsed(self) -> float:
        return self.lab.elapsed

    def vm_by_world(self, world: int) -> dict | None:
        return next((vm for vm in self.vms if vm["world_id"] == world), None)

    def uplink(self, name: str) -> dict | None:
        return next((u for u in self.host["uplinks"] if u["client"] == name), None)

    def nic_by_port(self, portset: str, port: int) -> tuple[dict, dict] | None:
        if portset != self.host["portset"]:
            return None
        for vm in self.vms:
            for nic in vm["nics"]:
                if nic["port"] == port:
                    return vm, nic
        return None


def counter(nic: dict, name: str, elapsed: float, index: int | None = None) -> int:
    start, rate = nic["counters_start"][name], nic["rates_per_s"][name]
    if index is not None:
        start, rate = start[index], rate[index]
    return int(start + rate * elapsed)


def tcp_counter(vm: dict, which: str, elapsed: float) -> int:
    tcp = vm.get("tcp") or {}
    return int(tcp.get(f"{which}_start", 0) + tcp.get(f"{which}_rate", 0) * elapsed)


def bytes_per_pkt(vm: dict) -> int:
    return LRO_BYTES_PER_PKT if vm["guest"].get("lro") else vm["guest"]["mtu"] + ETHERNET_HEADER


def rx_bytes(vm: dict, pkts: int) -> int:
    return pkts * bytes_per_pkt(vm)


def uplink_counter(uplink: dict, name: str, elapsed: float) -> int:
    """A vmnic's esxcli nic stats counter by its printed name; 0 when the scenario gives none."""
    start = uplink.get("counters_start", {}).get(name, 0)
    rate = uplink.get("rates_per_s", {}).get(name, 0)
    return int(start + rate * elapsed)
