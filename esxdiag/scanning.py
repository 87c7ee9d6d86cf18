"""What a fleet scan does, below the commands: `esxdiag scan` and `esxdiag serve` call these
(README "Layout": nothing imports a command module). From the options add_fleet_options and
add_deep_options declare (esxdiag.cli.scan, esxdiag.cli.deep): the vCenters and their logins, the
API pass's options, and the deep check of the chosen suspects (the host-grouped collection, folded
into the fleet report)."""

from __future__ import annotations

import argparse
import configparser
import os
import sys
from pathlib import Path
from typing import Callable

from esxdiag.collectors.credentials import DEFAULT_CONFIG, insecure_warning, resolve_credentials
from esxdiag.collectors.sampler import parse_ssh
from esxdiag.errors import EsxdiagError
from esxdiag.fleet.analysis import deep_candidates
from esxdiag.fleet.deep import fold
from esxdiag.reports.formats import REPORT, RenderContext
from esxdiag.result import AnalysisResult


def check_fleet_options(args: argparse.Namespace) -> None:
    """The ranges of add_fleet_options' numbers (a bad one fails before any network)."""
    for name, low, high in (("window", 20, 3600), ("in_flight", 1, 32), ("page_size", 1, 100000),
                            ("timeout", 1, 3600)):
        value = getattr(args, name)
        if not low <= value <= high:
            raise EsxdiagError(f"--{name.replace('_', '-')} must be between {low:g} and {high:g}")
    if args.workers is not None and not 1 <= args.workers <= 64:
        raise EsxdiagError("--workers must be between 1 and 64")
    if args.max_query_metrics is not None and not 1 <= args.max_query_metrics <= 100000:
        raise EsxdiagError("--max-query-metrics must be between 1 and 100000")


def vcenter_urls(args: argparse.Namespace) -> list[str | None]:
    """--vcenter, else `[fleet] vcenters` in the config file, else one vCenter from env/config."""
    if args.vcenter:
        return list(dict.fromkeys(args.vcenter))
    path = (args.config or DEFAULT_CONFIG).expanduser()
    if path.exists():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError) as exc:
            raise EsxdiagError(f"{path}: cannot read config ({type(exc).__name__})") from None
        listed = parser.get("fleet", "vcenters", fallback="").replace(",", " ").split()
        if listed:
            return list(dict.fromkeys(listed))
    return [None]


def fleet_credentials(args: argparse.Namespace) -> list:
    """One Credentials per vCenter asked for (add_fleet_options), each resolved on its own."""
    urls = vcenter_urls(args)
    if args.thumbprint and len(urls) > 1:
        raise EsxdiagError("--thumbprint pins one certificate: scan one vCenter, pin each under [vcenter HOST] "
                           "in --config, or trust the CA for several")
    return [resolve_credentials(url, args.user, insecure=args.insecure, thumbprint=args.thumbprint,
                                config_path=args.config) for url in urls]


def tls_warnings(args: argparse.Namespace, targets: list) -> list[str]:
    """One warning per vCenter whose TLS certificate is not verified."""
    return [w for w in (insecure_warning(c, args.insecure, os.environ) for c in targets) if w]


def scan_options(args: argparse.Namespace):
    """add_fleet_options -> the API pass's ScanOptions (imports pyvmomi: only when a scan goes to the network)."""
    from esxdiag.collectors.fleet import Filters, ScanOptions

    filters = Filters(tuple(args.datacenter), tuple(args.cluster), tuple(args.host), tuple(args.folder), tuple(args.vm))
    return ScanOptions(window_s=args.window, filters=filters, page_size=args.page_size, in_flight=args.in_flight,
                       timeout_s=args.timeout, max_metrics=args.max_query_metrics, nic_types=args.nic_types,
                       workers=args.workers)


def host_ssh_logins(values: list[str]) -> tuple[dict[str, str], str | None]:
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


def choose(document: dict, n: int, names: list[str]) -> list[dict]:
    chosen = deep_candidates(document, n)
    for name in names:
        matches = [r for r in document["vms"] if name in (r["name"], r["moid"])]
        if not matches:
            raise EsxdiagError(f"--deep-vm {name!r}: no such VM in this scan")
        chosen += [r for r in matches if r["power_state"] == "poweredOn" and r not in chosen]
    return chosen


def run_deep(args: argparse.Namespace, document: dict, snapshot, thresholds: dict, creds: list, report_dir: Path,
             bundles_dir: Callable[[], Path], chosen: list[dict] | None = None,
             write_report: Callable[[AnalysisResult, Path], Path] | None = None) -> bool:
    """Deep-check the chosen VMs (default: ``choose`` from --deep / --deep-vm) and fold the results
    in; True when every host was reached. ``bundles_dir()`` names (and may create) the folder for
    the per-host bundles; ``write_report`` (default: write_html_report) writes each host's report."""
    from esxdiag.collectors.fleet.deep import DeepOptions, collect_groups, group_by_host  # pyvmomi, paramiko

    if not 1 <= args.deep_window <= 3600 or not 1 <= args.esxtop_delay <= 60 or not 1 <= args.deep_parallel <= 64:
        raise EsxdiagError("--deep-window 1..3600, --esxtop-delay 1..60, --deep-parallel 1..64")
    if not 1 <= args.vcenter_timeout <= 3600 or args.output_cap is not None and not 0.001 <= args.output_cap <= 65536:
        raise EsxdiagError("--vcenter-timeout 1..3600 seconds, --output-cap 0.001..65536 MiB")
    chosen = choose(document, args.deep, args.deep_vm) if chosen is None else chosen
    if not chosen:
        document["deep"] = {"hosts": [], "vms": []}
        if not args.quiet:
            print("deep check: no drop suspect to check", file=sys.stderr)
        return True
    per_host, default = host_ssh_logins(args.deep_host_ssh)
    out = bundles_dir()
    out.mkdir(parents=True, exist_ok=True)
    opts = DeepOptions(output=out, window_s=args.deep_window, esxtop_delay_s=args.esxtop_delay,
                       vcenter_timeout_s=args.vcenter_timeout,
                       output_cap_bytes=int(args.output_cap * (1 << 20)) if args.output_cap else None,
                       command_timeout_s=args.command_timeout, host_ssh=per_host, default_host_ssh=default,
                       guests=args.deep_guests, guest_ssh=args.guest_ssh, ssh_key=args.ssh_key,
                       known_hosts=args.known_hosts, accept_new_host_keys=args.accept_new_host_keys,
                       parallel_hosts=args.deep_parallel)
    groups = group_by_host(chosen)
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    say(f"deep check: {len(chosen)} VM(s) on {len(groups)} host(s), {args.deep_window:g} s window")
    progress = None if args.quiet else (lambda text: say(f"deep check: {text}"))
    groups = collect_groups(groups, {f"{c.host}:{c.port}": c for c in creds}, opts, progress)
    fold(document, snapshot, groups, thresholds, report_dir, write_report or write_html_report)
    say(f"deep bundles: {out.resolve()}")
    return all(g.error is None for g in groups)


def write_html_report(result: AnalysisResult, bundle: Path) -> Path:
    """A deep-checked host's report.html, beside its bundle."""
    path = bundle / REPORT.formats["html"].default_file
    context = RenderContext(output=path, bundle_root=bundle)
    path.write_text(REPORT.formats["html"].render(result, context), encoding="utf-8")
    return path
