"""What an emulated ESXi host prints (docs/raw-formats.md §1-3, seed 002 outputs).

Each function takes the host answering (model.EsxiHost: its own uplinks, vmknics and VMs only) and
returns (stdout, stderr, rc). Layouts follow real captures: net-stats -l column
widths from tests/fixtures/host/net_stats_l_no_eth_suffix_big_uplinks.txt; rxSummary field list
and 3-space indent from seed 002 / docs/raw-formats.md §2.1 (ESXi 6.0 has these 20 fields); clientStats
keys from a public capture (docs/raw-formats.md §2.2); rxqueues status lines from seed 002; esxcli network
vm list (dash ruler, widths from the longest value), vm port list (3-space ``Key: value`` records,
blank line between) and nic stats get (title + the 23 keys in order) from the captures in
tests/fixtures/host/ (docs/raw-formats.md §3.3-3.5).
"""

from __future__ import annotations

import csv
import io
import sys
import time
from datetime import datetime, timezone

from model import (BROADCAST_BYTES, BROADCAST_PKTS, DEFAULT_UPLINK, EsxiHost, bytes_per_pkt, counter, rx_bytes,
                   tcp_counter, uplink_counter)

Out = tuple[str, str, int]
_NETWORK = "VM Network"  # the port group of every scenario vNIC (vcsim's network, tests/lab/vcsim_lab.py)
_VMXNET3_SUBTYPE, _E1000_SUBTYPE = 9, 7  # 7: seen on an NSX controller vNIC (likely e1000)


def version(esx: EsxiHost) -> Out:
    return esx.host["version"] + "\n", "", 0


def net_stats_list(esx: EsxiHost) -> Out:
    host = esx.host
    rows = [f"{'PortNum':<17}{'Type':>4}{'SubType':>8} {'SwitchName':<17}{'MACAddress':<19}ClientName"]
    entries = [(u["port"], 4, 0, u["mac"], u["client"]) for u in host["uplinks"]]
    entries += [(k["port"], 3, 0, k["mac"], k["client"]) for k in host["vmknics"]]
    for vm in esx.vms:
        for index, nic in enumerate(vm["nics"]):
            subtype = _VMXNET3_SUBTYPE if nic["type"] == "vmxnet3" else _E1000_SUBTYPE
            client = vm["name"] if index == 0 else f"{vm['name']}.eth{index}"  # seed: first vNIC unsuffixed
            entries.append((nic["port"], 5, subtype, nic["mac"], client))
    for port, type_, subtype, mac, client in entries:
        rows.append(f"{port:<17}{type_:>4}{subtype:>8} {host['portset']:<17}{mac:<19}{client}")
    return "\n".join(rows) + "\n", "", 0


def _node(title: str, pairs: list[tuple[str, int]]) -> str:
    return title + " {\n" + "".join(f"   {k}:{v}\n" for k, v in pairs) + "}\n"


def _missing(verb: str, path: str) -> Out:
    # vsish's error text for a missing node is not in any capture we have (inferred wording)
    return "", f"VSISHCmdGetInt():Get failed: Failure\nError in command {verb} {path}: Not found\n", 1


