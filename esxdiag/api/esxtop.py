"""An esxtop batch CSV as pandas DataFrames of the counters asked for.

The file is read the way ``esxdiag parse esxtop`` reads it (esxdiag.parsers.esxtop: the header
with the csv module, the rows of the wanted columns only, by pyarrow for big clean files; the same
warnings and errors), but kept columnar: pyarrow's table goes to pandas with ``to_pandas()``,
never through Python lists, so a 300 MB capture costs about what the command line's parse costs.

Counters are named as in ``esxdiag parse esxtop`` JSON (docs: README "Using esxdiag from Python"):

* per VM (``Group Cpu``): ``ready_pct``, ``costop_pct``, ``max_limited_pct`` (per vCPU: the group
  sum / vCPUs, not rounded to 4 decimals as in the JSON; NaN when the vCPU count is unknown),
  ``group_ready_pct``, ``group_costop_pct``,
  ``group_max_limited_pct`` (the sums as printed), ``used_pct``, ``run_pct``, ``swap_wait_pct``,
  ``members``;
* per vCPU world (``Vcpu(...vmx-vcpu-N...)``): ``vcpu_ready_pct``;
* per vNIC port (``Network Port``): ``received_dropped_pct`` (%DRPRX), ``packets_received_per_s``,
  ``mbits_received_per_s``.

Every value is float64 (NaN: an empty cell, a counter the file lacks, or a nan/inf cell, dropped
with a warning); the index is the sample time as a UTC timestamp, named ``time``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable

from esxdiag.api.lazy import pandas
from esxdiag.errors import EsxdiagError, NoData
from esxdiag.parsers import naming_file
from esxdiag.parsers.esxtop import check_vcpus_hint, read_rows, sample_interval
from esxdiag.parsers.esxtop_arrow import TableRows
from esxdiag.parsers.esxtop_columns import Layout, vcpu_number
from esxdiag.parsers.esxtop_rows import Rows, clean_series, non_finite_warning
from esxdiag.textio import open_text_stream

# JSON name -> (Group Cpu counter, divided by the vCPU count)
VM_COUNTERS = {
    "ready_pct": ("% Ready", True), "costop_pct": ("% CoStop", True), "max_limited_pct": ("% Max Limited", True),
    "group_ready_pct": ("% Ready", False), "group_costop_pct": ("% CoStop", False),
    "group_max_limited_pct": ("% Max Limited", False), "used_pct": ("% Used", False), "run_pct": ("% Run", False),
    "swap_wait_pct": ("% Swap Wait", False), "members": ("Members", False),
}
VCPU_COUNTERS = ("vcpu_ready_pct",)
PORT_COUNTERS = {"received_dropped_pct": "% Received Packets Dropped",
                 "packets_received_per_s": "Packets Received/sec", "mbits_received_per_s": "MBits Received/sec"}
COUNTERS = (*VM_COUNTERS, *VCPU_COUNTERS, *PORT_COUNTERS)


@dataclass(frozen=True)
class EsxtopFrames:
    """``vms``: columns (counter, vm); ``vcpus``: columns (vm, vcpu), each vCPU world's % Ready;
    ``ports``: columns (counter, vm, port); ``info``: one row per VM (group_id, vcpus,
    vcpus_source, vcpu_worlds). A frame whose counters were not asked for has no columns."""

    vms: Any
    vcpus: Any
    ports: Any
    info: Any
    host: str | None
    interval_s: float | None
    warnings: tuple[str, ...]
    file: str


def read_esxtop(path: str | Path, vm: str | None = None, vcpus: int | None = None,
                counters: Iterable[str] | None = None) -> EsxtopFrames:
    """The capture at ``path`` as DataFrames of ``counters`` (default: all of COUNTERS). ``vm``
    keeps one VM (NoData when it is not in the file); ``vcpus`` is that VM's vCPU count when the
    file has no vCPU worlds. ParseError / NoData (esxdiag.errors) name the file."""
    pd = pandas()
    chosen = _chosen(counters)
    check_vcpus_hint(vm, vcpus)
    warnings: list[str] = []
    with naming_file(path):
        with open_text_stream(path) as stream:
            layout, rows = read_rows(stream, vm, warnings, lambda found: _narrow(found, chosen), as_table=True)
        if not rows.stamps:
            raise NoData("header only: no samples")
    raw = _raw_frame(pd, layout, rows, warnings)
    interval = sample_interval(rows.stamps, warnings)
    return EsxtopFrames(
        vms=_vm_frame(pd, raw, layout, chosen, vcpus), vcpus=_vcpu_frame(pd, raw, layout, chosen),
        ports=_port_frame(pd, raw, layout, chosen), info=_info_frame(pd, layout, vcpus), host=layout.host,
        interval_s=interval, warnings=tuple(warnings), file=str(path))


def _chosen(counters: Iterable[str] | None) -> tuple[str, ...]:
    if counters is None:
        return COUNTERS
    chosen = tuple(dict.fromkeys([counters] if isinstance(counters, str) else counters))
    unknown = [c for c in chosen if c not in COUNTERS]
    if unknown:
        raise EsxdiagError(f"unknown esxtop counter(s) {', '.join(map(repr, unknown))} (known: {', '.join(COUNTERS)})")
    return chosen


def _narrow(layout: Layout, chosen: tuple[str, ...]) -> Layout:
    """Only the columns of the chosen counters; vCPU worlds stay known (they give the vCPU count)
    but their columns are read only for ``vcpu_ready_pct``."""
    group_labels = {VM_COUNTERS[c][0] for c in chosen if c in VM_COUNTERS}
    port_labels = {PORT_COUNTERS[c] for c in chosen if c in PORT_COUNTERS}
    worlds = "vcpu_ready_pct" in chosen
    groups = {name: replace(g, columns={k: v for k, v in g.columns.items() if k in group_labels},
                            vcpu_worlds=g.vcpu_worlds if worlds else dict.fromkeys(g.vcpu_worlds))
              for name, g in layout.groups.items()}
    ports = {key: replace(p, columns={k: v for k, v in p.columns.items() if k in port_labels})
             for key, p in layout.ports.items()}
    return replace(layout, groups=groups, ports=ports)


def _raw_frame(pd, layout: Layout, rows: Rows | TableRows, warnings: list[str]):
    """The wanted columns, labelled by their header index, indexed by sample time."""
    columns = layout.wanted_columns()
    index = pd.DatetimeIndex([stamp.utc for stamp in rows.stamps], name="time")
    if not columns:
        return pd.DataFrame(index=index)
    if isinstance(rows, TableRows):
        frame = _finite(rows.table, [layout.names[c] for c in columns], warnings).to_pandas()
        frame.columns, frame.index = columns, index
        return frame
    series = clean_series(rows, layout, warnings).series
    return pd.DataFrame({c: pd.Series(series[c], index=index, dtype="float64") for c in columns})


def _finite(table, names: list[str], warnings: list[str]):
    """nan/inf cells -> null with a warning naming the column, as esxtop_rows.clean_series does."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for k, name in enumerate(names):
        column = table.column(k)
        finite = pc.is_finite(column)
        bad = pc.sum(pc.invert(finite)).as_py() or 0
        if bad:
            warnings.append(non_finite_warning(bad, name))
            table = table.set_column(k, table.field(k), pc.if_else(finite, column, pa.scalar(None, pa.float64())))
    return table


