"""Domain numbers live in esxdiag.config (with their source, overridable), not in the rules.

An AST check over the rule modules: a numeric literal other than 0 and 1 used as an operand of a
comparison, of arithmetic, or as an argument of max()/min() fails the test unless its expression
is allowed below, with the reason it is not a judgment the admin could move."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted((ROOT / "esxdiag" / "rules").glob("*.py")) + [ROOT / "esxdiag" / "fleet" / name
                                                            for name in ("rules.py", "figures.py", "confirm.py",
                                                                         "uplink.py", "moves.py")]

ALLOWED = {  # (module, expression) -> why the number is not a domain judgment
    ("nic.py", "t['ring.host_guest_tolerance_pct'] / 100"): "percent to a fraction",
    ("tcp.py", "100.0 * retrans.delta"): "a fraction to percent",
    ("fleet/figures.py", "drops / packets * 1000"): "the unit: drops per 1,000 packets received",
    ("remediation.py", "(target - current) * q * kb_per_entry / 1024"): "KB to MB",
    ("remediation.py", "c * 2"): "PowerShell escapes a quote by doubling it",
    ("remediation.py", "ring == 2"): "ring number 2 (jumbo / LRO), a name",
    ("ring_change.py", "ring == 2"): "ring number 2 (jumbo / LRO), a name",
    ("remediation.py", "mtu > 3050"): "vmxnet3 driver fact: above MTU 3050 (3 KB buffer - 22 B header) ring 1 "
                                      "takes 3 buffers per frame, so sizes round to 96 (docs/raw-formats.md §4.2)",
    ("verdict.py", "seconds >= 120"): "a window of two minutes or more is said in minutes (words, not a judgment)",
    ("verdict.py", "seconds % 60"): "whole minutes only",
    ("verdict.py", "seconds / 60"): "seconds to minutes",
    ("causes.py", "len(deltas) < 2"): "one rx queue of several needs two queues at least (a count, not a threshold)",
    ("causes.py", "100 * held"): "a fraction to percent (the hot queues' share of the drops)",
    ("causes.py", "100 * k"): "a fraction to percent (the hot queues' share of the rx queues)",
    ("cpustats.py", "100 * cpu.covered_s"): "a fraction to percent",
    ("remediation.py", "vcpus * 2"): "the placeholder vCPU count in a shown command the admin edits, judges nothing",
}


def _is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value not in (0, 1)


def bare_numbers(source: str) -> list[str]:
    """Expressions (ast.unparse) with a numeric literal in a comparison, arithmetic or max()/min()."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.BinOp):
            operands = [node.left, node.right]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min"):
            operands = node.args
        else:
            continue
        if any(_is_number(o) for o in operands):
            found.append(ast.unparse(node))
    return found


def _name(path: Path) -> str:
    return f"fleet/{path.name}" if path.parent.name == "fleet" else path.name


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_rule_modules_have_no_bare_domain_numbers(path):
    found = bare_numbers(path.read_text(encoding="utf-8"))
    assert [e for e in found if (_name(path), e) not in ALLOWED] == [], \
        "move the number to esxdiag.config.DEFAULT_THRESHOLDS (with its source) or allow it here with the reason"


def test_every_allowed_expression_still_exists():
    found = {(_name(p), e) for p in MODULES for e in bare_numbers(p.read_text(encoding="utf-8"))}
    assert set(ALLOWED) - found == set()


@pytest.mark.parametrize("line", [
    "ok = nic.rings_persisted or nic.ring1_size <= 1024",
    "ok = abs(host.delta - guest.delta) <= max(10, 0.1 * max(host.delta, guest.delta))",
    "ok = gbps >= 10",
    "ok = limited.worst_avg >= 0.8 * ready.worst_avg",
    "score = 10 * (per_s or 0) / max(t['ring.drops_per_s_critical'], 1e-9)",
    "ok = x > -2.5",
])
def test_the_literals_this_check_replaced_are_caught(line):
    assert bare_numbers(line)
