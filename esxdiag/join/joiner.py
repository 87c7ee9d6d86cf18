"""The one place where captures meet: VM <-> vNIC MAC <-> host port (net-stats -l) <-> guest
interface (MAC via ip link / ethtool -P, or Get-NetAdapter on Windows). Rules only see the
facts built here."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from esxdiag.bundle import Bundle, Target
from esxdiag.join.causes import port_packets_rx, port_tx, rx_reasons, uplinks
from esxdiag.join.cpu import cpu_from_esxtop, cpu_from_perf
from esxdiag.join.device import device_version, ring1_max, ring2_max
from esxdiag.join.facts import WINDOWS_DISCARDS, CounterWindow, Move, PoolFacts, VmFacts, VnicFacts
from esxdiag.join.moves import (event_moves, port_segments, sampled_moves, since_move, with_later_ports,
                                with_ports)
from esxdiag.join.guest import guest_side, guest_vnics, unclaimed_interfaces
from esxdiag.join.host import host_port_lists, host_side, port_drop_symptoms, port_tx_symptoms
from esxdiag.join.readings import Reading, Readings
from esxdiag.join.records import GuestSide, HostSide, VnicEntry
from esxdiag.join.sources import Sources, host_name, inventories
from esxdiag.specs import ESXI, LINUX, WINDOWS
from esxdiag.join.windowing import counter, window_seconds
from esxdiag.parsers.netstats import norm_mac


class Joiner:
    """Builds each VM's facts from the bundle's readings; what it reads is in ``sources``, which its
    helpers (esxdiag.join.host, guest, causes, moves) take instead of the joiner."""

    def __init__(self, bundle: Bundle, readings: Readings):
        self.bundle = bundle
        self.sources = Sources.of(bundle, readings)
        self.r = readings
        self.clocks = self.sources.clocks
        self.guests: dict[str, Target] = {}  # VM name -> guest target, for guests the manifest does not tie to a VM

    # --- which VMs, which targets -------------------------------------------------------
    def inventories(self) -> dict[str, Reading]:
        return inventories(self.sources)

    def host_port_lists(self) -> list[tuple[str, Reading]]:
        return host_port_lists(self.sources)

    def vm_names(self, inventories: dict[str, Reading]) -> list[str]:
        names = list(self.bundle.subject_vms)
        for name in list(inventories) + [t.vm for t in self.bundle.targets if t.vm]:
            if name and name not in names:
                names.append(name)
        if not names:
            for _, reading in self.host_port_lists():
                for port in reading.record.ports:
                    if port.kind == "vnic" and port.vm and port.vm not in names:
                        names.append(port.vm)
        self._claim_guests(names, inventories)
        return names

    def _claim_guests(self, names: list[str], inventories: dict[str, Reading]) -> None:
        """A guest target that names no VM joins the VM one of whose vNIC MACs it has (inventory or
        host port list); else the only VM when there is one VM and one such guest; else it is a VM of
        its own, named by its target id."""
        unclaimed = [t for t in self.bundle.targets if t.kind in (LINUX, WINDOWS) and not t.vm]
        macs: dict[str, str] = {}
        for name, reading in inventories.items():
            macs.update({mac: name for v in reading.record.vnics if (mac := norm_mac(v.mac))})
        for _, reading in self.host_port_lists():
            macs.update({mac: p.vm for p in reading.record.ports if p.kind == "vnic" and (mac := norm_mac(p.mac))})
        for target in unclaimed:
            owner = next((macs[n.mac] for n in guest_vnics(self.sources, target) if n.mac in macs), None)
            if owner is None and len(unclaimed) == 1 and len(names) == 1:
                owner = names[0]
            if owner is not None and owner in names and self.guest_target(owner) is None:
                self.guests[owner] = target
            elif target.id not in names:
                self.guests[target.id] = target
                names.append(target.id)

    def perf_for(self, vm: str) -> Reading | None:
        """The VM's own vCenter performance capture: device keys (4000...) repeat across VMs."""
        for cap in self.bundle.find("vsphere_perf"):
            reading = self.r.read(cap)
            if reading and reading.record.vm in (vm, None):
                return reading
        return None

    def esxtop_for(self, vm: str) -> Reading | None:
        """The first esxtop batch capture (of any host) that has the VM's group."""
        for target in (t for t in self.bundle.targets if t.kind == ESXI):
            for cap in self.bundle.find("esxtop_batch", target.id):
                reading = self.r.read(cap, vm=vm)
                if reading:
                    return reading
        return None

    def guest_target(self, vm: str) -> Target | None:
        if vm in self.guests:
            return self.guests[vm]
        return next((t for t in self.bundle.targets if t.vm == vm and t.kind in (LINUX, WINDOWS)), None)

    # --- per VM -------------------------------------------------------------------------
    def vm_facts(self, name: str, inventory: Reading | None) -> VmFacts:
        noticed = len(self.clocks.noticed)
        facts = self._vm_facts(name, inventory)
        steps = {(s.target, s.what): s for s in self.clocks.noticed[noticed:]}  # one per capture, however often read
        stepped = {s.source for s in steps.values()}
        vnics = tuple(replace(n, series=_untimed(n.series, stepped)) for n in facts.vnics) if stepped else facts.vnics
        return replace(facts, clock_steps=tuple(steps.values()), vnics=vnics)

    def _vm_facts(self, name: str, inventory: Reading | None) -> VmFacts:
        inv = inventory.record if inventory else None
        missing: list[str] = []
        notes: list[str] = []
        if inv is None:
            missing.append("VM inventory from vCenter (vsphere_vm): vCPU count, CPU limit and vNIC types "
                           "come from host and guest captures instead")
        guest = self.guest_target(name)
        guest_os = guest.kind if guest else _family(inv)
        vcpus, vcpus_source = (inv.num_cpu, "vcenter") if inv and inv.num_cpu else (None, None)
        if vcpus is None and guest is not None:
            nproc = self.r.first("nproc", guest.id) or self.r.first("win_cpu", guest.id)
            if nproc and nproc.record.integer:
                vcpus, vcpus_source = nproc.record.integer, "guest"
        cpu = None
        esxtop = self.esxtop_for(name)
        if esxtop is not None:
            cpu, esxtop_vcpus = cpu_from_esxtop(esxtop, name, vcpus)
            if vcpus is None and esxtop_vcpus:
                vcpus, vcpus_source = esxtop_vcpus, "esxtop"
        esxtop_missing = esxtop is None
        perf = self.perf_for(name)
        perf_cpu = cpu_from_perf(perf, vcpus) if perf else None
        cpu_whole = None
        if cpu is None or cpu.bound != "exact":  # vCenter's per-vCPU instances beat an esxtop bound
            if perf_cpu is not None and (cpu is None or perf_cpu.bound == "exact"):
                cpu, esxtop_missing = perf_cpu, cpu is None and esxtop_missing
                if perf is not None and perf.record.note:
                    notes.append(f"vCenter performance: {perf.record.note}")
        elif perf_cpu is not None and perf_cpu.bound == "exact":  # kept for when esxtop covers part of the window
            cpu_whole = replace(perf_cpu, window_s=self.sources.window)
        if cpu is None:
            missing.append("CPU figures in the window (esxtop batch or vCenter performance): "
                           "CPU contention and limits cannot be ruled out")
        else:
            if esxtop_missing:
                notes.append(f"CPU figures from vCenter ({cpu.source}); esxtop (2-5 s samples) was not available")
            if cpu.bound != "exact":
                notes.append(f"vCPU count unknown: per-vCPU CPU figures are {cpu.bound} bounds ({cpu.normalisation})")
            notes += cpu.warnings
        retrans = segs = None
        if guest is not None and guest.kind == LINUX:
            samples = self.r.samples("netstat_s", guest.id) or self.r.samples("nstat", guest.id)
            secs = window_seconds(samples, self.clocks)
            retrans = counter("TCP segments retransmitted", samples, lambda r: r.retransmitted_segments, secs,
                              "retransmitted segments", notes)
            segs = counter("TCP segments sent", samples, lambda r: r.segments_sent, secs, "segments sent", notes)
        if cpu is not None:
            cpu = replace(cpu, window_s=self.sources.window)
        esxi = (inv.host_version if inv else None) or self.esxi_version()
        hardware = inv.hardware_version if inv else None
        events = event_moves(self.sources, name)
        vnics = tuple(self.vnic_facts(name, inv, guest, (hardware, esxi), events))
        # vCenter says when and between which hosts, the bundle which ports (the first vNIC that moved)
        moves = next((n.moves for n in vnics if len(n.segments) > 1), None) or next(
            (n.moves for n in vnics if n.moves), events)
        last_host = next((n.segments[-1].host for n in vnics if n.segments), None)
        limit = inv.cpu_allocation.limit_mhz if inv else None
        return VmFacts(
            name=name, host=inv.host if inv else last_host, power_state=inv.power_state if inv else None,
            vcpus=vcpus, vcpus_source=vcpus_source, cpu_limit_mhz=limit,
            cpu_reservation_mhz=inv.cpu_allocation.reservation_mhz if inv else None,
            guest_os=guest_os, guest_os_name=(inv.guest.full_name if inv and inv.guest else None),
            inventory_file=inventory.file if inventory else None, cpu=cpu, retransmits=retrans,
            segments_sent=segs, vnics=vnics, missing=tuple(missing), notes=tuple(notes),
            latency_sensitivity=inv.latency_sensitivity if inv else None,
            hardware_version=hardware, esxi_version=esxi, moves=moves, cpu_whole=cpu_whole,
            resource_pools=_pools(inv),
        )

    def esxi_version(self) -> str | None:
        """The ESXi version `vmware -vl` printed on a host of the bundle ("VMware ESXi 8.0.2 build-...")."""
        for target in (t for t in self.bundle.targets if t.kind == ESXI):
            reading = self.r.first("esxi_version", target.id)
            if reading and reading.record.lines:
                return reading.record.lines[0].strip()
        return None

    def vnic_list(self, name: str, inv: Any, guest: Target | None) -> list[VnicEntry]:
        """The VM's vNICs from the inventory, else the host's port list, else the guest's interfaces."""
        if inv is not None:
            return [VnicEntry(norm_mac(v.mac), v.label, v.type, v.device_key, v.network) for v in inv.vnics]
        out: list[VnicEntry] = []
        seen: set[str | None] = set()
        for _, reading in self.host_port_lists():
            for port in reading.record.ports:
                # one vNIC however many hosts' port lists name its MAC (it moved in the window)
                if port.kind == "vnic" and port.vm == name and norm_mac(port.mac) not in seen:
                    seen.add(norm_mac(port.mac))
                    vtype = "vmxnet3" if port.subtype == 9 else None
                    out.append(VnicEntry(norm_mac(port.mac), f"vNIC {port.vnic_index}", vtype))
        return out or guest_vnics(self.sources, guest)

    def vnic_facts(self, vm: str, inv: Any, guest: Target | None, versions: tuple[str | None, str | None],
                   events: tuple[Move, ...] = ()) -> list[VnicFacts]:
        """Every vNIC the inventory (or host, or guest) lists, then every guest NIC none of them claims."""
        nics = self.vnic_list(vm, inv, guest)
        built = [self._one_vnic(vm, nic, guest, len(nics), versions, events) for nic in nics]
        used = {n.guest_interface for n in built} - {None}
        extras = [x for x in unclaimed_interfaces(self.sources, guest, {n.mac for n in built} - {None})
                  if x.guest_interface not in used]
        untied = [i for i, n in enumerate(built) if n.attachment == "passthrough" and n.guest_interface is None]
        if len(untied) == 1 and len(extras) == 1:  # a DirectPath device has no MAC in vCenter to tie it by
            extra = extras.pop()
            nic = nics[untied[0]]
            tied = replace(nic, mac=extra.mac, guest_interface=extra.guest_interface, tied_by=tie_words(nic, extra))
            built[untied[0]] = self._one_vnic(vm, tied, guest, len(nics), versions, events)
        built += [self._one_vnic(vm, nic, guest, len(nics) + len(extras), versions, events) for nic in extras]
        return built

    def _one_vnic(self, vm: str, nic: VnicEntry, guest: Target | None, vnic_count: int,
                  versions: tuple[str | None, str | None] = (None, None), events: tuple[Move, ...] = ()) -> VnicFacts:
        mac = nic.mac
        missing: list[str] = []
        attachment = attachment_of(nic)
        if attachment is not None:
            return self._bypass_nic(vm, nic, attachment, guest, missing)
        segments = port_segments(self.sources, mac)
        target_id, port = self._port_of(segments[-1]) if segments else (None, None)  # at the window's end
        moves = with_later_ports(with_ports(events, segments), segments) if events else sampled_moves(segments)
        since = since_move(segments[-1], segments[-2] if len(segments) > 1 else None, moves) if segments else None
        move_notes = []
        if len(segments) > 1:
            chain = " and then ".join(f"on port {s.port} of {s.host}" for s in segments)
            move_notes.append(f"the vNIC was {chain} within the window (a vMotion): host counters of the ports are "
                              "separate series and are never subtracted from each other; the figures are the last "
                              f"port's, counted {since}")
        vmxnet3 = nic.type in (None, "vmxnet3")
        host = _host_since(host_side(self.sources, target_id, port, missing, vmxnet3), since)
        if port is None and self.host_port_lists():
            missing.append(f"no host port with MAC {mac} in net-stats -l (VM powered off, or on another host)")
        elif not self.host_port_lists():
            failed = next((c for c in self.bundle.find("net_stats_list") if not c.ok), None)
            missing.append("host port list (net-stats -l): " + (
                f"could not be collected ({failed.error_kind}: {failed.error})" if failed
                else "host captures were not collected"))
        guest_facts = guest_side(self.sources, guest, mac, missing, vmxnet3, nic.guest_interface, vnic_count == 1)
        esxtop = self.esxtop_for(vm)
        symptoms = port_drop_symptoms(esxtop, self.perf_for(vm), port, nic, vnic_count)
        notes = (move_notes + list(host["notes"]) + list(guest_facts["notes"]) +
                 self._switch_mtu_note(target_id, port, guest_facts))
        ring1, ring2, size_source = ring_sizes(host, notes)
        if ring1 is None and guest_facts["ring_size_source"] is not None:
            ring1, ring2, size_source = ring_sizes(guest_facts, notes)
            notes += [guest_facts["ring_note"]] if guest_facts["ring_note"] else []
        version, version_why = device_version(*versions, guest_facts["mtu"], (ring1, ring2)) if vmxnet3 else (None, None)
        host_label = host_name(self.sources, target_id)
        links, links_unknown = uplinks(self.sources, target_id, port, mac, host_label, notes)
        rx_queues, queues_source = host["rx_queues"], host["rx_queues_source"]
        if rx_queues is None:
            rx_queues, queues_source = guest_facts["rx_queues"], guest_facts["rx_queues_source"]
        return VnicFacts(
            vm=vm, mac=mac, label=nic.label, type=nic.type or guest_facts["type"],
            portset=port.switch if port else None, port=port.port if port else None,
            guest_os=guest.kind if guest else None, guest_interface=guest_facts["interface"],
            ring1_full=host["ring1_full"], ring2_full=host["ring2_full"],
            host_out_of_buffers=host["out_of_buffers"], dropped_rx=host["dropped_rx"],
            guest_oob=guest_facts["oob"], guest_discards=guest_facts["discards"], lro_packets=host["lro"],
            ring1_size=ring1, ring2_size=ring2, ring_size_source=size_source,
            ring1_max=ring1_max(version, guest_facts["mtu"], guest_facts["ring1_max"]),
            ring2_max=ring2_max(guest_facts["driver"], guest_facts["driver_version_tuple"], guest_facts["ring2_max"]),
            rx_queues=rx_queues, rx_queues_source=queues_source, mtu=guest_facts["mtu"],
            rss_enabled=guest_facts["rss_enabled"], windows_adapter=guest_facts["windows_adapter"],
            small_rx_buffers=guest_facts["small_rx_buffers"], ring_settings=guest_facts["ring_settings"],
            large_rx_buffers=guest_facts["large_rx_buffers"], tx_ring_size=guest_facts["tx_ring_size"],
            ethtool_current_rx=guest_facts["ethtool_current_rx"], driver=guest_facts["driver"],
            driver_version=guest_facts["driver_version"], link_speed=guest_facts["link_speed"],
            link_speed_source=guest_facts["link_speed_source"], drop_symptoms=symptoms,
            network=nic.network,
            series={**host["series"], **guest_facts["series"]}, missing=tuple(missing),
            notes=tuple(notes), uplinks=links, uplinks_unknown=links_unknown,
            rx_reasons=_windows_since(rx_reasons(self.sources, target_id, port, notes) if vmxnet3 else {}, since),
            packets_rx=_window_since(port_packets_rx(self.sources, target_id, port, notes), since),
            tx={**_windows_since(port_tx(self.sources, target_id, port, notes), since), **guest_facts["tx"]},
            tx_symptoms=port_tx_symptoms(esxtop, port), segments=tuple(segments), moves=moves,
            guest_queue_oob=guest_facts["queue_oob"], device_version=version, device_version_why=version_why,
            driver_counters=guest_facts["driver_counters"],
        )

    def _bypass_nic(self, vm: str, nic: VnicEntry, attachment: str, guest: Target | None,
                    missing: list[str]) -> VnicFacts:
        """An SR-IOV VF, a DirectPath NIC or a guest-only NIC (by its driver, a VF or DirectPath NIC vCenter does
        not list with that MAC): its traffic bypasses the vSwitch, so no port counters and no vmxnet3 rings. What
        the guest's driver counts is the evidence."""
        mac, iface = nic.mac, nic.guest_interface
        notes = [nic.tied_by] if nic.tied_by else []
        if attachment == "passthrough" and mac is None and iface is None:
            missing.append("the guest interface of this DirectPath I/O device: vCenter gives it no MAC, and no single "
                           "guest NIC is left unclaimed to tie it to (ethtool -P and ethtool -i of each guest NIC)")
            guest_facts = guest_side(self.sources, None, None, [], False)  # nothing of the guest is known to be its
        else:
            guest_facts = guest_side(self.sources, guest, mac, missing, False, iface, False, bypass=True)
        return VnicFacts(
            vm=vm, mac=mac, label=nic.label, type=nic.type, portset=None, port=None,
            guest_os=guest.kind if guest else None, guest_interface=guest_facts["interface"],
            ring1_full=None, ring2_full=None, host_out_of_buffers=None, dropped_rx=None, guest_oob=None,
            guest_discards=guest_facts["discards"], lro_packets=None, ring1_size=None, ring2_size=None,
            ring_size_source=None, ring1_max=0, ring2_max=0, rx_queues=guest_facts["rx_queues"],
            rx_queues_source=guest_facts["rx_queues_source"], mtu=guest_facts["mtu"],
            rss_enabled=guest_facts["rss_enabled"],
            windows_adapter=guest_facts["windows_adapter"], small_rx_buffers=None, ring_settings=None,
            ethtool_current_rx=guest_facts["ethtool_current_rx"], driver=guest_facts["driver"],
            driver_version=guest_facts["driver_version"], link_speed=guest_facts["link_speed"],
            link_speed_source=guest_facts["link_speed_source"], network=nic.network,
            missing=tuple(missing), notes=tuple(notes + list(guest_facts["notes"])), attachment=attachment,
            driver_counters=guest_facts["driver_counters"] or windows_counters(guest_facts["discards"]),
            ring_rx_max=guest_facts["ring_rx_max"],
            tied_by=nic.tied_by,
        )

    def _port_of(self, segment):
        """The port list entry of a segment: (target id, port) as the host-side readers take them."""
        for target_id, reading in self.host_port_lists():
            if target_id == segment.target:
                port = next((p for p in reading.record.ports if p.port == segment.port), None)
                if port is not None:
                    return target_id, port
        return None, None

    def _switch_mtu_note(self, target_id: str | None, port, guest_facts: GuestSide) -> list[str]:
        """The guest's MTU sets ring 1's maximum; when no guest capture says it, the switch's MTU
        (esxcfg-vswitch -l) at least tells whether jumbo frames can reach the vNIC."""
        if guest_facts["mtu"] is not None or port is None or target_id is None:
            return []
        reading = self.r.first("esxcfg_vswitch", target_id)
        switch = reading and (reading.record.by_name(port.switch) or reading.record.by_client(port.client))
        if not switch or switch.mtu is None or switch.mtu <= 3050:
            return []
        kind = "distributed switch" if switch.distributed else "vSwitch"
        return [f"guest MTU unknown; the {kind} {switch.name} carries MTU {switch.mtu} (esxcfg-vswitch -l): if the "
                "guest uses jumbo frames, ring 1's maximum is 4032 on pre-v7 vmxnet3, not 4096"]


