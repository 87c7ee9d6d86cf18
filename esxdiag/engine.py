"""analyze: bundle -> readings -> joined facts -> rules -> AnalysisResult. No network, no
pyvmomi/paramiko imports: runs the same on a fresh bundle, a customer's, or a hand-made one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from esxdiag import __version__
from esxdiag.bundle import Bundle
from esxdiag.join.facts import VmFacts, VnicFacts
from esxdiag.join.joiner import build_facts
from esxdiag.join.readings import Readings
from esxdiag.result import (SCHEMA_VERSION, SEVERITIES, AnalysisResult, CoverageItem, Finding, RuleCheck,
                            Series, VmResult, VnicResult)
from esxdiag import rules
from esxdiag.rules.cpustats import judged_on
from esxdiag.rules.driver_nic import driver_drops
from esxdiag.rules.verdict import decide, failed_run
from esxdiag.specs import SPECS


def gather(bundle: Bundle) -> tuple[Readings, list[VmFacts]]:
    """The bundle's captures parsed once and joined into per-VM facts: what the rules judge,
    whatever the thresholds (esxdiag.api keeps them to analyse again or to build DataFrames)."""
    readings = Readings(bundle)
    return readings, build_facts(bundle, readings)


def analyze(bundle_root: str | Path, thresholds: dict[str, float], bundle: Bundle | None = None,
            gathered: tuple[Readings, list[VmFacts]] | None = None) -> AnalysisResult:
    """``bundle``: one already opened (an inferred manifest); else the bundle at bundle_root is loaded.
    ``gathered``: that bundle's ``gather()``, when the caller has it already."""
    bundle = bundle or Bundle.load(bundle_root)
    readings, facts = gathered or gather(bundle)
    coverage = guest_nic_coverage(bundle, readings.coverage(), facts)
    held = list(dict.fromkeys(SPECS[c.spec].title for c in coverage if c.used and c.spec in SPECS))
    vms = tuple(_vm_result(vm, thresholds, _failures(bundle, vm.name), held) for vm in facts)
    coverage += [item for vm in facts for item in _missing(vm)]
    coverage += [CoverageItem(f"{u['file']} (file not used)", "-", None, "unparsed", u["why"], u["file"])
                 for u in bundle.manifest.get("unused_files", ())]  # files an inferred manifest could not use
    notes = tuple(bundle.manifest.get("notes") or ())
    if not facts:
        notes += ("No VM found in the bundle: name one in manifest subject.vms, or collect a vsphere_vm "
                  "inventory or net-stats -l.",)
    return AnalysisResult(
        schema_version=SCHEMA_VERSION, tool=f"esxdiag {__version__}",
        bundle={"name": Path(bundle_root).resolve().name, "path": str(bundle_root),
                "created": bundle.manifest.get("created"),
                "window_s": bundle.window_s, "format_version": bundle.manifest.get("format_version"),
                "collected_by": bundle.manifest.get("tool"),
                "failed": [f["why"] for f in bundle.manifest.get("failed", ())]},
        # the thresholds the per-VM rules judge by (fleet.* are the fleet scan's own)
        thresholds=dict(sorted((k, v) for k, v in thresholds.items() if not k.startswith("fleet."))),
        vms=vms, coverage=tuple(coverage), notes=notes,
    )


def _failures(bundle: Bundle, vm: str) -> list[tuple[str, str | None]]:
    """Why the run failed, for this VM, with the kind of target that failed: its guest, or a host /
    vCenter every VM rests on."""
    targets = {target.id: target for target in bundle.targets}
    return [(f["why"], getattr(targets.get(f["target"]), "kind", None)) for f in bundle.manifest.get("failed", ())
            if getattr(targets.get(f["target"]), "vm", None) in (None, vm)]


def _vm_result(vm: VmFacts, t: dict[str, float], failed: list[tuple[str, str | None]], held: list[str]) -> VmResult:
    outcomes: list = []
    for rule in rules.VM_RULES:
        outcomes.extend(rule(vm, t))
    vnics = []
    for nic in vm.vnics:
        for vnic_rule in rules.VNIC_RULES:
            outcomes.extend(vnic_rule(vm, nic, t))
        vnics.append(_vnic_result(vm, nic, t, failed, held))
    findings = sorted((o for o in outcomes if isinstance(o, Finding)), key=lambda f: SEVERITIES.index(f.severity))
    checks = tuple(o for o in outcomes if isinstance(o, RuleCheck))
    return VmResult(
        name=vm.name, host=vm.host, vcpus=vm.vcpus, cpu_limit_mhz=vm.cpu_limit_mhz, guest_os=vm.guest_os,
        power_state=vm.power_state, vnics=tuple(vnics), findings=tuple(findings),
        cpu=_cpu_summary(vm, t),
        charts=_cpu_charts(vm), checks=checks, notes=vm.notes,
        tcp={key: counter_json(c) for key, c in (("retransmitted_segments", vm.retransmits),
                                                 ("segments_sent", vm.segments_sent)) if c is not None},
    )


def _cpu_summary(vm: VmFacts, t: dict[str, float]) -> dict:
    """The CPU figures' summary; "whole_window": vCenter's when esxtop covered part of the window and the
    verdict was judged on both (esxdiag.rules.cpustats.judged_on)."""
    if vm.cpu is None:
        return {}
    sources = judged_on(vm.cpu, vm.cpu_whole, t)
    whole = {"whole_window": sources[1].summary()} if len(sources) > 1 else {}
    return {**vm.cpu.summary(), "vcpus_source": vm.vcpus_source, **whole}


