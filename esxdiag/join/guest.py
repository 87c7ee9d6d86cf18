"""Guest-side facts of one vNIC: the interface with the vNIC's MAC and its counters/settings."""

from __future__ import annotations

import re
from dataclasses import replace

from esxdiag.join.causes import guest_tx_and_queues
from esxdiag.join.facts import CounterWindow, RingSetting
from esxdiag.join.records import GuestSide, VnicEntry
from esxdiag.join.sources import Sources, inventories
from esxdiag.join.readings import Reading
from esxdiag.bundle import Target
from esxdiag.join.windowing import counter, queue_sum, sample_time, window_seconds
from esxdiag.parsers.netstats import norm_mac
from esxdiag.specs import LINUX, WINDOWS
from esxdiag.vocabulary import NOT_VSPHERE_NICS
from esxdiag.parsers.numbers import is_count

_VMXNET3_DRIVERS = {"vmxnet3": "vmxnet3", "e1000": "e1000", "e1000e": "e1000e"}


def guest_side(sources: Sources, guest: Target | None, mac: str | None, missing: list[str], vmxnet3: bool = True,
               iface_hint: str | None = None, only_vnic: bool = False, bypass: bool = False) -> GuestSide:
    """``bypass``: a NIC outside the vSwitch (SR-IOV VF, DirectPath, guest-only), whose guest counters are
    the only evidence: what is missing of them is said as for a vmxnet3 vNIC."""
    out: GuestSide = {
        "interface": None, "oob": None, "discards": None, "ring1_size": None, "ring2_size": None,
        "ring_size_source": None, "ring1_max": None, "ring2_max": None, "rx_queues": None,
        "rx_queues_source": None, "mtu": None, "rss_enabled": None, "windows_adapter": None,
        "small_rx_buffers": None, "large_rx_buffers": None, "ring_settings": None, "tx_ring_size": None,
        "ethtool_current_rx": None, "driver": None,
        "driver_version": None, "type": None, "series": {}, "notes": [],
        "ring_note": None,  # how ethtool -g was read; only shown when the host's vsish sizes are missing
        "link_speed": None, "link_speed_source": None, "driver_version_tuple": None,
        "tx": {}, "queue_oob": {},  # guest tx drops; pkts rx OOB per rx queue (esxdiag.join.causes)
        "driver_counters": {}, "ring_rx_max": None,  # a non-vmxnet3 driver's own counters; its ethtool -g max
    }
    if guest is None:
        missing.append("guest captures (no guest target in the bundle): guest-side drop counters, "
                       "ring settings and persistence")
        return out
    if guest.kind == LINUX:
        iface_hint = iface_hint or _linux_interface(sources, guest.id, mac, out, only_vnic)
        _linux(sources, guest.id, mac, out, missing if vmxnet3 or bypass else [], iface_hint)
    elif guest.kind == WINDOWS:
        _windows(sources, guest.id, mac, out, missing, iface_hint)
    return out


def _linux_interface(sources: Sources, target: str, mac: str | None, out: GuestSide, only_vnic: bool) -> str | None:
    """The guest interface of a vNIC whose MAC no guest capture shows: the interface holding one of the
    vNIC's IP addresses (the vCenter inventory's guest NICs, esxcli network vm port list) in the guest's
    ``ip address`` capture; else, for a VM with one vNIC, the one interface the guest's ethtool captures
    are of. Each says how it was tied."""
    links = sources.readings.first("ip_link", target)
    if mac is None or links is not None and any(norm_mac(link.mac) == mac for link in links.record.links):
        return None
    ips = _vnic_ips(sources, mac)
    for link in links.record.links if links is not None else ():
        if ips & set(link.addresses):
            out["notes"].append(f"guest interface {link.name}: it holds {sorted(ips & set(link.addresses))[0]}, an IP "
                                f"address of the vNIC {mac} (no guest capture shows the MAC)")
            return link.name
    named = {cap.params.get("iface") for spec in ("ethtool_stats", "ethtool_rings", "ethtool_driver")
             for cap in sources.bundle.find(spec, target)} - {None}
    if only_vnic and len(named) == 1:
        iface = named.pop()
        out["notes"].append(f"guest interface {iface}: the only interface the guest's ethtool captures are of, and the "
                            f"VM has one vNIC (no guest capture shows the MAC {mac}: capture ip -o link or ethtool -P "
                            "to be sure)")
        return iface
    return None


