"""What a watched scan and a full read of vcsim must agree on (test_watch_*.py)."""

from __future__ import annotations

import copy


def comparable(data: dict) -> dict:
    """The snapshot less what differs between any two scans of vcsim (when, how long, its random perf
    values: test_fastdecode_vcsim.without_timing) and the request count (the point of the watch), VMs
    by MOID: the server's order of a VM added since the last whole read is its own (reports sort)."""
    data = copy.deepcopy(data)
    data.pop("collected_at")
    for vcenter in data["vcenters"]:
        vcenter.pop("seconds")
        vcenter.pop("requests")
    for item in data["vms"] + data["hosts"]:
        if item["perf"] is not None:
            for key in ("start", "end", "timestamps"):
                item["perf"].pop(key)
            for series in item["perf"]["series"]:
                series.pop("values")
    data["vms"].sort(key=lambda vm: vm["moid"])
    return data
