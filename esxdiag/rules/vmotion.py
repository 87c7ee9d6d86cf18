"""A VM that changed host inside the window (docs/diagnosis.md): the report says so, from
where to where and when, and what the verdict was judged on."""

from __future__ import annotations

from esxdiag.join.facts import Move, VmFacts
from esxdiag.result import Evidence, Finding, RuleCheck


def move_words(move: Move) -> str:
    where = f"from {move.from_host or 'an unknown host'} to {move.to_host or 'an unknown host'}"
    ports = (f" (port {move.from_port} -> port {move.to_port})" if move.from_port is not None and
             move.to_port is not None else "")
    when = f" at {move.time.replace('T', ' ').replace('Z', ' UTC')}" if move.time else ""
    return f"{where}{ports}{when}"


def moves_words(moves: tuple[Move, ...]) -> str:
    """Every move in order: "from A to B (port 1 -> port 2) at T1, then from B to C (...) at T2"."""
    return ", then ".join(move_words(m) for m in moves)


def vmotion(vm: VmFacts, t: dict[str, float]):
    if not vm.moves:
        return [RuleCheck("vmotion", "pass", "no move of the VM inside the window")]
    more = f" ({len(vm.moves)} moves)" if len(vm.moves) > 1 else ""
    return [Finding(
        "vmotion", "warning", vm.name, None, f"{vm.name} moved {moves_words(vm.moves)} inside the window{more}",
        f"The VM moved ({', '.join(dict.fromkeys(m.how for m in vm.moves))}) while it was sampled: each port's "
        "counters end at the move that left it and the next port's are a different series counted from the move, "
        "so no host counter is subtracted across a move. The vNIC verdicts rest on the guest's continuous "
        "counters and on readings of one port only; the vMotion stun itself drops a few frames. Sample again "
        "without a move for a clean window.",
        evidence=tuple(Evidence("VM moved", move_words(m), None, None, None, m.source, m.how) for m in vm.moves))]


RULES = (vmotion,)
