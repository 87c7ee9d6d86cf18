"""Fold deep-check bundles into the fleet report: analyse each host's bundle with the per-VM
engine (no network), write its report.html beside it, and attach each VM's ring verdicts."""

from __future__ import annotations

import os
from pathlib import Path

from esxdiag.errors import EsxdiagError


def _relative(path: Path, base: Path) -> str:
    try:
        return os.path.relpath(path.resolve(), base.resolve()).replace(os.sep, "/")
    except ValueError:  # another drive (Windows)
        return str(path.resolve())


def fold(document: dict, groups: list, thresholds: dict[str, float], report_dir: Path) -> None:
    """groups: HostGroup-like objects (vcenter, host, vms rows, bundle path, error)."""
    from esxdiag.engine import analyze
    from esxdiag.reports.html import render_html
    from esxdiag.reports.text import worst_severity

    rows = {(r["vcenter"], r["moid"]): r for r in document["vms"]}
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
                report = group.bundle / "report.html"
                report.write_text(render_html(result, bundle_root=group.bundle, report_path=report), encoding="utf-8")
        for row in group.vms:
            vm = next((v for v in result.vms if v.name == row["name"]), None) if result else None
            deep = {"verdicts": [n.ring_verdict for n in vm.vnics] if vm else [],
                    "worst_severity": worst_severity(vm) if vm else None,
                    "report": _relative(report, report_dir) if report else None,
                    "bundle": _relative(group.bundle, report_dir) if group.bundle else None,
                    "error": why if vm is None or group.error else None}
            if vm is None and why is None:
                deep["error"] = "the VM is not in its host's bundle (inventory could not be read)"
            rows[(row["vcenter"], row["moid"])]["deep"] = deep
            vms.append({"name": row["name"], "moid": row["moid"], "host": group.host, **deep})
    document["deep"] = {"hosts": hosts, "vms": vms}
