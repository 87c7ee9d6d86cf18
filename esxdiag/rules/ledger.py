"""The drop ledger of one vNIC (docs/diagnosis.md "The drop ledger"): the frames its vSwitch port dropped
over the window on one side; on the other every counter read that accounts for them (out-of-buffer drops,
each vmxnet3 drop reason by family, page-absent drops), and the residue that no counter explains. Ring-full
episodes and other events are shown beside the packets, never added to them; uplink loss happens before the
port and is shown as such. A residue is never an all-clear."""

from __future__ import annotations

from esxdiag.join.causes import reason_family
from esxdiag.join.facts import CounterWindow, VnicFacts
from esxdiag.result import DropLedger, LedgerLine
from esxdiag.rules.driver_nic import driver_drops


def _line(cause: str, c: CounterWindow | None, unit: str, counted: bool, what: str | None = None) -> LedgerLine | None:
    if c is None or not c.complete:
        return None
    return LedgerLine(cause, what or c.what, c.delta, unit, counted, c.source, c.locator)


def _port_total(nic: VnicFacts) -> tuple[int | None, str | None, float | None]:
    """The port's own drop count over the window: clientStats droppedRx read at both ends, else vCenter's
    net.droppedRx summed over its samples."""
    if nic.dropped_rx is not None and nic.dropped_rx.complete:
        return nic.dropped_rx.delta, f"host {nic.dropped_rx.what}", nic.dropped_rx.seconds
    vcenter = next((s for s in nic.drop_symptoms if s.unit == "packets" and s.present), None)
    if vcenter is not None:
        seconds = len(vcenter.present) * vcenter.interval_s if vcenter.interval_s else None
        return round(sum(vcenter.present)), "vCenter net.droppedRx", seconds
    return None, None, None


def ring_lines(nic: VnicFacts) -> list[LedgerLine]:
    """Out-of-buffer drops count packets (the host's counter, else the guest's view of the same device
    counter); ring-full counts episodes."""
    oob = _line("ring", nic.host_out_of_buffers, "packets", True) or \
        _line("ring", nic.guest_oob, "packets", True, f"{nic.guest_oob.what if nic.guest_oob else ''} "
                                                      "(the guest's view of the device's out-of-buffer counter)")
    full = [_line("ring", c, "events", False) for c in (nic.ring1_full, nic.ring2_full)]
    return [line for line in (oob, *full) if line is not None]


def reason_lines(nic: VnicFacts) -> list[LedgerLine]:
    out = []
    for label, counter in nic.rx_reasons.items():
        family = reason_family(label)
        if family is not None:
            line = _line(family[0], counter, family[1], family[1] == "packets")
            if line is not None:
                out.append(line)
    return out


def guest_driver_lines(nic: VnicFacts) -> list[LedgerLine]:
    """An adapter without vmxnet3 counters (e1000, e1000e): its guest driver counts the frames it had no buffer
    for (e1000 rx_no_buffer_count, ...), the same frames its port dropped."""
    if nic.type in (None, "vmxnet3"):
        return []
    return [line for d in driver_drops(nic) if d.family in ("rx-buffers", "buffer-alloc")
            if (line := _line("guest-driver", d.window, "packets", True, f"guest {nic.driver} {d.name}")) is not None]


def uplink_lines(nic: VnicFacts) -> list[LedgerLine]:
    """Loss on a vmnic known to carry the vNIC: before the port, so not part of its count."""
    return [line for link in nic.uplinks if link.mapping for c in link.counters
            if (line := _line("uplink", c, "packets", False)) is not None]


def rx_ledger(nic: VnicFacts) -> DropLedger:
    total, counter, seconds = _port_total(nic)
    lines = tuple(ring_lines(nic) + reason_lines(nic) + guest_driver_lines(nic) + uplink_lines(nic))
    explained = sum(line.delta or 0 for line in lines if line.counted)
    unexplained = None if total is None else max(0, total - explained)
    words = ledger_words(total, counter, seconds, lines, explained, unexplained)
    before = [line for line in lines if line.cause == "uplink" and line.delta]
    if before:
        words += " Lost before the port, on its uplink: " + "; ".join(f"{line.what} {line.delta:,}"
                                                                   for line in before) + "."
    return DropLedger(total, counter, seconds, lines, explained, unexplained, words)


def ledger_words(total, counter, seconds, lines, explained: int, unexplained: int | None) -> str:
    rising = [line for line in lines if line.counted and line.delta]
    parts = "; ".join(f"{line.what} {line.delta:,}" for line in rising)
    span = f" in {seconds:.0f} s" if seconds else ""
    if total is None:
        return ("The port's own drop count (clientStats droppedRx at both ends of the window, or vCenter "
                "net.droppedRx) was not read, so what the counters below explain cannot be weighed against it"
                + (f": {parts}." if parts else "."))
    if not total:
        return f"The port dropped no received frames{span} ({counter})" + (f"; {parts}." if parts else ".")
    head = f"The port dropped {total:,} received frames{span} ({counter})"
    if not rising:
        return f"{head}, and no counter read explains any of them."
    if unexplained:
        return f"{head}: {parts}. {unexplained:,} of {total:,} drops are not explained by any counter read."
    over = f" (the counters add up to {explained:,}: they were read a moment apart)" if explained > total else ""
    return f"{head}: {parts}. Every drop is accounted for{over}."


def residue_rate(ledger: DropLedger | None) -> float | None:
    if ledger is None or not ledger.unexplained or not ledger.seconds:
        return None
    return ledger.unexplained / ledger.seconds
