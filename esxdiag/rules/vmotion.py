"""A VM that changed host inside the window (shared/domain.md section 10): the report says so, from
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


def vmotion(vm: VmFacts, t: dict[str, float]):
    if not vm.moves:
        return [RuleCheck("vmotion", "pass", "no move of the VM inside the window")]
    move = vm.moves[0]
    more = f" ({len(vm.moves)} moves in all)" if len(vm.moves) > 1 else ""
    return [Finding(
        "vmotion", "warning", vm.name, None, f"{vm.name} moved {move_words(move)} inside the window{more}",
        f"The VM moved ({move.how}) while it was sampled: the old port's counters end at the move and the new "
        "port's are a different series, so no host counter is subtracted across the move. The vNIC verdicts rest "
        "on the guest's continuous counters and on readings of one port only; the vMotion stun itself drops a "
        "few frames. Sample again without a move for a clean window.",
        evidence=tuple(Evidence("VM moved", move_words(m), None, None, None, m.source, m.how) for m in vm.moves))]


RULES = (vmotion,)
