"""`esxdiag serve`'s web side under slow clients: N sockets that send a request one byte every
--every seconds (slowloris), and /metrics fetched --scrapes times beside them; prints the scrape
times (p50, p99, max), the connections refused busy and the slow sockets the idle timeout closed.
The server is serve's own WebServer over a 1,000-VM state, on 127.0.0.1. Not a timed test.

    python bench/serve_slowloris.py --slow 300 --every 1 --scrapes 200
"""

from __future__ import annotations

import argparse
import http.client
import socket
import sys
import threading
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.serve.conftest import snapshot, vm  # noqa: E402  (the serve tests' fleet builders)

from esxdiag.config import load_thresholds  # noqa: E402
from esxdiag.fleet.analysis import build_report  # noqa: E402
from esxdiag.fleet.snapshot import snapshot_from_dict  # noqa: E402
from esxdiag.serve.metrics import Exposition  # noqa: E402
from esxdiag.serve.pages import Pages  # noqa: E402
from esxdiag.serve.state import State, VcenterState  # noqa: E402
from esxdiag.serve.store import Store  # noqa: E402
from esxdiag.serve.web import IDLE_TIMEOUT_S, MAX_CONNECTIONS, WebServer  # noqa: E402
from esxdiag.serve.webconfig import WebConfig  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slow", type=int, default=300)
    parser.add_argument("--every", type=float, default=1.0)
    parser.add_argument("--scrapes", type=int, default=200)
    parser.add_argument("--vms", type=int, default=1000)
    args = parser.parse_args()
    data = snapshot("vc1:443", [vm(f"vm{i}", f"vm-{i}", drops=i % 7 * 50) for i in range(args.vms)])
    document = build_report(snapshot_from_dict(data), load_thresholds(), "snap.json").as_dict()
    state = State([VcenterState("vc1:443", "https://vc1/sdk", 300, document=document, last_ok=True)])
    pages = Pages(state, Store(Path("/tmp/esxdiag-slowloris.sqlite"), 1), load_thresholds(), 300, {})
    server = WebServer("127.0.0.1", 0, pages, Exposition(state), Path("/tmp"), WebConfig())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = server.server_address[:2]
    slow = [socket.create_connection(address, timeout=5) for _ in range(args.slow)]
    stop = threading.Event()
    closed = [0]

    def dribble() -> None:
        while not stop.wait(args.every):
            for i, sock in enumerate(slow):
                if sock is None:
                    continue
                try:
                    sock.send(b"X")
                except OSError:
                    closed[0] += 1
                    slow[i] = None
                    sock.close()

    threading.Thread(target=dribble, daemon=True).start()
    times, busy = [], 0
    for _ in range(args.scrapes):
        started = time.monotonic()
        conn = http.client.HTTPConnection(*address, timeout=30)
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        response.read()
        conn.close()
        busy += response.status == 503
        times.append(time.monotonic() - started)
        time.sleep(0.05)
    stop.set()
    times.sort()
    print(f"{args.slow} slow sockets (a byte every {args.every:g} s), {args.vms} VMs, max connections "
          f"{MAX_CONNECTIONS}, idle timeout {IDLE_TIMEOUT_S:g} s: /metrics x{args.scrapes}: p50 "
          f"{times[len(times) // 2] * 1000:.0f} ms, p99 {times[int(len(times) * 0.99) - 1] * 1000:.0f} ms, max "
          f"{times[-1] * 1000:.0f} ms; busy {busy}; slow sockets closed by the server {closed[0]}")
    server.shutdown()


if __name__ == "__main__":
    main()
