"""Live collection against the lab: how fast esxdiag fails and answers, and that output is bounded.

    sudo python bench/live_bench.py [--rounds 3]

Starts vcsim (tests/lab/vcsim_lab.py) and the lab sshd (tests/lab/ssh_lab.py; root + openssh-server)
and runs esxdiag as a user would, each case --rounds times:

  (a) failed lookup     esxdiag report --vm iperf-tset1          (a typo: one line, exit 3)
  (b) SSH-off answer    esxdiag rings --vm iperf-test1 --no-host-ssh --no-guest   (default --window 60)
  (c) bounded output    esxdiag collect --vm iperf-test1 --window 10 while the guest's `netstat -s` and
                        the host's `net-stats -l` print without end (lab "flood" faults)
  (d) side by side, the mechanism: 256 MiB of endless `netstat -s` read over one SSH connection
                        streamed to a file (what esxdiag does) vs held in memory (what it did before)

Peak RSS is psutil's RSS of the child process tree, sampled every 20 ms (a short spike between
samples can be missed; the flood cases last seconds). Prints one line per run and a summary.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

LAB = Path(__file__).resolve().parents[1] / "tests" / "lab"
FLOOD_SCRIPT = r"""
import sys, tempfile
from pathlib import Path
from esxdiag.collectors.ssh import SshConnection, SshOptions, SshTarget
user, host, port, key, known, mode = sys.argv[1:7]
conn = SshConnection(SshTarget(user, host, int(port)), "linux",
                     SshOptions(key_file=Path(key), known_hosts=Path(known), command_timeout_s=120)).connect()
cap = 256 << 20
if mode == "stream":
    with tempfile.TemporaryFile() as out:
        result = conn.run_spec("netstat_s", {}, out=out, max_bytes=cap)
else:
    result = conn.run_spec("netstat_s", {}, max_bytes=cap)
print(result.error_kind, result.size)
"""


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"esxdiag_bench_{name}", LAB / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def measured(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, int, str]:
    """(wall s, peak RSS bytes of the process tree, exit code, stdout+stderr)."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
    watched = psutil.Process(child.pid)
    peak = 0
    while child.poll() is None:
        try:
            tree = [watched] + watched.children(recursive=True)
            peak = max(peak, sum(p.memory_info().rss for p in tree))
        except psutil.Error:
            pass
        time.sleep(0.02)
    output = child.stdout.read().decode("utf-8", "replace")
    return time.perf_counter() - started, peak, child.returncode, output


def bundle_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="esxdiag-live-bench-"))
    vcsim = _load("vcsim_lab").start_lab(work / "vcsim")
    sshd = _load("ssh_lab").start_ssh_lab(work / "ssh")
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ESXDIAG_", "GOVC_"))}
        env.update(ESXDIAG_VCENTER=vcsim.url, ESXDIAG_USERNAME=vcsim.username, ESXDIAG_PASSWORD=vcsim.password,
                   ESXDIAG_THUMBPRINT=vcsim.thumbprint, HOME=str(work), XDG_CONFIG_HOME=str(work / ".config"))
        esxdiag = [sys.executable, "-m", "esxdiag"]
        ssh = ["--host-ssh", f"{sshd.user}@{sshd.host_address}:{sshd.port}", "--guest-ssh", f"{sshd.user}@:{sshd.port}",
               "--known-hosts", str(sshd.known_hosts), "--ssh-key", str(sshd.key_file)]
        results: dict[str, list[tuple[float, int]]] = {}

        def run(case: str, argv: list[str], expect: int, flood: bool = False) -> None:
            bundle = work / f"{case}-bundle"
            shutil.rmtree(bundle, ignore_errors=True)
            sshd.clear_faults()
            if flood:
                sshd.set_fault("flood", sshd.address_of("iperf-test1"), "netstat", seconds=60)
                sshd.set_fault("flood", sshd.host_address, "net-stats", seconds=60)
            wall, peak, code, output = measured(argv + (["-o" if argv[3] == "collect" else "--bundle", str(bundle)]
                                                       if case[0] in "abc" else []), env, work)
            sshd.clear_faults()
            if code != expect:
                raise SystemExit(f"{case}: exit {code}, expected {expect}:\n{output}")
            size = bundle_size(bundle) if bundle.exists() else 0
            print(f"{case:28} {wall:6.2f} s  peak RSS {peak / 2**20:7.1f} MiB  bundle {size / 1024:9.0f} KiB",
                  flush=True)
            results.setdefault(case, []).append((wall, peak))

        flood = [sys.executable, "-c", FLOOD_SCRIPT, sshd.user, sshd.address_of("iperf-test1"), str(sshd.port),
                 str(sshd.key_file), str(sshd.known_hosts)]
        for _ in range(args.rounds):
            run("a failed lookup", esxdiag + ["report", "--vm", "iperf-tset1", *ssh], 3)
            run("b SSH-off answer", esxdiag + ["rings", "--vm", "iperf-test1", "--no-host-ssh", "--no-guest"], 0)
            run("c bounded output", esxdiag + ["collect", "--vm", "iperf-test1", *ssh, "--window", "10",
                                               "--esxtop-delay", "2"], 0, flood=True)
            run("d 256 MiB streamed", flood + ["stream"], 0, flood=True)
            run("d 256 MiB in memory", flood + ["memory"], 0, flood=True)
        print("\nmedian of", args.rounds, "rounds:")
        for case, values in results.items():
            print(f"{case:28} {statistics.median(w for w, _ in values):6.2f} s  peak RSS "
                  f"{statistics.median(p for _, p in values) / 2**20:7.1f} MiB")
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    finally:
        sshd.stop()
        vcsim.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
