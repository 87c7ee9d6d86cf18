"""How many entities one QueryPerf asks for: realtime batches by entities, historical ones by
maxQueryMetrics, the user's --max-query-metrics a cap on both."""

from __future__ import annotations

import pytest

from esxdiag.collectors.fleet.perf import REALTIME_ENTITIES, BatchLimits, Entity, batches
from esxdiag.collectors.vsphere_perf import HISTORICAL_S, REALTIME_S


@pytest.mark.parametrize("limits, counters, interval, size", [
    (BatchLimits(64), 5, REALTIME_S, REALTIME_ENTITIES),  # the server's limit is for historical queries
    (BatchLimits(1024), 3, REALTIME_S, REALTIME_ENTITIES),
    (BatchLimits(64), 5, HISTORICAL_S, 12),
    (BatchLimits(64), 3, HISTORICAL_S, 21),
    (BatchLimits(4), 5, HISTORICAL_S, 1),  # never an empty batch
    (BatchLimits(10, user_metrics=10), 5, REALTIME_S, 2),  # the user's brake holds realtime too
    (BatchLimits(10, user_metrics=10), 5, HISTORICAL_S, 2),
    (BatchLimits(5000, user_metrics=5000), 5, REALTIME_S, REALTIME_ENTITIES),  # ...but never above 256 entities
    (BatchLimits(5000, user_metrics=5000), 5, HISTORICAL_S, 1000),
    (BatchLimits(64, user_metrics=3), 5, REALTIME_S, 1),
])
def test_entities_per_query(limits, counters, interval, size):
    assert limits.entities_per_query(counters, interval) == size


def test_batches_keep_order_and_cover_every_entity():
    entities = [Entity(f"vm-{i}", f"vm{i}", None) for i in range(530)]
    out = batches(entities, REALTIME_ENTITIES)
    assert [len(b) for b in out] == [256, 256, 18]
    assert [e for b in out for e in b] == entities
    assert batches([], 12) == []
