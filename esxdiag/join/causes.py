"""The counters of every other place a frame can be lost (docs/diagnosis.md), per vNIC:
the physical uplink that carries it, the vmxnet3 drop reasons that are not the ring, the port's
page-absent drops, the transmit side, and the guest's per-queue drops. The rules in
esxdiag.rules.causes judge them; the ring verdict reads those findings."""

from __future__ import annotations

import re
from esxdiag.join.facts import CounterWindow, DropSymptom, UplinkFacts
from esxdiag.join.readings import Reading
from esxdiag.join.sources import Sources
from esxdiag.join.windowing import counter, queue_sum, window_seconds
from esxdiag.parsers.netstats import NetStatsPort, norm_mac

# rxSummary labels differ across ESXi releases (ESXi 6.x "# of pkts dropped due to large hdrs", ESXi 8 also
# "# of pkts dropped due to large inner (encap) hdrs", 37 keys in all): a reason is found by the words of its
# family, never by one spelling or a position, and a label the capture does not have is "not reported", not 0.
# (family, label pattern, what one count is): "packets" counts are lost frames the port's droppedRx holds;
# "events" (a queue stopped, a page-in request) are shown beside them, never added to them. docs/diagnosis.md
RX_REASON_FAMILIES = (
    ("mtu", re.compile(r"drop.*exceeds? vnic mtu", re.I), "packets"),
    ("truncation", re.compile(r"drop.*truncat", re.I), "packets"),
    ("steering", re.compile(r"drop.*steering", re.I), "packets"),
    ("burst-queue", re.compile(r"drop.*burst ?q", re.I), "packets"),
    ("large-headers", re.compile(r"drop.*large\b.*\bh(ea)?d(e)?rs?\b", re.I), "packets"),
    ("sg-limit", re.compile(r"drop.*\bsg\b.*limit", re.I), "packets"),
    ("packet-aging", re.compile(r"drop.*aging", re.I), "packets"),
    ("rx-lock-queueing", re.compile(r"drop.*try ?lock", re.I), "packets"),
    ("copy-failure", re.compile(r"fail.*copy", re.I), "packets"),
    ("buffer-map-failure", re.compile(r"fail.*\bmap\b", re.I), "packets"),
    ("receive-error", re.compile(r"receive error", re.I), "packets"),
    ("queue-stopped", re.compile(r"rx queue is stopped", re.I), "events"),
    ("page-in", re.compile(r"page in a buffer", re.I), "events"),
)
# a label no family knows, whose words still say frames were lost: shown in its own words, never ignored
UNKNOWN_DROP_LABEL = re.compile(r"\bdrop|\bdiscard|due to|\blost\b", re.I)
# the ring's own counters (judged by the ring verdict), and labels that name drops without counting them
NOT_A_REASON = re.compile(r"running out of buffers|ring is full|ring size|whether|delivered by|queue length|"
                          r"\bok\b", re.I)
PAGE_ABSENT_RX = "droppedRxDueToPageAbsent"
PAGE_ABSENT_FAMILY = "page-absent"


def reason_family(label: str) -> tuple[str, str] | None:
    """(family, what one count is) of an rxSummary / clientStats label that counts lost frames, ("unknown",
    "packets") for a drop label no family knows, None for a label that is not a drop reason."""
    if label == PAGE_ABSENT_RX:
        return PAGE_ABSENT_FAMILY, "packets"
    if NOT_A_REASON.search(label):
        return None
    for family, pattern, kind in RX_REASON_FAMILIES:
        if pattern.search(label):
            return family, kind
    return ("unknown", "packets") if UNKNOWN_DROP_LABEL.search(label) else None


PAGE_ABSENT_RX = "droppedRxDueToPageAbsent"
TX_PORT_KEYS = (("droppedTx", "port droppedTx (clientStats)"),
                ("droppedTxExceedMTU", "port droppedTxExceedMTU (clientStats)"))
