"""The words every renderer shares (terminal, HTML, rings, fleet): plain words for what the result
stores as keys, paths and comparisons (where a figure came from, which evidence decided a verdict,
vCPU names, counts, times with their time zone), verdict names, numbers, counter and ring phrases.

Shapes read from the result (as esxdiag.engine writes them):
  VnicResult.metrics: ring1_size, ring1_max, ring2_size, ring2_max, rx_queues, ring_size_source, mtu,
    rss_enabled, driver, driver_version, and per counter in COUNTERS a dict
    {"delta", "total", "seconds", "per_s", "reset"}. Unknown keys are still shown as key=value.
  VmResult.cpu: source, normalisation, samples, <ready|costop|max_limited|swap_wait>_pct_<max|avg>.
  VmResult.charts: per-vCPU Series labelled "<%RDY|%CSTP|%MLMTD|%SWPWT> <who>", e.g. "%RDY vCPU 0"."""

from __future__ import annotations

import operator
import re
from datetime import timezone
from typing import Any, TypeGuard

from esxdiag.bundle import parse_time
from esxdiag.result import SEVERITIES, AnalysisResult, DropLedger, Evidence, RingVerdict, Series, VmResult
from esxdiag.specs import SPECS

_CAPTURE = re.compile(r"(?:^|/)(?P<spec>[a-z0-9_]+)(?:@(?P<params>[^/]*?))?(?:\.s(?P<sample>\d+))?\.(?:txt|json)$")
SPEC_WORDS = {name: spec.words for name, spec in SPECS.items() if spec.words}  # declared on each Spec
COMPARE = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
           "==": operator.eq, "!=": operator.ne}
_VCPU = re.compile(r"^vmx-vcpu-(\d+)(?::.*)?$")
VERDICT_WORDS = {
    "raise-ring1": "Raise RX ring 1",
    "raise-ring2": "Raise RX ring 2",
    "cpu-limit-first": "CPU limit first",
    "cpu-contention-first": "CPU contention first",
    "at-max": "Rings already at maximum",
    "enable-rss": "Enable RSS",
    "not-needed": "No ring change needed",
    "past-exhaustion-only": "Past exhaustion only",
    "insufficient-evidence": "Insufficient evidence",
    "drops-elsewhere": "Drops elsewhere, not the ring",
    "memory-first": "Host memory first",
    "guest-saturated": "Guest CPU saturated",
    "driver-drops": "Drops in the NIC's own driver",
}
COUNTERS = (
    ("ring1_full", "ring-1-full"),
    ("ring2_full", "ring-2-full"),
    ("host_out_of_buffers", "out-of-buffer drops"),
    ("dropped_rx", "host port droppedRx (clientStats)"),  # not vCenter's net.droppedRx: named where it is
    ("guest_oob", "guest pkts rx OOB"),
    ("guest_discards", "guest rx discards"),
)
RING_KEYS = ("ring1_size", "ring1_max", "ring2_size", "ring2_max", "rx_queues")
CPU_METRICS = (("ready_pct", "%RDY"), ("costop_pct", "%CSTP"), ("max_limited_pct", "%MLMTD"),
               ("swap_wait_pct", "%SWPWT"))
METRIC_TOKEN = re.compile(r"%[A-Za-z]+")


def vnic_prefix(label: str | None) -> str:
    """The word vNIC before a vNIC's label, unless the label already says it ("vNIC 0", from net-stats -l)."""
    return "" if (label or "").startswith("vNIC ") else "vNIC "


def held_words(coverage) -> list[str]:
    """What a (partial) bundle holds: the kinds of the captures read (wholly or in part), in coverage order."""
    return list(dict.fromkeys(SPECS[c.spec].title for c in coverage if c.used and c.spec in SPECS))


def source_words(path: str | None) -> str | None:
    """"vsish rxSummary (port 33554464), reading 2" for
    esxi-esx0/vsish_rxsummary@port=33554464,portset=vSwitch0.s1.txt; the file name when unknown."""
    if not path:
        return None
    found = _CAPTURE.search(path.replace("\\", "/"))
    if found is None or found["spec"] not in SPEC_WORDS:
        return path.replace("\\", "/").rsplit("/", 1)[-1]
    params = dict(p.split("=", 1) for p in (found["params"] or "").split(",") if "=" in p)
    try:
        words = SPEC_WORDS[found["spec"]].format(**params)
    except KeyError:  # a hand-made bundle without the usual params
        words = re.sub(r"\s*\{[a-z]+\}", "", re.sub(r"\s*\([^()]*\{[a-z]+\}[^()]*\)", "", SPEC_WORDS[found["spec"]]))
    if found["sample"] is not None:
        words += f", reading {int(found['sample']) + 1}"
    return words


