"""The join stage: parsed captures (readings) -> one set of typed facts per VM and vNIC.

VM <-> vNIC MAC <-> host port (net-stats -l) <-> guest interface, counters over the window and
per-vCPU CPU figures are joined here and only here; rules read the facts, never captures."""

from typing import Any

__all__ = ["build_facts"]


def __getattr__(name: str) -> Any:
    """``build_facts`` on first use: the joiner loads every capture parser, which a fleet scan (reading
    only esxdiag.join.cpu) never needs."""
    if name == "build_facts":
        from esxdiag.join.joiner import build_facts
        return build_facts
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
