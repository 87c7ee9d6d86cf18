"""Rules: pure functions of joined facts. VM rules take (vm, thresholds); vNIC rules take
(vm, vnic, thresholds). Each returns findings, explicit passes, or skips with a reason.

VM_RULES and VNIC_RULES load every rule module (and through them the joiner and every capture
parser) the first time they are asked for: a fleet scan reads esxdiag.rules.cpustats alone and
never pays for the per-VM rules it does not run."""

from typing import Any


def __getattr__(name: str) -> Any:
    if name not in ("VM_RULES", "VNIC_RULES"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from esxdiag.rules import causes, clocks, cpu, driver_nic, nic, sources, tcp, vmotion

    globals().update(VM_RULES=cpu.RULES + tcp.RULES + vmotion.RULES + clocks.RULES,
                     VNIC_RULES=nic.RULES + causes.RULES + sources.RULES + driver_nic.RULES)
    return globals()[name]
