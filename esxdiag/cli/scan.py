"""`esxdiag scan` and `esxdiag history`. pyvmomi is imported only when a scan goes to the network;
`scan --snapshot FILE` re-analyses a saved snapshot offline."""

from __future__ import annotations

import argparse
import fnmatch
import shlex
import sys
import time
from pathlib import Path

from esxdiag.bundle import create_unique, stamp
from esxdiag.cli.deep import add_deep_options
from esxdiag.cli.output import emit, fail_on_code
from esxdiag.collectors.credentials import DEFAULT_CONFIG
from esxdiag.config import load_thresholds
from esxdiag.errors import EXIT_COLLECTION, EXIT_FINDINGS, EXIT_OK, EsxdiagError
from esxdiag.fleet.analysis import tripped, worst_severity
from esxdiag.fleet.history import HistoryError, default_path, entry_of_report, record_entry, vm_history
from esxdiag.fleet.model import FleetReport
from esxdiag.fleet.snapshot import Snapshot, load_snapshot
from esxdiag.reports.fleet_text import headline
from esxdiag.reports.formats import FLEET, HISTORY, RenderContext
from esxdiag.result import SEVERITIES
from esxdiag.scanning.deep import DeepPlan, choose
from esxdiag.scanning.options import (check_fleet_options, fleet_credentials, proof_max_age, scan_options,
                                      tls_warnings)
from esxdiag.scanning.proofs import proofs_in_history
from esxdiag.scanning.run import Proofs, run_scan
from esxdiag.terminal import safe_text

SNAPSHOT_FILE = "snapshot.json"  # in the scan's own folder
HISTORY_HELP = "SQLite scan history (default: %s, in the user data directory)"
FILTER_FLAGS = {"datacenters": "--datacenter", "clusters": "--cluster", "hosts": "--host", "folders": "--folder",
                "names": "--vm"}


def history_default_help() -> str:
    """The default history file as --help shows it: in the user data directory (~ for the home)."""
    path, home = str(default_path()), str(Path.home())
    shown = "~" + path[len(home):] if home != "/" and path.startswith(home + "/") else path
    return shown.replace("%", "%%")  # argparse %-formats help text


def register(sub) -> None:
    s = sub.add_parser("scan", help="rank every VM of one or more vCenters by receive drops and CPU starvation")
    add_fleet_options(s)
    s.add_argument("--snapshot", type=Path, metavar="FILE",
                   help="analyse this saved snapshot instead of scanning (no new snapshot is written)")
    s.add_argument("--save-snapshot", type=Path, metavar="FILE",
                   help="where the scan's snapshot is written first (default: snapshot.json in the scan's own new "
                   "folder ./esxdiag-scan-TIMESTAMP[-N]/; with -o, a new esxdiag-scan-TIMESTAMP[-N].json beside it)")
    s.add_argument("--format", choices=FLEET.choices(), default=FLEET.default, help="(default: %(default)s)")
    s.add_argument("-o", "--output", help="report file (default: html fleet-report.html in the scan's own new "
                   "folder ./esxdiag-scan-TIMESTAMP[-N]/, so a failed scan never replaces a report; others: stdout)")
    s.add_argument("--top", type=int, default=10, metavar="N", help="rows in the terminal table (default: %(default)s)")
    s.add_argument("--fail-on", choices=SEVERITIES, help="exit 1 when a VM's class is this severe or worse")
    s.add_argument("--history", type=Path, metavar="PATH", help=HISTORY_HELP % history_default_help())
    s.add_argument("--no-history", action="store_true", help="do not read or append the scan history")
    s.add_argument("--quiet", action="store_true",
                   help="one line (the report's path, or what was not scanned) or none: no progress, no summary")
    s.set_defaults(func=cmd_scan)

    h = sub.add_parser("history", help="a VM's past fleet-scan classes and rates")
    h.add_argument("vm", help="VM name or MOID")
    h.add_argument("--history", type=Path, metavar="PATH", help=HISTORY_HELP % history_default_help())
    h.add_argument("--limit", type=int, default=20, metavar="N", help="the newest N results (default: %(default)s)")
    h.add_argument("--format", choices=HISTORY.choices(), default=HISTORY.default, help="(default: %(default)s)")
    h.set_defaults(func=cmd_history)


