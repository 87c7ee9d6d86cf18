"""Benchmark: what one fleet-scan worker process costs to start (bench/fleet_README.md, "Worker start-up").

    python bench/worker_start_bench.py --runs 5

A scan worker is spawned by a process whose __main__ is the `esxdiag` console script, so the bench
starts workers from such a process (a child python whose __main__ is that script, as when a user
types `esxdiag scan`), through the scan's own context (workers.spawn_context()), imports the
worker's module as its initializer does, and asks the worker for its CPU seconds so far and the
modules it holds. Not a test (tests/fleet/test_workers.py checks the modules).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = """
import importlib, json, sys, types
main = types.ModuleType("__main__")
main.__file__ = sys.argv[1]
sys.modules["__main__"] = main
from concurrent.futures import ProcessPoolExecutor
from esxdiag.collectors.fleet import workers
with ProcessPoolExecutor(1, mp_context=workers.spawn_context(), initializer=importlib.import_module,
                         initargs=("esxdiag.collectors.fleet.workers",)) as pool:
    cpu, modules = pool.submit(eval, "(__import__('time').process_time(), sorted(__import__('sys').modules))").result()
print(json.dumps({"cpu_s": cpu, "modules": modules}))
"""
HEAVY = ("esxdiag.cli", "esxdiag.reports", "jinja2", "pandas", "pyarrow")


def one_worker(script: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(script)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--script", type=Path, default=Path(sys.executable).with_name("esxdiag"),
                        help="the console script (default: this venv's esxdiag)")
    ns = parser.parse_args(argv)
    runs = [one_worker(ns.script) for _ in range(ns.runs)]
    cpu = [r["cpu_s"] for r in runs]
    modules = runs[-1]["modules"]
    heavy = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))
    print(f"one worker's start-up CPU over {ns.runs} runs: min {min(cpu):.3f} s, median {statistics.median(cpu):.3f} s, "
          f"max {max(cpu):.3f} s; {len(modules)} modules; of {', '.join(HEAVY)}: {len(heavy)} "
          f"({', '.join(heavy[:6])}{'...' if len(heavy) > 6 else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
