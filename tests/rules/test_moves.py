"""Issue 29 item 8 on facts built by hand: each vNIC of a VM that moved is named on its own ports, each on
the host it lived on; a single reading of a port a move connected counts from the move."""

from __future__ import annotations

from esxdiag.join.facts import CounterWindow, Move, PortSegment
from esxdiag.join.moves import sampled_moves, since_move
from esxdiag.rules.nic import ring_exhaustion
from esxdiag.rules.vmotion import vmotion
from esxdiag.rules.verdict import decide


def _moves(host_ports: list[tuple[str, int]]) -> tuple[Move, ...]:
    return sampled_moves([PortSegment(f"esxi-{h}", h, p, "vSwitch0") for h, p in host_ports])


def test_two_vnics_are_each_named_on_their_own_ports(make, thresholds):
    first = make.vnic(port=100, moves=_moves([("esx-a", 100), ("esx-b", 200), ("esx-c", 300)]))
    second = make.vnic(mac="00:50:56:00:00:02", label="Network adapter 2", port=301,
                       moves=_moves([("esx-a", 101), ("esx-b", 201), ("esx-c", 301)]))
    vm = make.vm(vnics=(first, second), moves=first.moves)
    titles = [f.title for nic in vm.vnics for f in ring_exhaustion(vm, nic, thresholds) if hasattr(f, "title")]
    assert titles == ["RX ring exhaustion now on Network adapter 1 (moved: port 100 on esx-a -> port 200 on esx-b -> "
                      "port 300 on esx-c)",
                      "RX ring exhaustion now on Network adapter 2 (moved: port 101 on esx-a -> port 201 on esx-b -> "
                      "port 301 on esx-c)"]


def test_a_move_whose_middle_port_was_not_read_says_so_on_that_host(make, thresholds):
    moves = (Move("2026-01-01T00:00:10Z", "esx-prod-31", "esx-prod-32", "DrsVmMigratedEvent", None, 67109400, None),
             Move("2026-01-01T00:00:30Z", "esx-prod-32", "esx-prod-33", "DrsVmMigratedEvent", None, None, 67110021))
    nic = make.vnic(port=67110021, moves=moves)
    vm = make.vm(vnics=(nic,), moves=moves)
    (finding,) = ring_exhaustion(vm, nic, thresholds)
    assert finding.title.endswith("(moved: port 67109400 on esx-prod-31 -> a port not read on esx-prod-32 -> "
                                  "port 67110021 on esx-prod-33)")
    assert "67110021 on esx-prod-32" not in finding.title
    (move,) = vmotion(vm, thresholds)
    assert "from esx-prod-31 to esx-prod-32 at 2026-01-01 00:00:10 UTC, then from esx-prod-32 to esx-prod-33 at " \
           "2026-01-01 00:00:30 UTC" in move.title


def test_one_reading_of_a_moved_port_says_since_the_move_in_the_verdict(make, thresholds):
    since = "since the move to esx-b (00:00:30 UTC)"
    counter = CounterWindow("running out of buffers", None, 10_832, None, "f.txt", "oob", since=since)
    nic = make.vnic(ring1=None, ring2=None, oob=None, host_out_of_buffers=counter)
    verdict = decide(make.vm(vnics=(nic,), moves=_moves([("esx-a", 1), ("esx-b", 2)])), nic, thresholds)
    assert verdict.verdict == "insufficient-evidence"
    assert f"running out of buffers 10,832 {since}" in verdict.summary and "vNIC was initialised" not in verdict.summary
    assert nic.host_out_of_buffers.evidence().unit == f"{since} (single reading)"


def test_since_words_use_vcenters_time_else_the_readings_around_the_move():
    before = PortSegment("esxi-a", "a", 1, "vSwitch0", "2026-01-01T00:00:01+00:00", "2026-01-01T00:00:02+00:00")
    after = PortSegment("esxi-b", "b", 2, "vSwitch0", "2026-01-01T00:01:00+00:00", "2026-01-01T00:01:00+00:00")
    event = Move("2026-01-01T00:00:31Z", "a", "b", "VmMigratedEvent")
    assert since_move(after, before, (event,)) == "since the move to b (00:00:31 UTC)"
    assert since_move(after, before, ()) == ("since the port was connected on b (the move, between 00:00:02 UTC and "
                                             "00:01:00 UTC)")
    untimed = PortSegment("esxi-b", "b", 2, "vSwitch0")
    assert since_move(untimed, before, ()) == "since the port was connected on b (the move)"
