"""What an emulated Windows guest prints through OpenSSH -> PowerShell (docs/raw-formats.md §5).

CSV from ConvertTo-Csv -NoTypeInformation (every field quoted), ConvertTo-Json for advanced
properties (RegistryValue is an array; in CSV it would print as "System.String[]"), Format-List with names padded to the longest,
a blank line before and two after; CRLF line ends.
"""

from __future__ import annotations

import csv
import io
import json

from model import Lab, counter

Out = tuple[str, str, int]


def _csv(header: list[str], rows: list[list[object]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows([[str(v) for v in row] for row in rows])
    return buf.getvalue()


def _format_list(records: list[list[tuple[str, object]]]) -> str:
    out = ["", ""]
    for record in records:
        width = max(len(k) for k, _ in record)
        out += [f"{k:<{width}} : {v}".rstrip() if v == "" else f"{k:<{width}} : {v}" for k, v in record]
        out.append("")
    out += ["", ""]
    return "\r\n".join(out)


def netadapter(vm: dict) -> Out:
    rows = [[n["iface"], "vmxnet3 Ethernet Adapter", n["mac"].upper().replace(":", "-"), "Up", "10 Gbps",
             vm["guest"]["mtu"], vm["guest"]["driver_version"]] for n in vm["nics"]]
    header = ["Name", "InterfaceDescription", "MacAddress", "Status", "LinkSpeed", "MtuSize", "DriverVersion"]
    return _csv(header, rows), "", 0


def advprops(vm: dict) -> Out:
    rows = []
    for n in vm["nics"]:
        rss = "Enabled" if n.get("rss") else "Disabled"
        props = [("Rx Ring #1 Size", str(n["ring1"]), "MaxRxRing1Length"),
                 ("Rx Ring #2 Size", str(n["ring2"]), "MaxRxRing2Length"),
                 ("Tx Ring Size", str(n["tx_ring"]), "MaxTxRingLength"),
                 ("Small Rx Buffers", str(n["small_rx_buffers"]), "NumRxBuffersSmall"),
                 ("Large Rx Buffers", str(n["large_rx_buffers"]), "NumRxBuffersLarge"),
                 ("Receive Side Scaling", rss, "*RSS"),
                 ("Maximum number of RSS queues", "4 Queues", "*NumRssQueues"),
                 ("Enable adaptive rx ring sizing", "Enabled", "EnableAdaptiveRing"),
                 ("Jumbo Packet", "Standard 1500", "*JumboPacket"),
                 ("Interrupt Moderation", "Enabled", "*InterruptModeration")]
        registry = {"*RSS": "1" if n.get("rss") else "0", "*NumRssQueues": "4", "EnableAdaptiveRing": "1",
                    "*JumboPacket": "1514", "*InterruptModeration": "1"}
        rows += [{"Name": n["iface"], "DisplayName": display, "DisplayValue": value, "RegistryKeyword": keyword,
                  "RegistryValue": [registry.get(keyword, value)]} for display, value, keyword in props]
    # Windows PowerShell 5.1 ConvertTo-Json: 4-space indent, two spaces after the colon, CRLF
    return json.dumps(rows, indent=4, separators=(",", ":  ")).replace("\n", "\r\n") + "\r\n", "", 0


def rss(vm: dict) -> Out:
    records = []
    for n in vm["nics"]:
        records.append([
            ("Name", n["iface"]), ("InterfaceDescription", "vmxnet3 Ethernet Adapter"),
            ("Enabled", "True" if n.get("rss") else "False"), ("NumberOfReceiveQueues", n["rx_queues"]),
            ("Profile", "ClosestStatic"), ("BaseProcessorGroup", 0), ("BaseProcessorNumber", 0),
            ("MaxProcessorGroup", 0), ("MaxProcessorNumber", vm["num_cpu"] - 1),
            ("MaxProcessors", vm["num_cpu"]), ("NumaNode", 65535), ("IndirectionTable", ""),
            ("PSComputerName", ""),
        ])
    return _format_list(records), "", 0


def adapter_stats(lab: Lab, vm: dict) -> Out:
    t, records = lab.elapsed, []
    for n in vm["nics"]:
        pkts = counter(n, "pkts rx ok", t)
        records.append([
            ("ifAlias", n["iface"]), ("InterfaceAlias", n["iface"]), ("ifDesc", "vmxnet3 Ethernet Adapter"),
            ("Caption", ""), ("Description", ""), ("ElementName", ""),
            ("InstanceID", "{6D5E2D8A-2C1B-4E0E-9E43-" + n["mac"].replace(":", "").upper() + "}"),
            ("InterfaceDescription", "vmxnet3 Ethernet Adapter"), ("Name", n["iface"]), ("Source", 2),
            ("SystemName", vm["guest"]["hostname"]), ("OutboundDiscardedPackets", 0), ("OutboundPacketErrors", 0),
            ("ReceivedBroadcastBytes", 26464), ("ReceivedBroadcastPackets", 195),
            ("ReceivedBytes", pkts * 1514), ("ReceivedDiscardedPackets", counter(n, "received_discarded", t)),
            ("ReceivedMulticastBytes", 0), ("ReceivedMulticastPackets", 0), ("ReceivedPacketErrors", 0),
            ("ReceivedUnicastBytes", (pkts - 195) * 1514), ("ReceivedUnicastPackets", pkts - 195),
            ("SentBroadcastBytes", 0), ("SentBroadcastPackets", 0), ("SentBytes", 0),
            ("SentUnicastBytes", 0), ("SentUnicastPackets", 0), ("PSComputerName", ""),
        ])
    return _format_list(records), "", 0


def logical_cpus(vm: dict) -> Out:
    return f"{vm['num_cpu']}\r\n", "", 0
