"""Benchmark: `esxdiag scan` of a whole vcsim vCenter vs a per-VM QueryPerf loop vs `govc metric.sample`.

    python bench/fleet_bench.py [--vms 1000] [--delay-ms 20] [--no-loop] [--no-govc]
    python bench/fleet_bench.py --vms 1000 --offline-copies 10   # analysis of 10,000 VMs, no vcsim
    python bench/fleet_bench.py --vms 10000 --serve               # build once, keep it up (slow at 10,000)
    python bench/fleet_bench.py --vms 10000 --attach              # bench against the served vcsim

vcsim is built from flags (a model loaded with -load ignores -delay), -cluster N -host 10 -vm V
with V VMs per cluster, and -delay adds the latency to every SOAP method. Then, side by side on
the same server, the same five counters over the same powered-on VMs, last 5 minutes (15 x 20 s):

1. esxdiag scan: the whole process (`esxdiag scan --format json`), wall time, peak RSS of the
   process (wait4 rusage) and the peak of its RSS summed with its worker processes' (psutil, every
   100 ms), CPU of the process and its workers, vcsim's own CPU (/proc), SOAP requests as the
   session counted them (in the snapshot).
2. per-VM loop: what per-VM tools do, one QueryPerf per VM after one inventory pass (pyvmomi in
   this process, requests counted by the same session counter).
3. govc metric.sample -n 15 of the same counters over /DC0/vm/*, requests counted from govc's
   own debug log (one *.req.xml file per round trip).
Not a test.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAB_FILE = REPO / "tests" / "lab" / "vcsim_lab.py"
COUNTERS = ("cpu.ready.summation", "cpu.costop.summation", "cpu.maxlimited.summation",
            "net.droppedRx.summation", "net.packetsRx.summation")


def _lab_module():
    spec = importlib.util.spec_from_file_location("esxdiag_bench_vcsim_lab", LAB_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_bytecode() -> None:
    """Bytecode for every esxdiag module the timed processes import, written as `pip install` writes it
    (`pip install .` compiles all of them). Without it an editable install under PYTHONDONTWRITEBYTECODE=1
    (this machine's environment) compiles each module without a current .pyc again in every process
    the bench times: up to 0.35 s of CPU per process, which no installed esxdiag spends."""
    import compileall

    import esxdiag
    import esxdiag.collectors
    import esxdiag.reports
    for package in (esxdiag, esxdiag.collectors, esxdiag.reports):
        for folder in package.__path__:
            compileall.compile_dir(folder, quiet=1)


def cpu_seconds_of(pid: int) -> float:
    """utime + stime of a running process, from /proc (vcsim's own CPU, to split the wall time)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _sample_tree_rss(pid: int, peak: list[int]) -> None:
    """The largest sum of RSS over the scan process and its worker processes, every 50 ms."""
    import psutil
    try:
        root = psutil.Process(pid)
        while root.is_running() and root.status() != psutil.STATUS_ZOMBIE:
            total = 0
            for proc in [root, *root.children(recursive=True)]:
                try:
                    total += proc.memory_info().rss
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], total)
            time.sleep(0.1)
    except psutil.Error:
        return


