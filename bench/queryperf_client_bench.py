"""Benchmark: the client CPU of the fleet scan's QueryPerf, step by step, without a server
(bench/fleet_README.md, "Where the time goes").

    python bench/queryperf_client_bench.py --entities 10000 --runs 7

Building the QuerySpecs as collectors/fleet/perf.py builds them, pyVmomi's stub serialising them
(SerializeRequest, 256 specs per request, the realtime batch), the fast decoder reading the answers
(tests/fixtures/fleet/soap/queryperf-csv.xml, a recorded vcsim answer, repeated with new moids) and
perf_record turning each answer into its record. Prints the median and minimum process CPU of each
step over the runs. Not a test.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pyVmomi import SoapAdapter, vim

from esxdiag.collectors.fleet.fastdecode import decode_perf
from esxdiag.collectors.fleet.perf import REALTIME_ENTITIES, perf_record

ANSWER = Path(__file__).resolve().parents[1] / "tests/fixtures/fleet/soap/queryperf-csv.xml"
VERSION = "vim.version.v8_0_3_0"
COUNTERS = (12, 399, 400, 460, 146)  # the recorded answer's counter ids


def answers(entities: int) -> list[bytes]:
    """Bodies of REALTIME_ENTITIES answers each, made of the recording's first returnval."""
    text = ANSWER.read_text()
    head, rest = text.split("<returnval", 1)
    one = "<returnval" + rest.split("</returnval>", 1)[0] + "</returnval>"
    tail = text[text.rindex("</returnval>") + len("</returnval>"):]
    bodies = []
    for first in range(0, entities, REALTIME_ENTITIES):
        moids = range(first, min(entities, first + REALTIME_ENTITIES))
        records = "".join(re.sub(r">vm-\d+<", f">vm-{m}<", one) for m in moids)
        bodies.append((head + records + tail).encode())
    return bodies


def cpu(step, runs: int) -> tuple[float, float, object]:
    times, out = [], None
    for _ in range(runs):
        start = time.process_time()
        out = step()
        times.append(time.process_time() - start)
    return statistics.median(times), min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    stub = SoapAdapter.SoapStubAdapter(host="127.0.0.1", port=1, version=VERSION)  # never connects
    manager = vim.PerformanceManager("PerfMgr", stub)
    method = vim.PerformanceManager._GetMethodInfo("QueryStats")  # QueryPerf's wire name
    end = datetime.now(timezone.utc).replace(microsecond=0)
    start = end - timedelta(seconds=300)
    ids = vim.PerformanceManager.MetricId.Array(
        [vim.PerformanceManager.MetricId(counterId=c, instance="*") for c in COUNTERS])
    vms = [vim.VirtualMachine(f"vm-{i}", stub) for i in range(args.entities)]

    def build():
        return [vim.PerformanceManager.QuerySpec(entity=vm, startTime=start, endTime=end, intervalId=20,
                                                 format="csv", metricId=ids) for vm in vms]

    specs = build()

    def serialise():
        return [stub.SerializeRequest(manager, method, [specs[i:i + REALTIME_ENTITIES]])
                for i in range(0, len(specs), REALTIME_ENTITIES)]

    bodies = answers(args.entities)
    decoded = [e for body in bodies for e in decode_perf(body, VERSION)]
    names = {c: (f"counter {c}", "number") for c in COUNTERS}

    steps = {"build QuerySpecs": build, "serialise requests (pyVmomi)": serialise,
             "decode answers (fastdecode)": lambda: [decode_perf(body, VERSION) for body in bodies],
             "perf_record": lambda: [perf_record(e.entity.moid, e, names, start, end, 20) for e in decoded]}
    print(f"{args.entities} entities, {args.runs} runs, process CPU seconds (median / min)")
    for label, step in steps.items():
        median, best, _ = cpu(step, args.runs)
        print(f"  {label:30} {median:6.3f} / {best:6.3f}")


if __name__ == "__main__":
    main()
