"""Rules: pure functions of joined facts. VM rules take (vm, thresholds); vNIC rules take
(vm, vnic, thresholds). Each returns findings, explicit passes, or skips with a reason."""

from esxdiag.rules import causes, clocks, cpu, driver_nic, nic, sources, tcp, vmotion

VM_RULES = cpu.RULES + tcp.RULES + vmotion.RULES + clocks.RULES
VNIC_RULES = nic.RULES + causes.RULES + sources.RULES + driver_nic.RULES