def run_scan(lab, workdir: Path, extra: list[str]) -> dict:
    env = {**os.environ, "ESXDIAG_PASSWORD": lab.password}
    vcsim_before = cpu_seconds_of(lab.process.pid)
    snap = workdir / "snap.json"
    argv = [str(Path(sys.executable).with_name("esxdiag")), "scan", "--vcenter", lab.url, "--user", lab.username,
            "--insecure", "--no-history", "--quiet", "--format", "json", "-o", str(workdir / "report.json"),
            "--save-snapshot", str(snap), "--timeout", "300", *extra]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tree_peak = [0]
    sampler = threading.Thread(target=_sample_tree_rss, args=(proc.pid, tree_peak), daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    sampler.join(timeout=5)
    seconds = time.perf_counter() - started
    vcsim_cpu = cpu_seconds_of(lab.process.pid) - vcsim_before
    stderr = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise RuntimeError(f"esxdiag scan exited {code}: {stderr.strip()}")
    data = json.loads(snap.read_text())
    vc = data["vcenters"][0]
    on = sum(v["power_state"] == "poweredOn" for v in data["vms"])
    with_perf = sum(v["perf"] is not None for v in data["vms"])
    return {"seconds": seconds, "peak_rss_mib": usage.ru_maxrss / 1024, "tree_peak_rss_mib": tree_peak[0] / 2**20,
            "workers": vc.get("workers", 1), "requests": vc["requests"],
            "cpu_seconds": usage.ru_utime + usage.ru_stime, "vcsim_cpu_seconds": vcsim_cpu, "load_avg_1m": os.getloadavg()[0],
            "scan_seconds": vc["seconds"], "vms": len(data["vms"]), "powered_on": on, "with_perf": with_perf,
            "max_query_metrics": vc["max_query_metrics"]}


def run_loop(lab) -> dict:
    """One QueryPerf per VM, as per-VM tools do (inventory in one paged pass, to be fair)."""
    from pyVmomi import vim

    from esxdiag.collectors.credentials import resolve_credentials
    from esxdiag.collectors.fleet.inventory import Filters, read_places, read_vms
    from esxdiag.collectors.vsphere_perf import perf_counters
    from esxdiag.collectors.vsphere_session import connect

    creds = resolve_credentials(lab.url, lab.username, env={"ESXDIAG_PASSWORD": lab.password},
                                config_path=os.devnull, insecure=True)
    started = time.perf_counter()
    session = connect(creds, timeout_s=300)
    try:
        vms = read_vms(session, read_places(session), Filters(), 1000)
        counters = perf_counters(session)
        ids = [vim.PerformanceManager.MetricId(counterId=counters[c].key, instance="*") for c in COUNTERS]
        end = session.si.CurrentTime()
        answered = 0
        for vm in vms:
            if vm["power_state"] != "poweredOn":
                continue
            spec = vim.PerformanceManager.QuerySpec(entity=vm["_obj"], startTime=end - timedelta(minutes=5),
                                                    endTime=end, intervalId=20, format="csv", metricId=ids)
            answered += bool(session.content.perfManager.QueryPerf(querySpec=[spec]))
        requests = session.request_count
    finally:
        session.close()
    return {"seconds": time.perf_counter() - started, "requests": requests, "answered": answered,
            "load_avg_1m": os.getloadavg()[0]}


def run_govc(lab) -> dict:
    debug = Path(tempfile.mkdtemp(prefix="govc-debug-"))
    env = {**os.environ, **lab.env(), "GOVC_DEBUG": "true", "GOVC_DEBUG_PATH": str(debug)}
    started = time.perf_counter()
    done = subprocess.run([lab.govc_path, "metric.sample", "-n", "15", "/DC0/vm/*", *COUNTERS], env=env,
                          capture_output=True, text=True, check=False, timeout=3600)
    seconds = time.perf_counter() - started
    requests = len(glob.glob(str(debug / "**" / "*.req.xml"), recursive=True))
    shutil.rmtree(debug, ignore_errors=True)
    if done.returncode != 0:
        raise RuntimeError(f"govc metric.sample failed: {done.stderr.strip()[:300]}")
    return {"seconds": seconds, "requests": requests, "lines": done.stdout.count("\n"),
            "load_avg_1m": os.getloadavg()[0]}


def _attached(attach_file: Path):
    """The vcsim a --serve run keeps up, as the Lab fields the bench uses (never stopped from here)."""
    data = json.loads(attach_file.read_text())
    module = _lab_module()
    process = type("Served", (), {"pid": data["pid"]})()
    lab = module.Lab(data["url"], data["username"], data["password"], data["port"], "", attach_file.parent,
                     process, module.go_tool("govc"))
    return lab, data["build_seconds"]


def run_offline(snapshot: Path, copies: int) -> int:
    """The analysis half at scale: the snapshot's VMs repeated `copies` times (new MOIDs and names),
    then `esxdiag scan --snapshot` in json and html, wall time, CPU and peak RSS of each process."""
    data = json.loads(snapshot.read_text())
    base = data["vms"]
    data["vms"] = [{**vm, "moid": f"{vm['moid']}-{i}", "name": f"{vm['name']}-{i}"} for i in range(copies) for vm in base]
    big = snapshot.with_name(f"snapshot-x{copies}.json")
    big.write_text(json.dumps(data))
    print(f"{len(data['vms'])} VMs offline from {big} ({big.stat().st_size / 1e6:.1f} MB), load "
          f"{os.getloadavg()[0]:.1f}")
    for fmt in ("json", "html"):
        out = big.with_name(f"report-x{copies}.{fmt}")
        argv = [str(Path(sys.executable).with_name("esxdiag")), "scan", "--snapshot", str(big), "--format", fmt,
                "-o", str(out), "--quiet"]
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        print(f"  --format {fmt:<5} exit {os.waitstatus_to_exitcode(status)} {time.perf_counter() - started:>6.2f} s  "
              f"CPU {usage.ru_utime + usage.ru_stime:.1f} s  peak RSS {usage.ru_maxrss / 1024:.0f} MiB  "
              f"report {out.stat().st_size / 1e6:.1f} MB")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vms", type=int, default=1000)
    parser.add_argument("--delay-ms", type=int, default=20)
    parser.add_argument("--no-loop", action="store_true")
    parser.add_argument("--no-govc", action="store_true")
    parser.add_argument("--scan-args", default="", help="extra esxdiag scan arguments, e.g. '--in-flight 8'")
    parser.add_argument("--offline-copies", type=int, metavar="N",
                        help="no vcsim: analyse the last run's snapshot repeated N times (json and html)")
    parser.add_argument("--serve", action="store_true",
                        help="build the vcsim, write its address to .lab/bench-fleet-N/attach.json and wait")
    parser.add_argument("--attach", action="store_true", help="use the vcsim that --serve left running")
    ns = parser.parse_args(argv)
    compile_bytecode()
    if ns.offline_copies:
        return run_offline(REPO / ".lab" / f"bench-fleet-{ns.vms}" / "snap.json", ns.offline_copies)
    clusters = max(1, ns.vms // 200 if ns.vms <= 1000 else ns.vms // 1000)
    per_cluster = ns.vms // clusters
    flags = ("-cluster", str(clusters), "-host", "10", "-vm", str(per_cluster), "-standalone-host", "0",
             "-delay", str(ns.delay_ms))
    workdir = REPO / ".lab" / f"bench-fleet-{ns.vms}"
    attach_file = workdir / "attach.json"
    if ns.attach:
        lab, built = _attached(attach_file)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
        started = time.monotonic()
        lab = _lab_module().start_vcsim(workdir / "vcsim", flags, timeout_s=7200)
        built = time.monotonic() - started
    if ns.serve:
        attach_file.write_text(json.dumps({"url": lab.url, "username": lab.username, "password": lab.password,
                                           "port": lab.port, "pid": lab.process.pid, "build_seconds": built}))
        attach_file.chmod(0o600)
        print(f"vcsim for {ns.vms} VMs up (built in {built:.0f} s); bench it with --attach; Ctrl-C or kill "
              "stops it", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # so the finally below stops vcsim
        try:
            lab.process.wait()
        finally:
            lab.stop()
            attach_file.unlink(missing_ok=True)
        return 0
    results = {"vms": clusters * per_cluster, "delay_ms": ns.delay_ms, "vcsim_flags": " ".join(flags),
               "build_seconds": round(built, 1)}
    try:
        results["esxdiag_scan"] = run_scan(lab, workdir, ns.scan_args.split())
        results["esxdiag_scan_nic_drops"] = run_scan(lab, workdir, ["--nic-types", "drops", *ns.scan_args.split()])
        print(json.dumps(results, indent=1), flush=True)
        if not ns.no_loop:
            results["per_vm_loop"] = run_loop(lab)
            print(json.dumps(results["per_vm_loop"]), flush=True)
        if not ns.no_govc:
            results["govc_metric_sample"] = run_govc(lab)
            print(json.dumps(results["govc_metric_sample"]), flush=True)
    finally:
        if not ns.attach:
            lab.stop()
    out = workdir / "results.json"
    out.write_text(json.dumps(results, indent=1))
    scan = results["esxdiag_scan"]
    print(f"\n{results['vms']} VMs, vcsim -delay {ns.delay_ms} (built from flags in {built:.0f} s), "
          f"load average {os.getloadavg()[0]:.1f}")
    for key, label in (("esxdiag_scan", "esxdiag scan"), ("esxdiag_scan_nic_drops", "  --nic-types drops")):
        one = results[key]
        workers = (f" (with its {one['workers']} workers: {one['tree_peak_rss_mib']:.0f} MiB)"
                   if one["workers"] > 1 else "")
        print(f"  {label:<17} {one['requests']:>7} requests {one['seconds']:>8.2f} s  peak RSS "
              f"{one['peak_rss_mib']:.0f} MiB{workers}, CPU {one['cpu_seconds']:.1f} s (vcsim {one['vcsim_cpu_seconds']:.1f} s), load {one['load_avg_1m']:.1f}  "
              f"({one['with_perf']} of {one['powered_on']} powered-on VMs with perf)")
    for key, label in (("per_vm_loop", "per-VM QueryPerf"), ("govc_metric_sample", "govc metric.sample")):
        if key in results:
            other = results[key]
            print(f"  {label:<17} {other['requests']:>7} requests {other['seconds']:>8.2f} s  load "
                  f"{other['load_avg_1m']:.1f}  (esxdiag {other['seconds'] / scan['seconds']:.1f}x faster)")
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
