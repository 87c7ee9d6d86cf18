"""Benchmark: the offline half of one scan or serve cycle, stage by stage, this tree beside a baseline.

    python bench/cycle_stages_bench.py [--snapshot .lab/bench-fleet-2000/snap.json] [--base main] [--runs 5]

The stages every cycle runs after the API pass, on one fleet snapshot (a real one: `python
bench/fleet_bench.py --vms 2000` leaves it in .lab/bench-fleet-2000/snap.json): writing the snapshot
JSON, reading it back into typed records (snapshot_from_dict), the fleet analysis (build_report), the
report's JSON (as_dict: `scan` writes it; serve makes it when a page asks) and the history record
(from the typed report where the tree has esxdiag.fleet.history.entry_of_report, else from the JSON;
into a history that already holds the same scan, as in a steady serve cycle). Process CPU per stage, minimum and median over the
runs, with the cyclic garbage collector paused as run_scan pauses it.

``--base REV`` measures this tree and a checkout of REV (git worktree in a temporary folder) one run
at a time, each run a new process, the two taking turns, so both columns are measured in the same
run on the same snapshot under the same load. Each side also prints a digest of its report's JSON (generated_at left out): the
stages must give the same report, and the bench says so when they do not.
Not a test; figures in bench/peers_README.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAGES = ("write_snapshot", "snapshot_from_dict", "build_report", "as_dict", "history record")


def measure(snapshot: Path, runs: int) -> dict:
    """Run in the process whose esxdiag is being measured: {stage: [CPU seconds per run], digest}."""
    import gc

    from esxdiag.config import load_thresholds
    from esxdiag.fleet.analysis import build_report
    from esxdiag.fleet import history as fleet_history
    from esxdiag.fleet.snapshot import snapshot_from_dict, write_snapshot

    data = json.loads(snapshot.read_text())
    thresholds = load_thresholds(None)
    times: dict[str, list[float]] = {s: [] for s in STAGES}
    digest = ""
    with tempfile.TemporaryDirectory() as scratch:
        history = Path(scratch) / "history.sqlite"
        for _ in range(runs):
            gc.collect()
            gc.disable()
            try:
                started = time.process_time()
                write_snapshot(data, Path(scratch) / "snapshot.json")
                times["write_snapshot"].append(time.process_time() - started)
                started = time.process_time()
                typed = snapshot_from_dict(data, str(snapshot))
                times["snapshot_from_dict"].append(time.process_time() - started)
                started = time.process_time()
                report = build_report(typed, thresholds, str(snapshot))
                times["build_report"].append(time.process_time() - started)
                started = time.process_time()
                document = report.as_dict()
                times["as_dict"].append(time.process_time() - started)
                started = time.process_time()
                if hasattr(fleet_history, "entry_of_report"):  # the history read from the typed report
                    fleet_history.record_entry(history, fleet_history.entry_of_report(report))
                else:  # a base before it: from the report's JSON
                    fleet_history.changes_and_record(history, document)
                times["history record"].append(time.process_time() - started)
            finally:
                gc.enable()
            digest = hashlib.sha256(json.dumps({k: v for k, v in document.items() if k != "generated_at"},
                                               sort_keys=True).encode()).hexdigest()[:16]
    return {"times": times, "digest": digest, "vms": len(data["vms"])}


def one_run(tree: Path, snapshot: Path) -> dict:
    """measure() once in a new process importing esxdiag from ``tree``."""
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--snapshot", str(snapshot), "--runs", "1",
                          "--json"], env={**os.environ, "PYTHONPATH": str(tree)}, cwd=str(tree), check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def alternating(trees: dict[str, Path], snapshot: Path, runs: int) -> dict[str, dict]:
    """Each tree measured ``runs`` times, the trees taking turns: a load that comes and goes on a shared
    machine falls on both columns alike."""
    sides: dict[str, dict] = {}
    for _ in range(runs):
        for name, tree in trees.items():
            got = one_run(tree, snapshot)
            side = sides.setdefault(name, {"times": {s: [] for s in STAGES}, "digest": got["digest"],
                                           "vms": got["vms"]})
            for stage in STAGES:
                side["times"][stage] += got["times"][stage]
            if got["digest"] != side["digest"]:
                side["digest"] = "varies between runs"
    return sides


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--snapshot", type=Path, default=REPO / ".lab" / "bench-fleet-2000" / "snap.json")
    parser.add_argument("--base", help="a git revision to measure beside this tree (e.g. main, HEAD~3)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print this tree's figures as JSON only")
    ns = parser.parse_args(argv)
    if not ns.snapshot.is_file():
        print(f"{ns.snapshot}: no snapshot (python bench/fleet_bench.py --vms 2000 writes one)", file=sys.stderr)
        return 2
    if ns.json:
        print(json.dumps(measure(ns.snapshot.resolve(), ns.runs)))
        return 0
    if not ns.base:
        sides = {"this tree": measure(ns.snapshot.resolve(), ns.runs)}
    else:
        with tempfile.TemporaryDirectory() as scratch:
            base = Path(scratch) / "tree"
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(base), ns.base], check=True)
            try:
                sides = alternating({"this tree": REPO, ns.base: base}, ns.snapshot.resolve(), ns.runs)
            finally:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)], check=False)
    first = next(iter(sides.values()))
    print(f"{first['vms']} VMs from {ns.snapshot}, {ns.runs} runs, process CPU ms min / median, load "
          f"{os.getloadavg()[0]:.1f}")
    print(f"{'stage':<20}" + "".join(f"{name:>24}" for name in sides))
    for stage in (*STAGES, "total"):
        cells = []
        for side in sides.values():
            runs = [sum(t) for t in zip(*side["times"].values())] if stage == "total" else side["times"][stage]
            cells.append(f"{min(runs) * 1000:>10.1f} / {statistics.median(runs) * 1000:>9.1f}")
        print(f"{stage:<20}" + "".join(f"{c:>24}" for c in cells))
    digests = {name: side["digest"] for name, side in sides.items()}
    print("report digest: " + ", ".join(f"{name} {d}" for name, d in digests.items())
          + ("" if len(set(digests.values())) == 1 else "  <- THE REPORTS DIFFER"))
    return 0 if len(set(digests.values())) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
