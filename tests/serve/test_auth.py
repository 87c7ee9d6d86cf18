"""Basic auth holds against what clients send: a password over bcrypt's 72 bytes is a 401 (not a
closed connection), and an unknown user is checked against a hash of the configured hashes' highest
cost, so the time taken does not tell which users exist."""

from __future__ import annotations

import base64
import http.client

import bcrypt

from esxdiag.serve import webconfig
from esxdiag.serve.state import State, VcenterState
from esxdiag.serve.store import Store
from esxdiag.serve.webconfig import WebConfig, authorized


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_a_password_over_72_bytes_is_refused_with_401(tmp_path, fleet_document, start_web):
    password = "p" * 72
    users = {"prometheus": bcrypt.hashpw(password.encode(), bcrypt.gensalt(4))}
    state = State([VcenterState("vc1:443", "https://vc1/sdk", 300, document=fleet_document("vc1:443", []),
                                last_ok=True)])
    server = start_web(state, Store(tmp_path / "h.sqlite", 7), tmp_path / "data", WebConfig(None, users))
    host, port = server.server_address[:2]
    for user, sent, expected in (("prometheus", password, 200), ("prometheus", password + "x", 401),
                                 ("nobody", "é" * 100, 401), ("prometheus", password, 200)):
        conn = http.client.HTTPConnection(host, port, timeout=10)
        conn.request("GET", "/healthz", headers={"Authorization": basic(user, sent)})
        assert conn.getresponse().status == expected
        conn.close()


def test_an_unknown_user_costs_the_configured_hashes_highest_cost(monkeypatch):
    users = {"a": bcrypt.hashpw(b"x", bcrypt.gensalt(4)), "b": bcrypt.hashpw(b"y", bcrypt.gensalt(6))}
    checked = []
    real = bcrypt.checkpw
    monkeypatch.setattr(bcrypt, "checkpw", lambda password, hashed: checked.append(hashed) or real(password, hashed))
    assert not authorized(basic("nobody", "x"), users)
    assert not authorized(basic("a", "wrong"), users)
    assert [h[:7] for h in checked] == [b"$2b$06$", b"$2b$04$"]
    assert webconfig.dummy_hash(users) is webconfig.dummy_hash(users)  # made once per cost