def _vnic_ips(sources: Sources, mac: str) -> set[str]:
    """The vNIC's IP addresses as the host and vCenter see them (0.0.0.0 is printed for unknown)."""
    ips = {ip for reading in inventories(sources).values() for nic in reading.record.guest_nics
           if norm_mac(nic.mac) == mac for ip in nic.ip_addresses}
    for cap in sources.bundle.find("esxcli_vm_ports"):
        reading = sources.readings.read(cap)
        ips |= {p.ip for p in (reading.record.ports if reading else ()) if p.ip and norm_mac(p.mac) == mac}
    return ips - {"0.0.0.0", ""}


def _linux(sources: Sources, target: str, mac: str | None, out: GuestSide, missing: list[str],
           iface_hint: str | None) -> None:
    r = sources.readings
    iface = None
    links = r.first("ip_link", target)
    if links is not None:
        for link in links.record.links:
            if (mac and norm_mac(link.mac) == mac) or link.name == iface_hint:
                iface, out["mtu"] = link.name, link.mtu
    if iface is None:
        for cap in sources.bundle.find("ethtool_permaddr", target):
            reading = r.read(cap)
            if reading and norm_mac(reading.record.mac) == mac:
                iface = cap.params.get("iface")
    iface = iface or iface_hint
    if iface is None:
        missing.append(f"guest interface with MAC {mac} (ip -o link / ethtool -P not collected or no match)")
        return
    out["interface"] = iface
    driver = r.first("ethtool_driver", target, iface=iface)
    if driver is not None:
        out["driver"], out["driver_version"] = driver.record.driver, driver.record.version
        out["driver_version_tuple"] = driver.record.version_tuple
        out["type"] = _VMXNET3_DRIVERS.get(driver.record.driver)
    samples = r.samples("ethtool_stats", target, iface=iface)
    if samples and driver is not None and driver.record.driver != "vmxnet3":
        out["driver_counters"] = driver_counters(samples, window_seconds(samples, sources.window), iface, out["notes"])
    if samples:
        start, end = (samples[0] if len(samples) > 1 else None), samples[-1]
        out["oob"] = queue_sum("guest pkts rx OOB (sum of rx queues)", samples,
                               lambda rec: {q.queue: q.pkts_rx_oob for q in rec.rx_queues},
                               window_seconds(samples, sources.clocks), "pkts rx OOB", out["notes"])
        if end.record.rx_queues:
            out["rx_queues"], out["rx_queues_source"] = len(end.record.rx_queues), end.file
        if start is not None:
            out["series"]["guest_oob"] = {"times": [sample_time(x) for x in samples],
                                          "values": [x.record.rx_oob_total for x in samples],
                                          "source": end.file}
            out["series"]["guest_oob_queues"] = {  # per rx queue, for esxdiag.api.ring_samples
                "times": [sample_time(x) for x in samples],
                "queues": [{q.queue: q.pkts_rx_oob for q in x.record.rx_queues} for x in samples],
                "source": end.file}
        for warning in end.record.warnings:
            out["notes"].append(f"ethtool -S {iface}: {warning}")
        out["tx"], out["queue_oob"] = guest_tx_and_queues(samples, window_seconds(samples, sources.clocks),
                                                          out["notes"])
    elif driver is not None and driver.record.driver != "vmxnet3":
        missing.append(f"ethtool -S {iface} at the start and the end of the window: the {driver.record.driver} "
                       "driver's own receive drop counters")
    else:
        missing.append(f"ethtool -S {iface}: guest per-queue pkts rx OOB")
    rings = r.first("ethtool_rings", target, iface=iface)
    if rings is not None:
        _linux_rings(rings, iface, driver.record.version_tuple if driver else None, out)
    persistence = r.first("ring_persistence", target)
    if persistence is not None:
        out["ring_settings"] = ring_settings(persistence.record.hits, iface)


