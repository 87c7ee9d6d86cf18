"""Canonical JSON of the fleet report (schema: docs/fleet-scan.md)."""

from __future__ import annotations

import json


def render_fleet_json(document: dict) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
