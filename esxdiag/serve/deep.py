"""Which suspects a cycle deep-checks: its SSH budget. The check itself is `scan`'s own
(esxdiag.scanning.deep, run by esxdiag.scanning.run.run_scan).

Budget per cycle of one vCenter: at most ``--deep`` VMs on at most ``--deep-hosts`` ESXi hosts,
only hosts with an SSH login configured (``--deep-host-ssh HOST=...``, or one without HOST= for
every host), ``--deep-parallel`` hosts at once; one deep check at a time in the whole process (a
lock shared by the vCenters), so SSH sessions never exceed ``--deep-parallel``. A VM checked less
than ``--deep-recheck`` seconds ago gives its turn to the next suspect, unless named by --deep-vm.
"""

from __future__ import annotations

import argparse
from typing import Mapping

from esxdiag.fleet.model import FleetReport, FleetRow
from esxdiag.scanning.deep import choose, host_ssh_logins


def pick(report: FleetReport, args: argparse.Namespace, recent: Mapping[str, float], now: float) -> list[FleetRow]:
    """The rows to deep-check this cycle (see the module's budget), most urgent first."""
    per_host, default = host_ssh_logins(args.deep_host_ssh)
    named = [r for r in report.rows
             if r.power_state == "poweredOn" and (r.name in args.deep_vm or r.moid in args.deep_vm)]
    suspects = [r for r in choose(report, len(report.rows), []) if r not in named and
                now - recent.get(r.moid, float("-inf")) >= args.deep_recheck]
    chosen: list[FleetRow] = []
    hosts: set[str] = set()
    for row in named + suspects:
        host = row.host or "(unknown host)"
        if len(chosen) >= max(args.deep, len(named)) or (default is None and host not in per_host):
            continue
        if host not in hosts and len(hosts) >= args.deep_hosts:
            continue
        hosts.add(host)
        chosen.append(row)
    return chosen
