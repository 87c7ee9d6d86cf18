"""Canonical JSON of the fleet report (schema: docs/fleet-scan.md). Compact, one line: a 10,000-VM
report is ~10 MB and only the C encoder (no indent) writes that in well under a second; use jq to read."""

from __future__ import annotations

import json


def render_fleet_json(document: dict) -> str:
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False) + "\n"
