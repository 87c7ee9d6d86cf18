"""The deep check of a scan's chosen suspects: the host-grouped SSH collection (esxdiag.collectors
.fleet.deep), made into evidence for the fleet report (esxdiag.fleet.deep), each checked VM's result
kept as a DeepCheck (what the history records and a later scan's proofs read back).

What to check is the command's choice (``DeepPlan.choose``): `scan` takes the --deep N worst
suspects and each --deep-vm; `serve` its per-cycle SSH budget (esxdiag.serve.deep.pick).
"""

from __future__ import annotations

import argparse
import sys
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Mapping

from esxdiag.errors import EsxdiagError
from esxdiag.fleet.analysis import NO_EVIDENCE, Evidence, deep_candidates
from esxdiag.fleet.deep import fold
from esxdiag.fleet.model import DeepEvidence, DeepSection, DeepVm, FleetReport, FleetRow
from esxdiag.result import AnalysisResult


@dataclass(frozen=True)
class DeepCheck:
    """One VM's deep check, as the fleet report's ``deep.vms`` entry gives it (and the history keeps it)."""

    vcenter: str
    moid: str
    name: str
    checked_at: str  # ISO UTC, when the hosts' sampling ended
    checked_ts: float  # the same, epoch seconds
    verdicts: tuple[str, ...]
    worst_severity: str | None
    report: str | None  # relative to the report's folder (serve: its data directory, served at /<report>)
    error: str | None
    vnics: tuple[Mapping, ...]  # label, mac, type, verdict, causes and esxdiag.fleet.deep.RING_FIGURES

    @classmethod
    def of_vm(cls, vm: DeepVm) -> "DeepCheck":
        return cls.of(vm.as_dict())

    def evidence(self) -> DeepEvidence:
        """The check as a row carries it (a kept proof: its bundle is not linked again)."""
        return DeepEvidence(verdicts=self.verdicts, vnics=tuple(dict(v, causes=list(v.get("causes") or ()))
                                                                for v in self.vnics),
                            worst_severity=self.worst_severity, report=self.report, bundle=None, error=self.error,
                            checked_at=self.checked_at)

    @classmethod
    def of(cls, entry: Mapping) -> "DeepCheck":
        """From a ``deep.vms`` entry (or a history deep_checks row) that says when it ended."""
        ended = datetime.strptime(entry["checked_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
        return cls(entry["vcenter"], entry["moid"], entry["name"], entry["checked_at"], ended.timestamp(),
                   tuple(entry["verdicts"]), entry["worst_severity"], entry["report"], entry["error"],
                   tuple(dict(v) for v in entry["vnics"]))


@dataclass(frozen=True)
class DeepPlan:
    """What the command decides about a scan's deep check."""

    args: argparse.Namespace  # add_deep_options' values
    choose: Callable[[FleetReport], list[FleetRow]]  # the rows to check, from the fresh report
    report_dir: Callable[[], Path]  # the report's folder: the deep links are relative to it
    bundles_dir: Callable[[], Path]  # names (and may create) the folder of this check's host bundles
    say_none: bool = True  # no suspect to check: say so and report an empty deep check (serve: silent, none)
    lock: threading.Lock | None = None  # held while checking (serve: one deep check at a time in the process)
    stop: threading.Event | None = None  # set while waiting for the lock: no check


def host_ssh_logins(values: list[str]) -> tuple[dict[str, str], str | None]:
    from esxdiag.collectors.sampler import parse_ssh  # the SSH collection: only with --deep-host-ssh

    per_host, default = {}, None
    for value in values:
        host, sep, login = value.partition("=") if "=" in value.split("@", 1)[0] else ("", "", value)
        try:
            parse_ssh(login, "root", "example.invalid")
        except ValueError as exc:
            raise EsxdiagError(f"--deep-host-ssh {value!r}: {exc}") from None
        if sep:
            per_host[host] = login
        else:
            default = login
    return per_host, default


def choose(report: FleetReport, n: int, names: list[str]) -> list[FleetRow]:
    chosen = deep_candidates(report, n)
    for name in names:
        matches = [r for r in report.rows if name in (r.name, r.moid)]
        if not matches:
            raise EsxdiagError(f"--deep-vm {name!r}: no such VM in this scan")
        chosen += [r for r in matches if r.power_state == "poweredOn" and r not in chosen]
    return chosen


def check_deep_options(args: argparse.Namespace) -> None:
    if not 1 <= args.deep_window <= 3600 or not 1 <= args.esxtop_delay <= 60 or not 1 <= args.deep_parallel <= 64:
        raise EsxdiagError("--deep-window 1..3600, --esxtop-delay 1..60, --deep-parallel 1..64")
    if not 1 <= args.vcenter_timeout <= 3600 or args.output_cap is not None and not 0.001 <= args.output_cap <= 65536:
        raise EsxdiagError("--vcenter-timeout 1..3600 seconds, --output-cap 0.001..65536 MiB")


@dataclass(frozen=True)
class DeepOutcome:
    evidence: Evidence  # NO_EVIDENCE: nothing was checked
    checks: list[DeepCheck]
    unreached_hosts: int


def deep_check(plan: DeepPlan, report: FleetReport, thresholds: dict, creds: list) -> DeepOutcome:
    """Deep-check the rows ``plan.choose`` picks from ``report``: the evidence to build the report with, this
    check's DeepChecks, and the hosts not reached."""
    check_deep_options(plan.args)
    chosen = plan.choose(report)
    if not chosen and not plan.say_none:
        return DeepOutcome(NO_EVIDENCE, [], 0)
    if plan.lock is not None:
        while not plan.lock.acquire(timeout=0.5):  # another vCenter's deep check holds the SSH budget
            if plan.stop is not None and plan.stop.is_set():
                return DeepOutcome(NO_EVIDENCE, [], 0)
    try:
        evidence = _collect(plan, thresholds, creds, chosen)
    finally:
        if plan.lock is not None:
            plan.lock.release()
    section = evidence.section or DeepSection()
    return DeepOutcome(evidence, [DeepCheck.of_vm(vm) for vm in section.vms],
                       sum(1 for h in section.hosts if h.error))


def _collect(plan: DeepPlan, thresholds: dict, creds: list, chosen: list[FleetRow]) -> Evidence:
    from esxdiag.collectors.fleet.deep import DeepOptions, collect_groups, group_by_host  # pyvmomi, paramiko

    args = plan.args
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    if not chosen:
        say("deep check: no drop suspect to check")
        return Evidence(section=DeepSection())
    per_host, default = host_ssh_logins(args.deep_host_ssh)
    out = plan.bundles_dir()
    out.mkdir(parents=True, exist_ok=True)
    opts = DeepOptions(output=out, window_s=args.deep_window, esxtop_delay_s=args.esxtop_delay,
                       vcenter_timeout_s=args.vcenter_timeout,
                       output_cap_bytes=int(args.output_cap * (1 << 20)) if args.output_cap else None,
                       command_timeout_s=args.command_timeout, host_ssh=per_host, default_host_ssh=default,
                       guests=args.deep_guests, guest_ssh=args.guest_ssh, ssh_key=args.ssh_key,
                       known_hosts=args.known_hosts, accept_new_host_keys=args.accept_new_host_keys,
                       parallel_hosts=args.deep_parallel)
    groups = group_by_host(chosen)
    say(f"deep check: {len(chosen)} VM(s) on {len(groups)} host(s), {args.deep_window:g} s window")
    progress = None if args.quiet else (lambda text: say(f"deep check: {text}"))
    groups = collect_groups(groups, {f"{c.host}:{c.port}": c for c in creds}, opts, progress)
    ended = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    evidence = fold(groups, thresholds, plan.report_dir(), write_html_report, ended)
    say(f"deep bundles: {out.resolve()}")
    return evidence


def write_html_report(result: AnalysisResult, bundle: Path) -> Path:
    """A deep-checked host's report.html, beside its bundle."""
    from esxdiag.reports.formats import REPORT, RenderContext  # the renderers: only when a report is written

    html = REPORT.formats["html"]
    path = bundle / (html.default_file or "report.html")  # the html format names its file (reports/formats.py)
    context = RenderContext(output=path, bundle_root=bundle)
    path.write_text(html.render(result, context), encoding="utf-8")
    return path
