"""`esxdiag serve`: watch whole vCenters continuously (esxdiag.serve). The vCenters, logins,
filters, thresholds, deep check and proofs are `scan`'s own options (esxdiag.cli.scan.add_fleet_options)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from esxdiag.cli.scan import HISTORY_HELP, history_default_help, add_fleet_options
from esxdiag.errors import EXIT_OK
from esxdiag.scanning.options import DEEP_RECHECK_S

DEFAULT_LISTEN = "127.0.0.1:9683"


def register(sub) -> None:
    s = sub.add_parser("serve", help="watch whole vCenters: a scan every interval, /metrics for Prometheus, a web "
                       "page, the history")
    add_fleet_options(s)
    w = s.add_argument_group("watching")
    w.add_argument("--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
                   help="where /, /metrics and /healthz are served (default: %(default)s); anything but loopback "
                   "needs --web-config with TLS and basic auth")
    w.add_argument("--web-config", type=Path, metavar="FILE",
                   help="Prometheus exporter web config (YAML): tls_server_config (cert_file, key_file) and "
                   "basic_auth_users (name: bcrypt hash)")
    w.add_argument("--web-max-connections", type=int, default=512, metavar="N",
                   help="connections served at once; one more is answered 503 (default: %(default)s)")
    w.add_argument("--web-idle-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="a connection that has not sent a complete request (or its next one) within SECONDS is "
                   "closed (default: %(default)g)")
    w.add_argument("--interval", type=float, default=300.0, metavar="SECONDS",
                   help="one cycle per vCenter every SECONDS (default: %(default)g); a cycle still running at the "
                   "next start makes that one skipped (counted)")
    w.add_argument("--jitter", type=float, metavar="SECONDS",
                   help="random delay added to each start, and each vCenter's offset (default: a tenth of "
                   "--interval, at most 30)")
    w.add_argument("--data-dir", type=Path, metavar="DIR",
                   help="newest snapshot per vCenter and the deep-check bundles (default: serve/ beside the "
                   "history)")
    w.add_argument("--history", type=Path, metavar="PATH", help=HISTORY_HELP % history_default_help())
    w.add_argument("--retention-days", type=float, default=3.0, metavar="DAYS",
                   help="history, deep checks and bundles older than this are deleted (default: %(default)g); "
                   "this applies to every scan in the history file")
    w.add_argument("--deep-hosts", type=int, default=2, metavar="N",
                   help="SSH budget: ESXi hosts deep-checked per cycle of a vCenter (default: %(default)s); only "
                   "hosts with a --deep-host-ssh login; one deep check at a time in the process")
    w.add_argument("--deep-recheck", type=float, default=DEEP_RECHECK_S, metavar="SECONDS",
                   help="a VM deep-checked less than SECONDS ago leaves its turn to the next suspect; its result "
                   "is shown for --proof-max-age (default: %(default)g)")
    w.add_argument("--inventory-max-age", type=float, default=3600.0, metavar="SECONDS",
                   help="each vCenter's login and inventory are kept between cycles and only the changes read; "
                   "the whole inventory is read again when the kept copy is SECONDS old, and after any fault "
                   "(default: %(default)g; 0: the whole inventory every cycle)")
    w.add_argument("--shutdown-grace", type=float, default=5.0, metavar="SECONDS",
                   help="on SIGTERM, how long a running cycle may take to stop before it is abandoned "
                   "(default: %(default)g)")
    w.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info",
                   help="(default: %(default)s)")
    for action in s._actions:  # the deep-check options are scan's; serve keeps its bundles itself
        if action.dest == "deep_dir":
            action.help = "not for serve: bundles go under --data-dir/deep"
        elif action.dest == "proof_max_age":
            action.help += "; in serve also how long a deep check is shown"
    s.set_defaults(func=cmd_serve, quiet=False)  # quiet: run_deep's progress lines go to the log


def cmd_serve(args: argparse.Namespace) -> int:
    from esxdiag.serve.daemon import serve  # prometheus_client, bcrypt, yaml: only for serve

    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("paramiko").setLevel(max(logging.WARNING, logging.getLogger().level))  # a line per login
    abandoned = serve(args)
    if abandoned:  # threads still inside a scan or an SSH session: leave them, do not wait at exit
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_OK)
    return EXIT_OK