def ring_settings(hits, iface: str) -> tuple[RingSetting, ...]:
    """The search's lines that set a ring size for this interface (or name none: a keyfile, a rule by MAC),
    commented-out lines left out."""
    return tuple(RingSetting(h.file, h.line, h.mechanism, h.iface, h.rx, h.rx_jumbo, h.tx)
                 for h in hits if h.sets_ring and h.iface in (None, iface))


def driver_counters(samples: list[Reading], secs: float | None, iface: str, notes: list[str]) -> dict[str, CounterWindow]:
    """Every counter a non-vmxnet3 driver prints in ethtool -S, by its own name, over the window."""
    names = list(dict.fromkeys(name for s in samples for name in s.record.device_counters))
    windows = {name: counter(f"{name} (ethtool -S {iface})", samples,
                             lambda rec, n=name: rec.device_counters.get(n), secs, name, notes) for name in names}
    return {name: window for name, window in windows.items() if window is not None}


def _linux_rings(rings: Reading, iface: str, version: tuple[int, ...] | None, out: GuestSide) -> None:
    """Ring sizes from ethtool -g. Early multi-queue vmxnet3 drivers (before per-queue ring sizes,
    driver < 1.2) print RX as size x rx queues (the seed: RX 512 for 2 x 256); vsish is authoritative."""
    cur, mx = rings.record.current, rings.record.max
    out["ethtool_current_rx"] = cur.rx
    out["tx_ring_size"] = cur.tx if cur.tx and 32 <= cur.tx <= 4096 else None
    out["ring1_max"], out["ring2_max"] = mx.rx or None, mx.rx_jumbo or None
    out["ring_rx_max"] = mx.rx or None
    if cur.rx is None:
        return
    ring2 = cur.rx_jumbo if mx.rx_jumbo else None  # max 0: this driver does not report ring 2
    out["ring1_size"], out["ring2_size"], out["ring_size_source"] = cur.rx, ring2, rings.file
    queues = out["rx_queues"]
    if not queues or queues < 2:
        return
    summed = (mx.rx and cur.rx > mx.rx) or (version is not None and version < (1, 2))
    if summed:
        out["ring1_size"] = cur.rx // queues
        out["notes"].append(f"ethtool -g {iface} shows RX {cur.rx:,}: this vmxnet3 driver reports the ring size x "
                            f"{queues} rx queues, so {cur.rx // queues:,} per queue (vsish rxqueues status is "
                            "authoritative)")
    elif version is None:
        out["ring1_size"] = None
        out["ring_note"] = (f"ethtool -g {iface} shows RX {cur.rx:,} with {queues} rx queues and an unknown driver "
                            f"version: that is {cur.rx:,} or {cur.rx // queues:,} per queue (early drivers print size x "
                            "queues); collect vsish rxqueues status from the host to know")


