"""The fleet scan's API pass: every VM of one or several vCenters in few requests.

    snapshot = scan([creds, ...], ScanOptions(window_s=300, filters=Filters(clusters=("C1",))), progress)

inventory: places + one paged RetrievePropertiesEx over ContainerViews; perf: QueryPerf batches
sized by config.vpxd.stats.maxQueryMetrics, a bounded number in flight, the 300 s rollup for VMs
without realtime samples; scan: vCenters concurrently, a failing one listed with its reason.
Scanning again and again from one process, ``scan(..., watches=Watches())`` keeps each vCenter's
login and inventory and reads only the changes (watch.py).
"""

from esxdiag.collectors.fleet.inventory import Filters
from esxdiag.collectors.fleet.scan import ScanOptions, scan
from esxdiag.collectors.fleet.watch import Watches

__all__ = ["Filters", "ScanOptions", "Watches", "scan"]