def _window_since(window: CounterWindow | None, since: str | None) -> CounterWindow | None:
    """Host counters of a port a move connected, marked with what they count from (not the vNIC's start)."""
    return replace(window, since=since) if window is not None and since is not None else window


def _windows_since(windows: dict[str, CounterWindow], since: str | None) -> dict[str, CounterWindow]:
    return {k: replace(v, since=since) for k, v in windows.items()} if since is not None else windows


def _host_since(host: HostSide, since: str | None) -> HostSide:
    if since is None:
        return host
    return {**host, "ring1_full": _window_since(host["ring1_full"], since),
            "ring2_full": _window_since(host["ring2_full"], since),
            "out_of_buffers": _window_since(host["out_of_buffers"], since),
            "dropped_rx": _window_since(host["dropped_rx"], since), "lro": _window_since(host["lro"], since)}


def windows_counters(discards: CounterWindow | None) -> dict[str, CounterWindow]:
    """A Windows guest's adapter counts its receive discards (Get-NetAdapterStatistics), whatever the NIC."""
    return {WINDOWS_DISCARDS: discards} if discards is not None else {}


def attachment_of(nic: VnicEntry) -> str | None:
    """How the NIC reaches the wire when it is not through a vSwitch port: "sriov", "passthrough", "guest-only"."""
    if nic.attachment:
        return nic.attachment
    return nic.type if nic.type in ("sriov", "passthrough") else None


