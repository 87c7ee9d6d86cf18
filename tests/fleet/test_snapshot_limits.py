"""A damaged or hostile snapshot is refused with exit 2 and one line: numbers no scan writes
(window_s NaN, negative or infinite; a negative scan duration) name their field, arrays nested
deeper than any snapshot are refused rather than crashing, and a file above the documented cap
(MAX_SNAPSHOT_BYTES) is refused before it is read."""

from __future__ import annotations

import json

import pytest

from esxdiag.cli import main
from esxdiag.fleet import snapshot as snapshot_module

from tests.serve.conftest import snapshot, vm


def scan_snapshot(path, capsys) -> tuple[int, str]:
    code = main(["scan", "--snapshot", str(path), "--no-history", "--format", "json", "-o", str(path) + ".out"])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("field, value, said", [
    ("window_s", "NaN", "window_s: nan is not a window"), ("window_s", "-60", "window_s: -60.0 is not a window"),
    ("window_s", "Infinity", "window_s: inf is not a window"), ("window_s", "0", "window_s: 0.0 is not a window"),
    ("seconds", "-1.5", "vcenters[0].seconds: -1.5 is not a duration"),
    ("seconds", "NaN", "vcenters[0].seconds: nan is not a duration")])
def test_impossible_numbers_are_refused_naming_the_field(tmp_path, capsys, field, value, said):
    data = snapshot("vc1:443", [vm("a", "vm-1")])
    marker = 123456.789
    if field == "window_s":
        data["window_s"] = marker
    else:
        data["vcenters"][0]["seconds"] = marker
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(data).replace(str(marker), value))
    code, err = scan_snapshot(path, capsys)
    assert code == 2 and said in err and len(err.splitlines()) == 1


def test_arrays_nested_without_end_are_refused(tmp_path, capsys):
    path = tmp_path / "bomb.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    code, err = scan_snapshot(path, capsys)
    assert code == 2 and "nested deeper than any fleet snapshot" in err and len(err.splitlines()) == 1


def test_a_snapshot_above_the_cap_is_refused_before_it_is_read(tmp_path, capsys):
    assert snapshot_module.MAX_SNAPSHOT_BYTES == 256 * 1024**2
    path = tmp_path / "huge.json"
    with open(path, "wb") as fh:
        fh.truncate(snapshot_module.MAX_SNAPSHOT_BYTES + 1)  # sparse: no disk used
    code, err = scan_snapshot(path, capsys)
    assert code == 2 and "larger than any fleet snapshot" in err
