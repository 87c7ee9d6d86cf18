"""One share of a fleet scan's network half: the vNICs and perf counters of some VMs, read in the
scanning process or in a worker process on the same session (esxdiag.collectors.fleet.workers)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Callable

from esxdiag.collectors.fleet import inventory, perf
from esxdiag.collectors.fleet.perfkeep import PerfKeep
from esxdiag.collectors.vsphere_session import VsphereSession, api_errors


@dataclass(frozen=True)
class ShareTask:
    vms: list[dict]  # {"moid", "name", "power_state", "num_vnics", "host_moid"}
    end: datetime
    window_s: float
    limits: perf.BatchLimits
    in_flight: int
    page_size: int | None
    nic_types: str
    read_vnics: bool = True  # False: the caller has the vNICs already (a watched inventory: watch.py)


def collect_share(session: VsphereSession, task: ShareTask,
                  progress: Callable[[ShareTask, int], None] | None = None, samples: PerfKeep | None = None) -> dict:
    """The network half for some VMs: their vNICs (all, or only those with receive drops) and perf
    counters. Runs in the scanning process or in a worker on the same session. ``samples``: a
    watch's kept realtime samples (in the scanning process only): only the newer ones are read."""
    from pyVmomi import vim
    stub = session.si._stub
    objs = {vm["moid"]: vim.VirtualMachine(vm["moid"], stub) for vm in task.vms}
    on = [vm for vm in task.vms if vm["power_state"] == "poweredOn"]
    vnic_rows = [dict(vm, vnics=None) for vm in task.vms]
    whole = 0
    if task.nic_types == "all" and task.read_vnics:
        with api_errors(session, "reading the vNICs"):
            whole = inventory.read_vnics(session, vnic_rows, objs, task.page_size)
    records, errors = perf.query(session, [perf.Entity(v["moid"], v["name"], objs[v["moid"]], v.get("host_moid"))
                                           for v in on],
                                 perf.VM_COUNTERS, task.end, task.window_s, task.limits, task.in_flight,
                                 (lambda n: progress(task, n)) if progress else None,
                                 samples.part(perf.VM_COUNTERS) if samples is not None else None)
    if task.nic_types != "all" and task.read_vnics:
        dropping = {v["moid"] for v in on if has_drops(records.get(v["moid"]))}
        vnic_rows = [row for row in vnic_rows if row["moid"] in dropping]
        with api_errors(session, "reading the vNICs of the VMs with receive drops"):
            whole = inventory.read_vnics(session, vnic_rows, objs, task.page_size)
    vnics = {row["moid"]: row["vnics"] for row in vnic_rows} if task.read_vnics else {}
    return {"vnics": vnics, "whole": whole, "records": records, "errors": errors}


def has_drops(record: dict | None) -> bool:
    return record is not None and any(v for s in record["series"] if s["counter"] == "net.droppedRx.summation"
                                       for v in s["values"] if v)