# esxcli network nic stats get: the receive counters that are loss (formats.md 3.5); "Total receive
# errors" sums the error lines, so it is not added to them
UPLINK_RX_KEYS = ("Receive packets dropped", "Receive missed errors", "Receive FIFO errors", "Receive CRC errors",
                  "Receive length errors", "Receive over errors", "Receive frame errors")


def rx_reasons(sources: Sources, target_id: str | None, port: NetStatsPort | None, notes: list[str]) -> dict[str, CounterWindow]:
    """Every drop-reason label of the vNIC (rxSummary, clientStats page absent) -> its counter over the window,
    keyed by the label as printed; ``reason_family`` says which cause each is."""
    if port is None or target_id is None:
        return {}
    params = {"portset": port.switch, "port": str(port.port)}
    out: dict[str, CounterWindow] = {}
    summary = sources.readings.samples("vsish_rxsummary", target_id, **params)
    labels = [k for k in dict.fromkeys(k for s in summary for k in s.record.counters) if reason_family(k)]
    secs = window_seconds(summary, sources.clocks)
    for label in labels:
        found = counter(f"{label} (rxSummary)", summary, lambda rec, k=label: rec.counters.get(k), secs, label, notes)
        if found is not None:
            out[label] = found
    client = sources.readings.samples("vsish_clientstats", target_id, **params)
    page = counter(f"port {PAGE_ABSENT_RX} (clientStats)", client, lambda rec: rec.counters.get(PAGE_ABSENT_RX),
                   window_seconds(client, sources.clocks), PAGE_ABSENT_RX, notes)
    if page is not None:
        out[PAGE_ABSENT_RX] = page
    return out


def port_packets_rx(sources: Sources, target_id: str | None, port: NetStatsPort | None, notes: list[str]) -> CounterWindow | None:
    """Frames the port delivered over the window (clientStats pktsRxOK): the denominator of the drop floor."""
    if port is None or target_id is None:
        return None
    client = sources.readings.samples("vsish_clientstats", target_id, portset=port.switch, port=str(port.port))
    return counter("port pktsRxOK (clientStats)", client, lambda rec: rec.counters.get("pktsRxOK"),
                   window_seconds(client, sources.clocks), "pktsRxOK", notes)


def port_tx(sources: Sources, target_id: str | None, port: NetStatsPort | None, notes: list[str]) -> dict[str, CounterWindow]:
    if port is None or target_id is None:
        return {}
    client = sources.readings.samples("vsish_clientstats", target_id, portset=port.switch, port=str(port.port))
    secs = window_seconds(client, sources.clocks)
    out = {}
    for key, words in TX_PORT_KEYS:
        found = counter(words, client, lambda rec, k=key: rec.counters.get(k), secs, key, notes)
        if found is not None:
            out[key] = found
    return out


def guest_tx_and_queues(samples: list[Reading], seconds: float | None,
                        notes: list[str]) -> tuple[dict[str, CounterWindow], dict[int, CounterWindow]]:
    """From the guest's ethtool -S readings: tx ring full and driver tx drops summed over tx queues,
    and pkts rx OOB per rx queue."""
    tx: dict[str, CounterWindow] = {}
    for key, words, get in (("guest tx ring full", "guest tx ring full (sum of tx queues)", lambda q: q.ring_full),
                            ("guest drv dropped tx", "guest drv dropped tx total (sum of tx queues)",
                             lambda q: q.drv_dropped_tx_total)):
        found = queue_sum(words, samples, lambda rec, g=get: {q.queue: g(q) for q in rec.tx_queues}, seconds,
                          key, notes)
        if found is not None:
            tx[key] = found
    queues: dict[int, CounterWindow] = {}
    ids = sorted({q.queue for s in samples for q in s.record.rx_queues})
    if len(ids) > 1:
        for qid in ids:
            found = counter(f"guest pkts rx OOB, rx queue {qid}", samples,
                            lambda rec, i=qid: next((q.pkts_rx_oob for q in rec.rx_queues if q.queue == i), None),
                            seconds, "pkts rx OOB", None)
            if found is not None:
                queues[qid] = found
    return tx, queues