def counter_json(c) -> dict:
    out = {"delta": c.delta, "total": c.total, "seconds": c.seconds,
           "per_s": None if c.rate_per_s is None else round(c.rate_per_s, 3), "reset": c.reset, "source": c.source}
    return {**out, "since": c.since} if c.since else out


GUEST_NIC_SPECS = ("ethtool_stats", "ethtool_driver", "ethtool_rings", "ethtool_permaddr")


def bypass_metrics(nic: VnicFacts) -> dict:
    """A NIC outside the vSwitch: how it attaches, its own ring (ethtool -g) and its driver's receive drop
    counters by name, with the family each belongs to (esxdiag.rules.driver_nic)."""
    if nic.attachment is None and not nic.driver_counters:
        return {}
    return {"attachment": nic.attachment, "tied_by": nic.tied_by,
            "ring_rx": {"current": nic.ethtool_current_rx, "max": nic.ring_rx_max},
            "driver_drops": {d.name: {**counter_json(d.window), "family": d.family, "queues": d.queues}
                             for d in driver_drops(nic)}}


def guest_nic_coverage(bundle: Bundle, coverage: list[CoverageItem], facts: list[VmFacts]) -> list[CoverageItem]:
    """A guest interface's ethtool captures count as read only when they feed a NIC of the report: one that
    feeds none says so."""
    fed = {nic.guest_interface for vm in facts for nic in vm.vnics} - {None}
    params = {cap.file: cap.params for cap in bundle.captures if cap.spec in GUEST_NIC_SPECS}
    out = []
    for item in coverage:
        iface = (params.get(item.file) or {}).get("iface")
        if item.used and item.spec in GUEST_NIC_SPECS and iface and iface not in fed:
            item = replace(item, why=f"parsed, but guest interface {iface} feeds no NIC of this report")
        out.append(item)
    return out


def _vnic_result(vm: VmFacts, nic: VnicFacts, t: dict[str, float], failed: list[tuple[str, str | None]],
                 held: list[str]) -> VnicResult:
    verdict = decide(vm, nic, t)
    if failed:
        verdict = failed_run(verdict, [why for why, _ in failed], held, tuple(k for _, k in failed if k))
    metrics = {
        **bypass_metrics(nic),
        "ring1_size": nic.ring1_size, "ring2_size": nic.ring2_size, "ring_size_source": nic.ring_size_source,
        "ring1_max": nic.ring1_max, "ring2_max": nic.ring2_max, "rx_queues": nic.rx_queues, "mtu": nic.mtu,
        "rss_enabled": nic.rss_enabled, "driver": nic.driver, "driver_version": nic.driver_version,
        "device_version": nic.device_version,
    }
    for key, c in (("ring1_full", nic.ring1_full), ("ring2_full", nic.ring2_full),
                   ("host_out_of_buffers", nic.host_out_of_buffers), ("dropped_rx", nic.dropped_rx),
                   ("guest_oob", nic.guest_oob), ("guest_discards", nic.guest_discards)):
        if c is not None:
            metrics[key] = counter_json(c)
    if nic.attachment is not None:  # no vmxnet3 ring: its own ring is ring_rx
        metrics["ring1_max"] = metrics["ring2_max"] = None
    vcenter = next((s for s in nic.drop_symptoms if s.unit == "packets"), None)
    if vcenter is not None and vcenter.present:
        metrics["vcenter_dropped_rx"] = {"delta": round(sum(vcenter.present)), "samples": len(vcenter.present),
                                         "source": vcenter.source}
    return VnicResult(
        mac=nic.mac, label=nic.label, type=nic.type, portset=nic.portset, port=nic.port,
        guest_interface=nic.guest_interface, ring_verdict=verdict.verdict, verdict=verdict, metrics=metrics,
        charts=_vnic_charts(nic),
    )


def _cpu_charts(vm: VmFacts) -> tuple[Series, ...]:
    if vm.cpu is None:
        return ()
    charts = []
    for field, name in (("ready_pct", "%RDY"), ("costop_pct", "%CSTP"), ("max_limited_pct", "%MLMTD"),
                        ("swap_wait_pct", "%SWPWT")):
        for label, values in getattr(vm.cpu, field).items():
            charts.append(Series(f"{name} {label}", "%", vm.cpu.times, tuple(values), vm.cpu.file))
    return tuple(charts)


def _vnic_charts(nic: VnicFacts) -> tuple[Series, ...]:
    out = []
    host = nic.series.get("host_counters")
    if host:
        for key, label in (("ring1_full", "1st ring full"), ("ring2_full", "2nd ring full"),
                           ("out_of_buffers", "running out of buffers")):
            out.append(Series(label, "count (cumulative)", tuple(host["times"]), tuple(host[key]), host["source"]))
    guest = nic.series.get("guest_oob")
    if guest:
        out.append(Series("guest pkts rx OOB", "count (cumulative)", tuple(guest["times"]), tuple(guest["values"]),
                          guest["source"]))
    return tuple(out)


def _missing(vm: VmFacts) -> list[CoverageItem]:
    items = [CoverageItem(what, "-", None, "not-collected", f"VM {vm.name}") for what in vm.missing]
    for nic in vm.vnics:
        items += [CoverageItem(what, "-", None, "not-collected", f"VM {vm.name}, vNIC {nic.mac}") for what in nic.missing]
    return items
