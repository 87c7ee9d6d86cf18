"""Benchmark: `esxdiag serve` against a vcsim vCenter (bench/serve_README.md).

    python bench/serve_bench.py --vms 1000 --cycles 20            # builds vcsim (~40 s), 20 cycles
    python bench/fleet_bench.py --vms 10000 --serve &             # a 10,000-VM vcsim kept up (~14 min to build)
    python bench/serve_bench.py --vms 10000 --attach --cycles 1 --scrapes 10
    python bench/serve_bench.py --vms 2000 --cycles 6 --interval 20 --inventory-max-age 0   # whole every cycle

The whole `esxdiag serve` process runs as a user runs it (history, snapshot, /metrics, the page);
--interval is set just above a cycle's length so the cycles follow each other. Measured:

1. each cycle: wall time and SOAP requests (serve's own gauges), CPU of serve and its worker
   processes over the cycle (psutil), vcsim's CPU (/proc);
2. RSS of the serve process after each cycle (flat or growing?), and the peak with its workers;
3. /metrics: bytes (plain and gzip) and the time of each scrape, once the cycles are done;
   the fleet page: bytes and time of the first load (rendered) and the next (cached);
4. the history file after the cycles (checkpointed): bytes per 1,000 VM-cycles.
Not a test.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]


def _fleet_bench():
    spec = importlib.util.spec_from_file_location("esxdiag_fleet_bench", REPO / "bench" / "fleet_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fetch(url: str, gzip: bool = False) -> tuple[bytes, float]:
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"} if gzip else {})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        body = response.read()
    return body, time.perf_counter() - started


def gauge(text: str, name: str) -> float | None:
    match = re.search(rf"^{name}{{[^}}]*}} (\S+)$", text, re.M)
    return float(match[1]) if match else None


class TreeSampler(threading.Thread):
    """The largest RSS of serve plus its worker processes, every 100 ms."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.root, self.peak, self.done = psutil.Process(pid), 0, threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            try:
                procs = [self.root, *self.root.children(recursive=True)]
                self.peak = max(self.peak, sum(p.memory_info().rss for p in procs if p.is_running()))
            except psutil.Error:
                pass


def cpu_of_tree(proc: psutil.Process) -> float:
    """CPU seconds of serve, its live children and the children it has reaped."""
    times = proc.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in proc.children(recursive=True):
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def run(lab, vms: int, cycles: int, interval: float, scrapes: int, workdir: Path,
        inventory_max_age: float | None = None) -> dict:
    fb = _fleet_bench()
    env = {**os.environ, "ESXDIAG_PASSWORD": lab.password, "XDG_DATA_HOME": str(workdir / "data")}
    argv = [str(Path(sys.executable).with_name("esxdiag")), "serve", "--vcenter", lab.url, "--user", lab.username,
            "--insecure", "--listen", "127.0.0.1:0", "--interval", str(interval), "--jitter", "0",
            "--timeout", "300", "--history", str(workdir / "history.sqlite"), "--data-dir", str(workdir / "serve")]
    if inventory_max_age is not None:
        argv += ["--inventory-max-age", str(inventory_max_age)]
    log = open(workdir / "serve.log", "w")
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    serve = psutil.Process(proc.pid)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    out: dict = {"vms": vms, "interval_s": interval, "inventory_max_age": inventory_max_age, "cycles": []}
    try:
        while "listening on" not in (workdir / "serve.log").read_text():
            time.sleep(0.1)
        url = (workdir / "serve.log").read_text().split("listening on ", 1)[1].split()[0]
        seen, last, cpu, vcsim_cpu = 0, None, cpu_of_tree(serve), fb.cpu_seconds_of(lab.process.pid)
        while seen < cycles:
            time.sleep(0.5)
            ended = json.loads(fetch(url + "healthz")[0])["vcenters"][0]["last_cycle"]  # cheap: not /metrics
            if ended != last:
                seen, last = seen + 1, ended
                text = fetch(url + "metrics")[0].decode()
                now_cpu, now_vcsim = cpu_of_tree(serve), fb.cpu_seconds_of(lab.process.pid)
                one = {"cycle": seen, "seconds": gauge(text, "esxdiag_vcenter_scan_duration_seconds"),
                       "requests": gauge(text, "esxdiag_vcenter_last_scan_requests"),
                       "ok": gauge(text, "esxdiag_vcenter_last_scan_success"), "cpu_s": round(now_cpu - cpu, 2),
                       "vcsim_cpu_s": round(now_vcsim - vcsim_cpu, 2), "rss_mib": round(serve.memory_info().rss / 2**20, 1),
                       "load": round(os.getloadavg()[0], 2)}
                cpu, vcsim_cpu = now_cpu, now_vcsim
                out["cycles"].append(one)
                print(json.dumps(one), flush=True)
        out["scrapes"] = scrape(url, scrapes)
        out["page"] = page(url)
    finally:
        proc.send_signal(signal.SIGTERM)
        stopped = time.perf_counter()
        proc.wait(60)
        out["sigterm_to_exit_s"] = round(time.perf_counter() - stopped, 2)
        sampler.done.set()
        log.close()
    out["peak_tree_rss_mib"] = round(sampler.peak / 2**20, 1)
    out["history"] = history_size(workdir / "history.sqlite", vms, cycles)
    return out


