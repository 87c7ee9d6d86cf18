"""Benchmark: one `esxdiag scan` of several vCenters at once, its worker processes shared by them.

    python bench/fleet_bench.py --vms 1000 --serve &    # and 2000, 10000: the vcsims kept up
    python bench/multi_vcenter_bench.py --vms 1000,2000,10000 --rounds 2

Alternates `--workers 1` (no worker processes: what the automatic count gave three vCenters on two
cores before the pool was shared) with the automatic count (one pool for the scan). Per run: wall,
CPU of the scan and its reaped workers (wait4), the vcsims' CPU (/proc), the largest process's peak
RSS, workers and requests per vCenter. Not a test; figures in bench/fleet_README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cpu_seconds_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vms", default="1000,2000,10000", help="sizes of kept-up vcsims (fleet_bench.py --serve)")
    parser.add_argument("--rounds", type=int, default=2)
    ns = parser.parse_args(argv)
    labs = [json.loads((REPO / ".lab" / f"bench-fleet-{n}" / "attach.json").read_text()) for n in ns.vms.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        config = work / "config.ini"  # one password per vCenter: [vcenter HOST:PORT] sections
        config.touch(mode=0o600)
        config.write_text("".join(f"[vcenter 127.0.0.1:{lab['port']}]\nusername = {lab['username']}\n"
                                  f"password = {lab['password']}\ninsecure = yes\n\n" for lab in labs))
        runs: dict[str, list[dict]] = {}
        for _ in range(ns.rounds):
            for name, extra in (("--workers 1", ["--workers", "1"]), ("automatic", [])):
                argv = [str(Path(sys.executable).with_name("esxdiag")), "scan", "--config", str(config),
                        "--no-history", "--quiet", "--format", "json", "-o", str(work / "report.json"),
                        "--save-snapshot", str(work / "snap.json"), "--timeout", "300",
                        *[arg for lab in labs for arg in ("--vcenter", lab["url"])], *extra]
                vcsim_before = sum(cpu_seconds_of(lab["pid"]) for lab in labs)
                started = time.perf_counter()
                proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                _, status, usage = os.wait4(proc.pid, 0)
                wall = time.perf_counter() - started
                stderr = proc.stderr.read().decode(errors="replace")
                proc.stderr.close()
                if os.waitstatus_to_exitcode(status) != 0:
                    raise RuntimeError(f"esxdiag scan failed: {stderr.strip()}")
                data = json.loads((work / "snap.json").read_text())
                one = {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
                       "vcsim_cpu_s": round(sum(cpu_seconds_of(lab["pid"]) for lab in labs) - vcsim_before, 2),
                       "peak_rss_mib": round(usage.ru_maxrss / 1024), "vms": len(data["vms"]),
                       "workers": [v["workers"] for v in data["vcenters"]],
                       "requests": [v["requests"] for v in data["vcenters"]], "load_1m": round(os.getloadavg()[0], 1)}
                print(name, json.dumps(one), flush=True)
                runs.setdefault(name, []).append(one)
    for name, done in runs.items():
        print(f"{name:<12} wall median {statistics.median(r['wall_s'] for r in done):.2f} s, "
              f"CPU median {statistics.median(r['cpu_s'] for r in done):.2f} s over {len(done)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
