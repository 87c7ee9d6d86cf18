"""Fleet snapshots built by hand, the way a real vCenter answers instance "*": the aggregate ""
plus one series per vCPU ("0", "1", ...) and per vNIC (device key "4000", ...). Loaded by the
fleet tests with importlib (no package), e.g. at the top of tests/fleet/test_damaged_snapshot.py."""

from __future__ import annotations

import copy

SAMPLES = 15
INTERVAL_S = 20
SCHEMA_SNAPSHOT = "esxdiag.fleet_snapshot/1"
STAMPS = [f"2026-11-23T02:{m:02d}:{s:02d}Z" for m in range(40, 45) for s in (0, 20, 40)]


def _per_sample(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value] * SAMPLES


def perf(name: str, ready: list, costop: list, limited: list, drops: dict, packets: dict) -> dict:
    """ready / costop / limited: ms per sample for each vCPU; drops / packets: per vNIC key, per sample."""
    series = []
    for counter, per_vcpu, unit in (("cpu.ready.summation", ready, "millisecond"),
                                    ("cpu.costop.summation", costop, "millisecond"),
                                    ("cpu.maxlimited.summation", limited, "millisecond")):
        columns = [_per_sample(v) for v in per_vcpu]
        series.append({"counter": counter, "instance": "", "unit": unit, "values": [sum(c) for c in zip(*columns)]})
        series += [{"counter": counter, "instance": str(i), "unit": unit, "values": c} for i, c in enumerate(columns)]
    for counter, per_vnic in (("net.droppedRx.summation", drops), ("net.packetsRx.summation", packets)):
        columns = {key: _per_sample(v) for key, v in per_vnic.items()}
        series.append({"counter": counter, "instance": "", "unit": "number",
                       "values": [sum(c) for c in zip(*columns.values())]})
        series += [{"counter": counter, "instance": key, "unit": "number", "values": c} for key, c in columns.items()]
    return {"schema": "esxdiag.vsphere_perf/1", "vm": name, "interval_s": INTERVAL_S, "rollup": "realtime",
            "note": None, "start": STAMPS[0], "end": STAMPS[-1], "timestamps": list(STAMPS), "series": series}


def vm(name: str, moid: str | None = None, *, vcpus: int = 1, ready=100, costop=0, limited=0, drops=0,
       packets=100_000, nics=("vmxnet3",), limit: int | None = None, power: str = "poweredOn",
       vcenter: str = "vc1:443", host: str = "esx1", cluster: str | None = "C1") -> dict:
    """ready/costop/limited: per-vCPU ms per sample (one value for every vCPU, or a list per vCPU);
    drops/packets: per sample on the first vNIC, or {device key: per sample}."""
    keys = [str(4000 + i) for i in range(len(nics))]
    per_vcpu = [(v if isinstance(v, list) else [v] * vcpus) for v in (ready, costop, limited)]
    drops = drops if isinstance(drops, dict) else {keys[0]: drops, **{k: 0 for k in keys[1:]}}
    packets = packets if isinstance(packets, dict) else {k: packets for k in keys}
    vnics = [{"label": f"Network adapter {i + 1}", "type": t, "mac": f"00:50:56:00:{i:02x}:{len(name) % 256:02x}",
              "device_key": 4000 + i, "network": "VM Network", "connected": True} for i, t in enumerate(nics)]
    on = power == "poweredOn"
    return {
        "vcenter": vcenter, "moid": moid or f"vm-{name}", "name": name, "power_state": power, "host": host,
        "host_moid": f"host-{host}", "cluster": cluster, "datacenter": "DC", "num_cpu": vcpus,
        "cpu_allocation": {"limit_mhz": limit, "reservation_mhz": 0, "shares": 1000, "shares_level": "normal"},
        "latency_sensitivity": "normal", "guest": {"family": "linuxGuest", "ip_address": None},
        "num_vnics": len(nics), "vnics": vnics, "missing": [],
        "perf": perf(name, *per_vcpu, drops, packets) if on else None, "perf_error": None if on else "powered off",
    }