def scrape(url: str, n: int) -> dict:
    plain = [fetch(url + "metrics") for _ in range(n)]
    packed = [fetch(url + "metrics", gzip=True) for _ in range(n)]
    return {"bytes": len(plain[0][0]), "gzip_bytes": len(packed[0][0]),
            "series": sum(1 for line in plain[0][0].splitlines() if line and not line.startswith(b"#")),
            "seconds": sorted(round(s, 3) for _, s in plain), "gzip_seconds": sorted(round(s, 3) for _, s in packed)}


def page(url: str) -> dict:
    first, first_s = fetch(url)
    _, again_s = fetch(url)
    return {"bytes": len(first), "first_s": round(first_s, 3), "cached_s": round(again_s, 3)}


def history_size(path: Path, vms: int, cycles: int) -> dict:
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = db.execute("SELECT count(*) FROM vm_results").fetchone()[0]
    size = path.stat().st_size
    return {"bytes": size, "vm_rows": rows, "bytes_per_1000_vm_cycles": round(size / max(rows, 1) * 1000)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vms", type=int, default=1000)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--interval", type=float, help="seconds between cycles (default: 8 at 1,000 VMs, 60 above)")
    parser.add_argument("--scrapes", type=int, default=5)
    parser.add_argument("--delay-ms", type=int, default=20)
    parser.add_argument("--attach", action="store_true", help="use the vcsim `fleet_bench.py --serve` keeps up")
    parser.add_argument("--inventory-max-age", type=float,
                        help="serve's --inventory-max-age (default: serve's; 0: the whole inventory every cycle)")
    ns = parser.parse_args(argv)
    fb = _fleet_bench()
    fb.compile_bytecode()  # esxdiag as installed: its modules' bytecode written once, before timing
    interval = ns.interval or (8.0 if ns.vms <= 1000 else 60.0)
    workdir = Path(tempfile.mkdtemp(prefix=f"serve-bench-{ns.vms}-"))
    if ns.attach:
        lab, _ = fb._attached(REPO / ".lab" / f"bench-fleet-{ns.vms}" / "attach.json")
    else:
        clusters = max(1, ns.vms // 200)
        flags = ("-cluster", str(clusters), "-host", "10", "-vm", str(ns.vms // clusters), "-standalone-host", "0",
                 "-delay", str(ns.delay_ms))
        lab = fb._lab_module().start_vcsim(workdir / "vcsim", flags, timeout_s=7200)
    try:
        results = run(lab, ns.vms, ns.cycles, interval, ns.scrapes, workdir, ns.inventory_max_age)
    finally:
        if not ns.attach:
            lab.stop()
    (workdir / "results.json").write_text(json.dumps(results, indent=1))
    print(json.dumps({k: v for k, v in results.items() if k != "cycles"}, indent=1))
    print(f"results: {workdir / 'results.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