def rx_summary(esx: EsxiHost, portset: str, port: int, path: str) -> Out:
    found = esx.nic_by_port(portset, port)
    if not found or found[1]["type"] != "vmxnet3":
        return _missing("get", path)
    vm, nic = found
    t = esx.elapsed
    pkts = counter(nic, "pkts rx ok", t)
    lro = counter(nic, "LRO pkts rx ok", t)
    pairs = [
        ("LRO pkts rx ok", lro), ("LRO bytes rx ok", rx_bytes(vm, lro)),
        ("pkts rx ok", pkts), ("bytes rx ok", rx_bytes(vm, pkts)),
        ("unicast pkts rx ok", pkts - BROADCAST_PKTS), ("unicast bytes rx ok", rx_bytes(vm, pkts) - BROADCAST_BYTES),
        ("multicast pkts rx ok", 0), ("multicast bytes rx ok", 0),
        ("broadcast pkts rx ok", BROADCAST_PKTS), ("broadcast bytes rx ok", BROADCAST_BYTES),
        ("running out of buffers", counter(nic, "running out of buffers", t)), ("pkts receive error", 0),
        ("# of times the 1st ring is full", counter(nic, "# of times the 1st ring is full", t)),
        ("# of times the 2nd ring is full", counter(nic, "# of times the 2nd ring is full", t)),
        ("fail to map a rx buffer", 0), ("request to page in a buffer", 0),
        ("# of times rx queue is stopped", 0), ("failed when copying into the guest buffer", 0),
        ("# of pkts dropped due to large hdrs", 0), ("# of pkts dropped due to max number of SG limits", 0),
    ]
    return _node("stats of a vmxnet3 vNIC rx queue", pairs), "", 0


def client_stats(esx: EsxiHost, portset: str, port: int, path: str) -> Out:
    found = esx.nic_by_port(portset, port)
    if not found:
        return _missing("get", path)
    vm, nic = found
    t = esx.elapsed
    has_counters = "counters_start" in nic
    rx_ok = counter(nic, "pkts rx ok", t) if has_counters else 0
    dropped = counter(nic, "running out of buffers", t) if has_counters else 0
    tx_ok = tcp_counter(vm, "segments_sent", t)
    pairs = [("pktsTxOK", tx_ok), ("bytesTxOK", tx_ok * 1514), ("droppedTx", 0), ("pktsTsoTxOK", 0),
             ("bytesTsoTxOK", 0), ("droppedTsoTx", 0), ("pktsSwTsoTx", 0), ("droppedSwTsoTx", 0),
             ("pktsZerocopyTxOK", 0), ("droppedTxExceedMTU", 0), ("pktsRxOK", rx_ok),
             ("bytesRxOK", rx_bytes(vm, rx_ok)), ("droppedRx", dropped), ("pktsSwTsoRx", 0),
             ("droppedSwTsoRx", 0), ("actions", 0), ("uplinkRxPkts", 0), ("clonedRxPkts", 0),
             ("pksBilled", 0), ("droppedRxDueToPageAbsent", 0), ("droppedTxDueToPageAbsent", 0)]
    return _node("port client stats", pairs), "", 0


def portsets_ls(esx: EsxiHost) -> Out:
    return f"{esx.host['portset']}/\n", "", 0


def rxqueues_ls(esx: EsxiHost, portset: str, port: int, path: str) -> Out:
    found = esx.nic_by_port(portset, port)
    if not found or found[1]["type"] != "vmxnet3":
        return _missing("ls", path)
    return "".join(f"{q}/\n" for q in range(found[1]["rx_queues"])), "", 0


def rxqueue_status(esx: EsxiHost, portset: str, port: int, queue: int, path: str) -> Out:
    found = esx.nic_by_port(portset, port)
    if not found or found[1]["type"] != "vmxnet3" or queue >= found[1]["rx_queues"]:
        return _missing("get", path)
    nic = found[1]
    pairs = [("intr index", queue), ("error code", 0), ("ring #1 size", nic["ring1"]), ("ring #2 size", nic["ring2"])]
    return _node("status of a vmxnet3 vNIC rx queue", pairs), "", 0


def esxcli_vm_list(esx: EsxiHost) -> Out:
    """``esxcli network vm list``: column widths follow the longest value, the dash ruler under the
    header, World ID and Num Ports right-aligned, Networks a ", "-joined list (one per port)."""
    rows = [(str(vm["world_id"]), vm["name"], str(len(vm["nics"])), ", ".join(_NETWORK for _ in vm["nics"]))
            for vm in esx.vms]
    header = ("World ID", "Name", "Num Ports", "Networks")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for world, vm_name, ports, networks in rows:
        lines.append(f"{world.rjust(widths[0])}  {vm_name.ljust(widths[1])}  {ports.rjust(widths[2])}  {networks}")
    return "\n".join(lines) + "\n", "", 0


