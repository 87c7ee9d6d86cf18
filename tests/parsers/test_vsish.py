"""vsish parsers on real output (provenance: tests/fixtures/host/README.md): the seed's rxSummary
before/after the ring change, its four rxqueues status blocks, the intel/mfd python-mode
fixture; plus every docs/raw-formats.md §7 item 2 quirk and bad input."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import parse_file, to_jsonable, vsish_python
from esxdiag.parsers.vsish import (parse_clientstats, parse_ls, parse_python_mode, parse_rxqueue_status,
                                   parse_rxsummary)

HOST = Path(__file__).resolve().parent.parent / "fixtures" / "host"

SEED_LABELS = [
    "LRO pkts rx ok", "LRO bytes rx ok", "pkts rx ok", "bytes rx ok", "unicast pkts rx ok",
    "unicast bytes rx ok", "multicast pkts rx ok", "multicast bytes rx ok", "broadcast pkts rx ok",
    "broadcast bytes rx ok", "running out of buffers", "pkts receive error",
    "# of times the 1st ring is full", "# of times the 2nd ring is full", "fail to map a rx buffer",
    "request to page in a buffer", "# of times rx queue is stopped",
    "failed when copying into the guest buffer", "# of pkts dropped due to large hdrs",
    "# of pkts dropped due to max number of SG limits",
]

# ethtool -S | grep output from the same seed (lines 271-275): the wrong kind of text
ETHTOOL_GREP = (" drv dropped tx total: 0\n drv dropped tx total: 0\n"
                " drv dropped rx total: 2305\n drv dropped rx total: 979\n")


def read(name: str) -> str:
    return (HOST / name).read_text()


def raw_layout(text: str) -> str:
    """The seed copy with the raw vsish layout restored: 3-space indent and a closing brace."""
    lines = text.splitlines()
    return "\n".join([lines[0]] + ["   " + line.strip() for line in lines[1:]] + ["}"]) + "\n"


@pytest.mark.parametrize("name, oob, full1, full2, rx_ok", [
    ("seed002_rxsummary_before.txt", 10370, 7086, 3284, 50714621),
    ("seed002_rxsummary_after.txt", 1656, 0, 1656, 37235828),
])
def test_seed_rxsummary_before_and_after_ring_change(name, oob, full1, full2, rx_ok):
    summary = parse_rxsummary(read(name))
    assert (summary.out_of_buffers, summary.ring1_full, summary.ring2_full) == (oob, full1, full2)
    assert list(summary.counters) == SEED_LABELS  # lossless, printed labels verbatim, in order
    assert summary.counters["pkts rx ok"] == rx_ok
    assert summary.title == "stats of a vmxnet3 vNIC rx queue"
    # ESXi 6.0 has no ring size fields
    assert summary.ring1_size is None and summary.ring2_size is None
    # the blog cut the closing brace
    assert summary.complete is False
    assert any("closing '}'" in w for w in summary.warnings)


def test_u64_values_exceed_2_to_32():
    summary = parse_rxsummary(read("seed002_rxsummary_before.txt"))
    assert summary.counters["bytes rx ok"] == 1670920359206
    big = parse_rxsummary("running out of buffers:18446744073709551615\n")
    assert big.out_of_buffers == 2**64 - 1


def test_raw_three_space_indent_with_brace_equals_flush_left_copy():
    flush_left = parse_rxsummary(read("seed002_rxsummary_before.txt"))
    raw = parse_rxsummary(raw_layout(read("seed002_rxsummary_before.txt")))
    assert raw.counters == flush_left.counters
    assert raw.complete is True and raw.warnings == ()
    unindented = "\n".join(line.strip() for line in raw_layout(read("seed002_rxsummary_after.txt")).splitlines())
    assert parse_rxsummary(unindented).ring2_full == 1656


def test_annotation_after_value_is_ignored():
    text = ("stats of a vmxnet3 vNIC rx queue {\n"
            "   running out of buffers:2620    the reason packets were dropped: no guest buffer\n"
            "   # of times the 1st ring is full:12 (ring 1)\n}\n")
    summary = parse_rxsummary(text)
    assert summary.out_of_buffers == 2620 and summary.ring1_full == 12
    assert set(summary.counters) == {"running out of buffers", "# of times the 1st ring is full"}


def test_unknown_esxi8_fields_are_kept_and_ring_sizes_typed():
    text = ("stats of a vmxnet3 vNIC rx queue {\n"
            "   1st ring size:4096\n   2nd ring size:512\n"
            "   number of memory region lookup pass in Rx.:0\n"
            "   burst queue (pkts) dropped:7\n"
            "   running out of buffers:3\n}\n")
    summary = parse_rxsummary(text)
    assert (summary.ring1_size, summary.ring2_size) == (4096, 512)
    assert summary.counters["number of memory region lookup pass in Rx."] == 0
    assert summary.counters["burst queue (pkts) dropped"] == 7


def test_grep_filtered_paste_without_title_or_brace():
    text = "# of times the 1st ring is full:7086\n# of times the 2nd ring is full:3284\n"
    summary = parse_rxsummary(text)
    assert summary.ring1_full == 7086 and summary.out_of_buffers is None
    assert summary.title is None and summary.complete is False
    assert "title line" in summary.warnings[0]


def test_non_integer_field_kept_as_text_not_misread_as_number():
    text = "status of a vmxnet3 vNIC rx queue {\n   mac:00:50:56:a6:55:f4\n   ring #1 size:256\n}\n"
    status = parse_rxqueue_status(text)
    assert status.texts == {"mac": "00:50:56:a6:55:f4"}
    assert "mac" not in status.counters


def test_nested_block_keys_are_prefixed():
    text = "port stats {\n   ring #1 size:1024\n   extra:struct {\n      depth:3\n   }\n}\n"
    status = parse_rxqueue_status(text)
    assert status.counters == {"ring #1 size": 1024, "extra/depth": 3} and status.complete


@pytest.mark.parametrize("name, ring1, ring2", [
    ("seed002_rxqueue0_status_linux_256.txt", 256, 256),
    ("seed002_rxqueue0_status_windows_512.txt", 512, 32),
    ("seed002_rxqueue0_status_linux_4096.txt", 4096, 256),
    ("seed002_rxqueue0_status_windows_4096.txt", 4096, 4096),
])
def test_seed_rxqueue_status(name, ring1, ring2):
    status = parse_rxqueue_status(read(name))
    assert (status.ring1_size, status.ring2_size) == (ring1, ring2)
    assert status.counters == {"intr index": 0, "error code": 0, "ring #1 size": ring1, "ring #2 size": ring2}


CLIENT_STATS_PASTE = ("port client stats {\n"
                      "   pktsTxOK:51282 bytesTxOK:3487476 droppedTx:0 pktsTxMulticastOK:0\n"
                      "   pktsRxOK:50714621 bytesRxOK:1670920359206 droppedRx:10370 pktsRxMulticastOK:0\n}\n")


def test_clientstats_several_pairs_per_line():
    stats = parse_clientstats(CLIENT_STATS_PASTE)
    assert (stats.dropped_rx, stats.dropped_tx) == (10370, 0)
    assert list(stats.counters) == ["pktsTxOK", "bytesTxOK", "droppedTx", "pktsTxMulticastOK",
                                    "pktsRxOK", "bytesRxOK", "droppedRx", "pktsRxMulticastOK"]


def test_clientstats_one_per_line_matches_rxsummary_out_of_buffers():
    one_per_line = "port client stats {\n" + "".join(
        f"   {pair}\n" for pair in CLIENT_STATS_PASTE.split() if ":" in pair) + "}\n"
    stats = parse_clientstats(one_per_line)
    assert stats.counters == parse_clientstats(CLIENT_STATS_PASTE).counters
    # docs/raw-formats.md §2.1: droppedRx == running out of buffers on the same port
    assert stats.dropped_rx == parse_rxsummary(read("seed002_rxsummary_before.txt")).out_of_buffers


def test_ls_strips_trailing_slash():
    listing = parse_ls("0/\n1/\n")
    assert listing.entries == ("0", "1") and listing.directories == ("0", "1")
    assert parse_ls("rxSummary\nrxqueues/\n").directories == ("rxqueues",)


def test_python_mode_fixture():
    result = parse_python_mode(read("vsish_pe_pNics_stats_python_mode_intel_mfd_fixture.txt"))
    assert result.warnings[0].startswith("main():Python mode is deprecated")
    assert result.values["rxpkt"] == 46037587 and result.values["rxbytes"] == 56926552261
    assert result.values["dumsw"] == ""
    hw = result.values["hw"]
    assert hw.startswith("Packets assigned to an invalid queue: 0\n\ntxq0: totalPkts=22594593")
    assert hw.endswith("Rx Length Errors: 0\n")
    assert len(result.values) == 30


def test_python_mode_json_words_and_no_eval():
    assert parse_python_mode('{ "up" : true, "x" : null, "n" : [1, 2,], }').values == {
        "up": True, "x": None, "n": [1, 2]}
    with pytest.raises(ParseError, match="does not parse"):
        parse_python_mode('{ "a" : __import__("os").getcwd(), }')


@pytest.mark.parametrize("text, why", [
    ('{ "a" : ' + "-" * 100_000 + "1, }", "unexpected '--"),  # ast.literal_eval: MemoryError (exit 70)
    ('{ "a" : ' + "~" * 100_000 + "1, }", "unexpected '~~"),
    ('{ "a" : ' + "(" * 100_000 + "1, }", "unexpected '\\(\\("),
    ('{ "a" : ' + "[" * 100_000 + "1, }", "nested more than"),
    ('{ "a" : 1 + 2, }', "unexpected '\\+"),
    ('{ "a" : {1, 2}, }', "expected key"),
    ('{ "a" : b"x", }', "bare word 'b'"),
    ('{ "a" : 1j, }', "bare word 'j'"),
    ('{ "a" : 1e999, }', "not a finite number"),
    ('{ "a" : ' + "9" * 50 + ", }", "integer of 50 digits"),
    ('{ "a" : 1 } }', "text after the closing"),
    ('{ "a" : 1 : 2 }', "expected ,"),
])
def test_python_mode_is_read_without_ast_in_linear_time(text, why):
    started = time.monotonic()
    with pytest.raises(ParseError, match=why):
        parse_python_mode(text)
    assert time.monotonic() - started < 1


def test_python_mode_values_escapes_and_repeated_keys():
    record = parse_python_mode('{\n "s" : "a\\"b\\\\c\\nd", \'q\' : \'x\', "f" : -1.5, "l" : [ {"x" : 1,}, [], ],\n'
                               ' "r" : 2,\n "r" : 2,\n}\n')
    assert record.values == {"s": 'a"b\\c\nd', "q": "x", "f": -1.5, "l": [{"x": 1}, []], "r": 2}
    assert record.warnings == ("line 4: key 'r' printed twice",)
    assert "ast" not in Path(vsish_python.__file__).read_text().split('"""', 2)[2]


