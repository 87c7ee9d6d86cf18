"""netstat -s / nstat parsers. Fixtures (tests/fixtures/guest/README.md): seed 002 grep-filtered
real output, insights-core and catplanet007 netstat -s, and captures from the development VM."""

from __future__ import annotations

from pathlib import Path

import pytest

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import parse_file
from esxdiag.parsers.netstat import parse_netstat

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "guest"


def test_seed_grep_before_and_after():
    before = parse_file("netstat", FIX / "seed002_netstat_s_grep_retransmit_before.txt")
    assert (before.retransmitted_segments, before.fast_retransmits, before.lost_retransmit) == (86715, 68040, 106)
    assert before.segments_sent is None and before.source == "netstat"
    assert before.counters["retransmits in slow start"] == 18444
    assert before.counters["SACK retransmits failed"] == 4
    after = parse_file("netstat", FIX / "seed002_netstat_s_grep_retransmit_after.txt")
    assert (after.retransmitted_segments, after.fast_retransmits) == (48, 47)


def test_old_wording_full_output():
    rec = parse_file("netstat", FIX / "netstat_s_old_wording_insights_core.txt")
    assert (rec.retransmitted_segments, rec.segments_sent, rec.segments_received) == (428, 2890303, 2886370)
    assert (rec.fast_retransmits, rec.timeouts) == (3, 54)
    # absent TcpExt counters are zero: net-tools prints them only when non-zero
    assert (rec.lost_retransmit, rec.syn_retrans) == (0, 0)
    assert rec.counters["Tcp: segments retransmited"] == 428
    assert rec.counters["Icmp: ICMP input histogram: destination unreachable"] == 107
    assert rec.counters["TcpExt: Quick ack mode was activated N times"] == 9
    assert rec.counters["IpExt: InOctets"] == 865450302
    assert len(rec.counters) == 78  # every line that carries a number


def test_new_wording_elided_paste_keeps_unknown_tcpext_as_none():
    rec = parse_file("netstat", FIX / "netstat_s_new_wording_elided_catplanet007.txt")
    assert (rec.retransmitted_segments, rec.segments_sent, rec.segments_received) == (1, 4035, 6254)
    assert (rec.syn_retrans, rec.timeouts) == (1, 1)
    assert rec.fast_retransmits is None  # '......' may have hidden it


def test_local_netstat_nstat_and_json_agree():
    """Captured back to back on the development VM: the same kernel counters three ways."""
    ns = parse_file("netstat", FIX / "local_netstat_s.txt")
    nt = parse_file("netstat", FIX / "local_nstat_asz.txt")
    nj = parse_file("netstat", FIX / "local_nstat_asz_json.txt")
    assert (ns.source, nt.source, nj.source) == ("netstat", "nstat", "nstat-json")
    assert nt.counters == nj.counters and len(nt.counters) > 300
    for field in ("retransmitted_segments", "segments_sent", "segments_received", "timeouts"):
        assert getattr(nt, field) == getattr(nj, field) is not None
    assert ns.retransmitted_segments <= nt.retransmitted_segments  # nstat ran a moment later


def test_nstat_long_names_push_columns():
    text = ("#kernel\nTcpRetransSegs                  767                0.0\n"
            "TcpExtTCPFastOpenListenOverflowLongerName 12 0.0\nTcpExtTCPLostRetransmit         27\n")
    rec = parse_netstat(text)
    assert rec.counters["TcpExtTCPFastOpenListenOverflowLongerName"] == 12
    assert (rec.retransmitted_segments, rec.lost_retransmit, rec.source) == (767, 27, "nstat")


def test_new_wording_and_syn_retrans_prose():
    text = "Tcp:\n    618 segments retransmitted\n    9 segments sent out\nTcpExt:\n    TCPSynRetrans: 5\n"
    rec = parse_netstat(text)
    assert (rec.retransmitted_segments, rec.segments_sent, rec.syn_retrans) == (618, 9, 5)


def test_netstat_warning_line_is_kept_as_warning():
    text = "error parsing /proc/net/netstat: No such file or directory\nTcp:\n    5 segments retransmitted\n"
    rec = parse_netstat(text)
    assert rec.retransmitted_segments == 5 and "error parsing" in rec.warnings[0]


def test_localised_output_is_flagged():
    text = "Tcp:\n    16 aktive Verbindungs\u00f6ffnungen\n    7 Segmente erneut \u00fcbertragen\n"
    rec = parse_netstat(text)
    assert rec.retransmitted_segments is None and "LC_ALL=C" in rec.warnings[-1]


@pytest.mark.parametrize("text,error", [
    ("", NoData), ("#kernel\n", NoData), ('{"kernel": {}}', NoData), ("{broken", ParseError),
    ('{"other": 1}', ParseError), ("hello world\n", ParseError),
])
def test_bad_input(text, error):
    with pytest.raises(error):
        parse_netstat(text)


@pytest.mark.parametrize("fixture", ["seed002_ethtool_S_grep_OOB_before.txt", "ethtool_g_pri_netlink_insights_core_fixture.txt",
                                     "seed002_netstat_s_grep_loss_before.txt"])
def test_other_outputs_rejected(fixture):
    with pytest.raises(ParseError):
        parse_file("netstat", FIX / fixture)
