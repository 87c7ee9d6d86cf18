"""`esxdiag serve` put together: options checked before anything starts, the history, the state,
the cycles, /metrics and the web server; SIGTERM or SIGINT stop it within seconds."""

from __future__ import annotations

import argparse
import ctypes
import logging
import os
import signal
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from types import MappingProxyType


from esxdiag.config import load_thresholds
from esxdiag.errors import EsxdiagError
from esxdiag.fleet.history import default_path
from esxdiag.scanning.deep import DeepCheck
from esxdiag.scanning.options import check_fleet_options, fleet_credentials, proof_max_age, tls_warnings
from esxdiag.serve.cycle import CycleRunner
from esxdiag.serve.metrics import Exposition
from esxdiag.serve.pages import Pages
from esxdiag.serve.schedule import Scheduler
from esxdiag.serve.state import State, VcenterState
from esxdiag.serve.store import Store
from esxdiag.serve.web import WebServer
from esxdiag.serve.webconfig import is_loopback, load_web_config, parse_listen

log = logging.getLogger("esxdiag.serve")


def check(args: argparse.Namespace) -> None:
    check_fleet_options(args)
    for name, low, high in (("interval", 1, 86400), ("retention_days", 0.01, 3650), ("deep_hosts", 1, 1000),
                            ("deep_recheck", 0, 7 * 86400), ("shutdown_grace", 0, 600),
                            ("web_max_connections", 1, 10000), ("web_idle_timeout", 0.5, 3600),
                            ("inventory_max_age", 0, 7 * 86400)):
        if getattr(args, name) is not None and not low <= getattr(args, name) <= high:
            raise EsxdiagError(f"--{name.replace('_', '-')} must be between {low:g} and {high:g}")
    if args.jitter is not None and not 0 <= args.jitter < args.interval / 2:
        raise EsxdiagError("--jitter must be at least 0 and less than half of --interval")
    if args.deep_dir:
        raise EsxdiagError("--deep-dir: serve keeps its deep-check bundles under --data-dir/deep (served at /deep/)")
    if (args.deep or args.deep_vm) and not args.deep_host_ssh:
        raise EsxdiagError("--deep/--deep-vm: serve deep-checks only hosts with an SSH login configured: add "
                           "--deep-host-ssh HOST=USER@ADDR[:PORT] (or USER@ for every host)")


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """glibc gives each thread that allocates its own malloc arena (up to 8 per core), and serve runs
    a thread per connection and per cycle: fragments of every arena stay, and RSS creeps up over the
    first cycles (bench/serve_README.md: +15 MiB over 20 cycles at 1,000 VMs, flat with 2 arenas).
    mallopt(M_ARENA_MAX) before any thread starts; MALLOC_ARENA_MAX in the environment wins."""
    if os.environ.get("MALLOC_ARENA_MAX") or not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None).mallopt(-8, arenas) == 1  # -8: M_ARENA_MAX (glibc malloc.h)
    except (AttributeError, OSError):  # not glibc (musl has no mallopt)
        return False


def _restore_deep(store: Store, names: list[str], max_age_s: float) -> dict[str, dict]:
    """The deep checks younger than max_age_s, from before a restart, that no scan has retired: kept
    by the first cycles as `scan` keeps them from the history (esxdiag.scanning.proofs)."""
    out: dict[str, dict] = {name: {} for name in names}
    since = datetime.now(timezone.utc) - timedelta(seconds=max_age_s)
    for row in store.held_since(since):
        if row["vcenter"] in out:
            out[row["vcenter"]][row["moid"]] = DeepCheck.of(row)
    return out


def serve(args: argparse.Namespace) -> list[str]:
    """Run until SIGTERM/SIGINT; bad options raise EsxdiagError before anything starts. Returns the
    cycles still running after --shutdown-grace (abandoned: the caller exits without them)."""
    check(args)
    limit_malloc_arenas()
    thresholds = load_thresholds(args.config, args.set)
    host, port = parse_listen(args.listen)
    web = load_web_config(args.web_config)
    if not is_loopback(host) and not web.secure:
        raise EsxdiagError(f"--listen {args.listen}: anything but loopback needs TLS and basic auth: --web-config "
                           "FILE with tls_server_config and basic_auth_users")
    targets = fleet_credentials(args)
    data_dir = (args.data_dir or default_path().parent / "serve").expanduser()
    store = Store(args.history or default_path(), args.retention_days)
    deep_max_age = proof_max_age(args.proof_max_age, args.deep_recheck)
    names = [f"{c.host}:{c.port}" for c in targets]
    restored = _restore_deep(store, names, deep_max_age)
    state = State([VcenterState(n, c.url, args.interval, tls_verified=not c.insecure or bool(c.thumbprint),
                                deep=MappingProxyType(restored[n])) for n, c in zip(names, targets)])
    runner = CycleRunner(args, thresholds, store, data_dir, threading.Lock())
    jitter = min(30.0, args.interval / 10) if args.jitter is None else args.jitter
    scheduler = Scheduler(targets, runner, state, args.interval, jitter, deep_max_age)
    pages = Pages(state, store, thresholds, args.window, runner.options.filters.describe())
    server = WebServer(host, port, pages, Exposition(state), data_dir / "deep", web, args.web_max_connections,
                       args.web_idle_timeout)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.5}, name="web", daemon=True).start()
    print(f"esxdiag serve: listening on {server.url} ({len(targets)} vCenter(s) every {args.interval:g} s; "
          f"history {store.path}; data {data_dir})", file=sys.stderr, flush=True)
    for warning in tls_warnings(args, targets):
        log.warning("%s", warning)
    if args.window < args.interval:
        log.warning("--window %g s is shorter than --interval %g s: bursts between windows are not seen",
                    args.window, args.interval)
    state.started_ts = time.time()
    scheduler.start()
    while not stop.wait(1):
        pass
    log.info("stopping: ending the web server and the cycles (at most %g s)", args.shutdown_grace)
    server.shutdown()
    server.server_close()
    abandoned = scheduler.stop(args.shutdown_grace)
    runner.close()
    if abandoned:
        log.warning("abandoned after %g s: %s (nothing of theirs was recorded)", args.shutdown_grace,
                    ", ".join(abandoned))
    return abandoned
