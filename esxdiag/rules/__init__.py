"""Rules: pure functions of joined facts. VM rules take (vm, thresholds); vNIC rules take
(vm, vnic, thresholds). Each returns findings, explicit passes, or skips with a reason."""

from esxdiag.rules import cpu, nic, sources, tcp

VM_RULES = cpu.RULES + tcp.RULES
VNIC_RULES = nic.RULES + sources.RULES
