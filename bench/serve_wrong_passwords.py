"""`esxdiag serve`'s web side beside clients with wrong passwords: N clients send requests with basic
auth and a wrong password as fast as the server answers them (each a new random password, or
--same: one wrong password again and again), while /metrics is fetched --scrapes times with the
right password; prints the scrape times (p50, p99, max) and the wrong-password answers per second.
The server is serve's own WebServer over a 1,000-VM state, basic auth with a bcrypt cost 10 hash
(htpasswd -B's default), on 127.0.0.1 without TLS. Not a timed test.

    python bench/serve_wrong_passwords.py --clients 8 --scrapes 100
"""

from __future__ import annotations

import argparse
import base64
import http.client
import secrets
import sys
import threading
import time
from pathlib import Path

import bcrypt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.serve.conftest import snapshot, vm  # noqa: E402  (the serve tests' fleet builders)

from esxdiag.config import load_thresholds  # noqa: E402
from esxdiag.fleet.analysis import build_report  # noqa: E402
from esxdiag.fleet.snapshot import snapshot_from_dict  # noqa: E402
from esxdiag.serve.metrics import Exposition  # noqa: E402
from esxdiag.serve.pages import Pages  # noqa: E402
from esxdiag.serve.state import State, VcenterState  # noqa: E402
from esxdiag.serve.store import Store  # noqa: E402
from esxdiag.serve.web import WebServer  # noqa: E402
from esxdiag.serve.webconfig import WebConfig  # noqa: E402

PASSWORD = "scrape-secret"


def basic(user: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def fetch(address, path: str, headers: dict) -> int:
    conn = http.client.HTTPConnection(*address, timeout=60)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--scrapes", type=int, default=100)
    parser.add_argument("--vms", type=int, default=1000)
    parser.add_argument("--cost", type=int, default=10)
    parser.add_argument("--same", action="store_true", help="each client repeats one wrong password")
    args = parser.parse_args()
    data = snapshot("vc1:443", [vm(f"vm{i}", f"vm-{i}", drops=i % 7 * 50) for i in range(args.vms)])
    document = build_report(snapshot_from_dict(data), load_thresholds(), "snap.json").as_dict()
    state = State([VcenterState("vc1:443", "https://vc1/sdk", 300, document=document, last_ok=True)])
    pages = Pages(state, Store(Path("/tmp/esxdiag-wrong-passwords.sqlite"), 1), load_thresholds(), 300, {})
    users = {"prometheus": bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(args.cost))}
    server = WebServer("127.0.0.1", 0, pages, Exposition(state), Path("/tmp"), WebConfig(None, users))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = server.server_address[:2]
    right = basic("prometheus", PASSWORD)

    def scrapes(n: int) -> list[float]:
        times = []
        for _ in range(n):
            started = time.monotonic()
            assert fetch(address, "/metrics", right) == 200
            times.append(time.monotonic() - started)
            time.sleep(0.05)
        return sorted(times)

    alone = scrapes(max(10, args.scrapes // 5))
    stop = threading.Event()
    refused = [0] * args.clients

    def wrong(i: int) -> None:
        fixed = secrets.token_hex(8)
        while not stop.is_set():
            status = fetch(address, "/metrics", basic("prometheus", fixed if args.same else secrets.token_hex(8)))
            refused[i] += status == 401

    clients = [threading.Thread(target=wrong, args=(i,), daemon=True) for i in range(args.clients)]
    for client in clients:
        client.start()
    time.sleep(1)
    started = time.monotonic()
    beside = scrapes(args.scrapes)
    seconds = time.monotonic() - started
    stop.set()
    for client in clients:
        client.join()

    def words(times: list[float]) -> str:
        p99 = times[max(0, int(len(times) * 0.99) - 1)]
        return f"p50 {times[len(times) // 2] * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, max {times[-1] * 1000:.0f} ms"

    print(f"bcrypt cost {args.cost}, {args.vms} VMs: /metrics alone x{len(alone)}: {words(alone)}; beside "
          f"{args.clients} client(s) with {'one repeated' if args.same else 'new'} wrong passwords x{args.scrapes}: "
          f"{words(beside)}; wrong-password answers {sum(refused) / seconds:.0f}/s")
    server.shutdown()


if __name__ == "__main__":
    main()
