"""Names both sides of a stage boundary use: the schema tags of the documents esxdiag writes, the
migration events, the figures `esxdiag diff` compares. Collectors, rules, analysis and reports import
them from here, never from each other (README "Layout": imports point down the pipeline)."""

from __future__ import annotations

# vCenter events that say a VM moved (or began to move) between hosts: the fleet scan reads them for its
# window (one EventManager.QueryEvents per vCenter), the fleet rules split nothing across two ports
MIGRATION_EVENTS = ("VmMigratedEvent", "DrsVmMigratedEvent", "VmEmigratingEvent", "VmBeingHotMigratedEvent",
                    "VmRelocatedEvent")

SCHEMA_SNAPSHOT = "esxdiag.fleet_snapshot/1"
SCHEMA_FLEET_REPORT = "esxdiag.fleet_report/2"  # 2: score is frames lost per second (docs/fleet-scan.md)

# `esxdiag diff`: the per-vNIC figures compared, (key in the report JSON, words)
DIFF_RATES = (
    ("ring1_full", "ring-1 full per s"),
    ("ring2_full", "ring-2 full per s"),
    ("host_out_of_buffers", "out-of-buffer drops per s"),
    ("dropped_rx", "port droppedRx per s"),
    ("guest_oob", "guest pkts rx OOB per s"),
)
DIFF_TOTALS = (
    ("ring1_full", "ring-1 full, total"),
    ("ring2_full", "ring-2 full, total"),
    ("host_out_of_buffers", "out-of-buffer drops, total"),
    ("dropped_rx", "port droppedRx, total"),
    ("guest_oob", "guest pkts rx OOB, total"),
)
DIFF_SIZES = (("ring1_size", "ring 1 size"), ("ring2_size", "ring 2 size"), ("rx_queues", "rx queues"))

# Linux drivers of software interfaces (bridges, bonds, tunnels, containers) and of KVM's paravirtual NIC: never
# a NIC of a vSphere VM. The guest collector asks no more of them; the join lists none of them as a guest NIC
NOT_VSPHERE_NICS = frozenset({
    "bridge", "bonding", "team", "tun", "veth", "macvlan", "ipvlan", "vxlan", "geneve", "dummy", "ifb", "vrf",
    "openvswitch", "wireguard", "802.1Q VLAN Support", "gre", "ipip", "nlmon", "virtio_net"})
