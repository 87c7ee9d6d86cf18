"""The vNIC and perf half in worker processes against vcsim: the same snapshot as in one process,
every request counted, the password never handed over, a worker's failure reported, not lost."""

from __future__ import annotations

import math

import pytest

from esxdiag.collectors.fleet import ScanOptions, scan, workers
from esxdiag.collectors.vsphere_session import connect

pytestmark = pytest.mark.lab


def comparable(data) -> dict:
    """What must not depend on where the shares ran (vcsim's perf values are random: structure only)."""
    return {v["moid"]: (v["name"], v["vnics"], v["perf_error"],
                        None if v["perf"] is None else sorted(s["counter"] for s in v["perf"]["series"]))
            for v in data["vms"]}


def test_worker_processes_give_the_same_snapshot(fleet_lab, creds_for, monkeypatch):
    monkeypatch.setattr(workers, "SHARE_VMS", 5)  # 16 VMs: 4 shares over 2 workers
    alone = scan([creds_for(fleet_lab)], ScanOptions(workers=1))
    shared = scan([creds_for(fleet_lab)], ScanOptions(workers=2))
    assert shared["vcenters"][0]["status"] == "scanned" and shared["vcenters"][0]["workers"] == 2
    assert alone["vcenters"][0]["workers"] == 1
    assert comparable(shared) == comparable(alone)
    assert shared["vcenters"][0]["whole_device_lists"] == alone["vcenters"][0]["whole_device_lists"] == 10
    # the shares' own requests are counted: per share its keyed vNIC read (one vNIC count), its whole
    # device lists and its QueryPerf batches; per worker that ran a share: attach, session check, perfCounter
    shares = [shared["vms"][i:i + 5] for i in range(0, 16, 5)]
    per_share = sum(1 + (1 if any(v["vnics"] and v["vnics"][0]["device_key"] != 4000 for v in share) else 0)
                    + math.ceil(sum(v["power_state"] == "poweredOn" for v in share) / 12) for share in shares)
    serial_share = 1 + 1 + math.ceil(sum(v["power_state"] == "poweredOn" for v in alone["vms"]) / 12)
    fixed_and_hosts = alone["vcenters"][0]["requests"] - serial_share
    assert fixed_and_hosts + per_share + 3 <= shared["vcenters"][0]["requests"] <= fixed_and_hosts + per_share + 6


def test_workers_get_the_session_cookie_not_the_password(fleet_lab, creds_for):
    session = connect(creds_for(fleet_lab), timeout_s=30)
    try:
        login = workers.login_for_workers(session, 30)
    finally:
        session.close()
    assert login.creds.password == "" and fleet_lab.password not in repr(login)
    assert login.cookie.startswith("vmware_soap_session=")


def test_a_worker_refused_by_the_server_fails_that_vcenter_with_the_reason(fleet_lab, creds_for, monkeypatch):
    real = workers.login_for_workers

    def expired(session, timeout_s):
        login = real(session, timeout_s)
        return workers.WorkerLogin(login.creds, 'vmware_soap_session="expired"', login.api_version, timeout_s)
    monkeypatch.setattr(workers, "login_for_workers", expired)
    data = scan([creds_for(fleet_lab)], ScanOptions(workers=2))
    status = data["vcenters"][0]
    assert (status["status"], status["error_kind"]) == ("failed", "auth"), status["error"]
    # vcsim faults the session check; a server that answers it with no session gets the same kind
    assert status["error"] == f"127.0.0.1:{fleet_lab.port}: attaching a worker to the session: NotAuthenticated"


def test_automatic_worker_count():
    assert workers.worker_count(None, workers.AUTO_MIN_VMS - 1) == 1
    assert 1 <= workers.worker_count(None, workers.AUTO_MIN_VMS) <= 4
    assert workers.worker_count(3, 10) == 3
    assert workers.worker_count(None, 50000, vcenters=8) == 1  # cores shared by the vCenters scanned at once
