"""Deep-check bundles -> the evidence the fleet report is built with: analyse each host's bundle with
the per-VM engine (no network), have its report written beside it (the caller renders it), and give
each VM's ring verdicts (and, for drops-elsewhere, their causes: read with getattr, a result model
without them gives none) with each vNIC's ring figures and when the check ended. build_report judges
the checked VMs with them (esxdiag.fleet.confirm): class, severity, reason, score and rank follow the
host evidence."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from esxdiag.errors import EsxdiagError
from esxdiag.fleet.analysis import Evidence
from esxdiag.fleet.model import DeepEvidence, DeepHost, DeepSection, DeepVm, Key
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


def analyze(bundle: Path, thresholds: dict[str, float]) -> AnalysisResult:
    """The per-VM engine's analysis of a deep check's bundle (the engine and every rule load only when a
    deep check ran)."""
    from esxdiag.engine import analyze as analyze_bundle

    return analyze_bundle(bundle, thresholds)


def fold(groups: list, thresholds: dict[str, float], report_dir: Path,
         write_report: Callable[[AnalysisResult, Path], Path], checked_at: str | None = None) -> Evidence:
    """groups: HostGroup-like objects (vcenter, host, the chosen FleetRows, bundle path, error);
    write_report(result, bundle) writes a bundle's report and returns its path; checked_at: when
    the hosts' sampling ended (ISO UTC). Each checked VM's check, and the check as a whole, for
    esxdiag.fleet.analysis.build_report to judge the VMs with."""
    checked: dict[Key, DeepEvidence] = {}
    hosts, vms = [], []
    for group in groups:
        bundle = _relative(group.bundle, report_dir) if group.bundle else None
        hosts.append(DeepHost(group.host, group.vcenter, tuple(r.name for r in group.vms), group.error, bundle))
        result, report, why = None, None, group.error
        if group.bundle is not None and (group.bundle / "manifest.json").exists():
            try:
                result = analyze(group.bundle, thresholds)
            except EsxdiagError as exc:  # a bundle that cannot be analysed is listed, not fatal
                why = exc.one_line()
            else:
                report = write_report(result, group.bundle)
        for row in group.vms:
            vm = next((v for v in result.vms if v.name == row.name), None) if result else None
            error = why if vm is None or group.error else None
            if vm is None and why is None:
                error = "the VM is not in its host's bundle (inventory could not be read)"
            check = DeepEvidence(
                verdicts=tuple(n.ring_verdict for n in vm.vnics) if vm else (),
                vnics=tuple({"label": n.label, "mac": n.mac, "type": n.type, "verdict": n.ring_verdict,
                             "causes": list(getattr(n.verdict, "causes", None) or ()), **ring_figures(n)}
                            for n in vm.vnics) if vm else (),
                worst_severity=vm.worst_severity() if vm else None,
                report=_relative(report, report_dir) if report else None, bundle=bundle, error=error,
                checked_at=checked_at)
            checked[(row.vcenter, row.moid)] = check
            vms.append(DeepVm(row.vcenter, row.name, row.moid, group.host, check))
    return Evidence(checks=checked, section=DeepSection(tuple(hosts), tuple(vms)))