def _windows(sources: Sources, target: str, mac: str | None, out: GuestSide, missing: list[str],
             adapter_hint: str | None) -> None:
    r = sources.readings
    adapters = r.first("win_netadapter", target)
    name = None
    if adapters is not None:
        listed = adapters.record.adapters
        for adapter in listed:
            if (mac and norm_mac(adapter.mac) == mac) or (not mac and adapter.name == adapter_hint) or (
                    len(listed) == 1 and adapter.mac is None):  # a capture without MacAddress, one adapter
                name, out["mtu"] = adapter.name, adapter.mtu
                out["link_speed"], out["link_speed_source"] = adapter.link_speed, adapters.file
                if adapter.mac is None and mac:
                    out["notes"].append(f"Get-NetAdapter has no MacAddress: {adapter.name}, its only adapter, "
                                        f"is taken as the vNIC {mac}")
    if name is None:
        missing.append(f"Windows adapter with MAC {mac} (Get-NetAdapter not collected or no match)")
        return
    out["interface"] = out["windows_adapter"] = name
    props = r.first("win_advprops", target)
    if props is not None:
        mine = props.record.adapters.get(name)
        if mine is None and list(props.record.adapters) == [""]:  # DisplayName/DisplayValue only: no Name
            mine = props.record.adapters[""]
            out["notes"].append(f"Get-NetAdapterAdvancedProperty names no adapter: its properties are taken as {name}'s")
        mine = mine or {}

        def value(keyword):
            """RegistryValue (stable across languages); DisplayValue when the capture lost it
            (ConvertTo-Csv prints the array as "System.String[]")."""
            prop = mine.get(keyword)
            if prop is None:
                return None
            raw = prop.registry_value
            raw = raw[0] if isinstance(raw, tuple) and raw else raw
            for candidate in (raw, prop.display_value):
                if isinstance(candidate, str) and is_count(candidate.strip()):
                    return int(candidate)
            return {"enabled": 1, "disabled": 0}.get(str(prop.display_value).strip().lower())

        ring1, ring2 = value("MaxRxRing1Length"), value("MaxRxRing2Length")
        out["ring1_size"] = ring1 if ring1 is not None else (512 if "MaxRxRing1Length" not in mine else None)
        out["ring2_size"] = ring2 if ring2 is not None else (32 if "MaxRxRing2Length" not in mine else None)
        out["ring_size_source"] = props.file
        out["small_rx_buffers"] = value("NumRxBuffersSmall")
        out["large_rx_buffers"] = value("NumRxBuffersLarge")
        out["tx_ring_size"] = value("MaxTxRingLength")
        rss = value("*RSS")
        if rss is not None:
            out["rss_enabled"] = bool(rss)
        if "MaxRxRing1Length" not in mine:
            out["notes"].append("Rx Ring #1 Size not set on the adapter: the driver default (512) applies")
    rss = r.first("win_rss", target)
    if rss is not None and name in rss.record.adapters:
        info = rss.record.adapters[name]
        if info.enabled is not None:
            out["rss_enabled"] = info.enabled
        if info.enabled is False:  # NumberOfReceiveQueues is the configured count; with RSS off one is used
            out["rx_queues"], out["rx_queues_source"] = 1, rss.file
        elif info.number_of_receive_queues:
            out["rx_queues"], out["rx_queues_source"] = info.number_of_receive_queues, rss.file
    samples = [x for x in r.samples("win_stats", target) if name in x.record.adapters]
    if samples:
        def discards(rec):
            stats = rec.adapters.get(name)
            return stats.received_discarded_packets if stats else None

        out["discards"] = counter("guest ReceivedDiscardedPackets", samples, discards,
                                  window_seconds(samples, sources.clocks), "ReceivedDiscardedPackets", out["notes"])


_VMWARE_OUIS = ("00:50:56", "00:0c:29", "00:05:69", "00:1c:14")
_WINDOWS_TYPES = (("vmxnet3", "vmxnet3"), ("82574", "e1000e"), ("pro/1000 mt", "e1000"))


