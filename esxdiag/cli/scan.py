"""`esxdiag scan` and `esxdiag history`. pyvmomi is imported only when a scan goes to the network;
`scan --snapshot FILE` re-analyses a saved snapshot offline."""

from __future__ import annotations

import argparse
import configparser
import sys
from datetime import datetime, timezone
from pathlib import Path

from esxdiag.cli.deep import add_deep_options, run_deep
from esxdiag.cli.output import emit, fail_on_code
from esxdiag.collectors.credentials import DEFAULT_CONFIG, resolve_credentials
from esxdiag.config import load_thresholds
from esxdiag.errors import EXIT_COLLECTION, EXIT_FINDINGS, EXIT_OK, EsxdiagError
from esxdiag.fleet.analysis import build_report, tripped, worst_severity
from esxdiag.fleet.history import changes_and_record, default_path, vm_history
from esxdiag.fleet.snapshot import load_snapshot, snapshot_from_dict, write_snapshot
from esxdiag.reports.formats import FLEET, HISTORY, RenderContext
from esxdiag.result import SEVERITIES
from esxdiag.terminal import safe_text


def register(sub) -> None:
    s = sub.add_parser("scan", help="rank every VM of one or more vCenters by receive drops and CPU starvation")
    g = s.add_argument_group("vCenter (password from ESXDIAG_PASSWORD / GOVC_PASSWORD / config / prompt)")
    g.add_argument("--vcenter", action="append", default=[], metavar="URL",
                   help="vCenter URL or host; repeat for several (else [fleet] vcenters= in --config, else "
                   "ESXDIAG_VCENTER / GOVC_URL / [vcenter] url=)")
    g.add_argument("--user", help="user name for every vCenter (else ESXDIAG_USERNAME, GOVC_USERNAME, config)")
    g.add_argument("--insecure", action="store_true", default=None, help="do not verify TLS (explicit opt-out)")
    g.add_argument("--thumbprint", help="pin the certificate's SHA-1/SHA-256 (one vCenter only)")
    g.add_argument("--config", type=Path, help="INI file: [vcenter], [fleet] vcenters = URL URL ..., [thresholds]")
    f = s.add_argument_group("which VMs (repeatable; a VM must match every kind given)")
    for flag, what in (("--datacenter", "datacenter name"), ("--cluster", "cluster name"), ("--host", "ESXi host name"),
                       ("--folder", "VM folder path, e.g. /DC0/vm/prod"), ("--vm", "VM name glob, e.g. 'web*'")):
        f.add_argument(flag, action="append", default=[], help=what)
    s.add_argument("--window", type=float, default=300.0, metavar="SECONDS",
                   help="the last SECONDS of realtime (20 s) samples (default 300, max 3600)")
    s.add_argument("--snapshot", type=Path, metavar="FILE", help="analyse this saved snapshot instead of scanning")
    s.add_argument("--save-snapshot", type=Path, metavar="FILE",
                   help="where the scan's snapshot is written first (default ./esxdiag-scan-TIMESTAMP.json)")
    s.add_argument("--format", choices=FLEET.choices(), default=FLEET.default)
    s.add_argument("-o", "--output", help="report file (html default ./fleet-report.html; others default stdout)")
    s.add_argument("--top", type=int, default=10, metavar="N", help="rows in the terminal table (default 10)")
    s.add_argument("--fail-on", choices=SEVERITIES, help="exit 1 when a VM's class is this severe or worse")
    s.add_argument("--set", action="append", default=[], metavar="RULE.KEY=VALUE", help="override a threshold")
    s.add_argument("--history", type=Path, metavar="PATH", help="SQLite scan history (default: user data dir)")
    s.add_argument("--no-history", action="store_true", help="do not read or append the scan history")
    s.add_argument("--in-flight", type=int, default=4, metavar="N", help="QueryPerf requests in flight per vCenter")
    s.add_argument("--page-size", type=int, default=1000, metavar="N", help="objects per inventory page")
    s.add_argument("--workers", type=int, metavar="N",
                   help="processes that read vNICs and perf counters on the scan's session (default: one per "
                        "core, at most 4, when the inventory has more than one --page-size page; else 1); "
                        "pyvmomi's XML decoding is CPU-bound")
    s.add_argument("--max-query-metrics", type=int, metavar="N",
                   help="metrics per QueryPerf (default: vCenter's config.vpxd.stats.maxQueryMetrics, else 64)")
    s.add_argument("--nic-types", choices=("all", "drops"), default="all",
                   help="read every VM's vNIC types (default; finds e1000s everywhere) or only those of VMs with "
                   "receive drops (drops: about 5x less to parse on big fleets)")
    s.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="per-request timeout")
    s.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_deep_options(s)
    s.set_defaults(func=cmd_scan)

    h = sub.add_parser("history", help="a VM's past fleet-scan classes and rates")
    h.add_argument("vm", help="VM name or MOID")
    h.add_argument("--history", type=Path, metavar="PATH", help="SQLite scan history (default: user data dir)")
    h.add_argument("--limit", type=int, default=20)
    h.add_argument("--format", choices=HISTORY.choices(), default=HISTORY.default)
    h.set_defaults(func=cmd_history)


