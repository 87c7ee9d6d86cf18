"""The vNIC and perf half in worker processes against vcsim: the same snapshot as in one process,
every request counted, the password never handed over, a worker's failure reported, not lost."""

from __future__ import annotations

import pytest

from pyVmomi import vim

from esxdiag.collectors.fleet import ScanOptions, perf, scan, workers
from esxdiag.collectors.fleet.share import ShareTask
from esxdiag.collectors.vsphere_session import connect

pytestmark = pytest.mark.lab


def comparable(data) -> dict:
    """What must not depend on where the shares ran (vcsim's perf values are random: structure only)."""
    return {v["moid"]: (v["name"], v["vnics"], v["perf_error"],
                        None if v["perf"] is None else sorted(s["counter"] for s in v["perf"]["series"]))
            for v in data["vms"]}


def test_worker_processes_give_the_same_snapshot(fleet_lab, creds_for):
    """16 VMs in pages of 5: four shares, decoded by two workers while the pages arrive."""
    alone = scan([creds_for(fleet_lab)], ScanOptions(workers=1, page_size=5))
    shared = scan([creds_for(fleet_lab)], ScanOptions(workers=2, page_size=5))
    assert shared["vcenters"][0]["status"] == "scanned" and shared["vcenters"][0]["workers"] == 2
    assert alone["vcenters"][0]["workers"] == 1
    assert comparable(shared) == comparable(alone)
    assert shared["vcenters"][0]["whole_device_lists"] == alone["vcenters"][0]["whole_device_lists"] == 10
    # every share's requests are the same wherever it runs, and are counted; each worker that ran one
    # adds two (RetrieveContent, the session check): the counter ids come with the login
    assert 2 <= shared["vcenters"][0]["requests"] - alone["vcenters"][0]["requests"] <= 4


def test_one_page_is_scanned_without_workers(fleet_lab, creds_for):
    data = scan([creds_for(fleet_lab)], ScanOptions())  # automatic, 16 VMs in one page of 1,000
    assert data["vcenters"][0]["workers"] == 1


def test_workers_get_the_session_cookie_not_the_password(fleet_lab, creds_for):
    session = connect(creds_for(fleet_lab), timeout_s=30)
    try:
        login = workers.login_for_workers(session, 30)
    finally:
        session.close()
    assert login.creds.password == "" and fleet_lab.password not in repr(login) and login.cookie not in repr(login)
    assert login.cookie.startswith("vmware_soap_session=")


def test_a_worker_reads_its_share_with_the_counter_ids_of_the_login(fleet_lab, creds_for, monkeypatch):
    """The worker's task, run here: the server's counter catalogue (560 counters decoded by pyVmomi) is
    read once by the scan, not again by each worker: the share needs only the RetrieveContent, the session
    check and its own requests."""
    session = connect(creds_for(fleet_lab), timeout_s=30)
    try:
        login = workers.login_for_workers(session, 30)
        assert set(login.counters) == set(perf.VM_COUNTERS)
        vms = [{"moid": vm._moId, "name": vm.name, "power_state": "poweredOn", "num_vnics": 0, "host_moid": None}
               for vm in session.content.viewManager.CreateContainerView(
                   session.content.rootFolder, [vim.VirtualMachine], True).view[:3]]
        monkeypatch.setattr(perf, "retrieve_pages", lambda *_args: pytest.fail("the worker read the catalogue"))
        monkeypatch.setattr(workers, "_SESSIONS", {})
        task = ShareTask(vms, session.si.CurrentTime(), 300.0, perf.BatchLimits(256), 1, None, "all", read_vnics=False)
        result = workers._run_task(login, task)
    finally:
        session.close()
    assert result["error"] is None and len(result["records"]) == 3
    assert result["requests"] == 3  # RetrieveContent, the session check, one QueryPerf


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
    assert workers.worker_count(None, 1, more_pages=False) == 1
    assert workers.worker_count(None, 1, more_pages=True) == 1  # two pages: both in the scanning process
    assert workers.worker_count(None, 2, more_pages=False) == 1
    assert 1 <= workers.worker_count(None, 2, more_pages=True) <= 4
    assert workers.worker_count(3, 1, more_pages=False) == 3
    assert workers.worker_count(1, 5, more_pages=True) == 1


def test_two_pages_are_scanned_without_workers_three_with(fleet_lab, creds_for):
    """Automatic: a share costs a worker more CPU than it saves until the inventory passes two pages."""
    two = scan([creds_for(fleet_lab)], ScanOptions(page_size=8))  # 16 VMs
    three = scan([creds_for(fleet_lab)], ScanOptions(page_size=7))
    assert two["vcenters"][0]["workers"] == 1
    assert three["vcenters"][0]["workers"] == workers.pool_size(None)
    assert comparable(three) == comparable(two)


def test_one_pool_of_workers_serves_every_vcenter(fleet_lab, lab_module, creds_for, tmp_path, monkeypatch):
    """Two vCenters with several pages each: their shares go to the same two worker processes (each
    worker joins each vCenter's session on its first share of it), and the snapshot is the one the
    scanning processes alone give."""
    second = lab_module.start_vcsim(tmp_path / "second", ("-cluster", "1", "-host", "1", "-vm", "7",
                                                         "-standalone-host", "0"), timeout_s=120)
    pools = []
    real = workers.ProcessPoolExecutor

    def counted(*args, **kwargs):
        pools.append(kwargs["max_workers"])
        return real(*args, **kwargs)
    try:
        targets = [creds_for(fleet_lab), creds_for(second)]
        alone = scan(targets, ScanOptions(workers=1, page_size=5))
        monkeypatch.setattr(workers, "ProcessPoolExecutor", counted)
        shared = scan(targets, ScanOptions(workers=2, page_size=5))
    finally:
        second.stop()
    assert pools == [2]
    assert [(s["status"], s["workers"]) for s in shared["vcenters"]] == [("scanned", 2), ("scanned", 2)]
    assert comparable(shared) == comparable(alone) and len(shared["vms"]) == 16 + 7
    for one, other in zip(alone["vcenters"], shared["vcenters"]):
        assert 2 <= other["requests"] - one["requests"] <= 4  # 2 per worker that ran one of its shares
