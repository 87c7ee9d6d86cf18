"""The SSH and time-limit options `report`, `rings`, `collect` and `scan --deep` share, declared once."""

from __future__ import annotations

from pathlib import Path

from esxdiag.specs import DEFAULT_COMMAND_TIMEOUT_S


def add_ssh_trust_options(p) -> None:
    """--ssh-key, --known-hosts, --accept-new-host-keys."""
    p.add_argument("--ssh-key", type=Path, help="private key for host and guest SSH (default: the keys in "
                   "ssh-agent ($SSH_AUTH_SOCK), then ~/.ssh/id_*)")
    p.add_argument("--known-hosts", type=Path, help="known_hosts file to trust (default: ~/.ssh/known_hosts); "
                   "esxdiag's own file ($ESXDIAG_KNOWN_HOSTS, default: $XDG_CONFIG_HOME/esxdiag/known_hosts, "
                   "~/.config/esxdiag/known_hosts) is read too")
    p.add_argument("--accept-new-host-keys", action="store_true",
                   help="trust unknown SSH host keys and store them in esxdiag's own known_hosts")


def add_time_limit_options(p) -> None:
    """--command-timeout, --vcenter-timeout, --output-cap."""
    p.add_argument("--command-timeout", type=float, default=DEFAULT_COMMAND_TIMEOUT_S, metavar="SECONDS",
                   help="give up on one host/guest command after this long (default: %(default)g; esxtop gets "
                   "the window plus a margin)")
    p.add_argument("--vcenter-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="overall limit for the vCenter login and VM lookup, and again for the performance "
                   "query; for the deep check, per host (default: %(default)g)")
    p.add_argument("--output-cap", type=float, metavar="MIB",
                   help="cap every command's output at MIB mebibytes (default: per command, 4 KiB-32 MiB; esxtop "
                   "16 MiB + 4 MiB per sample); output past the cap is cut and marked truncated")

