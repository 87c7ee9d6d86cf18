"""Issue 25 point 15: Get-NetAdapter's default table printed to a narrow console cuts
InterfaceDescription ("vmxnet3 Ethernet Adap..."); Name, Status, MAC and speed are intact, so the
capture is read with a warning naming the cut column and the Format-List * command. A cut value
esxdiag needs (the MAC) still refuses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from esxdiag.errors import ParseError
from esxdiag.parsers import parse_file, parse_text

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
TRUNCATED = REAL / "win_netadapter_table_truncated.txt"


def test_a_cut_description_is_read_with_a_warning_naming_the_column():
    record = parse_file("win-netadapter", TRUNCATED)
    cut = next(a for a in record.adapters if a.name == "Ethernet1")
    assert (cut.mac, cut.status, cut.link_speed, cut.description) == ("00:50:56:a6:44:72", "Up", "10 Gbps", None)
    whole = next(a for a in record.adapters if a.name == "Ethernet0")
    assert whole.description == "vmxnet3 Ethernet Adapter"
    (warning,) = record.warnings
    assert "column InterfaceDescription is cut to the console width" in warning
    assert "re-capture with 'Get-NetAdapter | Format-List *'" in warning


def test_powershell_7s_ellipsis_is_read_the_same_way():
    text = TRUNCATED.read_text(encoding="utf-8").replace("Adap...", "Adapt\u2026")
    record = parse_text("win-netadapter", text)
    assert [a.description for a in record.adapters] == ["vmxnet3 Ethernet Adapter", None]
    assert "InterfaceDescription" in record.warnings[0]


def test_a_cut_mac_address_is_still_refused():
    text = TRUNCATED.read_text(encoding="utf-8").replace("00-50-56-A6-44-72", "00-50-56-A6-...  ")
    with pytest.raises(ParseError) as info:
        parse_text("win-netadapter", text)
    assert "column MacAddress is cut to the console width" in info.value.why
    assert info.value.why.endswith("re-capture with 'Get-NetAdapter | Format-List *'")
