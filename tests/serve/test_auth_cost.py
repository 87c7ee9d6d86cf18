"""Wrong passwords cannot multiply what a basic-auth check costs the server (issue 30, item 12):
one bcrypt check at a time whatever the clients, a scraper's right password checked once, a
repeated wrong password checked once, a known and an unknown user remembered alike.
bench/serve_wrong_passwords.py measures the scrape beside wrong-password clients."""

from __future__ import annotations

import base64
import http.client
import threading
import time

import bcrypt
import pytest

from esxdiag.serve.state import State, VcenterState
from esxdiag.serve.store import Store
from esxdiag.serve.webconfig import WebConfig

PASSWORD = b"scrape-secret"


def basic(user: str, password: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.fixture
def counted(monkeypatch):
    """bcrypt.checkpw made slow (30 ms), its calls and the most running at once counted."""
    real, lock = bcrypt.checkpw, threading.Lock()
    seen = {"calls": 0, "running": 0, "most": 0}

    def checkpw(password, hashed):
        with lock:
            seen["calls"] += 1
            seen["running"] += 1
            seen["most"] = max(seen["most"], seen["running"])
        time.sleep(0.03)
        try:
            return real(password, hashed)
        finally:
            with lock:
                seen["running"] -= 1
    monkeypatch.setattr(bcrypt, "checkpw", checkpw)
    return seen


@pytest.fixture
def server(tmp_path, fleet_document, start_web):
    users = {"prometheus": bcrypt.hashpw(PASSWORD, bcrypt.gensalt(4))}
    state = State([VcenterState("vc1:443", "https://vc1/sdk", 300, document=fleet_document("vc1:443", []),
                                last_ok=True)])
    return start_web(state, Store(tmp_path / "h.sqlite", 7), tmp_path / "data", WebConfig(None, users))


def status(server, user: str, password: str) -> int:
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=30)
    try:
        conn.request("GET", "/healthz", headers=basic(user, password))
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_clients_with_wrong_passwords_run_one_bcrypt_check_at_a_time(server, counted):
    answers = []
    clients = [threading.Thread(target=lambda i=i: answers.extend(status(server, "prometheus", f"guess-{i}-{n}")
                                                                  for n in range(3))) for i in range(8)]
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    assert answers == [401] * 24 and counted["calls"] == 24 and counted["most"] == 1


def test_a_scraper_sending_its_right_password_again_costs_no_check(server, counted):
    assert [status(server, "prometheus", PASSWORD.decode()) for _ in range(5)] == [200] * 5
    assert counted["calls"] == 1


def test_a_repeated_wrong_password_is_checked_once_for_a_known_and_an_unknown_user_alike(server, counted):
    assert [status(server, "prometheus", "wrong") for _ in range(3)] == [401] * 3
    assert [status(server, "nobody", "wrong") for _ in range(3)] == [401] * 3
    assert counted["calls"] == 2  # one each: what a remembered answer shows, the client sent itself


def test_a_remembered_failure_never_refuses_the_right_password(server, counted):
    assert status(server, "prometheus", "wrong") == 401
    assert status(server, "prometheus", PASSWORD.decode()) == 200
    assert status(server, "prometheus", PASSWORD.decode() + "x") == 401
    assert status(server, "prometheus", "wrong") == 401 and counted["calls"] == 3
