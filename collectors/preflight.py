"""Preflight, before sample 0: the tools the window needs exist and run on the host and the guest.

Each probe is a read-only spec recorded like every capture. A tool that is not there (exit 127),
may not be run (126) or hangs is said at once with what it costs, and marked unavailable on the
connection: its captures in the window are then recorded as skipped with that reason
(collectors/captures.run_capture) instead of failing, or hanging, one by one."""

from __future__ import annotations

from typing import Callable

from esxdiag.bundle import BundleWriter
from esxdiag.collectors.captures import mark_missing, run_capture
from esxdiag.collectors.esxi import ESXTOP_MARGIN_S
from esxdiag.collectors.ssh import SshConnection
from esxdiag.specs import ESXI, LINUX

# target kind -> (probe spec, program, what its absence costs)
PROBES = {
    ESXI: (("vsish_portsets", "vsish", "no vmxnet3 ring-full / out-of-buffer counters or ring sizes from the host"),
           ("esxtop_probe", "esxtop", "no %RDY/%CSTP/%MLMTD from the host; CPU from vCenter's 20 s statistics only")),
    LINUX: (("ethtool_version", "ethtool", "no guest ring sizes or per-queue drops (ethtool -g / -S); "
             "TCP retransmits only"),),
}
PROBE_TIMEOUT_S = {"esxtop_probe": 2 + ESXTOP_MARGIN_S}  # one row at -d 2, plus esxtop's start-up


def preflight(conn: SshConnection, writer: BundleWriter, target_id: str, say: Callable[[str], None]) -> None:
    """Run the probes of ``conn.kind``; fill ``conn.unavailable`` and say each gap once."""
    for spec_name, program, cost in PROBES.get(conn.kind, ()):
        capture = run_capture(conn, writer, target_id, spec_name, timeout_s=PROBE_TIMEOUT_S.get(spec_name))[0]
        if capture.ok:
            continue
        why = mark_missing(conn, writer, capture, program, "in the preflight", cost)
        say(why or f"{spec_name}: {capture.error}")  # else ran but failed: the window still tries it
