"""Where a profiled process tree spends its CPU: a py-spy raw (collapsed) profile summed by phase.

    py-spy record --subprocesses --nonblocking -r 200 -f raw -o spy.txt -- esxdiag scan ...
    python bench/spy_summary.py spy.txt

Samples whose innermost frame is a wait (socket or pipe read, a condition, an idle pool thread) are
left out; the rest are put in the first matching phase, per process (the scan process or a worker).
"ParseFile" is expat's C parser reading the HTTP answer: socket reads and parsing, not told apart.
Not a test; used for bench/peers_README.md.
"""

from __future__ import annotations

import collections
import re
import sys

IDLE = re.compile(r"^(SSLSocket\.read|SSLSocket\.recv_into|_ConnectionBase\.recv|_ConnectionBase\._recv|Condition\.wait|"
                  r"Event\.wait|select|poll|_worker \(concurrent/futures/thread\.py:81\)|Thread\._wait_for_tstate_lock)")
PARSE_FILE = "SoapResponseDeserializer.Deserialize (pyVmomi/SoapAdapter.py:936)"


def phase(frames: list[str]) -> str:
    stack = ";".join(frames)
    if "_find_and_load" in stack:
        return "imports (start-up)"
    if "build_report" in stack:
        return "analysis"
    if re.search(r"SerializeToStr|_Serialize \(", stack):
        return "pyVmomi request serialisation"
    if frames[-1].startswith(PARSE_FILE):
        return "expat ParseFile + socket reads (C, under pyVmomi)"
    if "pyVmomi" in frames[-1]:
        part = ("QueryPerf" if "_query_batch" in stack else "vNICs" if "read_vnics" in stack
                else "inventory pages" if "vm_pages" in stack else "other")
        return f"pyVmomi decoding/objects ({part})"
    if "perf_record" in stack or "decode_csv" in stack:
        return "esxdiag perf records (CSV to series)"
    if re.search(r"ssl\.py|socket\.py|http/client", stack):
        return "transport"
    if re.search(r"write_|json/encoder|dump", stack):
        return "snapshot/report writing"
    return "other esxdiag"


def main(path: str) -> int:
    phases: collections.Counter = collections.Counter()
    busy = idle = 0
    with open(path) as raw:
        for line in raw:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = [f.strip() for f in stack.split(";")[1:] if f.strip()]  # the first is the process
            if not frames or IDLE.match(frames[-1]):
                idle += int(count)
                continue
            busy += int(count)
            where = "worker" if "_process_worker" in stack or "spawn_main" in stack else "scan"
            phases[(where, phase(frames))] += int(count)
    print(f"{busy} busy samples, {idle} in waits left out")
    for (where, name), count in phases.most_common():
        print(f"  {100 * count / max(busy, 1):5.1f} %  {where:<6} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
