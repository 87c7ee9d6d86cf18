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
from esxdiag.parsers.ethtool import parse_driver, parse_permaddr
from esxdiag.parsers.netstats import normalize_mac
from esxdiag.vocabulary import NOT_VSPHERE_NICS

# ip -o link: "2: eth0: <...> mtu 1500 ... \    link/ether 00:50:56:a6:55:f4 brd ..."; "eth0.10@eth0" for VLANs
_LINK = re.compile(r"^\d+:\s+(?P<name>[^:@\s]+)(?:@\S+)?:.*?link/ether\s+(?P<mac>[0-9a-fA-F:]{17})", re.M)
PER_IFACE = ("ethtool_driver", "ethtool_rings", "ethtool_stats")


# interface names of software devices (containers, bridges, tunnels): never asked for their driver
_SOFTWARE_NAMES = re.compile(r"^(veth|docker|br-|virbr|cali|flannel|cni|vxlan|tun|tap|wg|genev|kube|lxc|ovs|vnet)")
MAX_OTHER_NICS = 8  # guest NICs no vNIC MAC matches that are looked at (a bound on captures, not a judgment)


@dataclass(frozen=True)
class LinuxGuest:
    ifaces: tuple[str, ...]  # interfaces whose (permanent) MAC is one of the VM's vNIC MACs
    tcp_spec: str | None  # netstat_s, or nstat where netstat is missing; None if neither ran
    others: tuple[str, ...] = ()  # NICs no vNIC MAC matches (an SR-IOV VF or DirectPath NIC): their driver's counters


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


def ip_links(conn: SshConnection, writer: BundleWriter, target_id: str, sample: int | None) -> dict[str, str] | None:
    """The guest's Ethernet interfaces and their current MACs (ip -o link), or None when it failed."""
    capture, out = run_capture(conn, writer, target_id, "ip_link", {}, sample)
    return _links(out.decode("utf-8", "replace")) if capture.ok else None


def find_ifaces(conn: SshConnection, writer: BundleWriter, target_id: str, macs: list[str],
                sample: int | None = None, links: dict[str, str] | None = None) -> tuple[str, ...]:
    """Match on the current MAC, confirmed by ethtool -P; where nothing matches (a bond rewrote
    the MAC), fall back to the permanent MAC of every Ethernet interface."""
    wanted = {normalize_mac(m) for m in macs}
    links = links if links is not None else ip_links(conn, writer, target_id, sample)
    if links is None:
        return ()
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


def other_nics(conn: SshConnection, writer: BundleWriter, target_id: str, links: dict[str, str] | None,
               found: tuple[str, ...], sample: int | None) -> tuple[str, ...]:
    """Ethernet interfaces no vNIC MAC matched whose driver (ethtool -i) is a NIC's, not a software device's nor
    vmxnet3's: a DirectPath NIC has no MAC in vCenter, and a VF may have one of its own. Their counters are
    collected like a vNIC's so the report lists every guest NIC."""
    if "ethtool" in conn.unavailable or not links:
        return ()
    names = [n for n in links if n not in found and not _SOFTWARE_NAMES.match(n)][:MAX_OTHER_NICS]
    out = []
    for name in names:
        capture, text = run_capture(conn, writer, target_id, "ethtool_driver", {"iface": name}, sample)
        try:
            driver = parse_driver(text.decode("utf-8", "replace")).driver if capture.ok else None
        except (ParseError, NoData):
            driver = None
        if driver and driver not in NOT_VSPHERE_NICS and driver not in ("vmxnet3", "e1000", "e1000e"):
            out.append(name)
    return tuple(out)


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
    if previous is not None:
        ifaces, others = previous.ifaces, previous.others
    else:
        links = ip_links(conn, writer, target_id, sample or None)
        ifaces = find_ifaces(conn, writer, target_id, macs, sample or None, links)
        others = other_nics(conn, writer, target_id, links, ifaces, sample or None)
    for iface in ifaces + others:
        for name in PER_IFACE:
            if name == "ethtool_driver" and iface in others:
                continue  # read already, to tell a NIC from a software device
            if sample == 0 or specs.spec(name).sampled:
                run_capture(conn, writer, target_id, name, {"iface": iface},
                            sample if specs.spec(name).sampled else None)
    tcp_spec = _tcp_counters(conn, writer, target_id, sample, previous.tcp_spec if previous else None)
    if sample == 0:
        run_capture(conn, writer, target_id, "nproc")
        run_capture(conn, writer, target_id, "ring_persistence")
    return LinuxGuest(ifaces, tcp_spec, others)