def tie_words(device: VnicEntry, extra: VnicEntry) -> str:
    return (f"{device.label or 'the DirectPath device'} is tied to guest {extra.guest_interface} "
            f"({(extra.label or '').split('(')[-1].rstrip(')')}) because it is the VM's only DirectPath I/O device and "
            f"{extra.guest_interface} the only guest NIC no vNIC MAC claims (vCenter gives passthrough devices no "
            "MAC)")


def ring_sizes(side: HostSide | GuestSide, notes: list[str]) -> tuple[int | None, int | None, str | None]:
    """Ring sizes from one view (host or guest). A vmxnet3 ring holds 32 to 4,096 entries: any other
    figure is damaged or a driver that does not report it, and is unknown rather than compared."""
    sizes: list[int | None] = []
    for ring, size in ((1, side["ring1_size"]), (2, side["ring2_size"])):
        if size is not None and not 32 <= size <= 4096:
            notes.append(f"ring {ring} size {size:,} from {side['ring_size_source']} is not a vmxnet3 ring size "
                         "(32 to 4,096 entries): treated as unknown")
            size = None
        sizes.append(size)
    return sizes[0], sizes[1], side["ring_size_source"] if sizes[0] is not None or sizes[1] is not None else None


def _pools(inv: Any) -> tuple[PoolFacts, ...] | None:
    """The VM's resource pool chain as vCenter read it (None: not read, as in bundles from before it was)."""
    if inv is None or inv.resource_pools is None:
        return None
    return tuple(PoolFacts(p.name, p.moid, p.path, p.kind, p.cpu_limit_mhz, p.root) for p in inv.resource_pools)


def _untimed(series: dict[str, Any], stepped: set[str | None]) -> dict[str, Any]:
    """Chart series read by a stepped clock keep their values in sample order, without its stamps (a chart
    would draw them an hour apart, or backwards)."""
    return {key: ({**one, "times": [None] * len(one["times"])} if one.get("source") in stepped else one)
            for key, one in series.items()}


def _family(inv: Any) -> str | None:
    if inv is None or inv.guest is None or not inv.guest.family:
        return None
    family = inv.guest.family.lower()
    return LINUX if "linux" in family else WINDOWS if "windows" in family else None


def build_facts(bundle: Bundle, readings: Readings) -> list[VmFacts]:
    joiner = Joiner(bundle, readings)
    for target in (t for t in bundle.targets if t.kind == ESXI):
        # parsed so a damaged net-dvs -l shows as unparsed in coverage; its DVPort counters feed no
        # verdict: no source says which way "In" runs for a VM's port (docs/bundle-format.md)
        readings.first("net_dvs", target.id)
    inventories = joiner.inventories()
    return [joiner.vm_facts(name, inventories.get(name)) for name in joiner.vm_names(inventories)]
