"""`esxdiag collect`, `report` and `rings`: live collection from vCenter, the ESXi host and the
guest. Network libraries are imported only when one of these commands runs."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from esxdiag.bundle import MANIFEST, create_unique, remove_if_empty, slug, stamp
from esxdiag.cli.output import add_report_options, emit, fail_on_code
from esxdiag.cli.ssh_options import add_ssh_trust_options, add_time_limit_options
from esxdiag.collectors.credentials import DEFAULT_CONFIG
from esxdiag.config import load_thresholds
from esxdiag.errors import EXIT_COLLECTION, EXIT_INTERRUPTED, EXIT_OK, EsxdiagError
from esxdiag.reports.formats import REPORT, RINGS, RenderContext
from esxdiag.result import SEVERITIES
from esxdiag.terminal import safe_text


def register(sub) -> None:
    c = sub.add_parser("collect", help="collect a bundle for one VM (vCenter + ESXi host + guest)")
    _live_options(c)
    c.add_argument("-o", "--output", help="bundle directory to write (default: a new ./esxdiag-VM-TIMESTAMP, "
                   "-2, -3 ... when runs start in the same second)")
    c.set_defaults(func=cmd_collect)

    r = sub.add_parser("report", help="collect for one VM, then analyze: report.html + terminal summary")
    _live_options(r)
    r.add_argument("--bundle", help="where to keep the bundle (default: a new ./esxdiag-VM-TIMESTAMP[-N]; the report "
                   "goes inside it)")
    add_report_options(r, config=False, output_help="output file (default: html report.html inside the bundle "
                       "folder, so a failed run never replaces the last good report; json, text, rings: stdout)")
    r.set_defaults(func=cmd_report)

    g = sub.add_parser("rings", help="collect for one VM and answer: should the rx rings be raised?")
    _live_options(g)
    g.add_argument("--bundle", help="where to keep the bundle (default: a new ./esxdiag-VM-TIMESTAMP[-N])")
    g.add_argument("--format", choices=RINGS.choices(), default=RINGS.default,
                   help="text: the per-vNIC ring verdicts with their numbers and commands; json: the full "
                   "report document (default: %(default)s)")
    g.add_argument("-o", "--output", help="write the answer to this file (default: stdout)")
    g.add_argument("--fail-on", choices=SEVERITIES, help="exit 1 when a finding of this severity or worse exists")
    g.add_argument("--set", action="append", default=[], metavar="RULE.KEY=VALUE", help="override a threshold")
    g.set_defaults(func=cmd_report, rings=True)


def _live_options(p: argparse.ArgumentParser) -> None:

    p.add_argument("--vm", required=True, action="append",
                   help="VM name, inventory path (/DC/vm/folder/name), MOID (vm-123) or instance UUID; once")
    p.add_argument("--vcenter", help="vCenter or ESXi URL/host (default: $ESXDIAG_VCENTER, then $GOVC_URL, then "
                   "url= in the config file)")
    p.add_argument("--user", help="vCenter user (default: $ESXDIAG_USERNAME, $GOVC_USERNAME, then the config "
                   "file); the password comes from $ESXDIAG_PASSWORD / $GOVC_PASSWORD, the config file or a prompt, "
                   "never argv")
    p.add_argument("--insecure", action="store_true", default=None,
                   help="do not verify vCenter's TLS certificate (also $ESXDIAG_INSECURE=1 or $GOVC_INSECURE=1; a "
                   "warning is printed whenever verification is off)")
    p.add_argument("--thumbprint", help="pin vCenter's certificate SHA-1/SHA-256 thumbprint (default: "
                   "$ESXDIAG_THUMBPRINT)")
    p.add_argument("--config", type=Path, help=f"INI file: [vcenter] url/username/password/insecure/thumbprint, "
                   f"[thresholds] (default: {DEFAULT_CONFIG})")
    p.add_argument("--host-ssh", metavar="USER@HOST[:PORT]",
                   help="ESXi SSH login (default: root@<the VM's host>:22); password from $ESXDIAG_HOST_PASSWORD, "
                   "else a key, else a prompt on a terminal")
    p.add_argument("--guest-ssh", metavar="USER@HOST[:PORT]",
                   help="guest SSH login (default: root@<IP from VMware Tools>:22, user $ESXDIAG_GUEST_USER or "
                   "Administrator on Windows; HOST may be left out: USER@:PORT); password from "
                   "$ESXDIAG_GUEST_PASSWORD, else a key, else a prompt on a terminal")
    p.add_argument("--guest-os", choices=("linux", "windows"), help="override the guest family from vCenter")
    add_ssh_trust_options(p)
    p.add_argument("--no-host-ssh", action="store_true",
                   help="do not SSH to the ESXi host (CPU from vCenter's 20 s statistics; no ring counters)")
    p.add_argument("--no-guest", action="store_true", help="do not SSH to the guest")
    add_time_limit_options(p)
    p.add_argument("--window", type=float, default=60.0, metavar="SECONDS",
                   help="observation window between the two counter samples; without host and guest SSH, "
                   "how far back vCenter's statistics are read (default: %(default)g)")
    p.add_argument("--esxtop-delay", type=int, default=5, metavar="SECONDS",
                   help="esxtop sample interval (default: %(default)s)")


def _options(args: argparse.Namespace, output: Path):
    from esxdiag.collectors.live import LiveOptions, parse_ssh  # the SSH collection loads only when it runs
    from esxdiag.collectors.sampler import SamplerOptions
    from esxdiag.collectors.terminal import terminal_prompt
    if len(args.vm) > 1:
        raise EsxdiagError(f"--vm given {len(args.vm)} times ({', '.join(map(repr, args.vm))}): one VM per run")
    if not 1 <= args.window <= 3600:
        raise EsxdiagError("--window must be between 1 and 3600 seconds")
    if not 1 <= args.esxtop_delay <= 60:
        raise EsxdiagError("--esxtop-delay must be between 1 and 60 seconds")
    if not 1 <= args.command_timeout <= 600:
        raise EsxdiagError("--command-timeout must be between 1 and 600 seconds")
    if not 1 <= args.vcenter_timeout <= 3600:
        raise EsxdiagError("--vcenter-timeout must be between 1 and 3600 seconds")
    if args.output_cap is not None and not 0.001 <= args.output_cap <= 65536:
        raise EsxdiagError("--output-cap must be between 0.001 and 65536 MiB")
    for flag, text in (("--host-ssh", args.host_ssh), ("--guest-ssh", args.guest_ssh)):
        try:
            parse_ssh(text, "root", "example.invalid")
        except ValueError as exc:
            raise EsxdiagError(f"{flag}: {exc}") from None
    sampling = SamplerOptions(
        window_s=args.window, esxtop_delay_s=args.esxtop_delay, host_ssh=args.host_ssh, guest_ssh=args.guest_ssh,
        guest_os=args.guest_os, ssh_key=args.ssh_key, known_hosts=args.known_hosts,
        accept_new_host_keys=args.accept_new_host_keys, command_timeout_s=args.command_timeout,
        vcenter_timeout_s=args.vcenter_timeout,
        output_cap_bytes=int(args.output_cap * (1 << 20)) if args.output_cap else None,
        no_host_ssh=args.no_host_ssh, no_guest=args.no_guest, insecure_flag=args.insecure,
        env=dict(os.environ), prompt=terminal_prompt())
    return LiveOptions(vm=args.vm[0], output=output, sampling=sampling, vcenter=args.vcenter, username=args.user,
                       insecure=args.insecure, thumbprint=args.thumbprint, config=args.config)


def default_bundle(vm: str, parent: Path = Path(".")) -> Path:
    """A new folder esxdiag-VM-TIME (or -2, -3 ...), created here: never one another run writes into."""
    return create_unique(parent, f"esxdiag-{slug(vm)}-{stamp()}")


def _collect(args: argparse.Namespace, output: str | None):
    """Collect into ``output``, else into a new default folder, created once the options are known
    good and removed again when the run stops before writing anything into it."""
    from esxdiag.collectors.live import collect
    opts = _options(args, Path(output or "."))
    if output:
        return collect(opts)
    bundle = default_bundle(args.vm[0])
    try:
        outcome = collect(dataclasses.replace(opts, output=bundle))
    except BaseException:
        remove_if_empty(bundle)
        raise
    if outcome.fatal and {p.name for p in bundle.iterdir()} == {MANIFEST}:  # a mistyped VM name: nothing read
        (bundle / MANIFEST).unlink()
        remove_if_empty(bundle)
        return dataclasses.replace(outcome, bundle=None)
    return outcome


def _say_bundle(outcome) -> None:
    if outcome.bundle is None:
        print("esxdiag: no bundle kept: nothing was collected before the error above", file=sys.stderr)
    else:
        print(safe_text(f"bundle: {outcome.bundle.resolve()}"))


def _exit(outcome, code: int) -> int:
    """130 on Ctrl-C; 3 when vCenter, the VM, the host or the guest could not be reached or a
    connection was lost (the report is partial); else the report's own code."""
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_COLLECTION if outcome.incomplete else code


