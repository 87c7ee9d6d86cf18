"""Plain words for what the result stores as keys, paths and comparisons: where a figure came
from, which evidence decided a verdict, vCPU names, counts, times with their time zone.
Shared by the HTML report (and any other template that includes the same macros)."""

from __future__ import annotations

import operator
import re
from datetime import timezone
from typing import Any

from esxdiag.bundle import parse_time
from esxdiag.result import Evidence
from esxdiag.specs import SPECS

_CAPTURE = re.compile(r"(?:^|/)(?P<spec>[a-z0-9_]+)(?:@(?P<params>[^/]*?))?(?:\.s(?P<sample>\d+))?\.(?:txt|json)$")
SPEC_WORDS = {name: spec.words for name, spec in SPECS.items() if spec.words}  # declared on each Spec
COMPARE = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
           "==": operator.eq, "!=": operator.ne}
_VCPU = re.compile(r"^vmx-vcpu-(\d+)(?::.*)?$")


def vnic_prefix(label: str | None) -> str:
    """The word vNIC before a vNIC's label, unless the label already says it ("vNIC 0", from net-stats -l)."""
    return "" if (label or "").startswith("vNIC ") else "vNIC "


def held_words(coverage) -> list[str]:
    """What a (partial) bundle holds: the kinds of the captures read (wholly or in part), in coverage order."""
    return list(dict.fromkeys(SPECS[c.spec].title for c in coverage if c.used and c.spec in SPECS))


def source_words(path: str | None) -> str | None:
    """"vsish rxSummary (port 33554464), reading 2" for
    esxi-esx0/vsish_rxsummary@port=33554464,portset=vSwitch0.s1.txt; the file name when unknown."""
    if not path:
        return None
    found = _CAPTURE.search(path.replace("\\", "/"))
    if found is None or found["spec"] not in SPEC_WORDS:
        return path.replace("\\", "/").rsplit("/", 1)[-1]
    params = dict(p.split("=", 1) for p in (found["params"] or "").split(",") if "=" in p)
    try:
        words = SPEC_WORDS[found["spec"]].format(**params)
    except KeyError:  # a hand-made bundle without the usual params
        words = re.sub(r"\s*\{[a-z]+\}", "", re.sub(r"\s*\([^()]*\{[a-z]+\}[^()]*\)", "", SPEC_WORDS[found["spec"]]))
    if found["sample"] is not None:
        words += f", reading {int(found['sample']) + 1}"
    return words


def utc_time(value: Any) -> str:
    """ISO time -> "2026-11-21 06:01:24 UTC" (naive times are UTC, as the bundle writes them)."""
    if not isinstance(value, str) or not value:
        return "n/a"
    moment = parse_time(value)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC") if moment else value


def threshold_met(e: Evidence) -> bool | None:
    """Whether the observed value passed the evidence's own test; None when it has no test."""
    test = COMPARE.get(e.comparison or "")
    if test is None or e.threshold is None or e.observed is None:
        return None
    try:
        return bool(test(e.observed, e.threshold))
    except TypeError:
        return None


def split_evidence(items: tuple[Evidence, ...]) -> tuple[list[Evidence], list[Evidence]]:
    """(deciding, also checked): figures whose test held, and facts without a test, decide; the
    tests that did not hold are folded away. When no test held (a "nothing is happening"
    verdict), the tests that did not hold are what decided it."""
    held = [e for e in items if threshold_met(e) is not False]
    failed = [e for e in items if threshold_met(e) is False]
    if not any(threshold_met(e) for e in items):
        return list(items), []
    return held, failed


def vcpu_words(label: str) -> str:
    """"vCPU 0" for esxtop's "vmx-vcpu-0:iperf-test1"; other labels unchanged."""
    found = _VCPU.match(label)
    return f"vCPU {found[1]}" if found else label


def count(n: int | None, singular: str, plural: str | None = None) -> str:
    """ "1 vCPU", "2 vCPUs", "1,024 entries" with plural given; "n/a vCPUs" when unknown."""
    if n is None:
        return f"n/a {plural or singular + 's'}"
    return f"{n:,} {singular if n == 1 else (plural or singular + 's')}"
