"""What an emulated Linux guest prints (docs/raw-formats.md §4, seed 002 outputs).

ethtool -S uses the gen C vmxnet3 strings (docs/raw-formats.md §4.1) printed as ethtool's
``"     %.*s: %llu"``; ethtool -g the ioctl layout with TABs, including the early multi-queue
quirk (ring x queues) for 3.2 kernels (seed 002 shows RX 512 for 2 x 256); ethtool -i as in
seed 002. netstat -s / nstat -asz are real captures from a Linux host
(templates/, copied from tests/fixtures/guest/local_*.txt) with the TCP lines replaced by the
scenario's counters; 3.x-era guests get the old net-tools wording ("retransmited").
"""

from __future__ import annotations

import re
from pathlib import Path

from model import Lab, counter, rx_bytes, tcp_counter

Out = tuple[str, str, int]
TEMPLATES = Path(__file__).resolve().parent / "templates"
TX_STRINGS = ["Tx Queue#", "  TSO pkts tx", "  TSO bytes tx", "  ucast pkts tx", "  ucast bytes tx",
              "  mcast pkts tx", "  mcast bytes tx", "  bcast pkts tx", "  bcast bytes tx", "  pkts tx err",
              "  pkts tx discard", "  drv dropped tx total", "     too many frags", "     giant hdr",
              "     hdr err", "     tso", "  ring full", "  pkts linearized", "  hdr cloned", "  giant hdr"]
RX_STRINGS = ["Rx Queue#", "  LRO pkts rx", "  LRO byte rx", "  ucast pkts rx", "  ucast bytes rx",
              "  mcast pkts rx", "  mcast bytes rx", "  bcast pkts rx", "  bcast bytes rx", "  pkts rx OOB",
              "  pkts rx err", "  drv dropped rx total", "     err", "     fcs", "  rx buf alloc fail"]
E1000_STRINGS = ["rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_broadcast", "tx_broadcast",
                 "rx_multicast", "tx_multicast", "rx_errors", "tx_errors", "tx_dropped", "multicast",
                 "collisions", "rx_length_errors", "rx_over_errors", "rx_crc_errors", "rx_frame_errors",
                 "rx_no_buffer_count", "rx_missed_errors", "tx_aborted_errors", "tx_carrier_errors"]


def _old_kernel(vm: dict) -> bool:
    major, minor = (int(x) for x in re.match(r"(\d+)\.(\d+)", vm["guest"]["kernel"]).groups())
    return (major, minor) < (3, 10)


def _nic(vm: dict, iface: str) -> dict | None:
    return next((n for n in vm["nics"] if n["iface"] == iface), None)


def _no_device(iface: str) -> Out:
    return "", "Cannot get device settings: No such device\n", 75


def ip_link(vm: dict) -> Out:
    lines = ["1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default "
             "qlen 1000\\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00"]
    for index, nic in enumerate(vm["nics"], 2):
        qdisc = "mq" if nic.get("tx_queues", 1) > 1 else "pfifo_fast"
        lines.append(f"{index}: {nic['iface']}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu {vm['guest']['mtu']} "
                     f"qdisc {qdisc} state UP mode DEFAULT group default qlen 1000\\    "
                     f"link/ether {nic['mac']} brd ff:ff:ff:ff:ff:ff")
    return "\n".join(lines) + "\n", "", 0


def permaddr(vm: dict, iface: str) -> Out:
    nic = _nic(vm, iface)
    return (f"Permanent address: {nic['mac']}\n", "", 0) if nic else _no_device(iface)


def driver(vm: dict, iface: str) -> Out:
    nic = _nic(vm, iface)
    if not nic:
        return _no_device(iface)
    name = "vmxnet3" if nic["type"] == "vmxnet3" else "e1000"
    firmware = "N/A" if _old_kernel(vm) else ""
    bus = "0000:03:00.0" if _old_kernel(vm) else "0000:0b:00.0"
    lines = [f"driver: {name}", f"version: {vm['guest']['driver_version']}", f"firmware-version: {firmware}"]
    if not _old_kernel(vm):
        lines.append("expansion-rom-version: ")
    lines += [f"bus-info: {bus}", "supports-statistics: yes", "supports-test: no",
              "supports-eeprom-access: no", "supports-register-dump: yes", "supports-priv-flags: no"]
    return "\n".join(lines) + "\n", "", 0