def esxcli_vm_ports(esx: EsxiHost, world: int) -> Out:
    """``esxcli network vm port list -w WORLD``: one 3-space-indented record per vNIC port, a blank
    line between records (tests/fixtures/host/esxcli_vm_port_list_rayd62_2178744.txt)."""
    vm = esx.vm_by_world(world)
    if vm is None:  # esxcli's wording for an unknown world is not in any capture we have (inferred)
        return "", f"Error: Invalid World ID: {world}\n", 1
    host = esx.host
    records = []
    for nic in vm["nics"]:
        uplink = esx.uplink(nic.get("uplink", DEFAULT_UPLINK))
        pairs = [("Port ID", nic["port"]), ("vSwitch", host["portset"]), ("Portgroup", _NETWORK), ("DVPort ID", ""),
                 ("MAC Address", nic["mac"]), ("IP Address", nic.get("ip") or "0.0.0.0"),
                 ("Team Uplink", uplink["client"] if uplink else "void"),
                 ("Uplink Port ID", uplink["port"] if uplink else 0), ("Active Filters", "")]
        records.append("".join(f"   {k}: {v}\n" if v != "" else f"   {k}:\n" for k, v in pairs))
    return "\n".join(records), "", 0


NIC_STATS_KEYS = (  # docs/raw-formats.md §3.5, in esxcli's order (tests/fixtures/host/esxcli_network_nic_stats_get_*)
    "Packets received", "Packets sent", "Bytes received", "Bytes sent", "Receive packets dropped",
    "Transmit packets dropped", "Multicast packets received", "Broadcast packets received", "Multicast packets sent",
    "Broadcast packets sent", "Total receive errors", "Receive length errors", "Receive over errors",
    "Receive CRC errors", "Receive frame errors", "Receive FIFO errors", "Receive missed errors",
    "Total transmit errors", "Transmit aborted errors", "Transmit carrier errors", "Transmit FIFO errors",
    "Transmit heartbeat errors", "Transmit window errors")


def esxcli_nic_stats(esx: EsxiHost, vmnic: str) -> Out:
    """``esxcli network nic stats get -n vmnicN``: the title line, then every counter cumulative
    (start + rate x seconds since the lab started, the host's uplinks in scenarios.json)."""
    uplink = esx.uplink(vmnic)
    if uplink is None:  # esxcli's wording for an unknown NIC is not in any capture we have (inferred)
        return "", f"Error: Unable to find NIC {vmnic}\n", 1
    t = esx.elapsed
    body = "".join(f"   {key}: {uplink_counter(uplink, key, t)}\n" for key in NIC_STATS_KEYS)
    return f"NIC statistics for {vmnic}\n" + body, "", 0


_GROUP_COUNTERS = ("Members", "% Used", "% Run", "% System", "% Wait", "% VmWait", "% Ready", "% Idle",
                   "% Overlap", "% CoStop", "% Max Limited", "% Swap Wait")
_VCPU_COUNTERS = ("% Used", "% Run", "% Ready", "% CoStop", "% Max Limited")
_PORT_COUNTERS = ("Packets Transmitted/sec", "MBits Transmitted/sec", "Packets Received/sec",
                  "MBits Received/sec", "% Outbound Packets Dropped", "% Received Packets Dropped")


