"""Benchmark: the scan's decode and request CPU, today's way beside the alternatives (issue 34, item 2).

    python bench/decode_alternatives_bench.py --entities 10000 --runs 5

No server: the answers are the recorded vcsim answers in tests/fixtures/fleet/soap/ repeated with new
moids (QueryPerf: queryperf-csv.xml's first returnval, REALTIME_ENTITIES per answer; inventory:
vm-page-with-token.xml's objects, 1,000 per page). Per step, the median and minimum process CPU over
the runs (time.process_time):

- QueryPerf answers: today's decode_perf (the usual shape read from xml.etree's C tree by
  collectors/fleet/perftree.py, its checks made on the bytes and the tree's shape); the walk it had
  before (expat, a Python callback per event, pyVmomi's type checks); expat alone (soap_stream.walk
  with nothing done per record: the floor of the callback design); xml.etree's C XMLPullParser and C
  iterparse, and lxml's iterparse (when lxml is installed), each with path lookups per returnval into
  the same EntityCsv values (no type checks).
- Inventory pages: today's decode_retrieve; expat alone; xml.etree / lxml parsing the page into a tree
  and visiting every element (again a floor: no values read).
- QueryPerf requests: pyVmomi building 10,000 QuerySpecs and serialising them, 256 a request, beside
  fastdecode.batch_request (one spec serialised per entity type, each moid put in, XML-escaped).

Each alternative's values are compared with today's before timing (a mismatch stops the bench).
Not a test; figures in bench/peers_README.md.
"""

from __future__ import annotations

import argparse
import functools
import io
import re
import statistics
import time
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone
from pathlib import Path

from pyVmomi import SoapAdapter, vim

from esxdiag.collectors import soap_stream
from esxdiag.collectors.fleet import perftree
from esxdiag.collectors.fleet.fastdecode import EntityCsv, batch_request, decode_perf, decode_retrieve
from esxdiag.collectors.fleet.perf import REALTIME_ENTITIES
from esxdiag.collectors.soap_stream import Ref

SOAP = Path(__file__).resolve().parents[1] / "tests/fixtures/fleet/soap"
VERSION = "vim.version.v8_0_3_0"
COUNTERS = (12, 399, 400, 460, 146)
PAGE_OBJECTS = 1000
V = "{urn:vim25}"


def _repeat(path: Path, record: str, count: int, per_body: int, moid: str) -> list[bytes]:
    """Bodies of ``per_body`` copies each of the recording's first <record> element, new moids."""
    text = path.read_text()
    head, rest = text.split(f"<{record}", 1)
    one = f"<{record}" + rest.split(f"</{record}>", 1)[0] + f"</{record}>"
    tail = text[text.rindex(f"</{record}>") + len(f"</{record}>"):]
    bodies = []
    for first in range(0, count, per_body):
        copies = (re.sub(moid, f">vm-{m}<", one, count=1) for m in range(first, min(count, first + per_body)))
        bodies.append((head + "".join(copies) + tail).encode())
    return bodies


def perf_bodies(entities: int) -> list[bytes]:
    return _repeat(SOAP / "queryperf-csv.xml", "returnval", entities, REALTIME_ENTITIES, r">vm-\d+<")


def page_bodies(vms: int) -> list[bytes]:
    text = (SOAP / "vm-page-with-token.xml").read_text()
    text = re.sub(r"<token>[^<]*</token>", "", text)  # one page each: no continuation
    path = Path("/tmp/esxdiag-decode-bench-page.xml")
    path.write_text(text)
    return _repeat(path, "objects", vms, PAGE_OBJECTS, r">vm-\d+<")


# --- QueryPerf answers: the alternatives ------------------------------------------------------------

def _entity(elem, find) -> EntityCsv:
    entity = find(elem, "entity")
    values = [(int(find(find(v, "id"), "counterId").text), find(find(v, "id"), "instance").text,
               find(v, "value").text) for v in elem.iterfind(V + "value")]
    return EntityCsv(Ref(vim.VirtualMachine, entity.text), find(elem, "sampleInfoCSV").text, values)


def _find(elem, name):
    return elem.find(V + name)


def etree_pull(body: bytes) -> list[EntityCsv]:
    parser = ET.XMLPullParser(events=("end",))
    parser.feed(body)
    parser.close()
    out = []
    for _event, elem in parser.read_events():
        if elem.tag == V + "returnval":
            out.append(_entity(elem, _find))
            elem.clear()
    return out


def etree_iterparse(body: bytes) -> list[EntityCsv]:
    out = []
    for _event, elem in ET.iterparse(io.BytesIO(body), events=("end",)):
        if elem.tag == V + "returnval":
            out.append(_entity(elem, _find))
            elem.clear()
    return out


def lxml_iterparse(body: bytes) -> list[EntityCsv]:
    from lxml import etree
    out = []
    for _event, elem in etree.iterparse(io.BytesIO(body), events=("end",), tag=V + "returnval",
                                        resolve_entities=False, no_network=True):
        out.append(_entity(elem, _find))
        elem.clear()
    return out


def walked_perf(body: bytes) -> list[EntityCsv]:
    """decode_perf as it was before the tree reader: the expat walk and its one-pass reader."""
    real = perftree.read_usual
    perftree.read_usual = lambda body, version: None
    try:
        return decode_perf(body, VERSION)
    finally:
        perftree.read_usual = real