def add_fleet_options(s: argparse.ArgumentParser) -> None:
    """What `scan` and `serve` share: the vCenters and their logins, which VMs, the window, the
    thresholds, the API pass's tuning and the deep check."""
    g = s.add_argument_group("vCenter (password from ESXDIAG_PASSWORD / GOVC_PASSWORD / config / prompt)")
    g.add_argument("--vcenter", action="append", default=[], metavar="URL",
                   help="vCenter URL or host; repeat for several (else [fleet] vcenters= in --config, else "
                   "ESXDIAG_VCENTER / GOVC_URL / [vcenter] url=)")
    g.add_argument("--user", help="user name for every vCenter (else ESXDIAG_USERNAME, GOVC_USERNAME, config)")
    g.add_argument("--insecure", action="store_true", default=None,
                   help="do not verify TLS (explicit opt-out; also $ESXDIAG_INSECURE=1 or $GOVC_INSECURE=1, or "
                   "insecure = yes under [vcenter HOST] in the config file)")
    g.add_argument("--thumbprint", help="pin the certificate's SHA-1/SHA-256 thumbprint, one vCenter only (default: "
                   "thumbprint = under [vcenter HOST] in the config file, else $ESXDIAG_THUMBPRINT)")
    g.add_argument("--config", type=Path, help="INI file: [vcenter], [vcenter HOST], [fleet] vcenters = URL URL ..., "
                   f"[thresholds] (default: {DEFAULT_CONFIG})")
    f = s.add_argument_group("which VMs (repeatable; a VM must match every kind given)")
    for flag, what in (("--datacenter", "datacenter name"), ("--cluster", "cluster name"), ("--host", "ESXi host name"),
                       ("--folder", "VM folder path, e.g. /DC0/vm/prod"), ("--vm", "VM name glob, e.g. 'web*'")):
        f.add_argument(flag, action="append", default=[], help=what)
    s.add_argument("--window", type=float, default=300.0, metavar="SECONDS",
                   help="the last SECONDS of realtime (20 s) samples (default: %(default)g, max 3600)")
    s.add_argument("--set", action="append", default=[], metavar="RULE.KEY=VALUE", help="override a threshold")
    s.add_argument("--in-flight", type=int, default=4, metavar="N",
                   help="QueryPerf requests in flight per vCenter (default: %(default)s)")
    s.add_argument("--page-size", type=int, default=1000, metavar="N",
                   help="objects per inventory page (default: %(default)s)")
    s.add_argument("--workers", type=int, metavar="N",
                   help="processes that read vNICs and perf counters on the scan's sessions, shared by the "
                        "vCenters (default: one per core, at most 4, for the pages from the second on when an "
                        "inventory has more than two --page-size pages; else 1)")
    s.add_argument("--max-query-metrics", type=int, metavar="N",
                   help="at most N metrics (entities x counters) per QueryPerf, realtime or historical (default: "
                        "realtime queries 256 entities, historical ones vCenter's config.vpxd.stats.maxQueryMetrics, "
                        "else 64)")
    s.add_argument("--nic-types", choices=("all", "drops"), default="all",
                   help="all: read every VM's vNIC types (finds e1000s everywhere); drops: only those of VMs with "
                   "receive drops (about 5x less to parse on big fleets) (default: %(default)s)")
    s.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="per-request timeout: each SOAP call's whole answer, read and decoded, within this "
                        "(default: %(default)g)")
    add_deep_options(s)
    s.add_argument("--proof-max-age", type=float, metavar="SECONDS",
                   help="a VM whose class a deep check proved (ring exhaustion, CPU first, drops elsewhere...) keeps "
                   "it in later scans (read from the history) while the check is younger than SECONDS and its "
                   "vCenter drops go on; a scan that cannot read its counters keeps it (default: twice serve's "
                   f"--deep-recheck, {proof_max_age(None):g})")


