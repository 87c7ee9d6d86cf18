"""A report JSON written by ``esxdiag analyze --format json`` (docs/report-schema.md), read back:
as the document (``esxdiag diff`` compares documents) or as the AnalysisResult it renders
(``esxdiag.api.load_report``). Every field is checked against its declared type in
esxdiag/result.py; anything else is an EsxdiagError naming the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from esxdiag.errors import BundleError, ParseError
from esxdiag.parsers.vsphere import build_record
from esxdiag.result import AnalysisResult

MAX_REPORT_BYTES = 256 * 2**20


def read_report_document(path: str | Path, strict: bool = False) -> dict[str, Any]:
    """The report JSON at ``path`` as a dict (schema_version 1 with 'vms'). ``strict``: ``NaN`` and
    ``Infinity``, which JSON does not have and esxdiag never writes, are refused too."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_REPORT_BYTES:
            raise BundleError(f"{path}: larger than {MAX_REPORT_BYTES // 2**20} MiB: not a report JSON")
        doc = json.loads(path.read_text(encoding="utf-8"), parse_constant=_refuse if strict else None)
    except RecursionError:
        raise BundleError(f"{path}: JSON nested too deeply") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BundleError(f"{path}: not a report JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema_version") != 1 or not isinstance(doc.get("vms"), list):
        raise BundleError(f"{path}: not an esxdiag report JSON (schema_version 1 with 'vms')")
    return doc


def result_from_document(doc: dict[str, Any], file: str = "<report>") -> AnalysisResult:
    """The AnalysisResult a report document renders; a field of the wrong type is a ParseError."""
    try:
        return build_record(AnalysisResult, doc, "")
    except ParseError as exc:
        raise exc.with_file(file) from None


def load_report(path: str | Path) -> AnalysisResult:
    return result_from_document(read_report_document(path, strict=True), str(path))


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