def _have_lxml() -> bool:
    try:
        import lxml  # noqa: F401 - only asked whether it is there
    except ImportError:
        return False
    return True


def expat_floor(body: bytes, response: str, depth: int) -> None:
    soap_stream.walk(body, response, depth, lambda _d, _n: None)


def etree_tree(body: bytes) -> int:
    return sum(1 for _ in ET.fromstring(body).iter())


def lxml_tree(body: bytes) -> int:
    from lxml import etree
    return sum(1 for _ in etree.fromstring(body, etree.XMLParser(resolve_entities=False, no_network=True)).iter())


# --- QueryPerf requests -----------------------------------------------------------------------------

def template_requests(stub, manager, method, moids: list[str], spec) -> list[bytes]:
    """fastdecode.batch_request per REALTIME_ENTITIES: one spec serialised by pyVmomi per entity type,
    each moid put in (XML-escaped)."""
    def serialize(args):
        return stub.SerializeRequest(manager, method, args)
    vms = [vim.VirtualMachine(m, stub) for m in moids]
    return [batch_request(serialize, vms[i:i + REALTIME_ENTITIES], spec).encode()
            for i in range(0, len(vms), REALTIME_ENTITIES)]


def cpu(step, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        started = time.process_time()
        step()
        times.append(time.process_time() - started)
    return statistics.median(times), min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    perf, pages = perf_bodies(args.entities), page_bodies(args.entities)
    today = [e for b in perf for e in decode_perf(b, VERSION)]
    if any(perftree.read_usual(b, VERSION) is None for b in perf):
        raise SystemExit("the recorded answer no longer takes the tree reader")
    lxml = _have_lxml()
    alternatives = [("the walk", walked_perf), ("etree pull", etree_pull), ("etree iterparse", etree_iterparse)]
    for name, alt in alternatives + ([("lxml", lxml_iterparse)] if lxml else []):
        got = [e for b in perf for e in alt(b)]
        if got != today:
            raise SystemExit(f"{name} decodes the QueryPerf answers differently from decode_perf")
    response = "RetrievePropertiesExResponse"
    stub = SoapAdapter.SoapStubAdapter(host="127.0.0.1", port=1, version=VERSION)  # never connects
    manager = vim.PerformanceManager("PerfMgr", stub)
    method = vim.PerformanceManager._GetMethodInfo("QueryStats")
    end = datetime.now(timezone.utc).replace(microsecond=0)
    start = end - timedelta(seconds=300)
    ids = vim.PerformanceManager.MetricId.Array(
        [vim.PerformanceManager.MetricId(counterId=c, instance="*") for c in COUNTERS])
    moids = [f"vm-{i}" for i in range(args.entities)]

    spec = functools.partial(vim.PerformanceManager.QuerySpec, startTime=start, endTime=end, intervalId=20,
                             format="csv", metricId=ids)

    def pyvmomi_requests():
        vms = [vim.VirtualMachine(m, stub) for m in moids]
        specs = [spec(entity=vm) for vm in vms]
        return [stub.SerializeRequest(manager, method, [specs[i:i + REALTIME_ENTITIES]])
                for i in range(0, len(specs), REALTIME_ENTITIES)]

    made = [b if isinstance(b, bytes) else b.encode() for b in pyvmomi_requests()]
    if made != template_requests(stub, manager, method, moids, spec):
        raise SystemExit("the template's requests differ from pyVmomi's")
    steps = {
        "QueryPerf answers: decode_perf (today: tree)": lambda: [decode_perf(b, VERSION) for b in perf],
        "QueryPerf answers: the walk (before)": lambda: [walked_perf(b) for b in perf],
        "QueryPerf answers: expat walk alone": lambda: [expat_floor(b, "QueryPerfResponse", 3) for b in perf],
        "QueryPerf answers: etree XMLPullParser": lambda: [etree_pull(b) for b in perf],
        "QueryPerf answers: etree iterparse": lambda: [etree_iterparse(b) for b in perf],
        "QueryPerf answers: lxml iterparse": lambda: [lxml_iterparse(b) for b in perf],
        "inventory pages: decode_retrieve (today)": lambda: [decode_retrieve(b, VERSION, response) for b in pages],
        "inventory pages: expat walk alone": lambda: [expat_floor(b, response, 4) for b in pages],
        "inventory pages: etree tree, visited": lambda: [etree_tree(b) for b in pages],
        "inventory pages: lxml tree, visited": lambda: [lxml_tree(b) for b in pages],
        "QueryPerf requests: pyVmomi build+serialise": pyvmomi_requests,
        "QueryPerf requests: template per shape": lambda: template_requests(stub, manager, method, moids, spec),
    }
    if not lxml:
        steps = {label: step for label, step in steps.items() if "lxml" not in label}
        print("lxml is not installed: its rows are left out (pip install lxml to add them)")
    print(f"{args.entities} entities ({sum(map(len, perf)) / 1e6:.1f} MB of QueryPerf answers, "
          f"{sum(map(len, pages)) / 1e6:.1f} MB of inventory pages), {args.runs} runs, "
          f"process CPU s (median / min)")
    for label, step in steps.items():
        median, best = cpu(step, args.runs)
        print(f"  {label:46} {median:7.3f} / {best:7.3f}", flush=True)


if __name__ == "__main__":
    main()