def utc_time(value: Any) -> str:
    """ISO time -> "2026-11-21 06:01:24 UTC" (naive times are UTC, as the bundle writes them)."""
    if not isinstance(value, str) or not value:
        return "n/a"
    moment = parse_time(value)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC") if moment else value


def threshold_met(e: Evidence) -> bool | None:
    """Whether the observed value passed the evidence's own test; None when it has no test."""
    test = COMPARE.get(e.comparison or "")
    if test is None or e.threshold is None or e.observed is None:
        return None
    try:
        return bool(test(e.observed, e.threshold))
    except TypeError:
        return None


def split_evidence(items: tuple[Evidence, ...]) -> tuple[list[Evidence], list[Evidence]]:
    """(deciding, also checked): figures whose test held, and facts without a test, decide; the
    tests that did not hold are folded away. When no test held (a "nothing is happening"
    verdict), the tests that did not hold are what decided it."""
    held = [e for e in items if threshold_met(e) is not False]
    failed = [e for e in items if threshold_met(e) is False]
    if not any(threshold_met(e) for e in items):
        return list(items), []
    return held, failed


def vcpu_words(label: str) -> str:
    """"vCPU 0" for esxtop's "vmx-vcpu-0:iperf-test1"; other labels unchanged."""
    found = _VCPU.match(label)
    return f"vCPU {found[1]}" if found else label


def count(n: int | None, singular: str, plural: str | None = None) -> str:
    """ "1 vCPU", "2 vCPUs", "1,024 entries" with plural given; "n/a vCPUs" when unknown."""
    if n is None:
        return f"n/a {plural or singular + 's'}"
    return f"{n:,} {singular if n == 1 else (plural or singular + 's')}"



def verdict_words(verdict: str) -> str:
    return VERDICT_WORDS.get(verdict, verdict)



def verdict_headline(verdict: RingVerdict) -> str:
    """The verdict's name, with what it rests on when that is less than the host's ring counters."""
    words = verdict_words(verdict.verdict)
    return f"{words}: {verdict.basis}" if verdict.basis else words



def failed_headline(result: AnalysisResult) -> str | None:
    """A failed run's first line: what failed and what the partial bundle holds, never a verdict."""
    failed = result.bundle.get("failed") or ()
    if not failed:
        return None
    held = held_words(result.coverage)
    return (f"RUN FAILED: {'; '.join(failed)}. No verdict from a failed run; the partial bundle holds: "
            f"{', '.join(held) if held else 'no capture'}.")



def severity_rank(severity: str | None) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)