def vcenter(name: str = "vc1:443", vms: int = 0, status: str = "scanned") -> dict:
    return {"url": f"https://{name.split(':')[0]}/sdk", "name": name, "status": status,
            "error": None if status == "scanned" else f"{name}: unreachable (Connection refused)",
            "error_kind": None if status == "scanned" else "unreachable", "requests": 12, "seconds": 0.5,
            "max_query_metrics": 64, "max_query_metrics_source": "default", "vms": vms, "perf_errors": 0,
            "unmatched_filters": []}


def snapshot(vms: list[dict], hosts: list[dict] | None = None, vcenters: list[str] = ("vc1:443",)) -> dict:
    return {"schema": SCHEMA_SNAPSHOT, "collected_at": "2026-11-23T02:45:00Z", "window_s": 300, "nic_types": "all",
            "filters": {}, "vcenters": [vcenter(v, sum(m["vcenter"] == v for m in vms)) for v in vcenters],
            "hosts": hosts or [], "vms": vms}


def host(name: str = "esx1", usage: int = 2500, drops: dict | None = None, errors: dict | None = None,
         vcenter: str = "vc1:443") -> dict:
    """drops / errors: net.droppedRx / net.errorsRx per sample, per instance ("vmnic1", or "" for the host's
    aggregate alone, as vcsim answers); errors None: no net.errorsRx series (snapshots before it was read)."""
    stamps = list(STAMPS)
    series = [{"counter": "cpu.usage.average", "instance": "", "unit": "percent", "values": [usage] * SAMPLES}]
    for counter, per_nic in (("net.droppedRx.summation", {"vmnic0": 0} if drops is None else drops),
                             ("net.errorsRx.summation", errors or {})):
        series += [{"counter": counter, "instance": nic, "unit": "number", "values": _per_sample(v)}
                   for nic, v in per_nic.items()]
    return {"vcenter": vcenter, "moid": f"host-{name}", "name": name, "cluster": "C1", "perf_error": None,
            "perf": {"schema": "esxdiag.vsphere_perf/1", "vm": name, "interval_s": INTERVAL_S, "rollup": "realtime",
                     "note": None, "start": stamps[0], "end": stamps[-1], "timestamps": stamps, "series": series}}


def migration(when: str, source: str | None, dest: str | None, kind: str = "VmMigratedEvent") -> dict:
    """One vCenter migration event as the scan records it (host = destination, source_host = source)."""
    return {"type": kind, "time": when, "host": dest, "source_host": source,
            "message": f"Migrating from {source} to {dest}"}


def evidence_of(checks: dict | None):
    """Deep checks by (vCenter, MOID), in the JSON's shape (a row's ``deep``) -> what build_report takes."""
    from esxdiag.fleet.analysis import Evidence
    from esxdiag.fleet.model import DeepEvidence

    return Evidence(checks={key: DeepEvidence.of(c) for key, c in (checks or {}).items()})


class ReportJson(dict):
    """A fleet report's JSON (what the renderers and the history read) that keeps the typed report it was
    made from (``.report``: what deep_candidates and choose take)."""

    def __init__(self, report):
        super().__init__(report.as_dict())
        self.report = report


def mutated(data, path: tuple, value):
    """A deep copy of ``data`` with the value at ``path`` (keys and list indexes) replaced by ``value``;
    "DELETE" removes it, "ADD" adds to it (a key to a dict, an item to a list, a list around a scalar)."""
    data = copy.deepcopy(data)
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    if value == "DELETE":
        del parent[path[-1]]
    elif value == "ADD":
        if isinstance(parent[path[-1]], dict):
            parent[path[-1]]["unexpected"] = 1
        elif isinstance(parent[path[-1]], list):
            parent[path[-1]].append(copy.deepcopy(parent[path[-1]][0]) if parent[path[-1]] else 7)
        else:
            parent[path[-1]] = [parent[path[-1]]]
    else:
        parent[path[-1]] = value
    return data
