"""The real ESXi 6.x esxtop batch captures of rach-sharp/esxtopd (tests/fixtures/esxtop/README.md)
parse whole, checked against the bytes read independently with the csv module; plus the cell
damage a capture can carry (nan/inf, junk in a wanted column) and what the per-VM record
exposes for CPU normalisation (Members, vmx-vcpu-N worlds)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from esxdiag.errors import ParseError
from esxdiag.parsers import parse_file
from esxdiag.parsers.esxtop import parse_esxtop

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "esxtop"
FULL = FIXTURES / "esxtop_batch_full_3x5s_esxi6x_localhost_home_rach-sharp_esxtopd_verbatim.csv"
REDUCED = FIXTURES / "esxtop_batch_reduced_fields_3x5s_esxi6x_localhost_home_rach-sharp_esxtopd_verbatim.csv"
VMS = ["styx", "portunus", "hermes", "ananke", "ouranos", "poseidon"]


def column(path: Path, name: str) -> list[float]:
    rows = list(csv.reader(path.open(newline="")))
    index = rows[0].index("\\\\localhost.home\\" + name)
    return [float(row[index]) for row in rows[1:]]


@pytest.mark.parametrize("path", [FULL, REDUCED], ids=["full", "reduced"])
def test_real_capture_parses_whole_with_every_vm_and_its_values(path):
    record = parse_file("esxtop", path)
    assert record.samples == 3 and len(record.timestamps) == 3 and record.interval_s == 5.0
    assert list(record.vms) == VMS
    styx = record.vms["styx"]
    assert styx.group_ready_pct == tuple(column(path, "Group Cpu(1302698:styx)\\% Ready"))
    assert styx.members == int(column(path, "Group Cpu(1302698:styx)\\Members")[-1]) == 8
    assert styx.vcpu_ready_pct == {"vmx-vcpu-0:styx": tuple(column(
        path, "Vcpu(1302698:styx:444774:vmx-vcpu-0:styx)\\% Ready"))}
    assert styx.vcpu_worlds == 1 and styx.vcpus == 1 and styx.vcpus_source == "vcpu-instances"
    assert record.vms["poseidon"].vcpu_worlds == 2
    ports = {port_id: port for port_id, port in record.ports.items() if port.vm == "styx"}
    assert {(p.portset, i) for i, p in ports.items()} == {("vSwitch0", "33554449"), ("internal", "50331696")}
    assert ports["50331696"].received_dropped_pct == tuple(column(
        path, "Network Port(internal:50331696:444768:styx)\\% Received Packets Dropped"))
    assert not any("truncated" in w for w in record.warnings)


def test_full_capture_skips_the_console_damaged_column_and_names_it():
    record = parse_file("esxtop", FULL)
    (warning,) = [w for w in record.warnings if "damaged header" in w]
    assert "column 17399" in warning and "PCPU Power State(PCPU 1)" in warning and "column 17427" in warning


def test_reduced_capture_trailing_comma_keeps_the_last_complete_sample():
    record = parse_file("esxtop", REDUCED)
    assert record.samples == 3 and record.warnings == ()
    assert record.timestamps[-1] == "2018-04-26T14:06:37Z"


def test_trailing_comma_row_cut_mid_field_is_still_dropped(tmp_path):
    data = REDUCED.read_bytes()
    cut = tmp_path / "cut.csv"
    cut.write_bytes(data.rstrip(b"\n")[:-5])  # the last row ends inside its last quoted value
    record = parse_file("esxtop", cut)
    assert record.samples == 2 and any("dropped truncated last row" in w for w in record.warnings)
    whole = tmp_path / "whole-no-newline.csv"
    whole.write_bytes(data.rstrip(b"\n"))  # complete, only the final line end missing
    assert parse_file("esxtop", whole).samples == 3


HEADER = '"(PDH-CSV 4.0) (UTC)(0)","\\\\h\\Group Cpu(1:a)\\% Ready","\\\\h\\Group Cpu(1:a)\\% Max Limited",' \
         '"\\\\h\\Vcpu(1:a:2:vmx-vcpu-0:a)\\% Ready"\n'


@pytest.mark.parametrize("bad", ["nan", "NaN", "inf", "-Infinity", "1e999"])
def test_non_finite_cpu_cells_are_dropped_with_a_warning(bad):
    text = HEADER + f'"05/14/2024 09:00:00","80.0","{bad}","80.0"\n"05/14/2024 09:00:05","81.0","70.0","81.0"\n'
    record = parse_esxtop(io.StringIO(text))
    vm = record.vms["a"]
    assert vm.group_max_limited_pct == (None, 70.0) and vm.max_limited_pct == (None, 70.0)
    assert any("non-finite" in w and "% Max Limited" in w for w in record.warnings)


def test_non_numeric_wanted_cell_is_dropped_with_a_warning_naming_the_column():
    text = HEADER + '"05/14/2024 09:00:00","1.00","0","1"\n"05/14/2024 09:00:05","n/a","0","1"\n'
    record = parse_esxtop(io.StringIO(text))
    assert record.vms["a"].group_ready_pct == (1.0, None)
    assert any("non-numeric" in w and "Group Cpu(1:a)\\% Ready" in w and "line 3" in w for w in record.warnings)


def test_a_mostly_damaged_header_is_not_esxtop():
    text = '"(PDH-CSV 4.0) (UTC)(0)","junk","more junk","\\\\h\\Group Cpu(1:a)\\% Ready"\n"05/14/2024 09:00:00","1","2","3"\n'
    with pytest.raises(ParseError, match="3 header columns are not counter paths|2 of 3 header columns"):
        parse_esxtop(io.StringIO(text))
