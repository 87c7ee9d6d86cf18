"""Partial parse (issue 19 point 1): in every line-oriented kind an author's cut mark or an unknown
line is skipped with a warning naming its line and text, the records around it are returned, and a
parse that kept less than it skipped is a ParseError naming the first unreadable line. Each kind's
declared sample (esxdiag.parsers.registry) is the capture damaged here; the hand-written fixtures of
tests/fixtures/realworld are the shapes the issue quotes."""

from __future__ import annotations

from pathlib import Path

import pytest

from esxdiag.errors import ParseError
from esxdiag.parsers import PARSERS, parse_file, parse_text, to_jsonable
from esxdiag.parsers.cuts import is_cut_mark

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"

# kind -> the line of its sample after which a cut mark / unknown line is put (rows, not headers)
LINE_KINDS = {
    "esxtop-cpu-panel": 3, "esxtop-net-panel": 4, "vcenter-events-text": 2, "vsish-rxsummary": 3, "vsish-rxqueue-status": 3, "vsish-clientstats": 3,
    "vsish-ls": 1, "net-stats": 2, "net-dvs": 2, "esxcfg-vswitch": 2, "esxcli-vm-list": 3,
    "esxcli-vm-ports": 4, "esxcli-nic-stats": 4, "ethtool-stats": 5, "ethtool-rings": 4,
    "ethtool-driver": 2, "ip-link": 1, "netstat": 4, "ring-persistence": 1, "win-rss": 5, "win-stats": 5,
}
CUT_MARKS = ["...", "\u2026", "//output hidden//", "[snip]", "<output omitted>", "--More--", "[...]",
             "-- snip --", "(output truncated)"]


def _insert(sample: str, after: int, line: str) -> tuple[str, int]:
    """``line`` put after the ``after``-th non-blank line of ``sample``; its 1-based line number."""
    lines = sample.splitlines(keepends=True)
    seen = 0
    for index, text in enumerate(lines):
        seen += bool(text.strip())
        if seen == after:
            return "".join(lines[: index + 1] + [line + "\n"] + lines[index + 1:]), index + 2
    raise AssertionError("sample too short")


def _without_warnings(record) -> dict:
    data = to_jsonable(record)
    data.pop("warnings", None)
    return data


def test_every_line_oriented_kind_is_listed():
    json_or_csv = {"esxtop", "vsish-python", "net-stats-json", "vsphere-vm", "vsphere-perf", "vsphere-events", "vsphere-host-perf", "win-advprops",
                   "win-netadapter", "text", "ethtool-permaddr"}
    assert sorted(set(PARSERS) - json_or_csv) == sorted(LINE_KINDS)


@pytest.mark.parametrize("mark", CUT_MARKS)
def test_cut_marks_are_recognised(mark):
    assert is_cut_mark(mark) and is_cut_mark(f"   {mark}  ")
    assert not is_cut_mark(f"Packets received: 0 {mark}")


@pytest.mark.parametrize("kind", sorted(LINE_KINDS))
def test_a_cut_mark_is_skipped_with_a_warning_and_the_records_around_it_are_kept(kind):
    sample = PARSERS[kind].sample
    text, line = _insert(sample, LINE_KINDS[kind], "   ...")
    record = parse_text(kind, text)
    assert f"line {line}: cut mark '...' skipped" in " ".join(record.warnings)
    whole = _without_warnings(parse_text(kind, sample))
    if kind == "netstat":  # after a cut, a TcpExt counter net-tools leaves out is unknown, not 0
        whole = {k: v for k, v in whole.items() if k not in ("fast_retransmits", "lost_retransmit", "syn_retrans")}
    assert _without_warnings(record).items() >= whole.items()


@pytest.mark.parametrize("kind", sorted(LINE_KINDS))
def test_an_unknown_line_is_skipped_with_a_warning_naming_line_and_text(kind):
    sample = PARSERS[kind].sample
    text, line = _insert(sample, LINE_KINDS[kind], "#### pasted from the console ####")
    record = parse_text(kind, text)
    (warning,) = [w for w in record.warnings if w.startswith(f"line {line}: skipped")]
    assert "#### pasted from the console ####" in warning


@pytest.mark.parametrize("kind", sorted(LINE_KINDS))
def test_a_parse_that_kept_less_than_it_skipped_is_a_parse_error_at_the_first_unknown_line(kind):
    sample = PARSERS[kind].sample
    junk = "\n".join(f"#### junk {'x' * i} ####" for i in range(1, 41))
    text, line = _insert(sample, LINE_KINDS[kind], junk)
    with pytest.raises(ParseError, match="junk x ####") as error:
        parse_text(kind, text)
    assert error.value.line == line


def test_a_bad_value_on_a_line_of_the_right_shape_is_not_skipped():
    with pytest.raises(ParseError, match="-5"):
        parse_text("esxcli-nic-stats", "NIC statistics for vmnic0\n   Packets received: 7\n   Packets sent: -5\n"
                   "   Bytes received: 9\n")


def test_esxcli_nic_stats_with_an_authors_cut_mark():
    record = parse_file("esxcli-nic-stats", REAL / "esxcli_nic_stats_vmnic0_cut_mark.txt")
    assert record.name == "vmnic0" and record.counters["Packets received"] == 1048203914
    assert record.counters["Receive missed errors"] == 81 and len(record.counters) == 19
    assert record.warnings == ("line 14: cut mark '...' skipped: what it hides is not in the capture "
                               "(the lines around it are read)",)


def test_format_list_statistics_with_snips_keep_every_adapter():
    record = parse_file("win-stats", REAL / "win_stats_fl_snip.txt")
    assert sorted(record.adapters) == ["Ethernet0", "Ethernet1"]
    assert record.adapters["Ethernet1"].received_discarded_packets == 4410
    assert [w.split(":")[0] for w in record.warnings] == ["line 9", "line 21"]