def rings(vm: dict, iface: str) -> Out:
    nic = _nic(vm, iface)
    if not nic:
        return _no_device(iface)
    if nic["type"] != "vmxnet3":  # e1000: 4096 max, 256 default, no mini/jumbo
        maxima, current = (4096, 0, 0, 4096), (256, 0, 0, 256)
    elif _old_kernel(vm):  # rx/tx_pending = ring size x queues, RX Jumbo not reported
        maxima = (4096, 0, 0, 4096)
        current = (nic["ring1"] * nic["rx_queues"], 0, 0, nic["tx_ring"] * nic["tx_queues"])
    else:
        maxima, current = (4096, 2048, 4096, 4096), (nic["ring1"], 128, nic["ring2"], nic["tx_ring"])
    def block(values: tuple[int, ...]) -> str:
        return "RX:\t\t{}\nRX Mini:\t{}\nRX Jumbo:\t{}\nTX:\t\t{}\n".format(*values)
    text = (f"Ring parameters for {iface}:\nPre-set maximums:\n{block(maxima)}"
            f"Current hardware settings:\n{block(current)}\n")
    return text, "", 0


def stats(lab: Lab, vm: dict, iface: str) -> Out:
    nic = _nic(vm, iface)
    if not nic:
        return _no_device(iface)
    t = lab.elapsed
    if nic["type"] != "vmxnet3":
        sent = tcp_counter(vm, "segments_sent", t)
        values = [sent, sent, sent * 1514, sent * 1514] + [0] * (len(E1000_STRINGS) - 4)
        return "NIC statistics:\n" + "".join(f"     {s}: {v}\n" for s, v in zip(E1000_STRINGS, values)), "", 0
    ntx, nrx = nic["tx_queues"], nic["rx_queues"]
    sent = tcp_counter(vm, "segments_sent", t)
    pkts, lro = counter(nic, "pkts rx ok", t), counter(nic, "LRO pkts rx ok", t)
    lines: list[tuple[str, int]] = []
    for q in range(ntx):
        tx = sent // ntx
        lines += list(zip(TX_STRINGS, [q, 0, 0, tx, tx * 1514, 0, 0, 2, 120] + [0] * 11))
    for q in range(nrx):
        dropped = counter(nic, "drv_dropped_rx", t, q)
        rx, rx_lro = pkts // nrx, lro // nrx
        values = [q, rx_lro, rx_bytes(vm, rx_lro), rx, rx_bytes(vm, rx), 0, 0, 97, 13232,
                  counter(nic, "pkts_rx_oob", t, q), 0, dropped, dropped, 0, 0]
        lines += list(zip(RX_STRINGS, values))
    lines.append(("tx timeout count", 0))
    return "NIC statistics:\n" + "".join(f"     {s}: {v}\n" for s, v in lines), "", 0


def netstat_s(lab: Lab, vm: dict) -> Out:
    sent, retrans = tcp_counter(vm, "segments_sent", lab.elapsed), tcp_counter(vm, "retrans", lab.elapsed)
    text = (TEMPLATES / "netstat_s.txt").read_text()
    text = re.sub(r"^    \d+ segments sent out$", f"    {sent} segments sent out", text, flags=re.M)
    text = re.sub(r"^    \d+ segments retransmitted$", f"    {retrans} segments retransmitted", text, flags=re.M)
    if _old_kernel(vm):  # net-tools 1.60 wording (seed 002: "86715 segments retransmited")
        text = (text.replace("segments sent out", "segments send out")
                .replace("segments retransmitted", "segments retransmited")
                .replace("active connection openings", "active connections openings"))
    return text, "", 0


def nstat(lab: Lab, vm: dict) -> Out:
    sent, retrans = tcp_counter(vm, "segments_sent", lab.elapsed), tcp_counter(vm, "retrans", lab.elapsed)
    lines = []
    for line in (TEMPLATES / "nstat_asz.txt").read_text().splitlines():
        name = line.split(" ", 1)[0]
        if name in ("TcpOutSegs", "TcpRetransSegs"):
            line = f"{name:<32}{sent if name == 'TcpOutSegs' else retrans:<19}0.0"
        lines.append(line)
    return "\n".join(lines) + "\n", "", 0


def ring_persistence(vm: dict) -> Out:
    """grep -rsIn over paths some of which do not exist: with -s the messages go, exit 2 stays. A
    persisted NIC prints its ``persisted_in`` line (default rc.local) with the size the guest asks
    for (``ring1_requested``, else the ring it runs: a v7 device may round the request down)."""
    hits = [f"{n.get('persisted_in', '/etc/rc.local:13:ethtool -G')} {n['iface']} rx {n.get('ring1_requested', n['ring1'])}"
            for n in vm["nics"] if n.get("rings_persisted")]
    return "".join(h + "\n" for h in hits), "", 2
