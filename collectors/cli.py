"""`esxdiag collect`, `report` and `rings`: live collection from vCenter, the ESXi host and the
guest. Network libraries are imported only when one of these commands runs."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path

from esxdiag.errors import EXIT_COLLECTION, EXIT_INTERRUPTED, EXIT_OK, EsxdiagError
from esxdiag.terminal import safe_text


def register(sub, add_report_options) -> None:
    c = sub.add_parser("collect", help="collect a bundle for one VM (vCenter + ESXi host + guest)")
    _live_options(c)
    c.add_argument("-o", "--output", required=True, help="bundle directory to write")
    c.set_defaults(func=cmd_collect)

    r = sub.add_parser("report", help="collect for one VM, then analyze: report.html + terminal summary")
    _live_options(r)
    r.add_argument("--bundle", help="where to keep the bundle (default ./esxdiag-VM-TIMESTAMP)")
    add_report_options(r, config=False)
    r.set_defaults(func=cmd_report)

    g = sub.add_parser("rings", help="collect for one VM and answer: should the rx rings be raised?")
    _live_options(g)
    g.add_argument("--bundle", help="where to keep the bundle (default ./esxdiag-VM-TIMESTAMP)")
    g.add_argument("--set", action="append", default=[], metavar="RULE.KEY=VALUE", help="override a threshold")
    g.set_defaults(func=cmd_report, format="rings", output=None, fail_on=None)  # report, rings view only


def _live_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--vm", required=True, help="VM name, MOID (vm-123) or instance UUID")
    p.add_argument("--vcenter", help="vCenter or ESXi URL/host (else ESXDIAG_VCENTER, GOVC_URL, config file)")
    p.add_argument("--user", help="vCenter user (else ESXDIAG_USERNAME, GOVC_USERNAME, config); the password "
                   "comes from ESXDIAG_PASSWORD / GOVC_PASSWORD, the config file or a prompt, never argv")
    p.add_argument("--insecure", action="store_true", default=None,
                   help="do not verify vCenter's TLS certificate (explicit opt-out)")
    p.add_argument("--thumbprint", help="pin vCenter's certificate SHA-1/SHA-256 thumbprint")
    p.add_argument("--config", type=Path, help="INI file: [vcenter] url/username/password/insecure/thumbprint, "
                   "[thresholds]")
    p.add_argument("--host-ssh", metavar="USER@HOST[:PORT]",
                   help="ESXi SSH login (default root@<the VM's host>); password from ESXDIAG_HOST_PASSWORD")
    p.add_argument("--guest-ssh", metavar="USER@HOST[:PORT]",
                   help="guest SSH login (default root@<IP from VMware Tools>, Administrator on Windows; HOST may "
                   "be left out: USER@:PORT); password from ESXDIAG_GUEST_PASSWORD")
    p.add_argument("--guest-os", choices=("linux", "windows"), help="override the guest family from vCenter")
    p.add_argument("--ssh-key", type=Path, help="private key for host and guest SSH")
    p.add_argument("--known-hosts", type=Path, help="known_hosts file to trust (default ~/.ssh/known_hosts)")
    p.add_argument("--accept-new-host-keys", action="store_true",
                   help="trust unknown SSH host keys and store them in esxdiag's own known_hosts")
    p.add_argument("--no-host-ssh", action="store_true", help="do not SSH to the ESXi host")
    p.add_argument("--no-guest", action="store_true", help="do not SSH to the guest")
    p.add_argument("--command-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="give up on one host/guest command after this long (default 60; esxtop gets the window "
                   "plus a margin)")
    p.add_argument("--window", type=float, default=60.0, metavar="SECONDS",
                   help="observation window between the two counter samples (default 60)")
    p.add_argument("--esxtop-delay", type=int, default=5, metavar="SECONDS", help="esxtop sample interval")


def _options(args: argparse.Namespace, output: Path):
    from esxdiag.collectors.live import LiveOptions

    if not 1 <= args.window <= 3600:
        raise EsxdiagError("--window must be between 1 and 3600 seconds")
    if not 1 <= args.esxtop_delay <= 60:
        raise EsxdiagError("--esxtop-delay must be between 1 and 60 seconds")
    if not 1 <= args.command_timeout <= 600:
        raise EsxdiagError("--command-timeout must be between 1 and 600 seconds")
    from esxdiag.collectors.live import parse_ssh

    for flag, text in (("--host-ssh", args.host_ssh), ("--guest-ssh", args.guest_ssh)):
        try:
            parse_ssh(text, "root", "example.invalid")
        except ValueError as exc:
            raise EsxdiagError(f"{flag}: {exc}") from None
    return LiveOptions(
        vm=args.vm, output=output, window_s=args.window, esxtop_delay_s=args.esxtop_delay,
        vcenter=args.vcenter, username=args.user, insecure=args.insecure, thumbprint=args.thumbprint,
        config=args.config, host_ssh=args.host_ssh, guest_ssh=args.guest_ssh, guest_os=args.guest_os,
        ssh_key=args.ssh_key, known_hosts=args.known_hosts, accept_new_host_keys=args.accept_new_host_keys,
        command_timeout_s=args.command_timeout,
        no_host_ssh=args.no_host_ssh, no_guest=args.no_guest,
    )


def _default_bundle(vm: str) -> Path:
    from esxdiag.bundle import slug

    return Path(f"esxdiag-{slug(vm)}-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}")


def _collect(args: argparse.Namespace, output: Path):
    from esxdiag.collectors.live import collect

    return collect(_options(args, output))


def _exit(outcome, code: int) -> int:
    """130 on Ctrl-C; 3 when vCenter, the VM, the host or the guest could not be reached (the
    report is partial); else the report's own code."""
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_COLLECTION if outcome.incomplete else code


def cmd_collect(args: argparse.Namespace) -> int:
    outcome = _collect(args, Path(args.output))
    print(safe_text(f"bundle: {outcome.bundle.resolve()}"))
    return _exit(outcome, EXIT_OK)


def cmd_report(args: argparse.Namespace) -> int:
    """`report` and `rings`: collect, analyze, render in args.format."""
    from esxdiag.cli import emit_report
    from esxdiag.config import load_thresholds
    from esxdiag.engine import analyze

    thresholds = load_thresholds(args.config, args.set)  # bad --set fails before any collection
    outcome = _collect(args, Path(args.bundle) if args.bundle else _default_bundle(args.vm))
    code = emit_report(analyze(outcome.bundle, thresholds), args, outcome.bundle)
    print(safe_text(f"bundle: {outcome.bundle.resolve()}"))
    return _exit(outcome, code)
