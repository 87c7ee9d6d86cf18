"""`esxdiag scan --deep N / --deep-vm NAME`: options, choosing the VMs, running the host-grouped
collection and folding it into the fleet report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from esxdiag.collectors.sampler import parse_ssh
from esxdiag.errors import EsxdiagError
from esxdiag.fleet.analysis import deep_candidates
from esxdiag.fleet.deep import fold
from esxdiag.reports.formats import REPORT, RenderContext
from esxdiag.result import AnalysisResult


def add_deep_options(p: argparse.ArgumentParser) -> None:
    d = p.add_argument_group("deep check: the per-VM ring diagnosis over SSH for the worst suspects, host by host")
    d.add_argument("--deep", type=int, default=0, metavar="N",
                   help="deep-check the N worst drop suspects, by severity then score (default: %(default)s)")
    d.add_argument("--deep-vm", action="append", default=[], metavar="NAME", help="deep-check this VM too (repeat)")
    d.add_argument("--deep-window", type=float, default=60.0, metavar="SECONDS",
                   help="window between the two counter samples (default: %(default)g)")
    d.add_argument("--esxtop-delay", type=int, default=5, metavar="SECONDS",
                   help="esxtop interval (default: %(default)s)")
    d.add_argument("--deep-host-ssh", action="append", default=[], metavar="[HOST=]USER@ADDR[:PORT]",
                   help="SSH login for ESXi host HOST (without HOST=: every host); default root@<host name>; "
                   "password from $ESXDIAG_HOST_PASSWORD")
    d.add_argument("--deep-guests", action="store_true", help="also sample each suspect's guest over SSH")
    d.add_argument("--guest-ssh", metavar="USER@[HOST][:PORT]",
                   help="guest login (default: $ESXDIAG_GUEST_USER, else root / Administrator on Windows, @ the IP "
                   "from VMware Tools); password from $ESXDIAG_GUEST_PASSWORD")
    d.add_argument("--ssh-key", type=Path, help="private key for host and guest SSH (default: the keys in ssh-agent "
                   "($SSH_AUTH_SOCK), then ~/.ssh/id_*)")
    d.add_argument("--known-hosts", type=Path, help="known_hosts file to trust (default: ~/.ssh/known_hosts); "
                   "esxdiag's own file ($ESXDIAG_KNOWN_HOSTS, default ~/.config/esxdiag/known_hosts) is read too")
    d.add_argument("--accept-new-host-keys", action="store_true",
                   help="trust unknown SSH host keys and store them in esxdiag's own known_hosts")
    d.add_argument("--deep-parallel", type=int, default=4, metavar="N",
                   help="hosts sampled at once (default: %(default)s)")
    d.add_argument("--command-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="give up on one host/guest command after this long (default: %(default)g)")
    d.add_argument("--vcenter-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="deep check: overall limit for each host's vCenter login and VM lookups, and again for its "
                   "performance query (default: %(default)g), as for report")
    d.add_argument("--output-cap", type=float, metavar="MIB",
                   help="deep check: cap every host/guest command's output at MIB mebibytes (default: per command), "
                   "as for report")
    d.add_argument("--deep-dir", type=Path, metavar="DIR",
                   help="where the per-host bundles go (default: deep/ in the scan's own folder; with -o, a new "
                   "esxdiag-deep-TIMESTAMP[-N] beside the report)")


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
