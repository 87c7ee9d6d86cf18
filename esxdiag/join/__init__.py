"""The join stage: parsed captures (readings) -> one set of typed facts per VM and vNIC.

VM <-> vNIC MAC <-> host port (net-stats -l) <-> guest interface, counters over the window and
per-vCPU CPU figures are joined here and only here; rules read the facts, never captures."""

from esxdiag.join.joiner import build_facts

__all__ = ["build_facts"]
