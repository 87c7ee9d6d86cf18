"""Parse bundle captures once, remember what could not be used and why (for coverage), and what
the parsers warned about in the captures they did read (``warnings`` on a record: a dropped
truncated row, a skipped damaged column, a repeated counter...), tied to the file.

No capture stops the analysis: a parser raising anything but ParseError/NoData is a bug, but the
capture is then reported as unparsed with the exception named, and the rest is analysed."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from esxdiag.bundle import Bundle, Capture
from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import PARSERS, parse_file
from esxdiag.result import CoverageItem
from esxdiag.specs import SPECS

MAX_WARNINGS = 20  # per capture in coverage: a capture repeating a counter 100,000 times says so once


@dataclass(frozen=True)
class Reading:
    capture: Capture
    record: Any

    @property
    def file(self) -> str | None:
        return self.capture.file


def describe(cap: Capture) -> str:
    """The capture's name (its `esxdiag parse` kind when the spec is that kind's name, the spec
    otherwise: one spelling per name), parameters, sample and what it holds."""
    spec = SPECS[cap.spec]
    name = spec.parser if spec.parser.replace("-", "_") == cap.spec else cap.spec
    label = spec.about or PARSERS[spec.parser].about
    params = ", ".join(f"{k} {v}" for k, v in sorted(cap.params.items()))
    when = "" if cap.sample is None else {0: " (window start)", 1: " (window end)"}.get(cap.sample,
                                                                                     f" (sample {cap.sample})")
    return f"{name}{' ' + params if params else ''}{when}: {label}"


class Readings:
    def __init__(self, bundle: Bundle):
        self.bundle = bundle
        self._cache: dict[tuple[int, tuple], Any] = {}
        self.problems: dict[int, CoverageItem] = {}
        self._index = {id(cap): i for i, cap in enumerate(bundle.captures)}
        self.warnings: dict[int, dict[str, None]] = {}  # capture index -> parser warnings, in order
        self.lines: dict[int, int | None] = {}  # capture index -> the line an unparsed capture failed at

    def read(self, cap: Capture, **options: Any) -> Reading | None:
        """Parsed record of one capture, or None (the reason lands in coverage)."""
        index = self._index[id(cap)]
        key = (index, tuple(sorted(options.items())))
        if key in self._cache:
            return self._cache[key]
        reading = None
        if not cap.ok:
            why = cap.error or "capture failed"
            self.problems[index] = CoverageItem(describe(cap), cap.spec, cap.target, "failed",
                                                f"{cap.error_kind or 'error'}: {why}", cap.file, cap.error_kind)
        elif not cap.path or not cap.path.is_file():
            self.problems[index] = CoverageItem(describe(cap), cap.spec, cap.target, "failed",
                                                "file listed in manifest is missing", cap.file, "not-found")
        else:
            try:
                reading = Reading(cap, parse_file(SPECS[cap.spec].parser, cap.path, **options))
            except NoData as exc:
                self.problems[index] = CoverageItem(describe(cap), cap.spec, cap.target, "no-data",
                                                    exc.why, cap.file, None)
            except ParseError as exc:
                where = f" (line {exc.line})" if exc.line else ""
                self.problems[index] = CoverageItem(describe(cap), cap.spec, cap.target, "unparsed",
                                                    exc.why + where, cap.file, None)
                self.lines[index] = exc.line
            except Exception as exc:  # a parser bug must not cost the other captures
                logging.getLogger(__name__).debug("parser failed on %s", cap.file, exc_info=True)
                self.problems[index] = CoverageItem(describe(cap), cap.spec, cap.target, "unparsed",
                                                    f"parser error ({type(exc).__name__}: {str(exc)[:200]})",
                                                    cap.file, "parser-bug")
            if reading is not None:
                found = getattr(reading.record, "warnings", None) or ()
                self.warnings.setdefault(index, {}).update(dict.fromkeys(str(w) for w in found))
        self._cache[key] = reading
        return reading

    def first(self, spec: str, target: str | None = None, **params: str) -> Reading | None:
        for cap in self.bundle.find(spec, target, **params):
            reading = self.read(cap)
            if reading is not None:
                return reading
        return None

    def samples(self, spec: str, target: str | None = None, **params: str) -> list[Reading]:
        """Every usable sample of a sampled spec in capture order: the manifest's sample numbers, 0 the
        window's start (docs/bundle-format.md). Never the order of the stamps: a clock can step between
        two samples (esxdiag.join.clocks judges what the stamps are still good for)."""
        readings = [r for r in (self.read(c) for c in self.bundle.find(spec, target, **params)) if r]
        readings.sort(key=lambda r: r.capture.sample if r.capture.sample is not None else 0)
        return readings

    def coverage(self) -> list[CoverageItem]:
        """Every capture in the manifest, each parsed (those no join asked for too, so a file that does
        not parse is never listed as read): read, partial (with the parser's warnings), or why it
        could not be used (unparsed with the line, no-data, failed)."""
        tried = {index for index, _ in self._cache}
        items = []
        for index, cap in enumerate(self.bundle.captures):
            if index not in tried:
                self.read(cap)
            found = list(self.warnings.get(index, ()))
            item = self.problems.get(index) or CoverageItem(describe(cap), cap.spec, cap.target,
                                                            "partial" if found else "read", None, cap.file)
            if found:
                more = [f"... and {len(found) - MAX_WARNINGS} more warnings"] if len(found) > MAX_WARNINGS else []
                item = replace(item, warnings=tuple(found[:MAX_WARNINGS] + more))
            items.append(item)
        return items
