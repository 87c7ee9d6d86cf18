"""vSphere collector (pyvmomi): the public API the live collection orchestrator calls.

    session = connect(creds, timeout_s=30)          # CollectionError kind: unreachable|tls|auth|timeout
    vm_ref = find_vm(session, "name" | "vm-123" | instance-uuid)   # kind: ambiguous|not-found
    vm = collect_inventory(session, vm_ref)          # -> dict, written as the vsphere_vm capture
    perf = collect_perf(session, vm_ref, vm, start, end)  # -> dict, the vsphere_perf capture
    session.close()                                  # logs out; session.request_count = SOAP requests

Requests per VM are fixed: find_vm = 3 (+1 per extra result page), collect_inventory = 1,
collect_perf = 3 (+1 for counter names, once per session). They do not grow with the inventory
size or the number of vNICs.

``vsphere_vm`` capture (``esxdiag.vsphere_vm/1``), JSON object:
    schema, collected_at (ISO-8601 UTC, "...Z"), source ("vcenter" | "esxi"),
    name, moid, instance_uuid, power_state ("poweredOn" | "poweredOff" | "suspended"),
    host (name), host_moid, host_cpu_mhz (MHz per core, int | null), cluster (name | null),
    num_cpu, cores_per_socket, memory_mb,
    cpu_allocation: {limit_mhz (int | null; -1 = unlimited -> null), reservation_mhz, shares,
                     shares_level ("low" | "normal" | "high" | "custom" | null)},
    guest: {guest_id, full_name, family ("linuxGuest" | "windowsGuest" | ... | null), tools_status,
            tools_running_status, hostname, ip_address, ip_addresses [every guest NIC IP, in order]},
    vnics: [{label, type ("vmxnet3" | "e1000" | "e1000e" | "vmxnet2" | "vmxnet" | "pcnet32" | "sriov"
             | "unknown"), mac (lower-case), device_key (int, e.g. 4000), network (portgroup name
             | null), dvs_uuid, dvs_portgroup_key, dvs_port_key (null on a standard vSwitch),
             connected, start_connected}],
    guest_nics: [{mac (lower-case), network, ip_addresses [...], connected, device_config_id
                  (= the vNIC's device_key)}],
    missing: [{path ("<moid>:<property path>"), fault ("NoPermission: ..." etc.)}],
    latency_sensitivity ("low" | "normal" | "medium" | "high" | "custom" | null; optional: bundles
                         written before it was added lack it)
Values the server did not report are null; missing lists properties the server refused.

``vsphere_perf`` capture (``esxdiag.vsphere_perf/1``), JSON object:
    schema, vm (name), interval_s (20 realtime | 300), rollup ("realtime" | "historical"),
    note (why historical was used | null), start, end (ISO UTC), timestamps [ISO UTC, ascending],
    series: [{counter ("cpu.ready.summation" ...), instance ("" aggregate, "0".."n-1" per vCPU, or
              the vNIC device key "4000"), unit ("millisecond" | "percent" | "number"),
              values [int | null, one per timestamp]}]
Counters: cpu.ready/costop/maxlimited.summation and cpu.usage.average for "" and every vCPU;
net.droppedRx/droppedTx/packetsRx/packetsTx.summation for every vNIC. cpu.*.summation is
milliseconds per sample interval (%RDY = ready_ms / (interval_s * 1000) * 100); cpu.usage.average
is in hundredths of a percent.
"""

from __future__ import annotations

from esxdiag.collectors.vsphere_inventory import SCHEMA_VM, VmRef, collect_inventory, find_vm
from esxdiag.collectors.vsphere_perf import SCHEMA_PERF, collect_perf
from esxdiag.collectors.vsphere_session import VsphereSession, connect, server_thumbprints

__all__ = [
    "SCHEMA_PERF", "SCHEMA_VM", "VmRef", "VsphereSession",
    "collect_inventory", "collect_perf", "connect", "find_vm", "server_thumbprints",
]