def cmd_collect(args: argparse.Namespace) -> int:
    outcome = _collect(args, args.output)
    _say_bundle(outcome)
    return _exit(outcome, EXIT_OK)


def cmd_report(args: argparse.Namespace) -> int:
    """`report` and `rings`: collect, analyze, render. When vCenter, the VM lookup or its power
    state stops the run there is no report (it would read like one of a VM with nothing wrong):
    one line, the partial bundle's path, exit 3."""
    from esxdiag.engine import analyze  # the per-VM analysis loads only for the commands that run it
    thresholds = load_thresholds(args.config, args.set)  # bad --set fails before any collection
    outcome = _collect(args, args.bundle)
    if outcome.fatal or outcome.interrupted:
        print("esxdiag: no report written (the error above stopped the run)", file=sys.stderr)
        _say_bundle(outcome)
        return _exit(outcome, EXIT_COLLECTION)
    table = RINGS if getattr(args, "rings", False) else REPORT
    output = args.output
    if table.formats[args.format].default_file and not output:  # beside its bundle: never over the last good one
        output = outcome.bundle / table.formats[args.format].default_file
    result = analyze(outcome.bundle, thresholds)
    emit(table, args.format, result, output, RenderContext(bundle_root=outcome.bundle, verbose=getattr(args, "verbose", False)))
    print(safe_text(f"bundle: {outcome.bundle.resolve()}"))
    return _exit(outcome, fail_on_code(args.fail_on, result.worst_severity()))
