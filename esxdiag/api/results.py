"""Results read back: a report JSON as the AnalysisResult it renders, a fleet snapshot judged
into the fleet report document (the dict ``esxdiag scan --format json`` writes), and the scan
history's rows. Every reader raises an esxdiag.errors.EsxdiagError subclass naming the file.

The API starts no scan: it judges saved snapshots. ``fleet_report`` and ``record_scan`` are the
analysis and history steps of the one fleet scan `esxdiag scan` and `serve` run
(esxdiag.scanning.run.run_scan), through the same functions (build_report, changes_and_record)."""

from __future__ import annotations

from pathlib import Path

from esxdiag.api.case import Thresholds, resolved_thresholds
from esxdiag.errors import ParseError
from esxdiag.fleet import history
from esxdiag.fleet.analysis import build_report
from esxdiag.fleet.snapshot import Snapshot
from esxdiag.fleet.snapshot import load_snapshot as _load_snapshot
from esxdiag.parsers.report_json import load_report as _load_report
from esxdiag.result import AnalysisResult


def load_report(path: str | Path) -> AnalysisResult:
    """A report JSON written by ``esxdiag analyze --format json`` (docs/report-schema.md), every
    field checked against esxdiag.result. BundleError (not a report) or ParseError (a bad field)."""
    return _load_report(path)


def load_snapshot(path: str | Path) -> Snapshot:
    """A fleet snapshot (``esxdiag-scan-TIME.json``, docs/fleet-scan.md). ParseError."""
    try:
        return _load_snapshot(path)
    except OSError as exc:
        raise ParseError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    except RecursionError:
        raise ParseError("JSON nested too deeply: not a fleet snapshot", file=str(path)) from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise ParseError(f"not a fleet snapshot JSON ({str(exc)[:120]})", file=str(path)) from None


def fleet_report(snapshot: Snapshot | str | Path, thresholds: Thresholds | None = None) -> dict:
    """The fleet report document (``esxdiag.fleet_report/2``) of a snapshot, judged under
    ``thresholds``: what ``esxdiag scan --snapshot FILE --format json`` writes (without history)."""
    if isinstance(snapshot, Snapshot):
        return build_report(snapshot, resolved_thresholds(thresholds)).as_dict()
    return build_report(load_snapshot(snapshot), resolved_thresholds(thresholds), str(snapshot)).as_dict()


def record_scan(document: dict, path: str | Path | None = None) -> dict | None:
    """Append a fleet report's per-VM classes and rates to the scan history (default: the user
    data directory, as ``esxdiag scan``); returns what changed since the previous scan with the
    same filters (None on the first). HistoryError."""
    return history.changes_and_record(path or history.default_path(), document)


def scan_history(path: str | Path | None = None, vm: str | None = None, limit: int = 50) -> list[dict]:
    """Rows of the scan history, newest first: one VM's (by name or MOID) last ``limit`` results,
    or, without ``vm``, every VM's results in the last ``limit`` scans. HistoryError."""
    path = path or history.default_path()
    return history.vm_history(path, vm, limit) if vm is not None else history.fleet_history(path, limit)
