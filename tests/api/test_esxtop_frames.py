"""esxdiag.api.read_esxtop: the same numbers, warnings and errors as ``esxdiag parse esxtop`` on the
real captures and on generated ones, on both reading paths (the csv module and pyarrow's table,
which goes to pandas without Python lists), reading only the columns of the counters asked for."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

pytest.importorskip("pandas")

from esxdiag import api  # noqa: E402
from esxdiag.api.esxtop import COUNTERS, PORT_COUNTERS, VM_COUNTERS  # noqa: E402
from esxdiag.parsers import esxtop_arrow, parse_file  # noqa: E402
from esxdiag.parsers.pdh import iso_utc  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "esxtop"
REAL = sorted(FIXTURES.glob("esxtop_batch_*.csv"))  # ESXi 6.x batch (17,427 and 7,632 columns), an Excel re-save


@pytest.fixture(params=["csv", "pyarrow"])
def path_taken(request, monkeypatch):
    """Which reader the rows go through; the list records each table the pyarrow path returned."""
    tables: list[int] = []
    if request.param == "pyarrow":
        monkeypatch.setattr(esxtop_arrow, "FAST_PATH_MIN_BYTES", 0)
        read = esxtop_arrow.read_arrow_rows

        def spy(*args):
            rows = read(*args)
            if isinstance(rows, esxtop_arrow.TableRows):
                tables.append(rows.table.num_columns)
            return rows

        monkeypatch.setattr(esxtop_arrow, "read_arrow_rows", spy)
    return request.param, tables


def same(expected, got, tolerance: float = 0.0) -> bool:
    """``tolerance``: the JSON rounds per-vCPU figures to 4 decimals, the frames do not."""
    expected = expected if expected is not None else [None] * len(got)
    return len(expected) == len(got) and all(
        (e is None and math.isnan(g)) or (e is not None and abs(e - g) <= tolerance) for e, g in zip(expected, got))


def assert_frames_match_the_record(frames, record):
    assert frames.warnings == record.warnings and frames.interval_s == record.interval_s
    assert frames.host == record.host and len(frames.vms.index) == record.samples
    assert [iso_utc(t.to_pydatetime()) for t in frames.vms.index] == list(record.timestamps)
    for name, vm in record.vms.items():
        for counter in VM_COUNTERS:
            if counter != "members":
                tolerance = 5.01e-5 if VM_COUNTERS[counter][1] else 0.0
                assert same(getattr(vm, counter), frames.vms[(counter, name)].tolist(), tolerance), (name, counter)
        for world, values in (vm.vcpu_ready_pct or {}).items():
            assert same(values, frames.vcpus[(name, world)].tolist()), (name, world)
        info = frames.info.loc[name]
        assert (info["group_id"], info["vcpus_source"]) == (vm.group_id, vm.vcpus_source)
    assert list(frames.info.index) == list(record.vms)
    for port_id, port in record.ports.items():
        for counter in PORT_COUNTERS:
            assert same(getattr(port, counter), frames.ports[(counter, port.vm, port_id)].tolist())


@pytest.mark.parametrize("capture", REAL, ids=lambda p: p.name[:40])
def test_real_captures_give_the_parsers_numbers_on_both_paths(capture, path_taken):
    how, tables = path_taken
    frames = api.read_esxtop(capture)
    assert_frames_match_the_record(frames, parse_file("esxtop", capture))
    if how == "pyarrow" and "verbatim" in capture.name:
        assert tables, "the pyarrow table was not used"
    assert all(str(t) == "float64" for t in frames.vms.dtypes) and str(frames.vms.index.tz) == "UTC"


def test_the_full_capture_shapes_and_one_vm(path_taken):
    full = next(p for p in REAL if "full" in p.name)
    frames = api.read_esxtop(full)
    assert frames.vms["ready_pct"].shape == (3, 6) and frames.vcpus.shape == (3, 7)
    assert frames.vms.columns.names == ["counter", "vm"] and frames.ports.columns.names == ["counter", "vm", "port"]
    styx = api.read_esxtop(full, vm="styx", vcpus=2)
    assert list(styx.info.index) == ["styx"] and styx.info.loc["styx", "vcpus_source"] == "hint"
    ready = styx.vms[("ready_pct", "styx")].tolist()
    assert ready == [v / 2 for v in styx.vms[("group_ready_pct", "styx")].tolist()]
    assert_frames_match_the_record(styx, parse_file("esxtop", full, vm="styx", vcpus=2))


def test_only_the_columns_of_the_counters_asked_for_are_read(path_taken):
    how, tables = path_taken
    full = next(p for p in REAL if "full" in p.name)
    frames = api.read_esxtop(full, counters=["ready_pct"])
    assert list(frames.vms.columns.get_level_values("counter").unique()) == ["ready_pct"]
    assert frames.vcpus.shape[1] == 0 and frames.ports.shape[1] == 0
    assert frames.info["vcpus"].notna().all()  # the vCPU worlds still give the count: ready_pct is per vCPU
    if how == "pyarrow":
        assert tables == [6]  # one % Ready column per VM, nothing else
    ports = api.read_esxtop(full, counters="received_dropped_pct")
    assert ports.vms.shape[1] == 0 and ports.ports.shape[1] == 7


def test_generated_capture_with_hostile_names_on_the_pyarrow_path(tmp_path, path_taken):
    spec = importlib.util.spec_from_file_location("esxtop_gen", ROOT / "bench" / "esxtop_gen.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    path = tmp_path / "gen.csv"
    gen.write(path, 0, 12, pool_size=7, rows=41)
    frames = api.read_esxtop(path)
    assert_frames_match_the_record(frames, parse_file("esxtop", path))
    assert frames.vms[("group_ready_pct", "iperf-test1")].tolist() == [69.6] * 41
    assert "web, frontend 9" in frames.vms["ready_pct"].columns


def test_non_finite_and_empty_cells_are_nan_with_the_parsers_warnings(tmp_path, path_taken):
    header = ('"(PDH-CSV 4.0) (UTC)(0)","\\\\h\\Group Cpu(5:vm1)\\% Ready","\\\\h\\Group Cpu(5:vm1)\\% CoStop",'
              '"\\\\h\\Vcpu(5:vm1:6:vmx-vcpu-0:vm1)\\% Ready"\n')
    rows = "".join(f'"10/02/2017 14:20:{s:02d}","{r}","{c}","1.5"\n'
                   for s, r, c in ((0, "2.0", "nan"), (5, "", "1.0"), (10, "inf", "-inf"), (15, "4.0", "0.5")))
    path = tmp_path / "e.csv"
    path.write_text(header + rows)
    frames = api.read_esxtop(path)
    assert_frames_match_the_record(frames, parse_file("esxtop", path))
    assert frames.vms[("ready_pct", "vm1")].isna().tolist() == [False, True, True, False]
    assert sum("non-finite" in w for w in frames.warnings) == 2


@pytest.mark.parametrize("call, error, words", [
    (lambda p: api.read_esxtop(p, vm="nobody"), api.NoData, "'nobody' is not in the file"),
    (lambda p: api.read_esxtop(p, vcpus=2), api.ParseError, "vcpus hint needs one VM"),
    (lambda p: api.read_esxtop(p, counters=["ready", "used_pct"]), api.EsxdiagError, "unknown esxtop counter"),
])
def test_bad_requests_are_esxdiag_errors(call, error, words):
    with pytest.raises(error, match=words):
        call(next(p for p in REAL if "reduced" in p.name))


@pytest.mark.parametrize("text, error", [
    ("", api.NoData), ("hello,world\n", api.ParseError), ('"(PDH-CSV 4.0) (UTC)(0)","\\\\h\\Group Cpu(5:v)\\% Ready"\n',
                                                            api.NoData),
])
def test_unusable_files_name_the_file(tmp_path, text, error):
    path = tmp_path / "x.csv"
    path.write_text(text)
    with pytest.raises(error) as caught:
        api.read_esxtop(path)
    assert caught.value.file == str(path)


def test_every_counter_is_a_name_of_the_parsers_json():
    record = parse_file("esxtop", next(p for p in REAL if "reduced" in p.name))
    vm = next(iter(record.vms.values()))
    port = next(iter(record.ports.values()))
    assert all(hasattr(vm, c) for c in COUNTERS if c in VM_COUNTERS or c == "vcpu_ready_pct")
    assert all(hasattr(port, c) for c in PORT_COUNTERS)