def fmt(value: Any) -> str:
    """Numbers with thousands separators and at most two decimals; None as n/a."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() else f"{value:,.2f}".rstrip("0").rstrip(".")
    return str(value)



def cpu_limit_words(vm: VmResult) -> str:
    if vm.cpu_limit_mhz is not None:
        return f"{vm.cpu_limit_mhz:,} MHz"
    # no power state means no vCenter inventory was read: the limit is unknown, not absent
    return "unknown (no vCenter inventory)" if vm.power_state is None else "none (unlimited)"



def split_cpu_label(series: Series) -> tuple[str, str]:
    """("%RDY", "vCPU 0") from "%RDY vCPU 0"; series without a %TOKEN are grouped under their unit."""
    found = METRIC_TOKEN.search(series.label)
    if not found:
        return series.unit, series.label
    who = (series.label[:found.start()] + series.label[found.end():]).strip()
    return found.group(), who or "all vCPUs"



def _stats(values: list[float]) -> tuple[float | None, float | None]:
    return (max(values), sum(values) / len(values)) if values else (None, None)



def per_vcpu_table(vm: VmResult) -> dict[str, Any]:
    """From the VM's per-vCPU chart series: one row per vCPU with every per-vCPU figure, and a
    summary over all vCPUs computed the same way for every metric (window max of any sample, mean
    of every sample). A metric the capture has only for the whole VM (divided by the vCPU count,
    "per-vCPU average") appears in the summary alone and is listed in "whole_vm"."""
    per_metric: dict[str, dict[str, list[float]]] = {}
    for series in vm.charts:
        metric, who = split_cpu_label(series)
        if metric.startswith("%"):
            per_metric.setdefault(metric, {})[who] = [v for v in series.values if v is not None]
    metrics = [m for m in per_metric if any(per_metric[m].values())]
    vcpus = sorted({who for m in metrics for who in per_metric[m] if who != "per-vCPU average"},
                   key=lambda who: (len(who), who))
    rows = [(who, {m: _stats(per_metric[m][who]) for m in metrics if who in per_metric[m]}) for who in vcpus]
    return {"metrics": metrics, "rows": rows,
            "summary": {m: _stats([v for values in per_metric[m].values() for v in values]) for m in metrics},
            "whole_vm": [m for m in metrics if not any(who in per_metric[m] for who in vcpus)],
            "samples": max((len(v) for m in metrics for v in per_metric[m].values()), default=0)}



def cpu_max(vm: VmResult, key: str) -> float | None:
    """Window maximum for ready_pct / costop_pct / max_limited_pct, from the summary or the series."""
    value = vm.cpu.get(f"{key}_max")
    if isinstance(value, (int, float)):
        return value
    return per_vcpu_table(vm)["summary"].get(dict(CPU_METRICS)[key], (None,))[0]



def counter_windows(metrics: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(key, label, metrics[key]) for key, label in COUNTERS if isinstance(metrics.get(key), dict)]



def counter_phrases(metrics: dict[str, Any]) -> list[str]:
    """Each counter's growth, or its one reading and what that counts from: the vNIC's start, or the move
    that connected the port it was read on (one phrase for the counters it applies to)."""
    phrases: list[str | list[str]] = []
    since: dict[str, list[str]] = {}
    for _, label, c in counter_windows(metrics):
        if c.get("reset"):
            phrases.append(f"{label}: counter reset in the window")
        elif c.get("delta") is None and c.get("since"):
            if c["since"] not in since:
                since[c["since"]] = []
                phrases.append([c["since"]])
            since[c["since"]].append(f"{label} {fmt(c.get('total'))}")
        elif c.get("delta") is None:
            phrases.append(f"{label} {fmt(c.get('total'))} since vNIC init (one reading)")
        else:
            rate = f" ({fmt(c['per_s'])}/s)" if c.get("per_s") is not None else ""
            phrases.append(f"{label} +{fmt(c['delta'])}{rate}")
    return [p if isinstance(p, str) else f"{', '.join(since[p[0]])} {p[0]} (one reading)" for p in phrases]



def window_seconds(metrics: dict[str, Any]) -> float | None:
    return next((c["seconds"] for _, _, c in counter_windows(metrics) if c.get("seconds")), None)



def ring_phrases(metrics: dict[str, Any]) -> list[str]:
    phrases = []
    for ring in ("ring1", "ring2"):
        if metrics.get(f"{ring}_size") is not None:
            phrases.append(f"ring {ring[-1]} {fmt(metrics[f'{ring}_size'])} of {fmt(metrics.get(f'{ring}_max'))}")
    if metrics.get("rx_queues") is not None:
        phrases.append(f"rx queues {fmt(metrics['rx_queues'])}")
    return phrases



def other_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    known = set(RING_KEYS) | {key for key, _ in COUNTERS}
    return {k: v for k, v in metrics.items() if k not in known and v is not None and not isinstance(v, dict)}



def ledger_shown(ledger: DropLedger | None) -> TypeGuard[DropLedger]:
    """A ledger says something when the port dropped frames or a counter that explains drops rose."""
    return ledger is not None and bool(ledger.port_drops or any(line.delta for line in ledger.lines
                                                                if line.counted or line.cause == "uplink"))



def cpu_source(cpu: dict[str, Any]) -> str:
    """"esxtop", or "esxtop, lower bound" when the vCPU count was unknown (VmResult.cpu["bound"])."""
    bound = cpu.get("bound")
    return (cpu.get("source") or "no CPU source") + (f", {bound} bound" if bound not in (None, "exact") else "")



def whole_window_words(whole: dict[str, Any] | None) -> str:
    """vCenter's figures for the whole window, when esxtop covered part of it and both were judged."""
    if not whole:
        return ""
    return (f"; {whole.get('source')} over the whole window (judged too: the worse decides): "
            f"%RDY avg {fmt(whole.get('ready_pct_avg'))} max {fmt(whole.get('ready_pct_max'))}, "
            f"%MLMTD max {fmt(whole.get('max_limited_pct_max'))}, %CSTP max {fmt(whole.get('costop_pct_max'))}")
