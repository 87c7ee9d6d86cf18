"""Damaged and hostile captures, parser by parser (issue 6 items 5, 6, 12, 13): counters and
ring sizes are non-negative integers in ASCII digits below 2^64 or a ParseError with the line;
a capture cut inside its last line does not give that line's value; two samples in one file and
repeated counters are detected (the same value is kept, different values give none); no
input makes a parser raise anything but ParseError/NoData, and none takes long."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import parse_text

FIX = Path(__file__).resolve().parents[1] / "fixtures"
_spec = importlib.util.spec_from_file_location("render_ethtool_s", FIX / "guest" / "render_ethtool_s.py")
render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render)
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "iperf-cpu-limited"
NETSTAT = (FIX / "guest" / "local_netstat_s.txt").read_text()
RINGS = (FIX / "guest" / "seed002_ethtool_g_before.txt").read_text()
WIN_STATS = (FIX / "guest" / "win_stats_vmxnet3_fl.txt").read_text()
PERF = (EXAMPLE / "vcenter" / "vsphere_perf@vm=iperf-cpu-limited.json").read_text()
RXSUMMARY = "stats of a vmxnet3 vNIC rx queue {\n   running out of buffers:%s\n   # of times the 1st ring is full:7\n}\n"


def _perf_with(values) -> str:
    doc = json.loads(PERF)
    doc["series"][0]["values"][0] = values
    return json.dumps(doc)


# ---------------------------------------------------------------- item 5: non-negative integers

NEGATIVE = [
    ("vsish-rxsummary", RXSUMMARY % "-5", 2),
    ("vsish-rxqueue-status", "status of a vmxnet3 vNIC rx queue {\n ring #1 size:-256\n ring #2 size:256\n}\n", 2),
    ("vsish-clientstats", "port client stats {\n pktsRxOK:5 droppedRx:-3\n}\n", 2),
    ("ethtool-stats", "NIC statistics:\n     Rx Queue#: 0\n       pkts rx OOB: -5\n", 3),
    ("ethtool-rings", RINGS.replace("RX: 512", "RX: -256"), 8),
    ("netstat", NETSTAT.replace("    2 segments retransmitted", "    -2 segments retransmitted"), 27),
    ("netstat", "#kernel\nTcpRetransSegs                  -767               0.0\n", 2),
    ("esxcli-nic-stats", "NIC statistics for vmnic9\n   Packets received: -5\n", 2),
    ("win-stats", WIN_STATS.replace("ReceivedDiscardedPackets : 10370", "ReceivedDiscardedPackets : -10370"), None),
    ("vsphere-perf", _perf_with(-130), None),
    ("net-stats-json", '{"stats": [{"ports": [{"name": "a", "vnic": {"ring1sz": -256}}]}]}', None),
]


@pytest.mark.parametrize("kind,text,line", NEGATIVE, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(NEGATIVE)])
def test_negative_counters_and_ring_sizes_are_parse_errors_with_the_line(kind, text, line):
    with pytest.raises(ParseError) as err:
        parse_text(kind, text)
    assert err.value.line == line


# ---------------------------------------------------------------- item 6: damaged samples

def test_vsish_capture_cut_inside_its_last_counter_does_not_give_that_value():
    record = parse_text("vsish-rxsummary", RXSUMMARY.replace(":7\n}\n", ":") % "2103")
    assert record.out_of_buffers == 2103 and record.ring1_full is None
    assert any("no line end" in w for w in record.warnings)


def test_ethtool_s_cut_inside_the_last_queues_oob_gives_no_total_not_a_partial_one():
    whole = render.render("C", 2, 2)
    cut = whole[: whole.rindex("pkts rx OOB: ") + len("pkts rx OOB: ") + 2]  # "...OOB: 21" of a longer number
    record = parse_text("ethtool-stats", cut)
    assert record.rx_queues[0].pkts_rx_oob is not None and record.rx_queues[1].pkts_rx_oob is None
    assert record.rx_oob_total is None  # a partial sum would read as a counter reset
    assert any("no line end" in w for w in record.warnings) and any("no total" in w for w in record.warnings)


def test_two_different_netstat_outputs_in_one_file_are_rejected_naming_the_line():
    later = NETSTAT.replace("    2 segments retransmitted", "    2105 segments retransmitted")
    with pytest.raises(ParseError, match="two different netstat -s outputs") as err:
        parse_text("netstat", NETSTAT + later)
    assert err.value.line == NETSTAT.count("\n") + 1


def test_the_same_netstat_output_pasted_twice_is_read_once_with_a_warning():
    record = parse_text("netstat", NETSTAT + NETSTAT)
    assert record.retransmitted_segments == 2 and any("pasted 2 times" in w for w in record.warnings)


@pytest.mark.parametrize("kind,text,match", [
    ("netstat", "#kernel\nTcpRetransSegs 5 0.0\n#kernel\nTcpRetransSegs 9 0.0\n", "two nstat outputs"),
    ("ethtool-stats", render.render("C", 1, 1) + render.render("C", 1, 1), "two ethtool -S outputs"),
    ("ethtool-rings", RINGS + RINGS, "two ethtool -g outputs"),
    ("win-stats", WIN_STATS + "\n" + WIN_STATS.replace(": 10370", ": 10999"), "two outputs"),
])
def test_two_samples_in_one_capture_are_parse_errors(kind, text, match):
    with pytest.raises(ParseError, match=match):
        parse_text(kind, text)


def test_repeated_counter_lines_keep_an_agreeing_value_and_drop_a_disagreeing_one():
    grep = "    2 segments retransmitted\n    5498 segments sent out\n    7 segments retransmitted\n"
    record = parse_text("netstat", grep)
    assert record.retransmitted_segments is None and record.segments_sent == 5498
    assert any("different values" in w for w in record.warnings)
    same = parse_text("netstat", "    2 segments retransmitted\n    2 segments retransmitted\n")
    assert same.retransmitted_segments == 2 and any("printed twice" in w for w in same.warnings)
    tcpext = NETSTAT.replace("TcpExt:\n", "TcpExt:\n    3 fast retransmits\n    4 fast retransmits\n")
    assert parse_text("netstat", tcpext).fast_retransmits is None  # not "missing inside TcpExt = 0"
    nstat = parse_text("netstat", "#kernel\nTcpRetransSegs 5 0.0\nTcpRetransSegs 9 0.0\n")
    assert nstat.retransmitted_segments is None


def test_repeated_ring_size_lines():
    differ = parse_text("ethtool-rings", RINGS.replace("RX: 512\n", "RX: 512\nRX: 4096\n"))
    assert differ.current.rx is None and any("different value" in w for w in differ.warnings)
    same = parse_text("ethtool-rings", RINGS.replace("RX: 512\n", "RX: 512\nRX: 512\n"))
    assert same.current.rx == 512 and same.warnings


def test_repeated_windows_property_lines():
    text = WIN_STATS.replace("ReceivedDiscardedPackets : 10370", "ReceivedDiscardedPackets : 10370\n"
                             "ReceivedDiscardedPackets : 99")
    record = parse_text("win-stats", text)
    assert record.adapters["Ethernet0"].received_discarded_packets is None
    assert any("different values" in w for w in record.warnings)


@pytest.mark.parametrize("kind,text,check", [
    ("ethtool-rings", '[{"ifname": "eth0", "rx-max": 4096, "rx": 256, "rx": 4096}]', lambda r: r.current.rx is None),
    ("netstat", '{"kernel": {"TcpRetransSegs": 5, "TcpRetransSegs": 9}}', lambda r: r.retransmitted_segments is None),
    ("win-stats", '{"Name": "Ethernet0", "ReceivedBytes": 5, "ReceivedDiscardedPackets": 1, "ReceivedDiscardedPackets": 2}',
     lambda r: r.adapters["Ethernet0"].received_discarded_packets is None),
])
def test_json_duplicate_keys_with_different_values_give_none_with_a_warning(kind, text, check):
    record = parse_text(kind, text)
    assert check(record) and any("printed twice with different values" in w for w in record.warnings)


def test_vsphere_json_duplicate_keys_are_parse_errors():
    with pytest.raises(ParseError, match="repeated"):
        parse_text("vsphere-perf", PERF.replace('"interval_s": 20,', '"interval_s": 20, "interval_s": 60,'))


# ---------------------------------------------------------------- item 12: nothing but ParseError / NoData

HUGE = "9" * 5000
HOSTILE = [
    ("vsish-rxsummary", RXSUMMARY % HUGE),
    ("ethtool-stats", f"NIC statistics:\n     Rx Queue#: 0\n       pkts rx OOB: {HUGE}\n"),
    ("ethtool-rings", RINGS.replace("RX: 512", f"RX: {HUGE}")),
    ("ethtool-rings", RINGS.replace("RX: 512", "RX: 5\u00b2")),
    ("ethtool-rings", "[" * 100_000),
    ("ethtool-driver", f"driver: vmxnet3\nversion: {HUGE}.1-k\n"),
    ("netstat", NETSTAT.replace("    2 segments retransmitted", f"    {HUGE} segments retransmitted")),
    ("netstat", "{" + '"a":[' * 100_000),
    ("esxcli-nic-stats", f"NIC statistics for vmnic9\n   Packets received: {HUGE}\n"),
    ("esxcli-vm-list", f"World ID  Name  Num Ports  Networks\n--------  ----  ---------  --------\n{HUGE}  a  1  n\n"),
    ("ip-link", f"{HUGE}: eth0: <UP> mtu 1500\n"),
    ("ip-link", f"1: eth0: <UP> mtu {HUGE}\n"),
    ("ring-persistence", f"/etc/rc.local:{HUGE}:ethtool -G eth0 rx {HUGE}\n"),
    ("esxtop-cpu-panel", f"ID GID NAME NWLD %USED\n{HUGE} 1 vm 2 {HUGE}.5\n"),
    ("esxtop", f'"(PDH-CSV 4.0) (UTC)({HUGE})","\\\\h\\Group Cpu(1:a)\\% Ready"\n'),
    ("esxtop", '"(PDH-CSV 4.0) (UTC)(0)","\\\\h\\Group Cpu(1:a)\\% Ready"\n"05/14/2024 09:00:00","' + "1" * 140_000 + '"\n'),
    ("win-stats", "Name,ReceivedBytes\n" + '"' + "x" * 140_000 + '",1\n'),
    ("win-stats", '"Name","ReceivedBytes"\n"' + "x" * 140_000 + '","1"\n'),
    ("win-rss", "[" * 100_000),
    ("vsphere-perf", "[" * 100_000),
    ("vsphere-perf", _perf_with(int(HUGE[:60]))),
    ("vsphere-perf", PERF.replace('"instance": "0"', '"instance": "\u00b2"')),
    ("vsphere-perf", PERF.replace('"instance": "0"', f'"instance": "{HUGE}"')),
    ("vsphere-vm", "[" * 100_000),
    ("net-stats-json", "[" * 100_000),
    ("net-stats", f"PortNum Type SubType SwitchName MACAddress ClientName\n{HUGE} 5 9 vs 00:50:56:00:00:01 a\n"),
    ("vsish-ls", "\u00b3/\n"),
    ("vsish-python", "{" * 100_000),
]


@pytest.mark.parametrize("kind,text", HOSTILE, ids=[f"{k}-{i}" for i, (k, _) in enumerate(HOSTILE)])
def test_hostile_values_are_parse_errors_never_crashes(kind, text):
    started = time.monotonic()
    try:
        parse_text(kind, text)
    except (ParseError, NoData):
        pass
    assert time.monotonic() - started < 5  # generous: a wall bound, not a benchmark


def test_unicode_digits_are_not_numbers():
    assert parse_text("text", "\u00b2\n").integer is None and parse_text("text", "\u0663\n").integer is None
    assert parse_text("text", "4\n").integer == 4


# ---------------------------------------------------------------- item 13: linear time

SLOW_ON_BACKTRACKING = [
    ("vsish-clientstats", "port client stats {\n a:" + "111:" * 26 + "x\n}\n"),
    ("vsish-clientstats", "port client stats {\n a:" + "111:" * 30_000 + "x\n}\n"),
    ("esxcli-vm-ports", " " * 100_000 + "x\n"),
    ("esxcli-nic-stats", " " * 100_000 + "x\n"),
    ("vsish-rxsummary", " " * 100_000 + "x\n"),
    ("ring-persistence", "/etc/rc.local:1:ring-rx" + " " * 100_000 + "x\n"),
    ("ethtool-stats", "NIC statistics:\n a:" + " " * 100_000 + "x\n"),
    ("esxtop-cpu-panel", "ID GID NAME NWLD %USED %RDY\n1 2 " + "1 " * 100_000 + "x\n"),
    ("esxtop-cpu-panel", "ID GID NAME NWLD %USED %RDY\n1 2 a" + " " * 100_000 + "x\n"),
    ("ip-link", "1: eth0: <UP> mtu 1500\n" + " x\n" * 200_000),  # continuation lines
    ("win-stats", "Name : a\nReceivedBytes : 1\n" + " x\n" * 200_000),  # a value wrapped 200,000 times
]


@pytest.mark.parametrize("kind,text", SLOW_ON_BACKTRACKING, ids=[k for k, _ in SLOW_ON_BACKTRACKING])
def test_pathological_lines_parse_in_linear_time(kind, text):
    started = time.monotonic()
    try:
        parse_text(kind, text)
    except (ParseError, NoData):
        pass
    assert time.monotonic() - started < 2  # backtracking took > 5 s (vsish) and ~45 s (esxcli)


@pytest.mark.parametrize("kind,text,check", [
    ("esxcli-nic-stats", "NIC statistics for vmnic9\n   Packets received: 5\n   Receive packets dropped: 21",
     lambda r: "Receive packets dropped" not in r.counters and r.counters["Packets received"] == 5),
    ("win-stats", WIN_STATS.replace("ReceivedDiscardedPackets : 10370\n", "").rstrip("\r\n")
     + "\nReceivedDiscardedPackets : 10",  # cut from 10370
     lambda r: r.adapters["Ethernet0"].received_discarded_packets is None),
])
def test_other_counter_captures_cut_inside_their_last_line(kind, text, check):
    record = parse_text(kind, text)
    assert check(record) and any("no line end" in w for w in record.warnings)