def test_python_mode_truncated_reports_original_line():
    text = read("vsish_pe_pNics_stats_python_mode_intel_mfd_fixture.txt")
    lines = text.splitlines(keepends=True)
    with pytest.raises(ParseError) as cut_in_string:
        parse_python_mode("".join(lines[:35]))  # stops inside the multi-line "hw" string
    assert cut_in_string.value.line == 32  # the line where the "hw" string opens
    with pytest.raises(ParseError, match="never closed"):
        parse_python_mode(text.replace("\n}\n", "\n"))


@pytest.mark.parametrize("func", [parse_rxsummary, parse_rxqueue_status, parse_clientstats, parse_ls,
                                  parse_python_mode])
def test_empty_output_is_nodata(func):
    for text in ("", "\n \n"):
        with pytest.raises(NoData):
            func(text)


def test_block_without_fields_is_nodata():
    with pytest.raises(NoData, match="no fields"):
        parse_rxsummary("stats of a vmxnet3 vNIC rx queue {\n}\n")


@pytest.mark.parametrize("text, line, why", [
    (ETHTOOL_GREP, 1, "not a vsish 'label:value' line"),
    ("NIC statistics:\n     pkts rx OOB: 7129\n", 2, "not a vsish 'label:value' line"),
    ("\x1b[2J\x07\x05\x06garbage\x7f\n", 1, "not a vsish"),
    ("VSISHCmdGetInfo():Get failed: Not found\n", 1, "vsish printed an error"),
    (read("vsish_pe_pNics_stats_python_mode_intel_mfd_fixture.txt"), 1, "or notice"),
    ("stats of a vmxnet3 vNIC rx queue {\n   :12\n}\n", 2, "empty label"),
    (read("seed002_rxsummary_before.txt") + "}\n" + read("seed002_rxsummary_after.txt"), 23, "after the closing"),
    (read("seed002_rxsummary_before.txt") + read("seed002_rxsummary_after.txt"), 22, "opened again"),
    ("pkts rx ok:5\nstats of a vmxnet3 vNIC rx queue {\n", 2, "'{' after fields"),
    ("}\n", 1, "without an opening"),
])
def test_bad_input_is_parse_error_with_line(text, line, why):
    with pytest.raises(ParseError, match=why) as error:
        parse_rxsummary(text)
    assert error.value.line == line


