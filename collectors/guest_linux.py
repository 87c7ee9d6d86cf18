"""Linux guest collection plan: find the vNIC interfaces by MAC, then driver, rings, per-queue
stats, TCP counters, vCPU count and ring persistence.

Sample 0 captures everything; later samples only the sampled (cumulative) specs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from esxdiag import specs
from esxdiag.bundle import BundleWriter
from esxdiag.collectors.captures import run_capture
from esxdiag.collectors.ssh import SshConnection
from esxdiag.errors import NoData, ParseError
from esxdiag.parsers.ethtool import parse_permaddr
from esxdiag.parsers.netstats import normalize_mac

# ip -o link: "2: eth0: <...> mtu 1500 ... \    link/ether 00:50:56:a6:55:f4 brd ..."; "eth0.10@eth0" for VLANs
_LINK = re.compile(r"^\d+:\s+(?P<name>[^:@\s]+)(?:@\S+)?:.*?link/ether\s+(?P<mac>[0-9a-fA-F:]{17})", re.M)
PER_IFACE = ("ethtool_driver", "ethtool_rings", "ethtool_stats")


@dataclass(frozen=True)
class LinuxGuest:
    ifaces: tuple[str, ...]  # interfaces whose (permanent) MAC is one of the VM's vNIC MACs
    tcp_spec: str | None  # netstat_s, or nstat where netstat is missing; None if neither ran


def _links(text: str) -> dict[str, str]:
    return {m["name"]: m["mac"].lower() for m in _LINK.finditer(text)}


def _permaddr(conn: SshConnection, writer: BundleWriter, target_id: str, iface: str,
              sample: int | None) -> str | None:
    capture, out = run_capture(conn, writer, target_id, "ethtool_permaddr", {"iface": iface}, sample)
    if not capture.ok:
        return None
    try:
        return parse_permaddr(out.decode("utf-8", "replace")).mac
    except (ParseError, NoData):
        return None


def find_ifaces(conn: SshConnection, writer: BundleWriter, target_id: str, macs: list[str],
                sample: int | None = None) -> tuple[str, ...]:
    """Match on the current MAC, confirmed by ethtool -P; where nothing matches (a bond rewrote
    the MAC), fall back to the permanent MAC of every Ethernet interface."""
    wanted = {normalize_mac(m) for m in macs}
    capture, out = run_capture(conn, writer, target_id, "ip_link", {}, sample)
    if not capture.ok:
        return ()
    links = _links(out.decode("utf-8", "replace"))
    candidates = [name for name, mac in links.items() if mac in wanted]
    if "ethtool" in conn.unavailable:  # nothing to confirm with: its per-interface captures are skipped
        return tuple(candidates)
    found = [name for name in candidates if _permaddr(conn, writer, target_id, name, sample) in wanted]
    if not found:
        others = [name for name in links if name not in candidates]
        found = [name for name in others if _permaddr(conn, writer, target_id, name, sample) in wanted]
    if not found:
        writer.note(f"{target_id}: no interface has MAC {', '.join(sorted(wanted))}")
    return tuple(found)


def _tcp_counters(conn: SshConnection, writer: BundleWriter, target_id: str, sample: int,
                  preferred: str | None) -> str | None:
    for name in ([preferred] if preferred else ["netstat_s", "nstat"]):
        capture = run_capture(conn, writer, target_id, name, {}, sample)[0]
        if capture.ok:
            return name
        if capture.error_kind != "not-found":
            return None
    return None


def collect_linux(conn: SshConnection, writer: BundleWriter, target_id: str, macs: list[str], sample: int,
                  previous: LinuxGuest | None = None) -> LinuxGuest:
    """Pass the LinuxGuest of sample 0 as ``previous`` at later samples to skip rediscovery."""
    ifaces = previous.ifaces if previous else find_ifaces(conn, writer, target_id, macs, sample or None)
    for iface in ifaces:
        for name in PER_IFACE:
            if sample == 0 or specs.spec(name).sampled:
                run_capture(conn, writer, target_id, name, {"iface": iface},
                            sample if specs.spec(name).sampled else None)
    tcp_spec = _tcp_counters(conn, writer, target_id, sample, previous.tcp_spec if previous else None)
    if sample == 0:
        run_capture(conn, writer, target_id, "nproc")
        run_capture(conn, writer, target_id, "ring_persistence")
    return LinuxGuest(ifaces, tcp_spec)
