"""Hand-made bundles for the partial-data classes of docs/diagnosis.md §10: each test writes
only the captures a user would have (a guest-only folder, vCenter only, esxtop without Vcpu
columns, a counter reset...) in the formats the real tools print, then runs `esxdiag analyze`."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

T0 = "2026-11-21T06:00:00Z"
T1 = "2026-11-21T06:01:00Z"
MAC = "00:50:56:a6:55:f4"
PORT = 33554464


def rx_summary(oob: int, ring1: int, ring2: int = 0) -> str:
    return ("stats of a vmxnet3 vNIC rx queue {\n LRO pkts rx ok:0\n pkts rx ok:5071462\n"
            f" running out of buffers:{oob}\n pkts receive error:0\n # of times the 1st ring is full:{ring1}\n"
            f" # of times the 2nd ring is full:{ring2}\n fail to map a rx buffer:0\n}}\n")


def ethtool_stats(oob_per_queue: list[int]) -> str:
    lines = ["NIC statistics:"]
    for q, oob in enumerate(oob_per_queue):
        lines += [f"     Rx Queue#: {q}", "       ucast pkts rx: 3042877", "       drv dropped rx total: 0",
                  "          err: 0", "          fcs: 0", "       rx buf alloc fail: 0", f"       pkts rx OOB: {oob}"]
    return "\n".join(lines) + "\n"


def ethtool_rings(rx: int, rx_max: int = 4096) -> str:
    return (f"Ring parameters for eth0:\nPre-set maximums:\nRX:\t\t{rx_max}\nRX Mini:\t0\nRX Jumbo:\t0\nTX:\t\t4096\n"
            f"Current hardware settings:\nRX:\t\t{rx}\nRX Mini:\t0\nRX Jumbo:\t0\nTX:\t\t512\n")


def ethtool_driver(driver: str = "vmxnet3", version: str = "1.4.16.0-k-NAPI") -> str:
    return f"driver: {driver}\nversion: {version}\nfirmware-version: N/A\nbus-info: 0000:03:00.0\n"


def ip_link(iface: str = "eth0", mac: str = MAC) -> str:
    return ("1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default "
            "qlen 1000\\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n"
            f"2: {iface}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP mode DEFAULT group default "
            f"qlen 1000\\    link/ether {mac} brd ff:ff:ff:ff:ff:ff\n")


def esxtop(vm: str, group: dict[str, list[float]], members: int = 6, vcpus: int = 0,
           port_drops: list[float] | None = None, port: int = PORT, gid: int = 5572767) -> str:
    """esxtop -b CSV: Group Cpu columns (sums over the group's worlds), optionally `vcpus` Vcpu
    worlds (each with the group's % Ready / vcpus) and the VM's Network Port row."""
    cols = [("Group Cpu", f"{gid}:{vm}", "Members")] + [("Group Cpu", f"{gid}:{vm}", k) for k in group]
    cols += [("Vcpu", f"{gid}:{vm}:{gid + 1 + i}:vmx-vcpu-{i}:{vm}", "% Ready") for i in range(vcpus)]
    if port_drops is not None:
        cols.append(("Network Port", f"vSwitch0:{port}:{gid}:{vm}", "% Received Packets Dropped"))
    samples = len(next(iter(group.values())))
    rows = ['"(PDH-CSV 4.0) (UTC)(0)",' + ",".join(f'"\\\\esx0\\{k}({i})\\{c}"' for k, i, c in cols)]
    for n in range(samples):
        values = [members] + [group[k][n] for k in group]
        values += [group.get("% Ready", [0.0] * samples)[n] / vcpus] * vcpus if vcpus else []
        values += [port_drops[n]] if port_drops is not None else []
        rows.append(f'"11/21/2026 06:00:{n * 5:02d}",' + ",".join(f'"{v:.2f}"' for v in values))
    return "\n".join(rows) + "\n"


def vsphere_vm(name: str, vnics: list[dict], num_cpu: int | None = 2, limit: int | None = None,
               family: str = "linuxGuest", latency: str | None = None) -> str:
    record = {
        "schema": "esxdiag.vsphere_vm/1", "collected_at": T0, "source": "vcenter", "name": name, "moid": "vm-37",
        "instance_uuid": None, "power_state": "poweredOn", "host": "esx0.lab.local", "host_moid": "host-24",
        "host_cpu_mhz": 2294, "cluster": "C0", "num_cpu": num_cpu, "cores_per_socket": 1, "memory_mb": 1024,
        "cpu_allocation": {"limit_mhz": limit, "reservation_mhz": 0, "shares": 0, "shares_level": "normal"},
        "guest": {"guest_id": None, "full_name": None, "family": family, "tools_status": None,
                  "tools_running_status": None, "hostname": None, "ip_address": None, "ip_addresses": []},
        "vnics": [{"label": v.get("label", "Network adapter 1"), "type": v.get("type", "vmxnet3"),
                   "mac": v.get("mac", MAC), "device_key": v.get("device_key", 4000), "network": "VM Network",
                   "dvs_uuid": None, "dvs_portgroup_key": None, "dvs_port_key": None, "connected": True,
                   "start_connected": True} for v in vnics],
        "guest_nics": [], "missing": [],
    }
    if latency is not None:
        record["latency_sensitivity"] = latency
    return json.dumps(record)


def vsphere_perf(name: str, series: dict[tuple[str, str], list[int]]) -> str:
    n = len(next(iter(series.values())))
    return json.dumps({
        "schema": "esxdiag.vsphere_perf/1", "vm": name, "interval_s": 20, "rollup": "realtime", "note": None,
        "start": T0, "end": T1, "timestamps": [f"2026-11-21T06:00:{20 * i:02d}Z" for i in range(n)],
        "series": [{"counter": c, "instance": i, "unit": "millisecond", "values": v} for (c, i), v in series.items()],
    })


@dataclass
class HandBundle:
    """A bundle directory assembled by hand: targets, captures, manifest."""

    root: Path
    vms: list[str] = field(default_factory=list)
    targets: dict[str, dict] = field(default_factory=dict)
    captures: list[dict] = field(default_factory=list)

    def target(self, tid: str, kind: str, vm: str | None = None) -> str:
        self.targets.setdefault(tid, {"id": tid, "kind": kind, "address": tid, "vm": vm})
        return tid

    def add(self, target: str, spec: str, text: str | bytes, params: dict | None = None, sample: int | None = None,
            name: str | None = None) -> None:
        params = {k: str(v) for k, v in (params or {}).items()}
        name = name or (spec + ("@" + ",".join(f"{k}={v}" for k, v in sorted(params.items())) if params else "")
                        + (f".s{sample}" if sample is not None else "") + (".json" if target == "vcenter" else ".txt"))
        path = self.root / target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        when = T0 if sample is None else f"2026-11-21T06:{sample:02d}:00Z"  # sample n at minute n
        self.captures.append({"spec": spec, "target": target, "file": f"{target}/{name}", "params": params,
                              "sample": sample, "command": spec, "started": when, "ended": when, "rc": 0,
                              "error_kind": None, "error": None})

    def write(self) -> Path:
        manifest = {"format_version": 1, "tool": "by hand", "created": T0, "window_s": 60,
                    "subject": {"vms": self.vms}, "targets": list(self.targets.values()),
                    "captures": self.captures, "notes": []}
        (self.root / "manifest.json").write_text(json.dumps(manifest, indent=1))
        return self.root

    # common pieces ------------------------------------------------------------------------
    def host_port(self, vm: str, mac: str = MAC, port: int = PORT) -> str:
        host = self.target("esxi-esx0", "esxi")
        self.add(host, "net_stats_list", "PortNum Type SubType SwitchName MACAddress ClientName\n"
                                         f"{port} 5 9 vSwitch0 {mac} {vm}\n")
        return host

    def rx_window(self, start: tuple[int, int], end: tuple[int, int], port: int = PORT) -> None:
        """vsish rxSummary (out-of-buffer drops, ring-1-full) at both ends of the window."""
        for sample, (oob, ring1) in enumerate((start, end)):
            self.add("esxi-esx0", "vsish_rxsummary", rx_summary(oob, ring1), {"portset": "vSwitch0", "port": port},
                     sample)

    def analyze(self, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
        self.write()
        out = self.root.parent / f"{self.root.name}-report.json"
        proc = subprocess.run([sys.executable, "-m", "esxdiag", "analyze", str(self.root), "--format", "json",
                               "-o", str(out), *extra], capture_output=True, text=True, timeout=120)
        assert proc.returncode in (0, 1), (proc.returncode, proc.stderr)
        return proc, json.loads(out.read_text())

    def render(self, fmt: str, *extra: str) -> subprocess.CompletedProcess:
        self.write()
        return subprocess.run([sys.executable, "-m", "esxdiag", "analyze", str(self.root), "--format", fmt,
                               *extra], capture_output=True, text=True, timeout=120)


def vnic(report: dict, vm: str | None = None, index: int = 0) -> dict:
    vms = [v for v in report["vms"] if vm is None or v["name"] == vm]
    assert vms and vms[0]["vnics"], json.dumps(report["vms"])[:2000]
    return vms[0]["vnics"][index]


@pytest.fixture
def hand(tmp_path):
    return HandBundle(tmp_path / "bundle")


@pytest.fixture
def kit():
    """The capture writers and report accessors above, for tests (conftest is not importable)."""
    import types

    return types.SimpleNamespace(MAC=MAC, PORT=PORT, T0=T0, T1=T1, rx_summary=rx_summary,
                                 ethtool_stats=ethtool_stats, ethtool_rings=ethtool_rings,
                                 ethtool_driver=ethtool_driver, ip_link=ip_link, esxtop=esxtop,
                                 vsphere_vm=vsphere_vm, vsphere_perf=vsphere_perf, vnic=vnic)