def guest_vnics(sources: Sources, guest: Target | None) -> list[VnicEntry]:
    """When nothing else lists the VM's vNICs (no inventory, no host port list): the guest's own
    interfaces — the ones the capture looked at with ethtool (else VMware-MAC links), keyed by
    the permanent MAC; interfaces whose driver is not a VMware vNIC's are left out."""
    if guest is None:
        return []
    r = sources.readings
    if guest.kind == WINDOWS:
        adapters = r.first("win_netadapter", guest.id)
        out: list[VnicEntry] = []
        for adapter in adapters.record.adapters if adapters else ():
            description = (adapter.description or "").lower()
            vtype = next((t for key, t in _WINDOWS_TYPES if key in description), None)
            if vtype is None and _WINDOWS_NIC_WORDS.search(description):  # a VF carries a VMware MAC too
                out.append(replace(guest_only_nic(adapter.name, norm_mac(adapter.mac), adapter.description),
                                   label=f"guest adapter {adapter.name} ({adapter.description})"))
            elif vtype or (adapter.mac or "").startswith(_VMWARE_OUIS):
                out.append(VnicEntry(norm_mac(adapter.mac), f"guest adapter {adapter.name}", vtype,
                                     guest_interface=adapter.name))
        return out
    links = r.first("ip_link", guest.id)
    by_name = {link.name: link for link in links.record.links} if links else {}
    looked_at = [c.params["iface"] for spec in ("ethtool_stats", "ethtool_driver", "ethtool_rings", "ethtool_permaddr")
                 for c in sources.bundle.find(spec, guest.id) if c.params.get("iface")]
    names = list(dict.fromkeys(looked_at)) or [
        n for n, link in by_name.items() if norm_mac(link.permaddr or link.mac) and
        (link.permaddr or link.mac).lower().startswith(_VMWARE_OUIS)]
    out = []
    for iface in names:
        driver = r.first("ethtool_driver", guest.id, iface=iface)
        name = driver.record.driver if driver else None
        if name in NOT_VSPHERE_NICS:
            continue
        perm = r.first("ethtool_permaddr", guest.id, iface=iface)
        link = by_name.get(iface)
        mac = norm_mac(perm.record.mac if perm else (link.permaddr or link.mac) if link else None)
        if driver is None or name in _VMXNET3_DRIVERS:
            out.append(VnicEntry(mac, f"guest {iface}", _VMXNET3_DRIVERS.get(name) if name else None,
                                 guest_interface=iface))
        else:  # an SR-IOV VF or a DirectPath NIC: its own driver, no vSwitch port
            out.append(guest_only_nic(iface, mac, name))
    return out


def guest_only_nic(iface: str, mac: str | None, driver: str | None) -> VnicEntry:
    return VnicEntry(mac, f"guest {iface} ({driver or 'driver unknown'})", "guest-only", guest_interface=iface,
                     attachment="guest-only")


# Windows adapters of a physical NIC or a VF (InterfaceDescription); loopback, Hyper-V, miniports, VPNs are not
_WINDOWS_NIC_WORDS = re.compile(r"virtual function|connectx|mellanox|nvidia.*ethernet|intel\(r\) ethernet|"
                                r"broadcom|netxtreme|qlogic|fastlinq|chelsio|solarflare|\bena\b|elastic network",
                                re.I)


def _unclaimed_windows(sources: Sources, guest: Target, macs: set[str | None]) -> list[VnicEntry]:
    adapters = sources.readings.first("win_netadapter", guest.id)
    out: list[VnicEntry] = []
    for adapter in adapters.record.adapters if adapters else ():
        mac = norm_mac(adapter.mac)
        if mac and mac not in macs and _WINDOWS_NIC_WORDS.search(adapter.description or ""):
            out.append(replace(guest_only_nic(adapter.name, mac, adapter.description),
                               label=f"guest adapter {adapter.name} ({adapter.description})"))
    return out


def unclaimed_interfaces(sources: Sources, guest: Target | None, macs: set[str | None]) -> list[VnicEntry]:
    """Guest NICs (Linux: interfaces the capture ran ethtool on, with a NIC's driver; Windows: adapters whose
    description is a NIC's or a VF's) whose MAC no listed vNIC has: an SR-IOV VF or DirectPath NIC vCenter
    does not list with that MAC, or a guest the inventory is not of. Each is listed with its driver, never
    dropped."""
    if guest is not None and guest.kind == WINDOWS:
        return _unclaimed_windows(sources, guest, macs)
    if guest is None or guest.kind != LINUX:
        return []
    r = sources.readings
    out: list[VnicEntry] = []
    for cap in sources.bundle.find("ethtool_driver", guest.id):
        iface = cap.params.get("iface")
        reading = r.read(cap)
        if not iface or reading is None or reading.record.driver in NOT_VSPHERE_NICS:
            continue
        perm = r.first("ethtool_permaddr", guest.id, iface=iface)
        links = r.first("ip_link", guest.id)
        link = next((x for x in links.record.links if x.name == iface), None) if links else None
        mac = norm_mac(perm.record.mac if perm else (link.permaddr or link.mac) if link else None)
        if mac in macs or (mac is None and reading.record.driver in _VMXNET3_DRIVERS):
            continue
        out.append(guest_only_nic(iface, mac, reading.record.driver))
    return out