def _check(args: argparse.Namespace) -> None:
    for name, low, high in (("window", 20, 3600), ("in_flight", 1, 32), ("page_size", 1, 100000),
                            ("top", 0, 100000), ("timeout", 1, 3600)):
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


def _credentials(args: argparse.Namespace):
    urls = vcenter_urls(args)
    if args.thumbprint and len(urls) > 1:
        raise EsxdiagError("--thumbprint pins one certificate: scan one vCenter, pin each under [vcenter HOST] "
                           "in --config, or trust the CA for several")
    return [resolve_credentials(url, args.user, insecure=args.insecure, thumbprint=args.thumbprint,
                                config_path=args.config) for url in urls]


def _progress(quiet: bool):
    """VMs done of total: one updating line on a terminal, else a line at each quarter."""
    if quiet:
        return None
    tty = sys.stderr.isatty()
    shown = [-1]

    def show(done: int, total: int) -> None:
        if tty:
            print(f"\rscanning: {done} of {total} VMs", end="", file=sys.stderr, flush=True)
        elif total and done * 4 // total > shown[0]:
            shown[0] = done * 4 // total
            print(f"scanning: {done} of {total} VMs", file=sys.stderr, flush=True)
    return show


def _scan(args: argparse.Namespace, targets: list) -> tuple[dict, Path]:
    from esxdiag.collectors.fleet import Filters, ScanOptions, scan  # pyvmomi: only when a scan goes to the network

    filters = Filters(tuple(args.datacenter), tuple(args.cluster), tuple(args.host), tuple(args.folder), tuple(args.vm))
    options = ScanOptions(window_s=args.window, filters=filters, page_size=args.page_size, in_flight=args.in_flight,
                          timeout_s=args.timeout, max_metrics=args.max_query_metrics, nic_types=args.nic_types,
                          workers=args.workers)
    data = scan(targets, options, _progress(args.quiet))
    if not args.quiet:
        total_requests = sum(v["requests"] for v in data["vcenters"])
        print(f"\rscanned {len(data['vms'])} VMs in {len(targets)} vCenter(s), {total_requests} requests",
              file=sys.stderr)
    path = args.save_snapshot or Path(f"esxdiag-scan-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.json")
    return data, write_snapshot(data, path)


def cmd_scan(args: argparse.Namespace) -> int:
    _check(args)
    thresholds = load_thresholds(args.config, args.set)  # a bad --set fails before any network
    deep = bool(args.deep or args.deep_vm)
    if deep and args.snapshot:
        raise EsxdiagError("--deep/--deep-vm need a live scan (the SSH sampling happens now), not --snapshot")
    targets = []
    if args.snapshot:
        snapshot, path = load_snapshot(args.snapshot), args.snapshot
    else:
        targets = _credentials(args)
        data, path = _scan(args, targets)
        snapshot = snapshot_from_dict(data, str(path))
        print(f"snapshot: {path.resolve()}", file=sys.stderr)
    typos = snapshot.unmatched_everywhere()
    if typos:
        raise EsxdiagError(f"{', '.join(typos)}: matched nothing in the scanned vCenter(s) (snapshot {path})")
    document = build_report(snapshot, thresholds, str(path))
    reached = True
    if deep:
        report_dir = Path(args.output).parent if args.output else Path(".")
        reached = run_deep(args, document, snapshot, thresholds, targets, report_dir)
    if not args.no_history and not args.snapshot:
        document["changes"] = changes_and_record(args.history or default_path(), document)
    emit(FLEET, args.format, document, args.output, RenderContext(top=args.top))
    code = fail_on_code(args.fail_on, worst_severity(document))
    if code == EXIT_FINDINGS:
        print(tripped_words(document, args.fail_on), file=sys.stderr)
    return EXIT_COLLECTION if document["not_scanned"] or not reached else code


def tripped_words(document: dict, severity: str, shown: int = 20) -> str:
    """Which VMs tripped --fail-on, one line each (the first `shown`)."""
    rows = tripped(document, severity)
    lines = [f"--fail-on {severity}: {len(rows)} VM(s) at {severity} or worse:"]
    for r in rows[:shown]:
        deep = (r.get("deep") or {}).get("worst_severity")
        extra = f", deep check's worst finding {deep}" if deep else ""
        lines.append(safe_text(f"  {r['name']} ({r['vcenter']}): {r['class']}, {r['severity'] or 'no severity'}"
                               f"{extra}"))
    if len(rows) > shown:
        lines.append(f"  ... and {len(rows) - shown} more (the report lists them all)")
    return "\n".join(lines)


def cmd_history(args: argparse.Namespace) -> int:
    rows = vm_history(args.history or default_path(), args.vm, args.limit)
    emit(HISTORY, args.format, {"vm": args.vm, "rows": rows}, None)
    return EXIT_OK
