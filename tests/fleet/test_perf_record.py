"""QueryPerf csv answers as vsphere_perf records: the plain-number shortcut reads cells exactly as
the csv module does (a cell that is no integer is no sample, and said), and samples come out in time
order whatever order the server sent them in."""

from __future__ import annotations

import csv
from datetime import datetime, timezone

from hypothesis import given, strategies as st

from esxdiag.collectors.fleet.fastdecode import EntityCsv
from esxdiag.collectors.fleet.perf import perf_record
from esxdiag.collectors.soap_stream import Ref
from esxdiag.collectors.vsphere_perf import REALTIME_S, decode_csv_series
from pyVmomi import vim

START = datetime(2026, 11, 26, 21, 0, tzinfo=timezone.utc)
END = datetime(2026, 11, 26, 21, 5, tzinfo=timezone.utc)
NAMES = {6: ("cpu.ready.summation", "millisecond"), 9: ("net.droppedRx.summation", "number")}


def _csv_module_cells(text: str) -> list[int | None]:
    """The csv module's cells as ints; "", -1 and a cell that is no integer as no sample (None)."""
    return [_int_or_none(c) for c in next(csv.reader([text]), [])]


def _int_or_none(cell: str) -> int | None:
    if cell.strip() in ("", "-1"):
        return None
    try:
        return int(cell)
    except ValueError:
        return None


def _outcome(read, text):
    try:
        return read(text)
    except ValueError:
        return ValueError


@given(st.text(alphabet="0123456789,-+ \"\t_x", max_size=30))
def test_cells_read_as_the_csv_module_reads_them(text):
    info = "20,2026-11-26T21:00:20Z"

    def fleet_cells(values):
        by_id: dict = {}
        unreadable: dict = {}
        decode_csv_series(",".join([info] * 40), [(6, "", values)], by_id, unreadable)
        cells = next(csv.reader([values]), [])
        assert unreadable.get((6, ""), []) == [c.strip() for c in cells
                                              if c.strip() not in ("", "-1") and _int_or_none(c) is None]
        return [v for v in by_id[(6, "")] if v is not None] + [by_id[(6, "")].count(None)]

    def reference(values):
        cells = (_csv_module_cells(values) + [None] * 40)[:40]
        return [v for v in cells if v is not None] + [cells.count(None)]

    assert _outcome(fleet_cells, text) == _outcome(reference, text)


def _entity(moid: str, sample_info: str, values: dict[int, str]) -> EntityCsv:
    return EntityCsv(Ref(vim.VirtualMachine, moid), sample_info, [(k, "", v) for k, v in values.items()])


def test_samples_sent_out_of_order_come_out_in_time_order():
    shuffled = "20,2026-11-26T21:01:00Z,20,2026-11-26T21:00:20Z,20,2026-11-26T21:00:40Z"
    first = perf_record("vm1", _entity("vm-1", shuffled, {9: "3,1,2", 6: "30,-1,20"}), NAMES, START, END, REALTIME_S)
    second = perf_record("vm2", _entity("vm-2", shuffled, {6: "7,8,9"}), NAMES, START, END, REALTIME_S)
    assert first["timestamps"] == ["2026-11-26T21:00:20Z", "2026-11-26T21:00:40Z", "2026-11-26T21:01:00Z"]
    assert [(s["counter"], s["values"]) for s in first["series"]] == [
        ("cpu.ready.summation", [None, 20, 30]), ("net.droppedRx.summation", [1, 2, 3])]
    assert second["timestamps"] == first["timestamps"]
    assert [s["values"] for s in second["series"]] == [[8, 9, 7]]


def test_samples_in_order_keep_their_values_and_a_record_owns_its_timestamps():
    ordered = "20,2026-11-26T21:00:20Z,20,2026-11-26T21:00:40Z"
    one = perf_record("vm1", _entity("vm-1", ordered, {6: "1,2"}), NAMES, START, END, REALTIME_S)
    one["timestamps"].append("changed")
    two = perf_record("vm2", _entity("vm-2", ordered, {6: "3,"}), NAMES, START, END, REALTIME_S)
    assert two["timestamps"] == ["2026-11-26T21:00:20Z", "2026-11-26T21:00:40Z"]
    assert [s["values"] for s in two["series"]] == [[3, None]]
    assert perf_record("vm3", _entity("vm-3", "", {6: ""}), NAMES, START, END, REALTIME_S) is None
