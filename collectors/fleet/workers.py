"""The CPU-bound half of a big scan shared across processes.

pyvmomi decodes every XML element in Python, so one process keeps one core busy and the rest of
the machine idle. After the inventory pass, the VMs are cut into shares; worker processes
(spawned, never forked: the scan runs threads) read the vNICs and the perf counters of one share
at a time through the SAME logged-in vSphere session: each worker gets the session cookie (over
the pipe to its own child process, never argv or the environment) and the TLS policy, not the
password, and never logs out. Workers return plain records; the request counts are added to the
vCenter's.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable

from esxdiag.collectors.credentials import Credentials
from esxdiag.errors import CollectionError

AUTO_MIN_VMS = 2000  # below this, starting interpreters costs more than it saves
SHARE_VMS = 1000  # VMs per task: progress granularity, and bounded memory per answer


@dataclass(frozen=True)
class WorkerLogin:
    creds: Credentials  # the password blanked: the cookie is the login
    cookie: str
    api_version: str
    timeout_s: float


@dataclass(frozen=True)
class ShareTask:
    vms: list[dict]  # {"moid", "name", "power_state", "num_vnics"}
    end: datetime
    window_s: float
    max_metrics: int
    in_flight: int
    page_size: int | None
    nic_types: str


def worker_count(requested: int | None, vms: int, vcenters: int = 1) -> int:
    """--workers N as given; automatic: from AUTO_MIN_VMS VMs on, the usable cores (at most 4) shared
    by the vCenters scanned at once."""
    if requested:
        return requested
    if vms < AUTO_MIN_VMS:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, 4) // max(1, vcenters))


def login_for_workers(session: Any, timeout_s: float) -> WorkerLogin:
    stub = session.si._stub
    return WorkerLogin(dataclasses.replace(session.creds, password=""), stub.cookie, stub.version, timeout_s)


def run_shares(login: WorkerLogin, tasks: list[ShareTask], workers: int,
               done: Callable[[ShareTask, dict], None]) -> None:
    """Each task's result (see share_result) to ``done`` as it completes; the first failed share
    raises its CollectionError after the others have stopped."""
    context = multiprocessing.get_context("spawn")
    where = f"{login.creds.host}:{login.creds.port}"
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_start_worker,
                             initargs=(login,)) as pool:
        futures = {pool.submit(_run_task, task): task for task in tasks}
        failure = None
        for future in as_completed(futures):
            try:
                result = future.result()
            except BrokenProcessPool as exc:
                raise CollectionError(f"{where}: a scan worker process ended unexpectedly ({exc})",
                                      kind="internal") from None
            done(futures[future], result)
            if result["error"] and failure is None:
                failure = CollectionError(result["error"], kind=result["error_kind"])
                for other in futures:
                    other.cancel()
        if failure is not None:
            raise failure


_WORKER: dict[str, Any] = {}


def _start_worker(login: WorkerLogin) -> None:
    """In the worker: a stub on the parent's session (no login, so no password needed)."""
    from pyVmomi import SoapStubAdapter, vim

    from esxdiag.collectors.vsphere_session import VsphereSession, _path, _tls_context
    context = _tls_context(login.creds, login.timeout_s)
    stub = SoapStubAdapter(host=login.creds.host, port=login.creds.port, path=_path(login.creds),
                           version=login.api_version, sslContext=context, httpConnectionTimeout=login.timeout_s)
    stub.cookie = login.cookie
    _WORKER["session"] = VsphereSession(vim.ServiceInstance("ServiceInstance", stub), login.creds, context=context)
    _WORKER["attached"] = False


def _run_task(task: ShareTask) -> dict:
    from esxdiag.collectors.fleet.scan import collect_share  # imported in the worker, after spawn
    from esxdiag.collectors.vsphere_session import api_errors
    session = _WORKER["session"]
    before = session.request_count
    try:
        if not _WORKER["attached"]:
            with api_errors(session, "attaching a worker to the session"):
                session.attach()  # one RetrieveContent per worker, counted
                live = session.content.sessionManager.currentSession is not None  # and one check
            if not live:  # some servers answer an unknown session with empty results, not a fault
                raise CollectionError(f"{session.where}: a scan worker could not use the scan's session "
                                      "(not logged in: expired or ended?)", kind="auth")
            _WORKER["attached"] = True
        result = collect_share(session, task)
        result.update(error=None, error_kind=None)
    except CollectionError as exc:  # returned as data: an exception's extra fields do not survive pickling
        result = {"error": exc.one_line(), "error_kind": exc.kind}
    result["requests"] = session.request_count - before
    return result
