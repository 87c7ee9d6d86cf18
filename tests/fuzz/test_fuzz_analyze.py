"""``esxdiag analyze`` over damaged bundles: copies of the bundled examples with one to three
capture files damaged (tests/fuzz/damage.py) exit 0, 1 or 2 only - never 70 - and when a report
is written it is strict JSON (no NaN/Infinity). Derandomized for CI stability."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from esxdiag.cli import main

_spec = importlib.util.spec_from_file_location("fuzz_damage", Path(__file__).with_name("damage.py"))
damage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(damage)

BUNDLES = sorted(p.parent for p in damage.EXAMPLES.rglob("manifest.json"))
EXAMPLES = int(os.environ.get("ESXDIAG_FUZZ_BUNDLES", "16"))
EXITS: dict[int, int] = {}


def _no_constants(name: str):
    raise AssertionError(f"report.json holds {name}")


@pytest.mark.parametrize("fmt", ["json", "html"])
def test_analyze_over_damaged_bundles_exits_0_1_or_2(tmp_path, fmt, monkeypatch):
    monkeypatch.delenv("ESXDIAG_DEBUG", raising=False)

    @settings(max_examples=EXAMPLES // 2 if fmt == "html" else EXAMPLES, deadline=None, derandomize=True,
              database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                    HealthCheck.function_scoped_fixture])
    @given(st.data())
    def check(data):
        source = data.draw(st.sampled_from(BUNDLES))
        bundle = tmp_path / "bundle"
        shutil.rmtree(bundle, ignore_errors=True)
        shutil.copytree(source, bundle, ignore=shutil.ignore_patterns("report.*"))
        files = sorted(p for p in bundle.rglob("*") if p.is_file() and p.name != "manifest.json")
        for path in data.draw(st.lists(st.sampled_from(files), min_size=1, max_size=3, unique=True)):
            other = damage.seed_bytes(data.draw(st.sampled_from(files)))
            path.write_bytes(data.draw(damage.damaged(damage.seed_bytes(path), other)))
        out = tmp_path / f"report.{fmt}"
        out.unlink(missing_ok=True)
        code = main(["analyze", str(bundle), "--format", fmt, "-o", str(out), "--fail-on", "warning"])
        EXITS[code] = EXITS.get(code, 0) + 1
        assert code in (0, 1, 2)
        if code != 2 and fmt == "json":
            report = json.loads(out.read_text(encoding="utf-8"), parse_constant=_no_constants)
            assert report["coverage"]

    check()


def test_zz_report_exit_codes(capsys):
    with capsys.disabled():
        print(f"\nanalyze over damaged bundles: exit codes {dict(sorted(EXITS.items()))}")
