"""Canonical JSON rendering of an AnalysisResult (schema: docs/report-schema.md)."""

from __future__ import annotations

import json

from esxdiag.parsers import to_jsonable
from esxdiag.result import AnalysisResult


def render_json(result: AnalysisResult) -> str:
    return json.dumps(to_jsonable(result), indent=2, sort_keys=False, ensure_ascii=False) + "\n"
