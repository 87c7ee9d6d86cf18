"""Benchmark: the fleet page (fleet-report.html) at 10,000 VMs, offline (no vCenter): the file's size,
its load time in headless Chromium (the navigation's loadEventEnd, which includes the inline script
drawing the first page of the table) and the page's height. Not a test; tests/fleet/test_fleet_page.py
checks the same budget (<= 10 MB, < 3 s, < 20,000 px) once.

    python bench/fleet_page_bench.py [--vms 10000] [--repeat 3] [--keep DIR]

The snapshot is synthetic (tests/fleet/fleet_snapshots.py builds each VM the way a real vCenter answers
instance "*"): 10 clusters of 10 hosts, every class represented, a hostile VM name now and then.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fleet_snapshots", ROOT / "tests" / "fleet" / "fleet_snapshots.py")
fs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fs)
HOSTILE = '<img src=x onerror="document.title=1">"</script><script>alert(1)</script>'
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _vm(i: int) -> dict:
    """One VM of the mix: i % 100 picks its kind, so every class shows up in any 100 VMs."""
    cluster, host = f"C{i % 10}", f"esx{i % 100:02d}.lab"
    name = HOSTILE + str(i) if i % 997 == 13 else f"vm{i:05d}-{('web', 'db', 'app', 'cache')[i % 4]}"
    common = dict(moid=f"vm-{i}", host=host, cluster=cluster, vcenter=f"vc{i % 2 + 1}:443", vcpus=1 + i % 4)
    kind = i % 100
    if kind < 3:
        return fs.vm(name, drops=100 + 50 * kind, **common)  # ring suspicions, warning and critical
    if kind == 3:
        return fs.vm(name, drops=100, ready=2400, **common)  # cpu-and-drops
    if kind == 4:
        return fs.vm(name, ready=3100, limited=3000, limit=800, **common)  # cpu-limit
    if kind in (5, 6):
        return fs.vm(name, ready=1400 if kind == 5 else 2400, **common)  # cpu-contention
    if kind in (7, 8):
        return fs.vm(name, nics=("vmxnet3", "e1000"), drops={"4000": 0, "4001": 300 * (kind - 7)}, **common)
    if kind == 9:
        return fs.vm(name, power="poweredOff", **common)
    if kind < 15:
        return fs.vm(name, drops=[3] + [0] * 14, packets=2_000_000, **common)  # noise under the floor
    return fs.vm(name, ready=50 + i % 300, nics=("vmxnet3",) * (1 + i % 2), **common)


def synthetic_fleet(n: int) -> dict:
    data = fs.snapshot([_vm(i) for i in range(n)], hosts=[fs.host(f"esx{h:02d}.lab") for h in range(100)],
                       vcenters=["vc1:443", "vc2:443"])
    return json.loads(json.dumps(data))  # what the loader reads from a file: no shared lists


def render_page(n: int, out: Path) -> dict:
    from esxdiag.config import load_thresholds
    from esxdiag.fleet.analysis import build_report
    from esxdiag.fleet.snapshot import snapshot_from_dict
    from esxdiag.reports.fleet_html import render_fleet_html

    started = time.perf_counter()
    document = build_report(snapshot_from_dict(synthetic_fleet(n)), load_thresholds(), "synthetic.json").as_dict()
    analysed = time.perf_counter()
    out.write_text(render_fleet_html(document), encoding="utf-8")
    return {"document": document, "analyse_s": analysed - started, "render_s": time.perf_counter() - analysed,
            "bytes": out.stat().st_size}


LOAD_TIME = "performance.getEntriesByType('navigation')[0].loadEventEnd"
HEIGHT = "document.documentElement.scrollHeight"


def measure(page, path: Path) -> dict:
    """Open the page fresh; its load time (ms) and height (CSS px)."""
    page.goto(path.resolve().as_uri(), wait_until="load")
    return {"load_ms": page.evaluate(LOAD_TIME), "height_px": page.evaluate(HEIGHT)}


def launch(driver):
    return driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vms", type=int, default=10000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--keep", type=Path, help="keep the page in this directory")
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    work = Path(args.keep or tempfile.mkdtemp(prefix="esxdiag-page-"))
    work.mkdir(parents=True, exist_ok=True)
    out = work / "fleet-report.html"
    made = render_page(args.vms, out)
    print(f"{args.vms} VMs: analysis {made['analyse_s']:.2f} s, render {made['render_s']:.2f} s, "
          f"{made['bytes']:,} bytes ({made['bytes'] / 2**20:.2f} MiB)")
    with sync_playwright() as driver:
        browser = launch(driver)
        for run in range(args.repeat):
            page = browser.new_page()
            got = measure(page, out)
            page.close()
            print(f"run {run + 1}: load {got['load_ms']:.0f} ms, height {got['height_px']:,} px, "
                  f"load average {os.getloadavg()[0]:.1f}")
        browser.close()
    if not args.keep:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
