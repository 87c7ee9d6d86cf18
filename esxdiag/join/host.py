"""Host-side facts of one vNIC: vsish rxSummary / clientStats / rxqueues over the window, and the
drops its vSwitch port saw (esxtop Network Port %DRPRX, vCenter net.droppedRx)."""

from __future__ import annotations

from esxdiag.join.facts import DropSymptom
from esxdiag.join.readings import Reading
from esxdiag.join.records import HostSide, VnicEntry
from esxdiag.join.sources import Sources
from esxdiag.parsers.esxtop import PortRx
from esxdiag.parsers.netstats import NetStatsList, NetStatsPort, norm_mac
from esxdiag.join.windowing import (RX_SUMMARY_LRO, RX_SUMMARY_OOB, RX_SUMMARY_RING1, RX_SUMMARY_RING2, counter,
                               sample_time, window_seconds)


def host_side(sources: Sources, target_id: str | None, port: NetStatsPort | None, missing: list[str], vmxnet3: bool = True) -> HostSide:
    out: HostSide = {
        "ring1_full": None, "ring2_full": None, "out_of_buffers": None, "dropped_rx": None, "lro": None,
        "ring1_size": None, "ring2_size": None, "ring_size_source": None, "rx_queues": None,
        "rx_queues_source": None, "series": {}, "notes": [],
    }
    if port is None or target_id is None:
        return out
    r = sources.readings
    params = {"portset": port.switch, "port": str(port.port)}
    notes = out["notes"]
    client = r.samples("vsish_clientstats", target_id, **params)  # every adapter type's port counts its drops
    out["dropped_rx"] = counter("port droppedRx (clientStats)", client, lambda rec: rec.dropped_rx,
                                window_seconds(client, sources.clocks), "droppedRx", notes)
    if not vmxnet3:
        return out
    samples = r.samples("vsish_rxsummary", target_id, **params)
    start, end = (samples[0], samples[-1]) if len(samples) > 1 else (None, samples[-1] if samples else None)
    secs = window_seconds(samples, sources.clocks)
    if not samples:
        missing.append(f"vsish rxSummary for port {port.port}: ring-full and out-of-buffer counters")
    elif start is None:
        missing.append(f"second vsish rxSummary sample for port {port.port}: one reading cannot tell "
                       "whether exhaustion is happening now")

    def label(name):
        return lambda rec: rec.counters.get(name)

    out["ring1_full"] = counter("1st ring full", samples, label(RX_SUMMARY_RING1), secs, RX_SUMMARY_RING1, notes)
    out["ring2_full"] = counter("2nd ring full", samples, label(RX_SUMMARY_RING2), secs, RX_SUMMARY_RING2, notes)
    out["out_of_buffers"] = counter("host drops: running out of buffers", samples, label(RX_SUMMARY_OOB), secs,
                                    RX_SUMMARY_OOB, notes)
    out["lro"] = counter("LRO packets received", samples, label(RX_SUMMARY_LRO), secs, RX_SUMMARY_LRO, notes)
    if start and end:
        out["series"]["host_counters"] = {
            "times": [sample_time(x) for x in samples],
            "ring1_full": [x.record.ring1_full for x in samples],
            "ring2_full": [x.record.ring2_full for x in samples],
            "out_of_buffers": [x.record.out_of_buffers for x in samples],
            "source": end.file,
        }
    queues = r.first("vsish_rxqueues", target_id, **params)
    if queues is not None:
        names = [e for e in queues.record.entries if e.isdigit()]
        out["rx_queues"], out["rx_queues_source"] = len(names), queues.file
        sizes = []
        for q in names:
            status = r.first("vsish_rxqueue_status", target_id, queue=q, **params)
            if status is not None and status.record.ring1_size is not None:
                sizes.append((status.record.ring1_size, status.record.ring2_size, status.file))
        if sizes:
            out["ring1_size"], out["ring2_size"], out["ring_size_source"] = sizes[0]
            if len({s[:2] for s in sizes}) > 1:
                out["notes"].append("rx queues report different ring sizes: " +
                                    ", ".join(f"q{i}: {a}/{b}" for i, (a, b, _) in enumerate(sizes)))
    if out["ring1_size"] is None:
        status = r.first("vsish_rxqueue_status", target_id, queue="0", **params)
        if status is not None and status.record.ring1_size is not None:
            out["ring1_size"], out["ring2_size"], out["ring_size_source"] = (
                status.record.ring1_size, status.record.ring2_size, status.file)
    if out["ring1_size"] is None and end is not None and end.record.ring1_size is not None:
        out["ring1_size"], out["ring2_size"], out["ring_size_source"] = (
            end.record.ring1_size, end.record.ring2_size, end.file)
    return out