def _esxtop_columns(esx: EsxiHost) -> list[tuple[str, object]]:
    """(counter path, value) pairs; values are the scenario's steady state."""
    host, name = esx.host, esx.host["name"]
    cols: list[tuple[str, object]] = [(f"\\\\{name}\\Physical Cpu(_Total)\\% Processor Time", float(host["cpu_used_pct"]))]
    for vm in esx.vms:
        cpu, n = vm["cpu"], vm["num_cpu"]
        # scenario figures are per vCPU; a Group Cpu row sums its worlds (docs/raw-formats.md §1)
        run, ready, costop, limited = (cpu[k] * n for k in ("used_pct", "ready_pct", "costop_pct", "max_limited_pct"))
        values = (n + 4, run, run, 1.0, max(0.0, 100.0 * (n + 4) - run - ready), 0.1,
                  ready, max(0.0, 100.0 * n - run - ready), 0.02, costop, limited, 0.0)
        gid = f"{vm['group_id']}:{vm['name']}"
        cols += [(f"\\\\{name}\\Group Cpu({gid})\\{c}", v) for c, v in zip(_GROUP_COUNTERS, values)]
        worlds = [("vmx", 0.3, 0.0, 0.0, 0.0)] + [
            (f"vmx-vcpu-{i}:{vm['name']}", cpu["used_pct"], cpu["ready_pct"], cpu["costop_pct"], cpu["max_limited_pct"])
            for i in range(n)]
        for offset, (world, used, w_ready, w_costop, w_limited) in enumerate(worlds):
            inst = f"{vm['group_id']}:{vm['name']}:{vm['world_id'] + 1 + offset}:{world}"
            cols += [(f"\\\\{name}\\Vcpu({inst})\\{c}", v)
                     for c, v in zip(_VCPU_COUNTERS, (used, used, w_ready, w_costop, w_limited))]
    for uplink in host["uplinks"]:
        inst = f"{host['portset']}:{uplink['port']}:{uplink['client']}"
        rates = uplink.get("rates_per_s", {})
        values = (rates.get("Packets sent", 0.0), rates.get("Bytes sent", 0.0) * 8 / 1e6,
                  rates.get("Packets received", 0.0), rates.get("Bytes received", 0.0) * 8 / 1e6, 0.0, 0.0)
        cols += [(f"\\\\{name}\\Network Port({inst})\\{c}", float(v)) for c, v in zip(_PORT_COUNTERS, values)]
    for vm in esx.vms:
        for nic in vm["nics"]:
            rates = nic.get("rates_per_s", {})
            rx, drop = rates.get("pkts rx ok", 0.0), rates.get("running out of buffers", 0.0)
            tx = (vm.get("tcp") or {}).get("segments_sent_rate", 0.0)
            drop_pct = 100.0 * drop / (rx + drop) if rx + drop else 0.0
            mbits_rx = rx * bytes_per_pkt(vm) * 8 / 1e6
            values = (tx, tx * 1514 * 8 / 1e6, rx, mbits_rx, 0.0, drop_pct)
            inst = f"{host['portset']}:{nic['port']}:{vm['world_id']}:{vm['name']}"
            cols += [(f"\\\\{name}\\Network Port({inst})\\{c}", v) for c, v in zip(_PORT_COUNTERS, values)]
    return cols


def _fmt(value: object) -> str:
    return str(value) if isinstance(value, int) else f"{value:.2f}"


def esxtop(esx: EsxiHost, delay: int, iterations: int) -> Out:
    """Batch mode: header at once, then one row per delay, really taking delay * iterations."""
    if delay < 1 or iterations < 1:
        return "", "esxtop: delay and iterations must be positive\n", 1
    cols = _esxtop_columns(esx)
    buf = io.StringIO()
    writer = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(["(PDH-CSV 4.0) (UTC)(0)"] + [c for c, _ in cols])
    sys.stdout.write(buf.getvalue())
    sys.stdout.flush()
    for _ in range(iterations):
        time.sleep(delay)
        buf = io.StringIO()
        writer = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
        stamp = datetime.now(timezone.utc).strftime("%m/%d/%Y %H:%M:%S")
        writer.writerow([stamp] + [_fmt(v) for _, v in cols])
        sys.stdout.write(buf.getvalue())
        sys.stdout.flush()
    return "", "", 0
