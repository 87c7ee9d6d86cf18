"""esxdiag as a library: what ``esxdiag analyze`` and ``esxdiag scan`` read and decide, for
notebooks and scripts. No argument parsing, no printing, no exit: every failure is an
``esxdiag.errors.EsxdiagError`` subclass whose message names the file (README "Using esxdiag from
Python" has examples that the tests run).

Load and judge (no pandas needed):

* ``open_case(source) -> Case``: a bundle, a loose folder of captures, a sosreport or a vm-support
  bundle (directory or tarball); a context manager (archives are unpacked into a temporary
  directory removed on close). ``Case.analyze(thresholds=None) -> AnalysisResult``.
* ``analyze(source, thresholds=None) -> AnalysisResult``: open, analyse, close.
* ``load_report(path) -> AnalysisResult``: a report JSON written by ``--format json``.
* ``thresholds(config=None, overrides=None) -> dict``: defaults, a config file, overrides.
* ``load_snapshot(path) -> Snapshot``; ``fleet_report(snapshot_or_path, thresholds=None) -> dict``
  (the fleet report document); ``record_scan(document, path=None)`` (append to the scan history,
  returns the changes); ``scan_history(path=None, vm=None, limit=50) -> list[dict]``.

DataFrames (``pip install 'esxdiag[pandas]'``; pandas is imported only by these):
``read_esxtop(path, vm=None, vcpus=None, counters=None) -> EsxtopFrames``, ``vnic_frame(result)``,
``ring_frame(result)``, ``cpu_samples(case)``, ``ring_samples(case)``, ``fleet_frame(document)``,
``history_frame(path=None, vm=None, limit=50)``.

Errors: ``BundleError`` (not a bundle / report), ``IntakeError`` (a folder or archive with nothing
usable, a hostile archive), ``ParseError`` / ``NoData`` (a capture, snapshot or report that cannot
be read), ``ConfigError`` (a threshold), ``HistoryError`` (the scan history), ``PandasMissing``
(also an ImportError); all are ``EsxdiagError``.
"""

from __future__ import annotations

from esxdiag.api.case import Case, analyze, open_case, thresholds
from esxdiag.api.esxtop import COUNTERS as ESXTOP_COUNTERS
from esxdiag.api.esxtop import EsxtopFrames, read_esxtop
from esxdiag.api.frames import (cpu_samples, fleet_frame, history_frame, ring_frame, ring_samples,
                                vnic_frame)
from esxdiag.api.lazy import PandasMissing
from esxdiag.api.results import fleet_report, load_report, load_snapshot, record_scan, scan_history
from esxdiag.config import ConfigError
from esxdiag.errors import BundleError, EsxdiagError, NoData, ParseError
from esxdiag.fleet.history import HistoryError
from esxdiag.intake.found import IntakeError
from esxdiag.result import AnalysisResult

__all__ = [
    "Case", "open_case", "analyze", "thresholds", "load_report", "load_snapshot", "fleet_report", "record_scan",
    "scan_history", "read_esxtop", "EsxtopFrames", "ESXTOP_COUNTERS", "vnic_frame", "ring_frame", "cpu_samples",
    "ring_samples", "fleet_frame", "history_frame", "AnalysisResult", "EsxdiagError", "BundleError",
    "IntakeError", "ParseError", "NoData", "ConfigError", "HistoryError", "PandasMissing",
]
