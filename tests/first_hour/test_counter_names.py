"""Issue 25 point 8: the quick start's terminal names the counter where the number is: the host
port's clientStats droppedRx cannot be read against vCenter's net.droppedRx."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "iperf-test1-ring-exhaustion"


@pytest.mark.parametrize("fmt", ["text", "rings"])
def test_every_droppedRx_in_the_terminal_says_which_counter_it_is(fmt):
    out = subprocess.run([sys.executable, "-m", "esxdiag", "analyze", str(EXAMPLE), "--format", fmt],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    flat = " ".join(out.split())
    assert "host port droppedRx (clientStats) +2,184" in flat, flat
    bare = [m.start() for m in re.finditer(r"droppedRx", flat)
            if not flat[:m.start()].endswith(("host port ", "net."))]
    assert not bare, [flat[max(0, i - 40):i + 40] for i in bare]