def _check(args: argparse.Namespace) -> None:
    if not 0 <= args.top <= 100000:
        raise EsxdiagError("--top must be between 0 and 100000")
    check_fleet_options(args)


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


def _folder(args: argparse.Namespace, live: bool, deep: bool) -> Path | None:
    """This scan's own new folder, esxdiag-scan-TIME[-N], when something has no other place: the
    report (a format written to a file, without -o), the snapshot (without --save-snapshot) or the
    deep-check bundles (without --deep-dir). Never one another scan wrote or writes into. Beside
    -o only when -o names a regular file: never beside /dev/null, a FIFO or a terminal."""
    if args.output and _regular_file(Path(args.output)):
        return None
    report = not args.output and FLEET.formats[args.format].default_file
    if report or (live and not args.save_snapshot) or (deep and not args.deep_dir):
        return create_unique(Path("."), f"esxdiag-scan-{stamp()}")
    return None


def _regular_file(path: Path) -> bool:
    """A regular file, or a name for one to be made."""
    return path.is_file() or not path.exists()


def _snapshot_path(args: argparse.Namespace, folder: Path | None) -> Path:
    """--save-snapshot, else snapshot.json in the scan's folder, else a new esxdiag-scan-TIME[-N].json beside -o."""
    if args.save_snapshot:
        return args.save_snapshot
    if folder is not None:
        return folder / SNAPSHOT_FILE
    return create_unique(Path(args.output).parent, f"esxdiag-scan-{stamp()}", ".json", directory=False)


def check_filters(snapshot: Snapshot, path: Path) -> None:
    """Exit 2 naming each filter that matched nothing in the vCenters scanned: a place that names
    nothing, a --vm glob that matches no VM, or filters that match no VM together."""
    typos = snapshot.unmatched_everywhere()
    if typos:
        raise EsxdiagError(f"{', '.join(typos)}: matched nothing in the scanned vCenter(s) (snapshot {path})")
    if not any(v.status == "scanned" for v in snapshot.vcenters):
        return  # nothing was looked at: the scan failed (exit 3), which says nothing about the filters
    given = [f"{FILTER_FLAGS.get(kind, kind)} {shlex.quote(value)}" for kind, values in snapshot.filters.items()
             for value in values]
    others = [g for g in given if not g.startswith("--vm ")]
    globs = [f"--vm {shlex.quote(g)}" for g in snapshot.filters.get("names", [])
             if not any(fnmatch.fnmatchcase(vm.name, g) for vm in snapshot.vms)]
    if globs:
        also = f" with {' '.join(others)}" if others else ""
        raise EsxdiagError(f"{', '.join(globs)}: matched no VM{also} in the scanned vCenter(s) (snapshot {path})")
    if given and not snapshot.vms:
        together = " together" if len(given) > 1 else ""
        raise EsxdiagError(f"{' '.join(given)}: matched no VM{together} in the scanned vCenter(s) (snapshot {path})")


def _deep_dir(args: argparse.Namespace, folder: Path | None, report_dir: Path) -> Path:
    """Where the deep-check bundles go (asked when the first is needed)."""
    if args.deep_dir:
        return args.deep_dir
    if folder is not None:
        return folder / "deep"
    return create_unique(report_dir, f"esxdiag-deep-{stamp()}")


def _say(document: dict, written: Path | None, quiet: bool) -> None:
    """--quiet: one line (the report's path, or what was not scanned) or none. Otherwise the terminal
    summary (printed with the report) already leads with what was not scanned, unless the report
    went to stdout: then that is said on stderr."""
    line = headline(document)
    if line and (quiet or written is None):
        where = f" (report: {written.resolve()})" if written else ""
        print(safe_text(f"esxdiag: {line}{where}"), file=sys.stderr)
    elif quiet and written is not None:
        print(safe_text(f"report: {written.resolve()}"))