def test_wrong_node_kind_is_parse_error():
    with pytest.raises(ParseError, match="not a vmxnet3 rxSummary node"):
        parse_rxsummary(CLIENT_STATS_PASTE)
    with pytest.raises(ParseError, match="not a vmxnet3 rxqueues"):
        parse_rxqueue_status(read("seed002_rxsummary_before.txt"))
    with pytest.raises(ParseError, match="not a port clientStats"):
        parse_clientstats(read("seed002_rxqueue0_status_linux_256.txt"))
    with pytest.raises(ParseError, match="not a vsish ls entry"):
        parse_ls(read("seed002_rxqueue0_status_linux_256.txt"))
    with pytest.raises(ParseError, match="not vsish -pe"):
        parse_python_mode(read("seed002_rxsummary_before.txt").replace("{", ""))


@pytest.mark.parametrize("kind, text, check", [
    ("vsish-rxsummary", None, lambda r: r.out_of_buffers == 10370),
    ("vsish-rxqueue-status", None, lambda r: r.ring1_size == 512),
    ("vsish-clientstats", CLIENT_STATS_PASTE, lambda r: r.dropped_rx == 10370),
    ("vsish-ls", "0/\n1/\n", lambda r: r.entries == ("0", "1")),
    ("vsish-python", None, lambda r: r.values["txpkt"] == 39956093),
])
def test_parse_file_end_to_end(tmp_path, kind, text, check):
    fixtures = {"vsish-rxsummary": "seed002_rxsummary_before.txt",
                "vsish-rxqueue-status": "seed002_rxqueue0_status_windows_512.txt",
                "vsish-python": "vsish_pe_pNics_stats_python_mode_intel_mfd_fixture.txt"}
    path = HOST / fixtures[kind] if text is None else tmp_path / "capture.txt"
    if text is not None:
        path.write_text(text)
    record = parse_file(kind, path)
    assert check(record)
    assert to_jsonable(record)  # JSON-able for the report


def test_parse_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "rxSummary.txt"
    bad.write_text(ETHTOOL_GREP)
    with pytest.raises(ParseError) as error:
        parse_file("vsish-rxsummary", bad)
    assert str(error.value).startswith(f"{bad}:1:")
    binary = tmp_path / "binary.out"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00")
    with pytest.raises(ParseError, match="binary"):
        parse_file("vsish-rxsummary", binary)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(NoData) as nodata:
        parse_file("vsish-clientstats", empty)
    assert nodata.value.file == str(empty)
