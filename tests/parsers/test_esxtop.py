"""esxtop batch CSV and CPU panel parsers.

Real captures (see tests/fixtures/esxtop/README.md): the gsliu/VisualEsxtopOnline Excel re-saved
batch CSV and the vswitchzero CPU panel paste from seed 002. Every docs/raw-formats.md §7 item 1
case is generated here with the csv module (the writer quotes like esxtop: QUOTE_ALL).
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import esxtop_arrow, parse_file, to_jsonable
from esxdiag.parsers.esxtop import parse_cpu_panel, parse_esxtop
from esxdiag.parsers.pdh import parse_counter_path
from esxdiag.intake.sniff import sniff_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "esxtop"
ROOT = Path(__file__).resolve().parents[2]
GSLIU = FIXTURES / "esxtop_batch_gsliu_VisualEsxtopOnline_excel_resaved.csv"
PANEL = FIXTURES / "cpu_panel_vswitchzero_iperf_seed002.txt"
VM = "SQL02 (df09cdf2-1e74-45fb-9ccc-90d1c402fc6b), prod"


def vm_columns(gid: int, name: str, vcpus: int, ports: tuple[int, ...] = ()) -> list[str]:
    columns = [f"Group Cpu({gid}:{name})\\{c}" for c in
               ("Members", "% Used", "% Run", "% Ready", "% CoStop", "% Max Limited", "% Swap Wait")]
    worlds = ["vmx", f"vmx-mks:{name}"] + [f"vmx-vcpu-{n}:{name}" for n in range(vcpus)]
    columns += [f"Vcpu({gid}:{name}:{gid + i + 1}:{w})\\{c}" for i, w in enumerate(worlds) for c in ("% Used", "% Ready")]
    columns += [f"Network Port(DvsPortset-0:{p}:{gid + 1}:{name})\\{c}" for p in ports for c in
                ("Packets Received/sec", "MBits Received/sec", "% Received Packets Dropped")]
    columns += [f"Virtual Disk({name}:scsi0:0)\\Reads/sec"]
    return columns


def batch_csv(columns: list[str], rows: list[list[str]], *, marker: str = "(PDH-CSV 4.0) (UTC)(0)",
              quoting: int = csv.QUOTE_ALL, newline: str = "\n", final_newline: bool = True,
              host: str = "esx01.lab") -> str:
    out = io.StringIO()
    writer = csv.writer(out, quoting=quoting, lineterminator=newline)
    writer.writerow([marker] + [f"\\\\{host}\\{c}" for c in columns])
    writer.writerows(rows)
    text = out.getvalue()
    return text if final_newline else text[: -len(newline)]


def stamp(second: int) -> str:
    return f"05/14/2024 09:00:{second:02d}"


def one_vm_file(vcpus: int = 2, samples: int = 3, **kwargs) -> tuple[list[str], str]:
    columns = vm_columns(100, VM, vcpus, ports=(67108900, 67108901))
    rows = [[stamp(5 * s)] + [f"{10 * s + i / 100:.2f}" for i in range(len(columns))] for s in range(samples)]
    return columns, batch_csv(columns, rows, **kwargs)


def parse(text: str, **options):
    return parse_esxtop(io.StringIO(text), **options)


def value(columns: list[str], rows_text: str, column: str) -> list[float]:
    index = columns.index(column) + 1
    return [float(r[index]) for r in list(csv.reader(io.StringIO(rows_text)))[1:]]


def test_excel_resaved_real_capture():
    record = parse_file("esxtop", GSLIU)
    data = to_jsonable(record)
    assert data["samples"] == 25 and data["host"] == "proma-2n-dhcp60.eng.vmware.com"
    assert data["pdh"] == {"version": "4.0", "timezone": "UTC", "bias_min": 0}
    assert data["timestamps"][0] == "2015-03-26T22:42:00Z" and data["timestamps"][-1] == "2015-03-26T22:44:00Z"
    assert data["interval_s"] is None and data["vms"] == {} and data["ports"] == {}
    assert any("unquoted" in w for w in data["warnings"]) and any("no seconds" in w for w in data["warnings"])
    assert any("no VM groups" in w for w in data["warnings"])


def test_json_shape_and_group_sums_and_ports():
    columns, text = one_vm_file(vcpus=2)
    data = json.loads(json.dumps(to_jsonable(parse(text))))
    assert data["interval_s"] == 5.0 and data["samples"] == 3 and data["host"] == "esx01.lab"
    assert data["timestamps"] == ["2024-05-14T09:00:00Z", "2024-05-14T09:00:05Z", "2024-05-14T09:00:10Z"]
    vm = data["vms"][VM]
    ready = value(columns, text, f"Group Cpu(100:{VM})\\% Ready")
    assert vm["group_ready_pct"] == ready and vm["ready_pct"] == [round(r / 2, 4) for r in ready]
    assert vm["costop_pct"] == [round(r / 2, 4) for r in value(columns, text, f"Group Cpu(100:{VM})\\% CoStop")]
    assert vm["max_limited_pct"] == [round(r / 2, 4) for r in value(columns, text, f"Group Cpu(100:{VM})\\% Max Limited")]
    assert vm["used_pct"] == value(columns, text, f"Group Cpu(100:{VM})\\% Used")
    assert vm["run_pct"] == value(columns, text, f"Group Cpu(100:{VM})\\% Run")
    assert vm["swap_wait_pct"] == value(columns, text, f"Group Cpu(100:{VM})\\% Swap Wait")
    assert vm["group_id"] == 100 and vm["members"] == int(value(columns, text, f"Group Cpu(100:{VM})\\Members")[-1])
    assert vm["vcpus"] == 2 and vm["vcpus_source"] == "vcpu-instances"
    assert list(vm["vcpu_ready_pct"]) == [f"vmx-vcpu-0:{VM}", f"vmx-vcpu-1:{VM}"]
    assert vm["vcpu_ready_pct"][f"vmx-vcpu-1:{VM}"] == value(columns, text, f"Vcpu(100:{VM}:104:vmx-vcpu-1:{VM})\\% Ready")
    assert set(data["ports"]) == {"67108900", "67108901"}
    port = data["ports"]["67108901"]
    assert port["portset"] == "DvsPortset-0" and port["vm"] == VM
    assert port["received_dropped_pct"] == value(columns, text, f"Network Port(DvsPortset-0:67108901:101:{VM})\\% Received Packets Dropped")
    assert port["packets_received_per_s"] == value(columns, text, f"Network Port(DvsPortset-0:67108901:101:{VM})\\Packets Received/sec")
    assert port["mbits_received_per_s"] == value(columns, text, f"Network Port(DvsPortset-0:67108901:101:{VM})\\MBits Received/sec")


def test_quoted_and_unquoted_give_the_same_values():
    _, quoted = one_vm_file()
    _, unquoted = one_vm_file(quoting=csv.QUOTE_MINIMAL)
    assert '"' in quoted.splitlines()[1] and unquoted.splitlines()[1].startswith("05/14")
    a, b = parse(quoted), parse(unquoted)
    assert a.vms == b.vms and a.ports == b.ports and a.timestamps == b.timestamps
    assert not any("unquoted" in w for w in a.warnings) and any("unquoted" in w for w in b.warnings)


@pytest.mark.parametrize("newline,final", [("\n", True), ("\r\n", True), ("\n", False), ("\r\n", False)])
def test_line_endings_and_missing_final_newline(newline, final):
    _, reference = one_vm_file()
    _, text = one_vm_file(newline=newline, final_newline=final)
    record = parse(text)
    assert record.samples == 3 and record.vms == parse(reference).vms and record.warnings == ()


def test_truncated_last_row_is_dropped_with_a_warning():
    _, text = one_vm_file()
    cut_between_fields = text[: text.rindex(",")]  # last row loses its last field
    cut_inside_field = text.rstrip("\n")[:-3]  # last row ends inside a quoted value
    for damaged in (cut_between_fields, cut_inside_field):
        record = parse(damaged)
        assert record.samples == 2 and len(record.vms[VM].ready_pct) == 2
        assert any("dropped truncated last row" in w for w in record.warnings)


def test_short_row_in_the_middle_is_a_parse_error():
    columns, text = one_vm_file(samples=3)
    lines = text.splitlines(keepends=True)
    lines[2] = lines[2][: lines[2].rindex(",")] + "\n"
    with pytest.raises(ParseError) as err:
        parse("".join(lines))
    assert err.value.line == 3


def test_counter_path_parser_nested_parentheses_commas_colons():
    path = parse_counter_path("\\\\proma-2n-dhcp60.eng.vmware.com\\Virtual Disk(SQL02 (df09cdf2-1e74-45fb-9ccc-90d1c402fc6b):scsi0:0)\\Reads/sec")
    assert (path.host, path.object, path.counter) == ("proma-2n-dhcp60.eng.vmware.com", "Virtual Disk", "Reads/sec")
    assert path.instance == "SQL02 (df09cdf2-1e74-45fb-9ccc-90d1c402fc6b):scsi0:0"
    assert parse_counter_path("\\\\local\\Memory\\Kernel MBytes").instance is None
    odd = parse_counter_path("\\\\h\\Group Cpu(7:a\\b (c), d)\\% Ready")
    assert (odd.object, odd.instance, odd.counter) == ("Group Cpu", "7:a\\b (c), d", "% Ready")
    assert parse_counter_path("Group Cpu(1:x)\\% Ready") is None


def test_vm_names_with_parentheses_commas_and_colons_end_to_end():
    name = "a:b (c (d)), e"
    columns = vm_columns(300, name, 1, ports=(5,))
    text = batch_csv(columns, [[stamp(0)] + ["1.00"] * len(columns)])
    record = parse(text, vm=name)
    assert list(record.vms) == [name] and record.vms[name].vcpus == 1 and record.ports["5"].vm == name


def load_generator():
    spec = importlib.util.spec_from_file_location("esxtop_gen", ROOT / "bench" / "esxtop_gen.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


@pytest.fixture(scope="module")
def wide_files(tmp_path_factory):
    """Two >50k-column files (header > 1 MB, like a full ``esxtop -b -a``): 200 and 400 rows."""
    gen, folder = load_generator(), tmp_path_factory.mktemp("wide")
    files = {}
    for rows in (200, 400):
        files[rows] = folder / f"wide_{rows}.csv"
        columns, _ = gen.write(files[rows], 0, 232, pool_size=2, rows=rows)
    assert columns > 50_000 and len(files[400].open(encoding="utf-8").readline()) > 1_000_000
    assert files[400].stat().st_size > 160 * 2**20
    return files


def peak_parse(path: Path, fast: bool) -> tuple[int, float, int, bool, int]:
    """(samples, first ready, ports, pyarrow path used, VmHWM bytes) of parse_file in a fresh
    process; VmHWM, not ru_maxrss: ru_maxrss survives exec and would report the forked pytest."""
    code = ("import re, sys; from esxdiag.parsers import esxtop_arrow, parse_file\n"
            "if sys.argv[2] == 'csv': esxtop_arrow.FAST_PATH_MIN_BYTES = 1 << 62\n"
            "used = []; read = esxtop_arrow.read_arrow_rows\n"
            "esxtop_arrow.read_arrow_rows = lambda *a: used.append(read(*a)) or used[-1]\n"
            "r = parse_file('esxtop', sys.argv[1], vm='iperf-test1')\n"
            "hwm = re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)\n"
            "print(r.samples, r.vms['iperf-test1'].ready_pct[0], len(r.ports), bool(used and used[0]), int(hwm) * 1024)")
    out = subprocess.run([sys.executable, "-c", code, str(path), "fast" if fast else "csv"],
                         capture_output=True, text=True, check=True)
    samples, ready, ports, used, peak = out.stdout.split()
    return int(samples), float(ready), int(ports), used == "True", int(peak)


def test_more_than_50k_columns_csv_path_streams_in_small_memory(wide_files):
    samples, ready, ports, used, peak = peak_parse(wide_files[400], fast=False)
    assert (samples, ready, ports, used) == (400, 69.6, 2, False)
    assert peak < 64 * 2**20, "csv path held too much of the file"


def test_more_than_50k_columns_pyarrow_path_memory_does_not_grow_with_the_file(wide_files):
    """pyarrow costs a fixed ~45 MiB to import and presizes 512 rows x columns x 4 bytes of field
    offsets per stream (105 MB here, so one stream); the allocator settles within ~150 rows
    (measured: 50 rows 106 MiB, 200 rows 141 MiB, 800 rows 146 MiB), then nothing may grow."""
    small, large = peak_parse(wide_files[200], fast=True), peak_parse(wide_files[400], fast=True)
    assert small[:4] == (200, 69.6, 2, True) and large[:4] == (400, 69.6, 2, True)
    assert large[4] < 200 * 10**6, "over the 200 MB budget"
    assert large[4] - small[4] < 16 * 2**20, "peak memory grows with the number of rows"


@pytest.mark.parametrize("marker,local,utc", [
    ("(PDH-CSV 4.0) (W. Europe Standard Time)(-60)", "05/14/2024 10:00:00", "2024-05-14T09:00:00Z"),
    ("(PDH-CSV 4.0) (Pacific Daylight Time)(420)", "05/14/2024 02:00:00", "2024-05-14T09:00:00Z"),
    ("(PDH-CSV 4.0) (UTC)(0)", "12/31/2023 23:59:59", "2023-12-31T23:59:59Z"),
])
def test_pdh_bias_sign(marker, local, utc):
    columns = vm_columns(1, "x", 1)
    record = parse(batch_csv(columns, [[local] + ["0.00"] * len(columns)], marker=marker))
    assert record.timestamps == (utc,) and record.interval_s is None
    assert record.pdh.bias_min == int(marker.rsplit("(", 1)[1].rstrip(")"))


def test_empty_cells_become_none():
    columns = vm_columns(100, VM, 2)
    ready = columns.index(f"Group Cpu(100:{VM})\\% Ready") + 1
    rows = [[stamp(s)] + ["4.00"] * len(columns) for s in range(3)]
    rows[1][ready] = ""
    vm = parse(batch_csv(columns, rows)).vms[VM]
    assert vm.group_ready_pct == (4.0, None, 4.0) and vm.ready_pct == (2.0, None, 2.0)


def test_duplicate_vm_names_on_different_port_ids():
    columns = vm_columns(100, "web", 1, ports=(10, 11)) + vm_columns(200, "web", 1, ports=(12,))
    rows = [[stamp(0)] + [f"{i}.00" for i in range(len(columns))]]
    record = parse(batch_csv(columns, rows))
    assert set(record.ports) == {"10", "11", "12"} and {p.vm for p in record.ports.values()} == {"web"}
    assert record.ports["10"].packets_received_per_s != record.ports["11"].packets_received_per_s
    assert set(record.vms) == {"web", "web [gid 200]"} and record.vms["web [gid 200]"].group_id == 200
    assert any("two groups named 'web'" in w for w in record.warnings)


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1", "utf-8-sig"])
def test_utf8_latin1_and_bom_names(tmp_path, encoding):
    name = "Müller-DB é"
    columns = vm_columns(100, name, 1, ports=(9,))
    path = tmp_path / "names.csv"
    path.write_bytes(batch_csv(columns, [[stamp(0)] + ["3.00"] * len(columns)]).encode(encoding))
    record = parse_file("esxtop", path, vm=name)
    assert list(record.vms) == [name] and record.ports["9"].vm == name and record.pdh.timezone == "UTC"


def test_bom_in_a_text_stream():
    columns, text = one_vm_file()
    assert parse("\ufeff" + text).vms == parse(text).vms


@pytest.mark.parametrize("hint,expected,source", [(4, 4, "hint"), (None, 2, "vcpu-instances")])
def test_normalisation_hint_or_vcpu_instances(hint, expected, source):
    columns, text = one_vm_file(vcpus=2)
    vm = parse(text, vm=VM, vcpus=hint).vms[VM]
    assert vm.vcpus == expected and vm.vcpus_source == source
    assert vm.ready_pct == tuple(round(r / expected, 4) for r in vm.group_ready_pct)


def test_normalisation_unknown_never_divides_by_members():
    columns = [c for c in vm_columns(100, VM, 2, ports=(7,)) if not c.startswith("Vcpu(")]
    text = batch_csv(columns, [[stamp(0)] + ["8.00"] * len(columns)])
    vm = parse(text).vms[VM]
    assert vm.vcpus is None and vm.vcpus_source is None and vm.vcpu_ready_pct is None
    assert vm.ready_pct is None and vm.costop_pct is None and vm.max_limited_pct is None
    assert vm.group_ready_pct == (8.0,) and vm.members == 8


def test_system_groups_and_user_worlds_are_not_vms():
    columns = vm_columns(100, "app", 1) + ["Group Cpu(1:system)\\% Ready", "Group Cpu(2099013:hostd.2099013)\\% Ready",
                                           "Vcpu(2099013:hostd.2099013:2099014:hostd)\\% Ready"]
    record = parse(batch_csv(columns, [[stamp(0)] + ["1.00"] * len(columns)]))
    assert list(record.vms) == ["app"]


def test_vm_filter_keeps_only_that_vm_and_its_ports():
    columns = vm_columns(100, "a", 1, ports=(1,)) + vm_columns(200, "b", 2, ports=(2,))
    record = parse(batch_csv(columns, [[stamp(0)] + ["1.00"] * len(columns)]), vm="b")
    assert list(record.vms) == ["b"] and list(record.ports) == ["2"]
    with pytest.raises(NoData, match=r"'zz' is not in the file \(VMs seen: a, b\)"):
        parse(batch_csv(columns, [[stamp(0)] + ["1.00"] * len(columns)]), vm="zz")


def test_seed_iperf_test1_figures_from_a_batch_csv_match_the_cpu_panel():
    panel = {g.name: g for g in parse_cpu_panel(PANEL.read_text(encoding="utf-8")).groups}["iperf-test1"]
    columns = vm_columns(panel.gid, "iperf-test1", 1)
    figures = {"Members": panel.nwld, "% Used": panel.used_pct, "% Run": panel.columns["%RUN"],
               "% Ready": panel.ready_pct, "% CoStop": panel.costop_pct,
               "% Max Limited": panel.max_limited_pct, "% Swap Wait": panel.swap_wait_pct}
    row = [stamp(0)] + [f"{figures[c.rsplit(chr(92), 1)[1]]:.2f}" if c.startswith("Group Cpu") else "0.00" for c in columns]
    vm = parse(batch_csv(columns, [row]), vm="iperf-test1").vms["iperf-test1"]
    assert (vm.ready_pct, vm.max_limited_pct, vm.costop_pct) == ((69.60,), (69.52,), (0.0,))
    assert vm.members == 6 and vm.vcpus == 1 and vm.used_pct == (37.77,)


def test_cpu_panel_seed_text():
    groups = parse_cpu_panel(PANEL.read_text(encoding="utf-8")).groups
    assert [g.name for g in groups] == ["iperf-test2", "iperf-test1", "NSX_Controller_", "NSX_Controller_", "vc"]
    test1 = groups[1]
    assert (test1.id, test1.gid, test1.nwld) == (5572767, 5572767, 6)
    assert (test1.ready_pct, test1.max_limited_pct, test1.costop_pct, test1.swap_wait_pct, test1.used_pct) == \
        (69.60, 69.52, 0.0, 0.0, 37.77)
    assert list(test1.columns) == ["%USED", "%RUN", "%SYS", "%WAIT", "%VMWAIT", "%RDY", "%IDLE", "%OVRLP",
                                   "%CSTP", "%MLMTD", "%SWPWT"] and test1.columns["%WAIT"] == 505.83


def test_cpu_panel_names_with_spaces_and_errors():
    text = ("    ID    GID NAME          NWLD   %USED    %RDY\n"
            "  1234   1234 my vm (old)      3   10.00    2.50\n"
            "\nsome prose after the panel 1 2 3\n")
    group = parse_cpu_panel(text).groups[0]
    assert (group.name, group.nwld, group.ready_pct, group.max_limited_pct) == ("my vm (old)", 3, 2.5, None)
    with pytest.raises(ParseError):
        parse_cpu_panel("no panel here\n")
    with pytest.raises(NoData):
        parse_cpu_panel("ID GID NAME NWLD %USED %RDY\n\n")


def test_comma_decimal_semicolon_file_is_converted():
    columns = vm_columns(100, VM, 1)
    text = batch_csv(columns, [["14.05.2024 09:00:00"] + ["12,50"] * len(columns),
                               ["14.05.2024 09:00:05"] + ["1,25"] * len(columns)], quoting=csv.QUOTE_MINIMAL)
    text = "\n".join(";".join(r) for r in csv.reader(io.StringIO(text)))
    record = parse(text)
    assert record.vms[VM].ready_pct == (12.5, 1.25) and record.interval_s == 5.0
    assert record.timestamps[0] == "2024-05-14T09:00:00Z" and any("comma-decimal" in w for w in record.warnings)


@pytest.mark.parametrize("text,error,line", [
    ("", NoData, None),
    ('"(PDH-CSV 4.0) (UTC)(0)","\\\\h\\Group Cpu(1:a)\\% Ready"\n', NoData, None),
    ('"Timestamp","\\\\h\\Group Cpu(1:a)\\% Ready"\n"1","2"\n', ParseError, 1),
    ("\x7fELF\x02\x01\x01" + "\x00" * 40 + "\n", ParseError, 1),
    ('"(PDH-CSV 4.0) (UTC)(0)","not a counter"\n"05/14/2024 09:00:00","1"\n', ParseError, 1),
    ('"(PDH-CSV 4.0) (UTC)(0)","\\\\h\\Group Cpu(1:a)\\% Ready"\n"yesterday","1"\n', ParseError, 2),
    ('"(PDH-CSV 4.0) (UTC)(0)","\\\\h\\Vcpu(1:a:2:vmx)\\% Ready"\n"05/14/2024 09:00:00","n/a"\n', None, None),
])
def test_unusable_or_empty_input(text, error, line):
    if error is None:  # a non-numeric cell in a column no rule needs is not read at all
        assert parse(text).samples == 1
        return
    with pytest.raises(error) as err:
        parse(text)
    if line is not None:
        assert err.value.line == line


def test_binary_file_is_rejected(tmp_path):
    path = tmp_path / "core"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    with pytest.raises(ParseError, match="binary"):
        parse_file("esxtop", path)


def test_vcpus_hint_needs_a_vm():
    _, text = one_vm_file()
    with pytest.raises(ParseError):
        parse(text, vcpus=2)


def test_parser_does_not_import_pandas_and_small_files_do_not_import_pyarrow():
    """pyarrow (~0.1 s, ~45 MiB) is imported only when a big file takes the fast path."""
    code = ("import sys, esxdiag.parsers.esxtop; print('pandas' in sys.modules, 'numpy' in sys.modules); "
            "from esxdiag.parsers import parse_file; parse_file('esxtop', sys.argv[1]); "
            "print('pyarrow' in sys.modules, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(GSLIU)], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.split() == ["False", "False", "False", "False"]


@pytest.fixture
def arrow_used(monkeypatch):
    """Lets the pyarrow path take small files; the list gets True per parse whose rows pyarrow
    read, False when it declined and the csv module read them."""
    monkeypatch.setattr(esxtop_arrow, "FAST_PATH_MIN_BYTES", 0)
    used: list[bool] = []
    read = esxtop_arrow.read_arrow_rows

    def spy(*args):
        rows = read(*args)
        used.append(rows is not None)
        return rows

    monkeypatch.setattr(esxtop_arrow, "read_arrow_rows", spy)
    return used


def outcome(call):
    try:
        return call()
    except (ParseError, NoData) as exc:
        return type(exc).__name__, exc.why, getattr(exc, "line", None)


def both_paths(tmp_path: Path, data: bytes, **options):
    """(record or error from parse_file on disk, the same from the csv module on a text stream)."""
    path = tmp_path / "esxtop.csv"
    path.write_bytes(data)
    text = data.decode("utf-8")
    return outcome(lambda: parse_file("esxtop", path, **options)), outcome(lambda: parse(text, **options))


@pytest.mark.parametrize("options", [{}, {"vm": "iperf-test1"}, {"vm": "iperf-test1", "vcpus": 2}])
def test_pyarrow_and_csv_paths_give_identical_records_on_a_generated_file(tmp_path, arrow_used, options):
    path = tmp_path / "gen.csv"
    load_generator().write(path, 0, 12, pool_size=7, rows=61)
    fast, slow = both_paths(tmp_path, path.read_bytes(), **options)
    assert arrow_used == [True] and isinstance(fast, type(slow)) and fast == slow
    assert fast.samples == 61 and len(fast.vms) == (1 if options else 12) and fast.warnings == ()
    assert fast.vms["iperf-test1"].group_ready_pct == (69.6,) * 61


def test_pyarrow_path_reads_row_aligned_ranges_in_parallel(tmp_path):
    path = tmp_path / "gen.csv"
    load_generator().write(path, 0, 4, pool_size=3, rows=50)
    with path.open("rb") as handle:
        start = len(handle.readline())
    ranges = esxtop_arrow._ranges(str(path), start, path.stat().st_size, 3)
    data = path.read_bytes()
    assert len(ranges) == 3 and ranges[0][0] == start and ranges[-1][1] == len(data)
    assert all(a[1] == b[0] and data[a[1] - 1 : a[1]] == b"\n" for a, b in zip(ranges, ranges[1:]))


def mixed_file(newline: str = "\n") -> bytes:
    """Three VMs with awkward names, empty cells, port and Vcpu columns, 9 samples."""
    columns = vm_columns(100, VM, 2, ports=(10, 11)) + vm_columns(200, "Müller, DB", 1, ports=(12,))
    columns += vm_columns(300, "a:b (c)", 4)
    rows = [[stamp(5 * s)] + [f"{(s * 7 + i) % 97 + i / 100:.2f}" for i in range(len(columns))] for s in range(9)]
    for s, i in ((1, 3), (4, 5), (8, 12)):
        rows[s][i] = ""
    return batch_csv(columns, rows, newline=newline).encode("utf-8")


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_pyarrow_and_csv_paths_agree_on_empty_cells_names_and_line_ends(tmp_path, arrow_used, newline):
    fast, slow = both_paths(tmp_path, mixed_file(newline))
    assert arrow_used == [True] and fast == slow and len(fast.vms) == 3
    assert None in fast.vms[VM].group_ready_pct or None in fast.vms[VM].used_pct or None in fast.vms[VM].run_pct


def _cut_between_fields(data: bytes) -> bytes:
    return data[: data.rindex(b",")]


def _replace_line(data: bytes, number: int, new: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    lines[number - 1] = new
    return b"".join(lines)


def _wanted_cell(data: bytes, line: int, value: bytes) -> bytes:
    row = data.splitlines(keepends=True)[line - 1].split(b",")
    row[4] = b'"' + value + b'"'  # a Group Cpu counter of the first VM
    return _replace_line(data, line, b",".join(row))


@pytest.mark.parametrize("damage,arrow_reads", [
    (_cut_between_fields, True),  # truncated last row: fewer fields
    (lambda d: d.rstrip(b"\n")[:-3], True),  # truncated last row: ends inside a quoted value
    (lambda d: _cut_between_fields(d) + b"\n\r\n\n", None),  # ... followed by blank lines
    (lambda d: _replace_line(d, 4, d.splitlines(keepends=True)[3][:-30] + b"\n"), False),  # short row inside
    (lambda d: _replace_line(d, 4, d.splitlines(keepends=True)[3][:-1] + b',"1"\n'), False),  # long row inside
    *[(lambda d, n=n: _cut_between_fields(_replace_line(d, n, b"\n")), None) for n in range(3, 9)],  # blank lines
    (lambda d: d + b"\n\r\n\n", None),  # trailing blank lines
    (lambda d: _wanted_cell(d, 6, b"n/a"), False),  # non-numeric wanted cell (pyarrow would call it null)
    (lambda d: _wanted_cell(d, 6, b"nan"), True),  # non-finite cells: dropped with a warning on both paths
    (lambda d: _wanted_cell(d, 7, b"-inf"), True),
    (lambda d: _wanted_cell(d, 6, b" 1.5 "), None),  # blanks around a number: both read 1.5
    (lambda d: _replace_line(d, 7, d.splitlines(keepends=True)[6].replace(b"05/14/2024", b"yesterday", 1)), False),
])
def test_damaged_files_give_the_same_outcome_on_both_paths(tmp_path, arrow_used, damage, arrow_reads):
    """``arrow_reads`` None: pyarrow may read it or decline (a blank line is passed over at the end
    of a byte range, read as an empty row elsewhere), as long as the outcome is the same."""
    fast, slow = both_paths(tmp_path, damage(mixed_file()))
    assert fast == slow
    assert arrow_used == [arrow_reads] or (arrow_reads is None and len(arrow_used) == 1)


def test_fast_path_only_for_quoted_comma_files_on_disk(tmp_path, arrow_used):
    columns = vm_columns(100, "Müller-DB é", 1, ports=(9,))
    rows = [[stamp(s)] + ["3.00"] * len(columns) for s in range(3)]
    cases = {
        "latin-1": (batch_csv(columns, rows).encode("latin-1"), True),
        "bom": (batch_csv(columns, rows).encode("utf-8-sig"), True),
        "utf-16": (batch_csv(columns, rows).encode("utf-16"), None),
        "unquoted": (batch_csv(columns, rows, quoting=csv.QUOTE_MINIMAL).encode("utf-8"), None),
        "cr-only": (batch_csv(columns, rows, newline="\r").encode("utf-8"), None),
    }
    for name, (data, expected) in cases.items():
        arrow_used.clear()
        path = tmp_path / f"{name}.csv"
        path.write_bytes(data)
        record = parse_file("esxtop", path)
        assert record.samples == 3 and record.vms["Müller-DB é"].used_pct == (3.0,) * 3, name
        assert arrow_used == ([] if expected is None else [expected]), name
    arrow_used.clear()
    parse(batch_csv(columns, rows))
    assert arrow_used == []


def test_rows_out_of_order_are_flagged_and_do_not_give_a_negative_interval():
    header = '"(PDH-CSV 4.0) (UTC)(0)","\\\\h\\Group Cpu(5:vm1)\\% Ready"\n'
    rows = "".join(f'"10/02/2017 14:20:{s:02d}","1.00"\n' for s in (0, 5, 10, 5, 15))
    record = parse_esxtop(io.StringIO(header + rows))
    assert record.interval_s == 5.0
    assert any("do not increase at sample 4" in w for w in record.warnings)


# ---------------------------------------------------------------- terminal junk (issue 19 point 2)

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"


@pytest.mark.parametrize("name, junk", [
    ("esxtop_termcap_junk.csv", ["line 1: terminal output skipped (not the command's): \"no termcap entry for a "
                                 "'xterm-256color' terminal\""]),
    ("esxtop_prompt_and_term_junk.csv", ["line 1: terminal output skipped (not the command's): '[root@esx01:~] "
                                         "esxtop -b -d 5 -n 3 > /tmp/esxtop.csv'",
                                         "line 2: terminal output skipped (not the command's): 'TERM environment "
                                         "variable not set.'"]),
])
def test_terminal_output_before_the_header_is_skipped_with_a_warning(name, junk):
    record = parse_file("esxtop", REAL / name, vm="web-01")
    assert record.samples == 3 and record.interval_s == 5.0 and list(record.warnings) == junk
    assert record.vms["web-01"].ready_pct == (1.55, 1.7, 1.45)
    assert sniff_file(REAL / name).kinds == ("esxtop",)


def test_a_truncated_row_after_junk_is_named_at_its_line_in_the_file(tmp_path):
    path = tmp_path / "cut.csv"
    path.write_bytes((REAL / "esxtop_termcap_junk.csv").read_bytes()[:-20])
    record = parse_file("esxtop", path)
    assert record.samples == 2 and "line 5" in record.warnings[-1]


def test_a_header_only_capture_says_no_samples_even_for_a_vm_it_does_not_name():
    for vm in (None, "db-07"):
        with pytest.raises(NoData, match="header only: no samples .*stopped before its first sample"):
            parse_file("esxtop", REAL / "esxtop_header_only.csv", vm=vm)


def test_text_that_is_not_esxtop_after_a_few_lines_is_still_refused(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("NIC statistics:\n     pkts rx OOB: 5\n     tx timeout count: 0\n" * 10)
    with pytest.raises(ParseError, match="not an esxtop batch CSV.*'NIC statistics:'") as error:
        parse_file("esxtop", path)
    assert error.value.line == 1
