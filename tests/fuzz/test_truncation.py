"""Silent loss (issue 19 point 8): every parser kind's valid captures (the fuzz seeds of damage.py and
the declared sample) truncated anywhere - at each line boundary and inside each line, plus byte
offsets hypothesis draws - give an error (ParseError / NoData), a warning the whole capture does not
have, or a record the test shows is a consistent prefix of the whole capture's: every value it
gives is the value the whole capture gives at the same place (a shorter list of ports, rows or
queues is a shorter capture; a changed, cut or invented value is a failure). Negative and
non-integer counters never pass silently. The figures for the issue: ``test_zz_truncation_figures``."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from esxdiag.errors import NoData, ParseError
from esxdiag.parsers import PARSERS, parse_file, parse_text, to_jsonable

_spec = importlib.util.spec_from_file_location("fuzz_damage", Path(__file__).with_name("damage.py"))
damage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(damage)

SEEDS = damage.seeds()
MAX_CUTS = 80  # line boundaries and mid-line cuts per seed, spread over the capture
# values computed over what a capture holds (a total over the queues present, the sample count, the
# median interval, the last sample's world count, the generation told from the labels seen): a
# shorter capture gives other ones; every value they are computed from is compared
DERIVED = {"rx_oob_total", "samples", "interval_s", "members", "generation", "complete", "source"}
FIGURES: dict[str, dict[str, int]] = {}


def _seeds(kind: str) -> list[bytes]:
    found = [damage.seed_bytes(path) for path in SEEDS.get(kind, [])]
    return found + [PARSERS[kind].sample.encode()]


def agrees(part, whole) -> bool:
    """Every value ``part`` gives equals ``whole``'s at the same place (absent or null is allowed)."""
    if part is None:
        return True
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(
            key in DERIVED or (value is None or value == {} or value == []) or
            (key in whole and agrees(value, whole[key])) for key, value in part.items())
    if isinstance(part, list):
        return isinstance(whole, list) and len(part) <= len(whole) and all(
            agrees(a, b) for a, b in zip(part, whole))
    return part == whole


def _warnings(record) -> set[str]:
    return {str(w) for w in getattr(record, "warnings", ()) or ()}


def outcome(kind: str, tmp: Path, data: bytes, whole) -> str:
    path = tmp / "cut.txt"
    path.write_bytes(data)
    try:
        record = parse_file(kind, path)
    except (ParseError, NoData):
        result = "error"
    else:
        if _warnings(record) - _warnings(whole):
            result = "warning"
        elif agrees(json.loads(json.dumps(to_jsonable(record))), json.loads(json.dumps(to_jsonable(whole)))):
            result = "consistent prefix"
        else:
            result = "SILENT"
    counts = FIGURES.setdefault(kind, {})
    counts[result] = counts.get(result, 0) + 1
    return result


