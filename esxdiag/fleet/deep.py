"""Fold deep-check bundles into the fleet report: analyse each host's bundle with the per-VM
engine (no network), have its report written beside it (the caller renders it), attach each VM's
ring verdicts (and, for drops-elsewhere, their causes: read with getattr, a result model without them
gives none) with each vNIC's ring figures and when the check ended, and judge the checked VMs again
with them (esxdiag.fleet.confirm): class, severity, reason, score and rank follow the host evidence."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from esxdiag.engine import analyze
from esxdiag.errors import EsxdiagError
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.snapshot import Snapshot
from esxdiag.result import AnalysisResult


def _relative(path: Path, base: Path) -> str:
    try:
        return os.path.relpath(path.resolve(), base.resolve()).replace(os.sep, "/")
    except ValueError:  # another drive (Windows)
        return str(path.resolve())


RING_FIGURES = (("ring1_full", "per_s"), ("ring2_full", "per_s"), ("host_out_of_buffers", "per_s"),
                ("dropped_rx", "per_s"), ("ring1_size", None),
                ("ring2_size", None))  # (metric, part): per vNIC, beside its verdict; dropped_rx: the port's


def ring_figures(nic) -> dict:
    """A checked vNIC's ring-full and out-of-buffer rates and ring sizes (None: not measured)."""
    out = {}
    for key, part in RING_FIGURES:
        value = nic.metrics.get(key)
        out[key] = (value or {}).get(part) if part else value
    return out


def fold(document: dict, snapshot: Snapshot, groups: list, thresholds: dict[str, float], report_dir: Path,
         write_report: Callable[[AnalysisResult, Path], Path], checked_at: str | None = None) -> None:
    """groups: HostGroup-like objects (vcenter, host, vms rows, bundle path, error);
    write_report(result, bundle) writes a bundle's report and returns its path; checked_at: when
    the hosts' sampling ended (ISO UTC). The document is rebuilt from the snapshot with every
    checked VM's verdicts."""
    checked: dict[tuple[str, str], dict] = {}
    hosts, vms = [], []
    for group in groups:
        hosts.append({"host": group.host, "vcenter": group.vcenter, "vms": [r["name"] for r in group.vms],
                      "error": group.error, "bundle": _relative(group.bundle, report_dir) if group.bundle else None})
        result, report, why = None, None, group.error
        if group.bundle is not None and (group.bundle / "manifest.json").exists():
            try:
                result = analyze(group.bundle, thresholds)
            except EsxdiagError as exc:  # a bundle that cannot be analysed is listed, not fatal
                why = exc.one_line()
            else:
                report = write_report(result, group.bundle)
        for row in group.vms:
            vm = next((v for v in result.vms if v.name == row["name"]), None) if result else None
            deep = {"verdicts": [n.ring_verdict for n in vm.vnics] if vm else [],
                    "vnics": [{"label": n.label, "mac": n.mac, "type": n.type, "verdict": n.ring_verdict,
                               "causes": list(getattr(n.verdict, "causes", None) or ()), **ring_figures(n)}
                              for n in vm.vnics] if vm else [],
                    "worst_severity": vm.worst_severity() if vm else None,
                    "report": _relative(report, report_dir) if report else None,
                    "bundle": _relative(group.bundle, report_dir) if group.bundle else None,
                    "error": why if vm is None or group.error else None, "checked_at": checked_at}
            if vm is None and why is None:
                deep["error"] = "the VM is not in its host's bundle (inventory could not be read)"
            checked[(row["vcenter"], row["moid"])] = deep
            vms.append({"vcenter": row["vcenter"], "name": row["name"], "moid": row["moid"], "host": group.host,
                        **deep})
    fresh = build_report(snapshot, thresholds, document["snapshot"]["file"], deep=checked)
    fresh.update(deep={"hosts": hosts, "vms": vms}, changes=document.get("changes"))
    document.clear()
    document.update(fresh)
