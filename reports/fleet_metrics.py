"""OpenMetrics text for Prometheus' node_exporter textfile collector.

Per VM: receive drops per second and per 1,000 packets, worst-vCPU %RDY (labelled bound="upper" or
"lower" when the vCPU count is unknown and the figure only bounds the per-vCPU one), the class (a
1-valued series labelled with it, its severity and confirmed="true" when the deep check's host counters
decided it) and the severity as a number (3 critical, 2 warning,
1 info, 0 none: alert on >= 2); per class: VM counts; per vCenter: scanned (1) or not (0). A VM whose
figure was not measured has no sample for it (absent, never 0).
"""

from __future__ import annotations

from esxdiag.vocabulary import FLEET_CLASSES, SEVERITY_VALUES


def _label(value) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels) -> str:
    return "{" + ",".join(f'{k}="{_label(v)}"' for k, v in labels.items()) + "}"


def _bound(row: dict) -> dict:
    bound = row.get("ready_bound")
    return {"bound": bound} if bound in ("upper", "lower") else {}


def render_fleet_metrics(document: dict) -> str:
    lines: list[str] = []

    def family(name: str, kind: str, help_text: str, samples: list[tuple[dict, float]]) -> None:
        lines.append(f"# TYPE {name} {kind}")
        lines.append(f"# HELP {name} {help_text}")
        lines.extend(f"{name}{_labels(**labels)} {value:g}" for labels, value in samples)

    vms = document["vms"]
    ident = [(dict(vcenter=r["vcenter"], vm=r["name"], moid=r["moid"], cluster=r["cluster"], host=r["host"]), r)
             for r in vms]
    family("esxdiag_fleet_vm_rx_drops_per_second", "gauge", "vCenter net.droppedRx over the scan window, per second",
           [(i, r["drops_per_s"]) for i, r in ident if r["drops_per_s"] is not None])
    family("esxdiag_fleet_vm_rx_drops_per_1000_packets", "gauge", "receive drops per 1,000 packets received",
           [(i, r["drops_per_1000"]) for i, r in ident if r["drops_per_1000"] is not None])
    family("esxdiag_fleet_vm_ready_worst_vcpu_percent", "gauge",
           "worst vCPU's window-average %RDY (bound=upper/lower: only a bound, the vCPU count is unknown)",
           [({**i, **_bound(r)}, r["ready_worst_pct"]) for i, r in ident if r["ready_worst_pct"] is not None])
    family("esxdiag_fleet_vm_class", "gauge", "the VM's fleet class, its severity and whether host counters "
           "confirmed it (the deep check) (value 1)",
           [({**i, "class": r["class"], "severity": r["severity"] or "none",
              "confirmed": "true" if r.get("confirmed") else "false"}, 1) for i, r in ident])
    family("esxdiag_fleet_vm_severity", "gauge", "the VM's severity: 3 critical, 2 warning, 1 info, 0 none",
           [(i, SEVERITY_VALUES[r["severity"]]) for i, r in ident])
    lossy = [({"vcenter": h["vcenter"], "host": h["name"]}, h) for h in document["rollups"]["hosts"]
             if h.get("uplink_loss_per_s") is not None]
    family("esxdiag_fleet_host_uplink_loss_per_second", "gauge", "received frames the host's physical uplinks lose "
           "per second (hosts with an uplink finding only)", [(i, h["uplink_loss_per_s"]) for i, h in lossy])
    family("esxdiag_fleet_host_uplink_severity", "gauge", "the host's uplink finding's severity: 3 critical, 2 warning",
           [(i, SEVERITY_VALUES[h.get("uplink_severity")]) for i, h in lossy])
    family("esxdiag_fleet_class_vms", "gauge", "VMs per fleet class",
           [({"class": c}, document["counts"].get(c, 0)) for c in FLEET_CLASSES])
    family("esxdiag_fleet_vcenter_scanned", "gauge", "1 when the vCenter was scanned, 0 when it could not be",
           [({"vcenter": v["name"]}, 1 if v["status"] == "scanned" else 0) for v in document["vcenters"]])
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
