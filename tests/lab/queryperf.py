"""QueryPerf for the scenario VMs and hosts, answered from the lab's model (emulator/vcenter_perf.py).

``parse_request`` reads a SOAP QueryPerf request; ``answer`` builds the returnval of one
querySpec the way vcsim (govmomi v0.46.3) shapes it: PerfEntityMetricCSV for format "csv",
else PerfEntityMetric with PerfMetricIntSeries, samples newest first. Timestamps are what a real
vCenter returns: the interval's boundaries after startTime up to endTime (default now), at most
maxSample of the newest (realtime only) and no more than the statistics level keeps (an hour of
20 s samples). Instance "*" expands to the aggregate "" plus one series per vCPU / vNIC (a VM)
or per vmnic (a host's net counters), as a real vCenter does; counters the model does not know get
no series (an invented number would be a second story).
"""

from __future__ import annotations

import math
import re
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from xml.sax.saxutils import escape

sys.path.insert(0, str(Path(__file__).resolve().parent / "emulator"))
import vcenter_perf  # noqa: E402  (the emulator's directory is a script directory, not a package)

REALTIME_S = 20
RETAINED = {20: 180, 300: 288, 1800: 336, 7200: 360, 86400: 365}  # vCenter's default statistics levels
ENVELOPE = ('<?xml version="1.0" encoding="UTF-8"?>\n<soapenv:Envelope xmlns:soapenc="http://schemas.xmlsoap.org/'
            'soap/encoding/" xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/'
            '2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>'
            '<QueryPerfResponse xmlns="urn:vim25">{}</QueryPerfResponse></soapenv:Body></soapenv:Envelope>')
_RETURNVAL = ('<returnval xmlns:XMLSchema-instance="http://www.w3.org/2001/XMLSchema-instance" '
              'XMLSchema-instance:type="{kind}"><entity type="{entity_type}">{moid}</entity>{body}</returnval>')
_SPEC_ELEMENT = re.compile(rb"<(?:[\w.-]+:)?querySpec\b[^>]*>.*?</(?:[\w.-]+:)?querySpec>", re.S)
_RETURNVAL_ELEMENT = re.compile(rb"<returnval\b.*?</returnval>", re.S)
_FRACTION = re.compile(r"\.(\d+)")


@dataclass(frozen=True)
class Spec:
    entity_type: str
    moid: str
    start: float | None  # epoch seconds
    end: float | None
    max_sample: int | None
    interval: int
    csv: bool
    metrics: tuple[tuple[int, str], ...] | None  # (counterId, instance); None: every metric


@dataclass(frozen=True)
class Model:
    """What the proxy answers from: counter ids, the scenario VMs and hosts by moid, the lab's start."""
    counters: dict[int, str]  # counterId -> group.name.rollup
    vms: dict[str, tuple[dict, list[int]]]  # moid -> (scenario VM, vNIC device keys in scenario order)
    started: float
    hosts: dict[str, dict] = field(default_factory=dict)  # moid -> scenario host (scenarios.json hosts[])


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _child(element: ET.Element, name: str) -> ET.Element | None:
    return next((c for c in element if _local(c.tag) == name), None)


def _text(element: ET.Element, name: str) -> str | None:
    child = _child(element, name)
    return None if child is None else (child.text or "")