def _cuts(data: bytes) -> list[int]:
    """Each line's start and a point inside it, spread over the capture."""
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    points = sorted({p for a, b in zip(starts, starts[1:]) for p in (a, a + max(1, (b - a) // 2))} | {len(data)})
    step = max(1, len(points) // MAX_CUTS)
    return points[::step]


def _whole(kind: str, tmp: Path, seed: bytes):
    path = tmp / "whole.txt"
    path.write_bytes(seed)
    try:
        return parse_file(kind, path)
    except (ParseError, NoData):
        return None  # a fuzz seed that is itself an error capture: nothing to compare


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_truncating_a_valid_capture_anywhere_never_loses_a_value_silently(kind, tmp_path):
    silent = []
    for seed in _seeds(kind):
        whole = _whole(kind, tmp_path, seed)
        if whole is None:
            continue
        for cut in _cuts(seed):
            if outcome(kind, tmp_path, seed[:cut], whole) == "SILENT":
                silent.append((cut, seed[max(0, cut - 40):cut]))
    assert not silent, f"{kind}: {len(silent)} cuts gave a value the whole capture does not have: {silent[:3]}"


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_truncating_at_any_byte_drawn_by_hypothesis(kind, tmp_path):
    seeds = [(seed, whole) for seed in _seeds(kind) if (whole := _whole(kind, tmp_path, seed)) is not None]

    @settings(max_examples=25, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(st.data())
    def check(data):
        seed, whole = data.draw(st.sampled_from(seeds))
        cut = data.draw(st.integers(0, len(seed)))
        assert outcome(kind, tmp_path, seed[:cut], whole) != "SILENT", (kind, cut, seed[max(0, cut - 40):cut])

    if seeds:
        check()


# the counter line of each line-oriented kind, with {} for the value
COUNTER_LINES = {
    "esxcli-nic-stats": "NIC statistics for vmnic0\n   Packets received: 7\n   Receive packets dropped: {}\n",
    "vsish-rxsummary": "stats of a vmxnet3 vNIC rx queue {{\n   pkts rx ok:5\n   running out of buffers:{}\n}}\n",
    "vsish-clientstats": "port client stats {{\n   pktsRxOK:5\n   droppedRx:{}\n}}\n",
    "vsish-rxqueue-status": "status of a vmxnet3 vNIC rx queue {{\n   ring #1 size:{}\n   ring #2 size:256\n}}\n",
    "ethtool-stats": "NIC statistics:\n     Rx Queue#: 0\n       ucast pkts rx: 5\n       pkts rx OOB: {}\n",
    "ethtool-rings": "Ring parameters for eth0:\nPre-set maximums:\nRX:\t4096\nCurrent hardware settings:\nRX:\t{}\n",
    "netstat": "Tcp:\n    5 active connection openings\n    {} segments retransmitted\nIpExt:\n    InOctets: 1\n",
    "net-dvs": ("switch 01 02 (etherswitch)\n  port 7:\n   com.vmware.common.port.statistics:\n    pktsInUnicast = 5\n"
                "    pktsInDropped = {}\n    propType = RUNTIME\n"),
    "win-stats": "Name                     : Ethernet0\nReceivedBytes            : 5\nReceivedDiscardedPackets : {}\n",
    "ip-link": ("2: eth0: <UP> mtu 1500 state UP\n    link/ether 00:50:56:a6:44:72 brd ff:ff:ff:ff:ff:ff\n"
                "    RX: bytes  packets  errors  dropped overrun mcast\n    10 2 0 {} 0 0\n"),
    "net-stats-json": '{{"stats": [{{"ports": [{{"name": "a", "rxpps": 5, "vnic": {{"ring1sz": {}}}}}]}}]}}',
}
BAD_COUNTERS = ["-1", "-0.5", "1.5", "1e3", "0x10", "\u00b2", "n/a", "18446744073709551616"]


@pytest.mark.parametrize("kind", sorted(COUNTER_LINES))
@pytest.mark.parametrize("bad", BAD_COUNTERS)
def test_negative_or_non_integer_counters_never_pass_silently(kind, bad):
    if kind == "ethtool-rings" and bad == "n/a":
        pytest.skip("ethtool's netlink output prints n/a for a ring the driver lacks (docs/raw-formats.md §4.2)")
    text = COUNTER_LINES[kind].format(bad)
    try:
        record = parse_text(kind, text)
    except (ParseError, NoData):
        return
    assert record.warnings, f"{kind} read {bad!r} as a counter without a word"
    assert bad not in json.dumps(to_jsonable(record)).replace(json.dumps(record.warnings), "")


def test_esxtop_negative_cells_are_dropped_with_a_warning():
    sample = PARSERS["esxtop"].sample.replace('"2.40"', '"-2.40"', 1)
    record = parse_text("esxtop", sample)
    assert any("negative value(s)" in w for w in record.warnings)
    assert record.vms["iperf-test1"].group_ready_pct[0] is None


def test_zz_truncation_figures(capsys):
    """Prints the outcome counts per kind (the figures for the issue); runs last in this module."""
    with capsys.disabled():
        total = {}
        for counts in FIGURES.values():
            for key, value in counts.items():
                total[key] = total.get(key, 0) + value
        print(f"\ntruncation: {sum(total.values())} inputs over {len(FIGURES)} kinds: "
              + ", ".join(f"{k} {v}" for k, v in sorted(total.items())))
        for kind, counts in sorted(FIGURES.items()):
            print(f"  {kind:22} " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
