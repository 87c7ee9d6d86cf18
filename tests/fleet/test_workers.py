"""A fleet-scan worker process imports what it runs, not the command line or the reports: spawned by
a process whose __main__ is the `esxdiag` console script (as `esxdiag scan` is), it runs that script
again before its first task."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CHILD = """
import json, sys, types
from datetime import datetime, timezone
main = types.ModuleType("__main__")
main.__file__ = sys.argv[1]  # the worker's parent runs as the console script does
sys.modules["__main__"] = main
from esxdiag.collectors.credentials import Credentials
from esxdiag.collectors.fleet import perf, workers
from esxdiag.collectors.fleet.share import ShareTask
login = workers.WorkerLogin(Credentials("https://127.0.0.1:9/sdk", "nobody", ""), "cookie", "vim.version.version9", 5)
pool = workers.WorkerPool(1)
try:
    # a real task first (nothing listens on port 9: it ends in an error, returned as data)
    pool.shares(login).submit(ShareTask([], datetime.now(timezone.utc), 300, perf.BatchLimits(64), 1, 1000, "all"))
    print(json.dumps(pool._pool.submit(eval, "sorted(__import__('sys').modules)").result()))
finally:
    pool.close()
"""
HEAVY = ("esxdiag.cli", "esxdiag.reports", "esxdiag.fleet", "jinja2", "pandas", "pyarrow")


def test_a_worker_imports_neither_the_command_line_nor_the_reports():
    script = Path(sys.executable).with_name("esxdiag")
    assert script.exists(), "the esxdiag console script is installed beside the test's python"
    out = subprocess.run([sys.executable, "-c", CHILD, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    modules = json.loads(out.stdout)
    assert "esxdiag.collectors.fleet.workers" in modules  # the worker did run a task
    assert [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)] == []