def _epoch(text: str | None) -> float | None:
    if text is None:
        return None
    micro = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), text.strip())  # 3.10 wants 6 digits
    moment = datetime.fromisoformat(micro.replace("Z", "+00:00"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


def parse_request(body: bytes) -> list[Spec] | None:
    """The querySpecs of a QueryPerf request; None for any other request (or unparseable XML)."""
    if b"QueryPerf" not in body:
        return None
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return None
    envelope_body = _child(root, "Body")
    call = None if envelope_body is None else next(iter(envelope_body), None)
    if call is None or _local(call.tag) != "QueryPerf":
        return None
    try:
        return [_spec(element) for element in call if _local(element.tag) == "querySpec"]
    except ValueError:  # malformed numbers or times, an unknown interval: vcsim answers it
        return None


def _spec(element: ET.Element) -> Spec:
    interval = int(_text(element, "intervalId") or REALTIME_S)
    if interval not in RETAINED:
        raise ValueError(f"no statistics interval {interval}")
    entity = _child(element, "entity")
    metric_ids = [m for m in element if _local(m.tag) == "metricId"]
    max_sample = _text(element, "maxSample")
    return Spec(
        entity_type="" if entity is None else entity.get("type", ""),
        moid="" if entity is None else (entity.text or "").strip(),
        start=_epoch(_text(element, "startTime")), end=_epoch(_text(element, "endTime")),
        max_sample=int(max_sample) if max_sample else None,
        interval=interval, csv=_text(element, "format") == "csv",
        metrics=tuple((int(_text(m, "counterId") or -1), _text(m, "instance") or "") for m in metric_ids)
        if metric_ids else None)


def timestamps(spec: Spec, now: float | None = None) -> list[int]:
    """Sample end times (epoch seconds, newest first) a vCenter returns for ``spec``."""
    step = spec.interval
    now = time.time() if now is None else now
    last = math.floor(now / step) * step
    if spec.end is not None:
        last = min(last, math.floor(spec.end / step) * step)
    count = RETAINED.get(step, RETAINED[REALTIME_S])
    if spec.start is not None:
        count = min(count, max(0, math.ceil((last - spec.start) / step)))
    if spec.max_sample and step == REALTIME_S:
        count = min(count, spec.max_sample)
    return [last - k * step for k in range(count)]


def _series(model: Model, spec: Spec, stamps: list[int]) -> list[tuple[int, str, list[int]]]:
    if spec.entity_type == "HostSystem":
        host = model.hosts[spec.moid]
        known = vcenter_perf.HOST_COUNTERS

        def expand(name: str) -> list[str]:
            return vcenter_perf.host_instances(host, name)

        def value(name: str, inst: str, end: float) -> int | None:
            return vcenter_perf.host_value(host, name, inst, end, spec.interval)
    else:
        vm, keys = model.vms[spec.moid]
        known = vcenter_perf.COUNTERS

        def expand(name: str) -> list[str]:
            return vcenter_perf.instances(vm, keys, name)

        def value(name: str, inst: str, end: float) -> int | None:
            return vcenter_perf.value(vm, keys, name, inst, end, spec.interval)
    by_name = {name: cid for cid, name in model.counters.items()}
    wanted = spec.metrics if spec.metrics is not None else tuple(
        (by_name[name], "*") for name in known if name in by_name)
    out, seen = [], set()
    for counter_id, instance in wanted:
        name = model.counters.get(counter_id)
        if name not in known:
            continue
        for inst in expand(name) if instance == "*" else [instance]:
            values = [value(name, inst, t - model.started) for t in stamps]
            if (counter_id, inst) not in seen and None not in values:
                seen.add((counter_id, inst))
                out.append((counter_id, inst, values))
    return out


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def answer(model: Model, spec: Spec, now: float | None = None) -> str:
    """One returnval element for a querySpec whose entity is a scenario VM or host."""
    stamps = timestamps(spec, now)
    series = _series(model, spec, stamps) if stamps else []

    def metric_id(counter_id: int, inst: str) -> str:
        return f"<id><counterId>{counter_id}</counterId><instance>{escape(inst)}</instance></id>"

    if spec.csv:
        info = ",".join(f"{spec.interval},{_iso(t)}" for t in stamps)
        body = f"<sampleInfoCSV>{info}</sampleInfoCSV>" + "".join(
            f"<value>{metric_id(c, i)}<value>{','.join(map(str, v))}</value></value>" for c, i, v in series)
        return _RETURNVAL.format(kind="PerfEntityMetricCSV", entity_type=spec.entity_type, moid=escape(spec.moid),
                                 body=body)
    body = "".join(f"<sampleInfo><timestamp>{_iso(t)}</timestamp><interval>{spec.interval}</interval></sampleInfo>"
                   for t in stamps)
    body += "".join(f'<value XMLSchema-instance:type="PerfMetricIntSeries">{metric_id(c, i)}'
                    + "".join(f"<value>{x}</value>" for x in v) + "</value>" for c, i, v in series)
    return _RETURNVAL.format(kind="PerfEntityMetric", entity_type=spec.entity_type, moid=escape(spec.moid), body=body)


def is_modelled(model: Model, spec: Spec) -> bool:
    return ((spec.entity_type == "VirtualMachine" and spec.moid in model.vms)
            or (spec.entity_type == "HostSystem" and spec.moid in model.hosts))


def without_specs(body: bytes, keep: list[bool]) -> bytes | None:
    """The request with only the querySpecs where ``keep`` is true; None if the text does not split
    into exactly the specs the XML parser saw."""
    found = list(_SPEC_ELEMENT.finditer(body))
    if len(found) != len(keep):
        return None
    out, at = [], 0
    for match, kept in zip(found, keep):
        out.append(body[at:match.end()] if kept else body[at:match.start()])
        at = match.end()
    return b"".join(out) + body[at:]


def returnvals(response: bytes) -> list[bytes]:
    """The returnval elements of vcsim's QueryPerfResponse, as they are (same namespaces as ours)."""
    return _RETURNVAL_ELEMENT.findall(response)


def response(parts: list[str | bytes]) -> bytes:
    """A QueryPerfResponse envelope (vcsim's) around returnval elements."""
    head, tail = ENVELOPE.encode().split(b"{}")
    return head + b"".join(p if isinstance(p, bytes) else p.encode() for p in parts) + tail
