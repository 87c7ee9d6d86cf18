"""ethtool -S/-g/-i/-P parsers. Fixtures: tests/fixtures/guest/README.md (seed 002 real outputs,
insights-core netlink sample, outputs rendered from the vmxnet3 driver string tables)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import parse_file, to_jsonable
from esxdiag.parsers.ethtool import GENERATIONS, parse_driver, parse_permaddr, parse_rings, parse_stats

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "guest"
_spec = importlib.util.spec_from_file_location("render_ethtool_s", FIX / "render_ethtool_s.py")
render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render)


# ---------------------------------------------------------------- -S: the seed's real output

def test_seed_oob_grep_infers_queues_by_order_with_warning():
    stats = parse_file("ethtool-stats", FIX / "seed002_ethtool_S_grep_OOB_before.txt")
    assert [(q.queue, q.pkts_rx_oob) for q in stats.rx_queues] == [(0, 7129), (1, 3241)]
    assert stats.rx_oob_total == 10370  # == host "running out of buffers:10370" in the same seed
    assert stats.generation == "C" and stats.tx_queues == ()
    assert any("inferred" in w for w in stats.warnings)
    after = parse_file("ethtool-stats", FIX / "seed002_ethtool_S_grep_OOB_after.txt")
    assert after.rx_oob_total == 505 + 1151


def test_seed_drop_grep_splits_tx_and_rx_by_label():
    stats = parse_file("ethtool-stats", FIX / "seed002_ethtool_S_grep_drop.txt")
    assert [q.drv_dropped_tx_total for q in stats.tx_queues] == [0, 0]
    assert [q.drv_dropped_rx_total for q in stats.rx_queues] == [2305, 979]
    assert stats.rx_oob_total is None and stats.generation is None


# ---------------------------------------------------------------- -S: generations A-D

@pytest.mark.parametrize("gen,per_tx,per_rx", [("A", 19, 14), ("B", 20, 15), ("C", 20, 15), ("D", 22, 20)])
def test_generation_tables_match_the_driver_strings(gen, per_tx, per_rx):
    tx, rx = render.tables(gen)
    assert (len(tx), len(rx)) == (per_tx, per_rx)
    assert [s.strip() for s in tx] == list(GENERATIONS[gen][0])
    assert [s.strip() for s in rx] == list(GENERATIONS[gen][1])


@pytest.mark.parametrize("gen", ["A", "B", "C", "D"])
def test_each_generation_parses_losslessly(gen):
    queues = 1 if gen == "A" else 2
    text = render.render(gen, queues, queues)
    stats = parse_stats(text)
    assert stats.generation == gen
    assert len(stats.tx_queues) == len(stats.rx_queues) == queues
    assert stats.warnings == ()
    value_lines = [line for line in text.splitlines() if line.startswith("     ")]
    assert len(stats.entries) == len(value_lines)
    tx, rx = render.tables(gen)
    marker = 0 if gen == "A" else 1
    oob_pos = [s.strip() for s in rx].index("pkts rx OOB" if gen in "CD" else "pkts rx out of buf")
    for q in stats.rx_queues:
        assert q.pkts_rx_oob == render.value("rx", q.queue, oob_pos)
        assert q.rx_buf_alloc_fail == render.value("rx", q.queue, [s.strip() for s in rx].index("rx buf alloc fail"))
        assert len(q.counters) == len(rx) - marker
    for q in stats.tx_queues:
        assert q.ring_full == render.value("tx", q.queue, [s.strip() for s in tx].index("ring full"))
        assert len(q.counters) == len(tx) - marker  # both giant hdr kept
    assert stats.device_counters == {"tx timeout count": 3}


def test_duplicate_giant_hdr_kept_distinct():
    stats = parse_stats(render.render("C", 1, 1))
    counters = stats.tx_queues[0].counters
    tx = [s.strip() for s in render.tables("C")[0]]
    assert counters["drv dropped tx total / giant hdr"] == render.value("tx", 0, tx.index("giant hdr"))
    assert counters["giant hdr"] == render.value("tx", 0, len(tx) - 1)
    levels = [e[2] for e in stats.entries if e[3] == "giant hdr"]
    assert levels == [2, 1]


def test_duplicate_giant_hdr_from_a_grep_uses_indentation():
    text = "".join(line + "\n" for line in render.render("C", 2, 0).splitlines() if "giant hdr" in line)
    stats = parse_stats(text)
    assert [sorted(q.counters) for q in stats.tx_queues] == [["drv dropped tx total / giant hdr", "giant hdr"]] * 2


@pytest.mark.parametrize("queues", [1, 4, 8, 32])
def test_one_to_32_queues_with_u64_values(queues):
    stats = parse_stats(render.render("C", queues, queues, big=True))
    assert [q.queue for q in stats.rx_queues] == list(range(queues))
    oob = [s.strip() for s in render.tables("C")[1]].index("pkts rx OOB")
    assert stats.rx_oob_total == sum(render.value("rx", q, oob, big=True) for q in range(queues))
    assert stats.rx_oob_total > 2**32


def test_flush_left_paste_uses_labels_and_state():
    text = "\n".join(line.strip() for line in render.render("C", 2, 2).splitlines())
    stats = parse_stats(text)
    assert [q.queue for q in stats.tx_queues] == [0, 1] and len(stats.rx_queues) == 2
    assert set(stats.tx_queues[1].counters) == set(parse_stats(render.render("C", 2, 2)).tx_queues[1].counters)


def test_elided_paste_without_tx_timeout_count():
    lines = render.render("C", 4, 4, timeout_line=False).splitlines()
    rx_start = next(i for i, line in enumerate(lines) if "Rx Queue#" in line)
    rx_q3 = next(i for i, line in enumerate(lines) if line.strip() == "Rx Queue#: 3")
    text = "\n".join(lines[:rx_start + 12] + ["..."] + lines[rx_q3:])
    stats = parse_stats(text)
    assert [q.queue for q in stats.rx_queues] == [0, 3]
    assert stats.device_counters == {}
    assert any("elided" in w for w in stats.warnings)


def test_ntx_differs_from_nrx_is_flagged_and_queue_index_repaired():
    stats = parse_stats(render.render("C", 1, 2, rx_values_loop_tx=True))
    assert [q.queue for q in stats.rx_queues] == [0, 1]
    assert any("ntx (1) != nrx (2)" in w for w in stats.warnings)
    assert any("out of sequence" in w for w in stats.warnings)


@pytest.mark.parametrize("text,error", [
    ("", NoData), ("no stats available\n", NoData),
    ("Cannot get stats strings information: Operation not supported\n", NoData),
    ("hello world\n", ParseError),
    ("Ring parameters for eth0:\nPre-set maximums:\nRX:\t4096\n", ParseError),
])
def test_stats_bad_input(text, error):
    with pytest.raises(error):
        parse_stats(text)


def test_stats_rejects_other_command_counters():
    with pytest.raises(ParseError, match="not ethtool -S"):
        parse_stats((FIX / "seed002_netstat_s_grep_retransmit_before.txt").read_text())


def test_stats_json_roundtrip():
    data = to_jsonable(parse_stats(render.render("D", 2, 2)))
    assert json.loads(json.dumps(data))["generation"] == "D"


# ---------------------------------------------------------------- -g

def test_rings_netlink_sample_with_tabs_and_na():
    rings = parse_file("ethtool-rings", FIX / "ethtool_g_pri_netlink_insights_core_fixture.txt")
    assert (rings.max.rx, rings.max.rx_mini, rings.max.rx_jumbo, rings.max.tx) == (4096, 2048, 4096, 4096)
    assert (rings.current.rx, rings.current.rx_mini, rings.current.rx_jumbo, rings.current.tx) == (1024, 128, 512, 512)
    assert rings.extra == {"RX Buf Len": "n/a", "CQE Size": "n/a", "TX Push": "off", "TCP data split": "n/a"}
    assert rings.source == "netlink"


def test_rings_seed_before_after_record_size_times_queues():
    before = parse_file("ethtool-rings", FIX / "seed002_ethtool_g_before.txt")
    after = parse_file("ethtool-rings", FIX / "seed002_ethtool_g_after.txt")
    assert (before.current.rx, before.current.tx, before.source) == (512, 1024, "ioctl")
    assert (after.current.rx, after.current.tx) == (8192, 2048)  # 2 queues x 4096, not "fixed"
    assert after.max.rx == 4096 and after.max.rx_jumbo == 0


def test_rings_netlink_na_values_and_mtu9000_rounding():
    text = ("Ring parameters for ens192:\nPre-set maximums:\nRX:\t\t\t4096\nRX Mini:\t\t2048\n"
            "RX Jumbo:\t\t4096\nTX:\t\t\t4096\nCurrent hardware settings:\nRX:\t\t\t4032\nRX Mini:\t\tn/a\n"
            "RX Jumbo:\t\t4096\nTX:\t\t\t4096\nRX Buf Len:\t\tn/a\nCQE Size:\t\tn/a\nTX Push:\t\toff\n"
            "RX Push:\t\toff\nTX push buff len:\tn/a\nTCP data split:\t\tn/a\n")
    rings = parse_rings(text)
    assert rings.current.rx == 4032 and rings.current.rx_mini is None
    assert rings.extra["RX Push"] == "off" and rings.extra["TX push buff len"] == "n/a"


def test_rings_json():
    text = json.dumps([{"ifname": "ens192", "rx-max": 4096, "rx-mini-max": 2048, "rx-jumbo-max": 4096,
                        "tx-max": 4096, "rx": 1024, "rx-mini": 128, "rx-jumbo": 512, "tx": 512,
                        "tcp-data-split": "n/a"}])
    rings = parse_rings(text)
    assert rings.source == "json" and rings.current.rx == 1024 and rings.max.rx_mini == 2048
    assert rings.extra == {"ifname": "ens192", "tcp-data-split": "n/a"}


@pytest.mark.parametrize("text,error", [
    ("", NoData), ("Cannot get device ring settings: Operation not supported\n", NoData),
    ("driver: vmxnet3\nversion: 1.4.14.0-k\n", ParseError), ("{}", ParseError),
    ("Ring parameters for eth0:\nPre-set maximums:\nRX:\t\tlots\n", ParseError),
])
def test_rings_bad_input(text, error):
    with pytest.raises(error):
        parse_rings(text)


# ---------------------------------------------------------------- -i / -P

def test_driver_seed_has_no_version_line():
    drv = parse_file("ethtool-driver", FIX / "seed002_ethtool_i_eth0.txt")
    assert (drv.driver, drv.version, drv.version_tuple, drv.firmware_version, drv.bus_info) == \
        ("vmxnet3", None, None, None, "0000:03:00.0")
    assert drv.fields["supports-register-dump"] == "yes"


@pytest.mark.parametrize("version,expected", [
    ("1.4.14.0-k", (1, 4, 14, 0)), ("1.9.0.0-k-NAPI", (1, 9, 0, 0)), ("1.0.5.0-k-NAPI(debug)", (1, 0, 5, 0)),
    ("1.1.29", (1, 1, 29)),
])
def test_driver_version_tuple(version, expected):
    drv = parse_driver(f"driver: vmxnet3\nversion: {version}\nfirmware-version: \nbus-info: 0000:0b:00.0\n")
    assert drv.version == version and drv.version_tuple == expected and drv.firmware_version is None


@pytest.mark.parametrize("text,error", [("", NoData), ("version: 1.0\n", ParseError),
                                        (" pkts rx OOB: 7129\n", ParseError)])
def test_driver_bad_input(text, error):
    with pytest.raises(error):
        parse_driver(text)


def test_permaddr():
    assert parse_permaddr("Permanent address: 00:50:56:A6:55:F4\n").mac == "00:50:56:a6:55:f4"
    with pytest.raises(NoData):
        parse_permaddr("Permanent address: 00:00:00:00:00:00\n")
    with pytest.raises(NoData):
        parse_permaddr("")
    with pytest.raises(ParseError):
        parse_permaddr("driver: vmxnet3\n")


@pytest.mark.parametrize("kind,fixture", [
    ("ethtool-stats", "seed002_ethtool_S_grep_drop.txt"),
    ("ethtool-rings", "seed002_ethtool_g_after.txt"),
    ("ethtool-driver", "seed002_ethtool_i_eth0.txt"),
    ("ip-link", "local_ip_o_link_show.txt"),
    ("netstat", "local_nstat_asz.txt"),
    ("win-advprops", "win_advprops_vmxnet3_fl_utf16le.txt"),
    ("win-rss", "win_rss_vmxnet3_fl.txt"),
    ("win-stats", "win_stats_vmxnet3_fl.txt"),
    ("win-netadapter", "win_netadapter_vmxnet3.csv"),
])
def test_every_guest_kind_via_parse_file_is_json_serialisable(kind, fixture):
    record = parse_file(kind, FIX / fixture)
    assert json.loads(json.dumps(to_jsonable(record)))


def test_permaddr_and_ring_persistence_via_parse_file(tmp_path):
    capture = tmp_path / "permaddr.txt"
    capture.write_text("Permanent address: 00:50:56:a6:55:f4\n")
    assert parse_file("ethtool-permaddr", capture).mac == "00:50:56:a6:55:f4"
    capture.write_text("/etc/rc.local:3:ethtool -G eth0 rx 4096\n")
    assert parse_file("ring-persistence", capture).hits[0].rx == 4096


def test_parse_file_errors_name_the_file(tmp_path):
    capture = tmp_path / "ethtool_S.txt"
    capture.write_text("")
    with pytest.raises(NoData) as info:
        parse_file("ethtool-stats", capture)
    assert str(capture) in str(info.value)


# ---------------------------------------------------------------- -S: the last queue cut short (issue 19 point 7)

@pytest.mark.parametrize("gen, ntx, nrx, cut", [("C", 2, 2, 2), ("C", 2, 2, 5), ("C", 2, 2, 14), ("D", 4, 4, 3),
                                                 ("B", 1, 1, 3), ("C", 1, 1, 6)])
def test_a_last_queue_that_lost_its_trailing_counters_is_a_warning_and_gives_no_value(gen, ntx, nrx, cut):
    lines = render.render(gen, ntx, nrx, timeout_line=False).splitlines(keepends=True)
    stats = parse_stats("".join(lines[:-cut]))
    last = stats.rx_queues[-1]
    assert last.queue == nrx - 1 and last.pkts_rx_oob is None and last.drv_dropped_rx_total is None
    assert all(q.pkts_rx_oob is not None for q in stats.rx_queues[:-1])
    assert stats.rx_oob_total is None  # a partial sum would read as drops or a reset
    assert any(w.startswith(f"rx queue {nrx - 1} stops after") and "cut" in w for w in stats.warnings)


def test_complete_queues_grep_filters_and_the_global_line_are_not_read_as_cut():
    whole = render.render("C", 2, 2, timeout_line=False)
    assert not any("stops after" in w for w in parse_stats(whole).warnings)
    with_global = render.render("C", 2, 2).splitlines(keepends=True)
    assert not any("stops after" in w for w in parse_stats("".join(with_global)).warnings)
    grep = "".join(line for line in whole.splitlines(keepends=True) if "Queue#" in line or "OOB" in line)
    stats = parse_stats(grep)
    assert stats.rx_oob_total == 1009 + 1109 and not any("stops after" in w for w in stats.warnings)
