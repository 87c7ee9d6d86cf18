"""Opening a capture for analysis: a bundle with a manifest, a loose folder of captures, a
sosreport or a vm-support bundle (directory or tarball), through esxdiag.intake exactly as
``esxdiag analyze`` does; analysing it with esxdiag.engine under the thresholds given."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

from esxdiag.bundle import Bundle
from esxdiag.config import load_thresholds
from esxdiag.engine import analyze as engine_analyze
from esxdiag.engine import gather
from esxdiag.errors import BundleError, EsxdiagError
from esxdiag.intake import open_bundle
from esxdiag.join.facts import VmFacts
from esxdiag.join.readings import Readings
from esxdiag.result import AnalysisResult

Thresholds = Mapping[str, float]


def thresholds(config: str | Path | None = None, overrides: Thresholds | None = None) -> dict[str, float]:
    """Every rule threshold: the defaults (esxdiag.config.DEFAULT_THRESHOLDS), then a config file's
    ``[thresholds]`` section, then ``overrides`` ({"cpu.ready_pct_critical": 8, ...}). An unknown
    key or a value out of range is a ConfigError."""
    return load_thresholds(config, [f"{key}={value}" for key, value in (overrides or {}).items()])


class Case:
    """One capture opened for analysis. Archives are unpacked into a private temporary directory
    that lives until ``close()`` (or the end of the ``with`` block, or garbage collection); the
    results and DataFrames taken from the case stay valid after it is closed."""

    def __init__(self, source: str | Path):
        self.source = source
        self._work = tempfile.TemporaryDirectory(prefix="esxdiag-api-")
        try:
            self.bundle: Bundle = open_bundle(source, Path(self._work.name))
        except OSError as exc:  # e.g. a folder that cannot be listed
            self._work.cleanup()
            raise BundleError(f"{exc.filename or source}: {exc.strerror or exc}") from None
        except BaseException:
            self._work.cleanup()
            raise
        self._gathered: tuple[Readings, list[VmFacts]] | None = None

    def __enter__(self) -> "Case":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Remove the unpacked files. Captures cannot be read any more; an analysis already
        gathered can still be judged under other thresholds."""
        self._work.cleanup()

    @property
    def closed(self) -> bool:
        return not Path(self._work.name).exists()

    def gathered(self) -> tuple[Readings, list[VmFacts]]:
        """The captures parsed and joined once (esxdiag.engine.gather), shared by every analysis."""
        if self._gathered is None:
            self._check_open()
            self._gathered = gather(self.bundle)
        return self._gathered

    def facts(self) -> list[VmFacts]:
        """The joined per-VM facts the rules judge (esxdiag.join.facts)."""
        return self.gathered()[1]

    def analyze(self, thresholds: Thresholds | None = None) -> AnalysisResult:
        """The AnalysisResult ``esxdiag analyze`` renders, under ``thresholds`` (defaults when None;
        a partial mapping overrides the defaults)."""
        return engine_analyze(self.source, resolved_thresholds(thresholds), self.bundle, self.gathered())

    def capture_path(self, spec: str, target: str | None = None) -> Path:
        """The file of the first usable capture of ``spec`` (e.g. ``esxtop_batch``), on ``target``."""
        self._check_open()
        for cap in self.bundle.find(spec, target):
            if cap.ok and cap.path is not None and cap.path.is_file():
                return cap.path
        where = f" on target {target!r}" if target else ""
        raise EsxdiagError(f"{self.source}: no usable {spec} capture{where}")

    def _check_open(self) -> None:
        if self.closed:
            raise EsxdiagError(f"{self.source}: the case was closed; open it again to read its captures")


def open_case(source: str | Path) -> Case:
    """Open a bundle, folder, sosreport or vm-support bundle (directory or .tar.xz/.tar.gz/.tgz);
    use it in a ``with`` block. Raises BundleError / IntakeError (esxdiag.errors.EsxdiagError)."""
    return Case(source)


def analyze(source: str | Path, thresholds: Thresholds | None = None) -> AnalysisResult:
    """Open, analyse and close in one call: the result ``esxdiag analyze SOURCE`` renders."""
    with Case(source) as case:
        return case.analyze(thresholds)


def resolved_thresholds(values: Thresholds | None) -> dict[str, float]:
    return thresholds(overrides=values) if values else load_thresholds()
