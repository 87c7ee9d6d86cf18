"""`esxdiag scan --deep N / --deep-vm NAME`: the options. Choosing the VMs, the host-grouped
collection and its folding into the fleet report are below the commands (esxdiag.scanning)."""

from __future__ import annotations

import argparse
from pathlib import Path

from esxdiag.cli.ssh_options import add_ssh_trust_options, add_time_limit_options


def add_deep_options(p: argparse.ArgumentParser) -> None:
    d = p.add_argument_group("deep check: the per-VM ring diagnosis over SSH for the worst suspects, host by host")
    d.add_argument("--deep", type=int, default=0, metavar="N",
                   help="deep-check the N worst drop suspects, by severity then score (default: %(default)s)")
    d.add_argument("--deep-vm", action="append", default=[], metavar="NAME", help="deep-check this VM too (repeat)")
    d.add_argument("--deep-window", type=float, default=60.0, metavar="SECONDS",
                   help="window between the two counter samples (default: %(default)g)")
    d.add_argument("--esxtop-delay", type=int, default=5, metavar="SECONDS",
                   help="esxtop interval (default: %(default)s)")
    d.add_argument("--deep-host-ssh", action="append", default=[], metavar="[HOST=]USER@ADDR[:PORT]",
                   help="SSH login for ESXi host HOST (without HOST=: every host); default root@<host name>; "
                   "password from $ESXDIAG_HOST_PASSWORD")
    d.add_argument("--deep-guests", action="store_true", help="also sample each suspect's guest over SSH")
    d.add_argument("--guest-ssh", metavar="USER@[HOST][:PORT]",
                   help="guest login (default: $ESXDIAG_GUEST_USER, else root / Administrator on Windows, @ the IP "
                   "from VMware Tools); password from $ESXDIAG_GUEST_PASSWORD")
    add_ssh_trust_options(d)
    d.add_argument("--deep-parallel", type=int, default=4, metavar="N",
                   help="hosts sampled at once (default: %(default)s)")
    add_time_limit_options(d)
    d.add_argument("--deep-dir", type=Path, metavar="DIR",
                   help="where the per-host bundles go (default: deep/ in the scan's own folder; with -o, a new "
                   "esxdiag-deep-TIMESTAMP[-N] beside the report)")