def cmd_scan(args: argparse.Namespace) -> int:
    _check(args)
    thresholds = load_thresholds(args.config, args.set)  # a bad --set fails before any network
    deep = bool(args.deep or args.deep_vm)
    if deep and args.snapshot:
        raise EsxdiagError("--deep/--deep-vm need a live scan (the SSH sampling happens now), not --snapshot")
    place: dict = {}  # this scan's own folder, once known (_folder)
    if args.snapshot:
        saved, targets = (load_snapshot(args.snapshot), args.snapshot), []
    else:
        saved, targets = None, fleet_credentials(args)
        for warning in tls_warnings(args, targets) if not args.quiet else ():  # --quiet: one line or none
            print(safe_text(f"esxdiag: {warning}"), file=sys.stderr)
    history = None if args.no_history or args.snapshot else (args.history or default_path())
    max_age = proof_max_age(args.proof_max_age)
    proofs = Proofs(proofs_in_history(history, [f"{c.host}:{c.port}" for c in targets], time.time(), max_age),
                    max_age) if history else None

    def snapshot_path(data: dict) -> Path:
        if not args.quiet:
            requests = sum(v["requests"] for v in data["vcenters"])
            print(f"\rscanned {len(data['vms'])} VMs in {len(targets)} vCenter(s), {requests} requests",
                  file=sys.stderr)
        place["folder"] = _folder(args, live=True, deep=deep)
        return _snapshot_path(args, place["folder"])  # written before any analysis

    def on_snapshot(snapshot: Snapshot, path: Path) -> None:
        if not args.quiet and not saved:
            print(safe_text(f"snapshot: {path.resolve()}"), file=sys.stderr)
        check_filters(snapshot, path)
        if saved:
            place["folder"] = _folder(args, live=False, deep=False)

    def output() -> Path | None:
        default_file = FLEET.formats[args.format].default_file
        folder = place["folder"]
        return Path(args.output) if args.output else (folder / default_file if folder and default_file else None)

    def report_dir() -> Path:  # deep links are relative to it
        return output().parent if output() else (place["folder"] or Path("."))

    plan = DeepPlan(args, lambda report: choose(report, args.deep, args.deep_vm), report_dir,
                    lambda: _deep_dir(args, place["folder"], report_dir())) if deep else None
    scanned = run_scan(targets, None if saved else scan_options(args), thresholds, snapshot_path, saved=saved,
                       progress=_progress(args.quiet), on_snapshot=on_snapshot, deep=plan, proofs=proofs,
                       record=(lambda report, retired: record_entry(history, entry_of_report(report), retired))
                       if history else None)
    if scanned.history_error:
        raise HistoryError(scanned.history_error)
    report = scanned.report
    if report is None:
        raise EsxdiagError("the scan was stopped before any vCenter was scanned")
    document = report.as_dict()
    written = emit(FLEET, args.format, document, output(), RenderContext(top=args.top), quiet=args.quiet)
    _say(document, written, args.quiet)
    code = fail_on_code(args.fail_on, worst_severity(report))
    if code == EXIT_FINDINGS and not args.quiet:  # --quiet: one line or none
        print(tripped_words(report, args.fail_on), file=sys.stderr)
    return EXIT_COLLECTION if report.not_scanned or scanned.unreached_hosts else code


def tripped_words(report: FleetReport, severity: str, shown: int = 20) -> str:
    """Which VMs tripped --fail-on, one line each (the first `shown`)."""
    rows = tripped(report, severity)
    lines = [f"--fail-on {severity}: {len(rows)} VM(s) at {severity} or worse:"]
    for r in rows[:shown]:
        deep = r.deep.worst_severity if r.deep is not None else None
        extra = f", deep check's worst finding {deep}" if deep else ""
        lines.append(safe_text(f"  {r.name} ({r.vcenter}): {r.klass}, {r.severity or 'no severity'}{extra}"))
    if len(rows) > shown:
        lines.append(f"  ... and {len(rows) - shown} more (the report lists them all)")
    return "\n".join(lines)


def cmd_history(args: argparse.Namespace) -> int:
    rows = vm_history(args.history or default_path(), args.vm, args.limit)
    emit(HISTORY, args.format, {"vm": args.vm, "rows": rows}, None)
    return EXIT_OK
