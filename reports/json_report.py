"""Canonical JSON rendering of an AnalysisResult (schema: docs/report-schema.md). Strict JSON:
parsers never emit non-finite numbers and ``allow_nan=False`` makes sure none slips through as
``NaN``/``Infinity`` (which JSON does not have)."""

from __future__ import annotations

import json

from esxdiag.parsers import to_jsonable
from esxdiag.result import AnalysisResult


def render_json(result: AnalysisResult) -> str:
    return json.dumps(to_jsonable(result), indent=2, sort_keys=False, ensure_ascii=False, allow_nan=False) + "\n"
