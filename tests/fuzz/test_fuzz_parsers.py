"""Fuzz every parser kind (``esxdiag parse --list``) from real captures: truncated at any line or
byte, bytes flipped, numbers made huge / negative / non-finite / Unicode digits, re-encoded
(UTF-16 with and without BOM, CRLF, CR, Latin-1), NUL bytes, 1 MiB lines, blocks duplicated,
captures concatenated. The only outcomes are a record (strict-JSON serialisable: no NaN), a
ParseError or NoData, each within a generous wall-clock bound. Derandomized: the same inputs
every run, so CI is stable; ``ESXDIAG_FUZZ_EXAMPLES`` raises the count for a longer local run."""

from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import PARSERS, parse_file, to_jsonable

_spec = importlib.util.spec_from_file_location("fuzz_damage", Path(__file__).with_name("damage.py"))
damage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(damage)

SEEDS = damage.seeds()
EXAMPLES_PER_KIND = int(os.environ.get("ESXDIAG_FUZZ_EXAMPLES", "20"))
WALL_BOUND_S = 10.0  # per input; a linear parser takes well under a second on 1 MiB
OUTCOMES: dict[str, dict[str, int]] = {}


def test_every_parser_kind_has_real_seeds():
    assert sorted(SEEDS) == sorted(PARSERS)


def outcome(kind: str, path: Path) -> str:
    started = time.monotonic()
    try:
        record = parse_file(kind, path)
        json.dumps(to_jsonable(record), allow_nan=False)
        result = "record"
    except ParseError as exc:
        assert exc.file == str(path) and exc.why
        result = "ParseError"
    except NoData:
        result = "NoData"
    elapsed = time.monotonic() - started
    assert elapsed < WALL_BOUND_S, f"{kind}: {elapsed:.1f} s on one input"
    counts = OUTCOMES.setdefault(kind, {})
    counts[result] = counts.get(result, 0) + 1
    return result


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_damaged_captures_give_a_record_parse_error_or_no_data(kind, tmp_path):
    seeds = [damage.seed_bytes(p) for p in SEEDS[kind]]
    others = [damage.seed_bytes(p) for kind_seeds in SEEDS.values() for p in kind_seeds[:1]]

    @settings(max_examples=EXAMPLES_PER_KIND, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.function_scoped_fixture])
    @given(st.data())
    def check(data):
        seed = data.draw(st.sampled_from(seeds))
        other = data.draw(st.sampled_from(others))
        path = tmp_path / "capture.txt"
        path.write_bytes(data.draw(damage.damaged(seed, other)))
        outcome(kind, path)

    check()
    for seed_path in SEEDS[kind]:  # the undamaged real captures themselves
        outcome(kind, seed_path)


def test_zz_report_outcomes(capsys):
    """Prints how many inputs gave which outcome (the figures for the issue); runs last."""
    with capsys.disabled():
        total = sum(sum(c.values()) for c in OUTCOMES.values())
        print(f"\nfuzz: {total} inputs over {len(OUTCOMES)} parser kinds")
        for kind, counts in sorted(OUTCOMES.items()):
            print(f"  {kind:22} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
