"""vSphere collector (pyvmomi): the public API the live collection orchestrator calls.

    session = connect(creds, timeout_s=30)          # CollectionError kind: unreachable|tls|auth|timeout
    vm_ref = find_vm(session, "name" | "vm-123" | instance-uuid)   # kind: ambiguous|not-found
    vm = collect_inventory(session, vm_ref)          # -> dict, written as the vsphere_vm capture
    perf = collect_perf(session, vm_ref, vm, start, end)  # -> dict, the vsphere_perf capture
    events = collect_events(session, vm_ref, start, end)  # -> dict, the vsphere_events capture
    uplinks = collect_host_perf(session, vm["host_moid"], vm["host"], start, end)  # vsphere_host_perf
    session.close()                                  # logs out; session.request_count = SOAP requests

Every call is a read. Requests per VM are fixed: find_vm = 3 (+1 per extra result page),
collect_inventory = 1, collect_perf = 3 (+1 for counter names, once per session),
collect_events = 1; per host, collect_host_perf = 1 (+1 when the host has no realtime samples).
They do not grow with the inventory size or the number of vNICs.

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
    latency_sensitivity ("low" | "normal" | "medium" | "high" | "custom" | null),
    hardware_version (config.version: "vmx-20" | null),
    host_version (the host's summary.config.product.version: "8.0.2" | null),
    resource_pools: [{name, moid, path (inventory path "/DC/host/cluster/Resources/pool" | null), kind
                      ("pool" | "vapp"), cpu_limit_mhz (config.cpuAllocation.limit; -1 -> null),
                      root (the compute resource's root pool: its limit is the capacity)}]
                    (the VM's pool first, then each parent; null when the pool could not be read)
The last four are always written (null when unknown); bundles written before they were added lack
them, and are read as null.
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

``vsphere_events`` capture (``esxdiag.vsphere_events/1``), JSON object:
    schema, vm (name), start, end (ISO UTC: the window asked for),
    events: [{type (the event class: "VmMigratedEvent" | "DrsVmMigratedEvent" | "VmEmigratingEvent" |
              "VmBeingHotMigratedEvent" | "VmBeingMigratedEvent" | "VmBeingRelocatedEvent" |
              "VmRelocatedEvent"), time (createdTime, ISO UTC), host (the migration's destination
              | null), source_host (its source | null), message (fullFormattedMessage | null)}]
Oldest first, at most 1000; an empty list means vCenter saw no migration of the VM in the window.

``vsphere_host_perf`` capture (``esxdiag.vsphere_host_perf/1``): the fields of ``vsphere_perf`` with
host (name) in place of vm; counters net.droppedRx.summation and net.errorsRx.summation (packets
per sample interval), instances "" (the host aggregate) and vmnicN / vusbN.
"""

from __future__ import annotations

from esxdiag.collectors.vsphere_events import SCHEMA_EVENTS, collect_events
from esxdiag.collectors.vsphere_host_perf import SCHEMA_HOST_PERF, collect_host_perf
from esxdiag.collectors.vsphere_inventory import SCHEMA_VM, VmRef, collect_inventory, find_vm
from esxdiag.collectors.vsphere_perf import SCHEMA_PERF, collect_perf
from esxdiag.collectors.vsphere_session import VsphereSession, connect, server_thumbprints

__all__ = [
    "SCHEMA_EVENTS", "SCHEMA_HOST_PERF", "SCHEMA_PERF", "SCHEMA_VM", "VmRef", "VsphereSession",
    "collect_events", "collect_host_perf", "collect_inventory", "collect_perf", "connect", "find_vm",
    "server_thumbprints",
]