def _block(pd, raw, sources: list[int | None], keys: list[tuple], names: list[str], divisors=None):
    """A frame of raw's columns ``sources`` (None: absent, NaN) under MultiIndex ``keys``."""
    picked = raw.reindex(columns=[-1 if s is None else s for s in sources]).to_numpy(dtype="float64", copy=True)
    if divisors is not None:
        per_vcpu = [d is not None for d in divisors]
        by = pd.Series([d or float("nan") for d in divisors], dtype="float64").to_numpy()
        picked[:, per_vcpu] /= by[per_vcpu]  # not rounded: the parser's JSON rounds to 4 decimals
    columns = pd.MultiIndex.from_tuples(keys, names=names) if keys else pd.MultiIndex.from_arrays(
        [[] for _ in names], names=names)
    return pd.DataFrame(picked, index=raw.index, columns=columns)


def _vm_frame(pd, raw, layout: Layout, chosen: tuple[str, ...], vcpus_hint: int | None):
    keys, sources, divisors = [], [], []
    for counter in (c for c in chosen if c in VM_COUNTERS):
        label, per_vcpu = VM_COUNTERS[counter]
        for name, group in layout.groups.items():
            vcpus = vcpus_hint or len(group.vcpu_worlds) or None
            keys.append((counter, name))
            sources.append(group.columns.get(label))
            divisors.append((vcpus or 0) if per_vcpu else None)  # 0: per vCPU, count unknown -> NaN
    return _block(pd, raw, sources, keys, ["counter", "vm"], divisors)


def _vcpu_frame(pd, raw, layout: Layout, chosen: tuple[str, ...]):
    keys, sources = [], []
    if "vcpu_ready_pct" in chosen:
        for name, group in layout.groups.items():
            for world in sorted(group.vcpu_worlds, key=vcpu_number):
                if group.vcpu_worlds[world] is not None:
                    keys.append((name, world))
                    sources.append(group.vcpu_worlds[world])
    return _block(pd, raw, sources, keys, ["vm", "vcpu"])


def _port_frame(pd, raw, layout: Layout, chosen: tuple[str, ...]):
    keys, sources = [], []
    for counter in (c for c in chosen if c in PORT_COUNTERS):
        for key, port in layout.ports.items():
            keys.append((counter, port.vm, key))
            sources.append(port.columns.get(PORT_COUNTERS[counter]))
    return _block(pd, raw, sources, keys, ["counter", "vm", "port"])


def _info_frame(pd, layout: Layout, vcpus_hint: int | None):
    rows = []
    for name, group in layout.groups.items():
        vcpus = vcpus_hint or len(group.vcpu_worlds) or None
        source = "hint" if vcpus_hint else "vcpu-instances" if vcpus else None
        rows.append({"vm": name, "group_id": group.gid, "vcpus": vcpus, "vcpus_source": source,
                     "vcpu_worlds": len(group.vcpu_worlds) or None})
    frame = pd.DataFrame(rows, columns=["vm", "group_id", "vcpus", "vcpus_source", "vcpu_worlds"])
    return frame.astype({"vm": "string", "group_id": "Int64", "vcpus": "Int64", "vcpus_source": "string",
                         "vcpu_worlds": "Int64"}).set_index("vm")