def host_port_lists(sources: Sources) -> list[tuple[str, Reading]]:
    """(host target id, its port list) for each host: net-stats -l, else esxcli network vm port list."""
    out = []
    for target in sources.hosts():
        reading = sources.readings.first("net_stats_list", target.id) or esxcli_port_list(sources, target.id)
        if reading:
            out.append((target.id, reading))
    return out


def esxcli_port_list(sources: Sources, target_id: str) -> Reading | None:
    """A host port list from ``esxcli network vm port list -w WORLD`` captures when the host has no
    net-stats -l: each port with its MAC and vSwitch, the VM named from ``esxcli network vm list``
    (World ID -> Name), else ``world WORLD``. Standard vSwitches only give the portset name vsish
    uses; a distributed switch's port list names the switch, not its DvsPortset-N."""
    names = {}
    listing = sources.readings.first("esxcli_vm_list", target_id)
    if listing is not None:
        names = {str(vm.world_id): vm.name for vm in listing.record.vms}
    ports, first = [], None
    for cap in sources.bundle.find("esxcli_vm_ports", target_id):
        reading = sources.readings.read(cap)
        if reading is None:
            continue
        first = first or reading
        world = cap.params.get("world")
        vm = names.get(world or "", f"world {world}" if world else None)
        for index, port in enumerate(reading.record.ports):
            mac = norm_mac(port.mac)
            if vm and mac:
                client = f"{vm}.eth{index}" if index else vm
                ports.append(NetStatsPort(port.port_id, 5, 0, port.vswitch, mac, client, "vnic", vm, index))
    if not ports or first is None:
        return None
    return Reading(first.capture, NetStatsList(tuple(ports), ("host ports from esxcli network vm port list "
                                                              "(no net-stats -l)",)))


def _esxtop_port_row(esxtop: Reading, port: NetStatsPort) -> PortRx | None:
    """The esxtop ``Network Port`` row of the vNIC's port: port IDs are unique per host; the portset
    only breaks a tie."""
    same_id = [r for key, r in esxtop.record.ports.items() if key.rpartition(":")[2] == str(port.port)]
    return next((r for r in same_id if r.portset == port.switch), same_id[0] if len(same_id) == 1 else None)


def port_tx_symptoms(esxtop: Reading | None, port: NetStatsPort | None) -> tuple[DropSymptom, ...]:
    """esxtop %DRPTX of the vNIC's port: frames the guest sent that the port dropped."""
    if esxtop is None or port is None:
        return ()
    row = _esxtop_port_row(esxtop, port)
    if row is None or row.transmit_dropped_pct is None:
        return ()
    symptom = DropSymptom("esxtop %DRPTX (% Outbound Packets Dropped at the vSwitch port)",
                          tuple(row.transmit_dropped_pct), "%", esxtop.file, "% Outbound Packets Dropped",
                          direction="tx")
    return (symptom,) if symptom.present else ()


def port_drop_symptoms(esxtop: Reading | None, perf: Reading | None, port: NetStatsPort | None, nic: VnicEntry, vnic_count: int) -> tuple[DropSymptom, ...]:
    """The vNIC's vSwitch port drops over the window. esxtop ``Network Port`` rows join by port ID
    (with the portset when net-stats -l gave one); without the host port list, only a VM with one
    vNIC and one port row joins (the VM name is not unique per vNIC). vCenter series join by device
    key; the aggregate instance stands for a VM's only vNIC."""
    out = []
    if esxtop is not None:
        rows = esxtop.record.ports
        row = None
        if port is not None:
            row = _esxtop_port_row(esxtop, port)
        elif vnic_count == 1 and len(rows) == 1:
            row = next(iter(rows.values()))
        if row is not None and row.received_dropped_pct is not None:
            out.append(DropSymptom("esxtop %DRPRX (% Received Packets Dropped at the vSwitch port)",
                                   tuple(row.received_dropped_pct), "%", esxtop.file, "% Received Packets Dropped"))
    if perf is not None:
        instances = [str(nic.device_key)] if nic.device_key is not None else []
        instances += [""] if vnic_count == 1 else []
        for instance in instances:
            dropped = perf.record.values("net.droppedRx.summation", instance)
            if dropped is not None:
                received = perf.record.values("net.packetsRx.summation", instance) or ()
                out.append(DropSymptom("vCenter net.droppedRx over the window", tuple(dropped), "packets", perf.file,
                                       f"net.droppedRx.summation[{instance or 'aggregate'}]", tuple(received),
                                       perf.record.interval_s))
                break
    return tuple(s for s in out if s.present)  # a series of only gaps (or NaN) is not a measurement
