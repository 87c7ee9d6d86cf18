"""Cause ids: where a frame is lost besides the ring (docs/diagnosis.md). esxdiag.join.causes reads
their counters and esxdiag.rules.causes judges them; a ring verdict's ``causes`` names them, and the
fleet's deep check reads ``uplink`` there (esxdiag.fleet.confirm). A test checks the families the join
knows and the words the rules give are exactly these."""

from __future__ import annotations

from esxdiag.vocabulary.ids import Id


class CauseId(Id):
    UPLINK = "uplink"  # the host's physical NIC, before the vSwitch
    MTU = "mtu"
    TRUNCATION = "truncation"
    STEERING = "steering"
    BURST_QUEUE = "burst-queue"
    LARGE_HEADERS = "large-headers"
    SG_LIMIT = "sg-limit"
    PACKET_AGING = "packet-aging"
    RX_LOCK_QUEUEING = "rx-lock-queueing"
    COPY_FAILURE = "copy-failure"
    BUFFER_MAP_FAILURE = "buffer-map-failure"
    RECEIVE_ERROR = "receive-error"
    PAGE_ABSENT = "page-absent"
    UNKNOWN = "unknown"  # a drop label no family knows


class EventId(Id):
    """Counted beside the drops, never added to them."""

    QUEUE_STOPPED = "queue-stopped"
    PAGE_IN = "page-in"


PORT_CAUSES: tuple[CauseId, ...] = tuple(c for c in CauseId if c is not CauseId.UPLINK)  # the vNIC port's counters
