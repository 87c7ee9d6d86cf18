"""50 commands over one SSH connection to the lab sshd, with and without TCP_NODELAY.

    sudo python bench/ssh_bench.py [--commands 50] [--rounds 3]

Starts the SSH lab (tests/lab/ssh_lab.py; needs root and openssh-server), opens one connection
per setting to the emulated ESXi host and runs the allowlisted `vmware -vl` N times on each, in
alternating rounds so both see the same machine load. Prints the total per setting per round.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

from esxdiag.collectors.ssh import SshConnection, SshOptions, SshTarget

LAB_FILE = Path(__file__).resolve().parents[1] / "tests" / "lab" / "ssh_lab.py"


def _lab_module():
    spec = importlib.util.spec_from_file_location("esxdiag_ssh_lab", LAB_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["esxdiag_ssh_lab"] = module
    spec.loader.exec_module(module)
    return module


def _timed(conn: SshConnection, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        result = conn.run_spec("esxi_version", {})
        if not result.ok:
            raise SystemExit(f"command failed: {result.error_kind}: {result.error}")
    return time.perf_counter() - started


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commands", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    module = _lab_module()
    with tempfile.TemporaryDirectory(prefix="ssh-bench-") as workdir:
        try:
            lab = module.start_ssh_lab(workdir)
        except module.LabUnavailable as exc:
            print(exc, file=sys.stderr)
            return 1
        try:
            conns = {}
            for nodelay in (True, False):
                options = SshOptions(key_file=lab.key_file, known_hosts=lab.known_hosts,
                                     own_known_hosts=Path(workdir) / "own_known_hosts", tcp_nodelay=nodelay)
                conns[nodelay] = SshConnection(SshTarget(lab.user, lab.host_address, lab.port), "esxi",
                                               options).connect()
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(args.rounds):
                for nodelay, conn in conns.items():
                    times[nodelay].append(_timed(conn, args.commands))
            for conn in conns.values():
                conn.close()
        finally:
            lab.stop()
    print(f"{args.commands} x `vmware -vl` over one connection, {args.rounds} alternating rounds")
    for nodelay, label in ((True, "TCP_NODELAY on "), (False, "TCP_NODELAY off")):
        runs = ", ".join(f"{t:.2f}" for t in times[nodelay])
        median = statistics.median(times[nodelay])
        print(f"{label}: median {median:.2f} s ({median / args.commands * 1000:.1f} ms/command); runs: {runs} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