def uplinks(sources: Sources, target_id: str | None, port: NetStatsPort | None, mac: str | None, host_name: str | None,
            notes: list[str]) -> tuple[tuple[UplinkFacts, ...], str | None]:
    """The vmnic(s) that carry the vNIC (``Team Uplink`` of its port in ``esxcli network vm port
    list``), each with its receive-loss counters from ``esxcli network nic stats get`` at both ends
    of the window and vCenter's host counters for it. (uplinks, why the uplink is unknown)."""
    if target_id is None:
        return (), "the vNIC's host port was not found"
    team, mapping = _team_uplinks(sources, target_id, port, mac)
    if team:
        return tuple(_uplink(sources, target_id, host_name, vmnic, mapping, notes) for vmnic in team), None
    # which uplink carries the vNIC is not known: the host's uplinks that were read are kept (mapping None), so
    # a loss on them is said as the host's, never as this vNIC's cause
    read = {c.params.get("vmnic") for c in sources.bundle.find("esxcli_nic_stats", target_id)}
    for cap in sources.bundle.find("vsphere_host_perf"):
        reading = sources.readings.read(cap)
        if reading is not None and reading.record.host == host_name:
            read |= {s.instance for s in reading.record.series if s.instance}
    host_links = tuple(_uplink(sources, target_id, host_name, vmnic, None, notes)
                       for vmnic in sorted(v for v in read if v is not None))
    if not host_links:
        return (), "not read (esxcli network vm port list -w WORLD, esxcli network nic stats get -n vmnicN)"
    return host_links, (f"uplink counters were read for {', '.join(link.vmnic for link in host_links)}, but no "
                        "esxcli network vm port list says which of them carries this vNIC (Team Uplink)")


def _uplink(sources: Sources, target_id: str, host_name: str | None, vmnic: str, mapping: str | None,
            notes: list[str]) -> UplinkFacts:
    samples = sources.readings.samples("esxcli_nic_stats", target_id, vmnic=vmnic)
    secs = window_seconds(samples, sources.clocks)
    counters = tuple(c for key in UPLINK_RX_KEYS
                     if (c := counter(f"{vmnic} {key}", samples, lambda rec, k=key: rec.counters.get(k), secs,
                                      key, notes)) is not None)
    return UplinkFacts(vmnic, host_name or target_id, mapping, counters, _host_perf_symptoms(sources, host_name, vmnic))


def _team_uplinks(sources: Sources, target_id: str, port: NetStatsPort | None, mac: str | None) -> tuple[list[str], str]:
    for cap in sources.bundle.find("esxcli_vm_ports", target_id):
        reading = sources.readings.read(cap)
        for record in reading.record.ports if reading else ():
            same_port = port is not None and record.port_id == port.port
            if (same_port or (mac and norm_mac(record.mac) == mac)) and record.team_uplink:
                names = [n.strip() for n in record.team_uplink.split(",") if n.strip()]
                return names, f"Team Uplink of port {record.port_id} in {cap.file}"
    return [], ""


def _host_perf_symptoms(sources: Sources, host_name: str | None, vmnic: str) -> tuple[DropSymptom, ...]:
    out = []
    for cap in sources.bundle.find("vsphere_host_perf"):
        reading = sources.readings.read(cap)
        if reading is None or (host_name and reading.record.host != host_name):
            continue
        for name, words in (("net.droppedRx.summation", "vCenter host net.droppedRx"),
                            ("net.errorsRx.summation", "vCenter host net.errorsRx")):
            values = reading.record.values(name, vmnic)
            if values is not None:
                out.append(DropSymptom(f"{words} of {vmnic}", tuple(values), "packets", reading.file,
                                       f"{name}[{vmnic}]", (), reading.record.interval_s))
    return tuple(s for s in out if s.present)
