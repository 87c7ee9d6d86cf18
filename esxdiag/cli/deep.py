"""`esxdiag scan --deep N / --deep-vm NAME`: the options. Choosing the VMs, the host-grouped
collection and its folding into the fleet report are below the commands (esxdiag.scanning)."""

from __future__ import annotations

import argparse
from pathlib import Path


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
    d.add_argument("--ssh-key", type=Path, help="private key for host and guest SSH (default: the keys in ssh-agent "
                   "($SSH_AUTH_SOCK), then ~/.ssh/id_*)")
    d.add_argument("--known-hosts", type=Path, help="known_hosts file to trust (default: ~/.ssh/known_hosts); "
                   "esxdiag's own file ($ESXDIAG_KNOWN_HOSTS, default ~/.config/esxdiag/known_hosts) is read too")
    d.add_argument("--accept-new-host-keys", action="store_true",
                   help="trust unknown SSH host keys and store them in esxdiag's own known_hosts")
    d.add_argument("--deep-parallel", type=int, default=4, metavar="N",
                   help="hosts sampled at once (default: %(default)s)")
    d.add_argument("--command-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="give up on one host/guest command after this long (default: %(default)g)")
    d.add_argument("--vcenter-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="deep check: overall limit for each host's vCenter login and VM lookups, and again for its "
                   "performance query (default: %(default)g), as for report")
    d.add_argument("--output-cap", type=float, metavar="MIB",
                   help="deep check: cap every host/guest command's output at MIB mebibytes (default: per command), "
                   "as for report")
    d.add_argument("--deep-dir", type=Path, metavar="DIR",
                   help="where the per-host bundles go (default: deep/ in the scan's own folder; with -o, a new "
                   "esxdiag-deep-TIMESTAMP[-N] beside the report)")
