"""Issue 25 point 13: docs/serve.md says how soon the first alert fires with the shipped
contrib/prometheus/prometheus.yml, and the two agree: one scrape plus one rule evaluation after
the cycle, at that file's intervals (the docs said "within a minute"; it took 88 s)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _seconds(text: str) -> int:
    value, unit = re.fullmatch(r"(\d+)([sm])", text).groups()
    return int(value) * (60 if unit == "m" else 1)


def test_the_docs_alert_timing_is_the_shipped_configs():
    config = yaml.safe_load((ROOT / "contrib" / "prometheus" / "prometheus.yml").read_text())["global"]
    scrape, evaluation = _seconds(config["scrape_interval"]), _seconds(config["evaluation_interval"])
    docs = " ".join((ROOT / "docs" / "serve.md").read_text(encoding="utf-8").split())
    assert "within a minute" not in docs
    promise = re.search(r"within one scrape and one rule evaluation \((\d+) s each in that file: up to (\d+) minutes",
                        docs)
    assert promise, "docs/serve.md no longer says how soon the first alert fires"
    assert int(promise[1]) == scrape == evaluation
    assert int(promise[2]) * 60 >= scrape + evaluation
