"""The CPU-bound half of a big scan shared across processes.

pyvmomi decodes every XML element in Python, so one process keeps one core busy and the rest of
the machine idle. Each page of the inventory pass is a share; while the scanning process decodes
the next page, worker processes (spawned, never forked: the scan runs threads) read the vNICs and
the perf counters of the earlier ones through the SAME logged-in vSphere session. One pool of
workers serves every vCenter of the scan: each task carries its vCenter's login, the session
cookie (over the pipe to the worker, never argv or the environment) and the TLS policy, not the
password; a worker joins each vCenter's session once and never logs out. Workers return plain
records; their request counts are added to their vCenter's.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import threading
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor, as_completed, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Iterator

from esxdiag.collectors.credentials import Credentials
from esxdiag.collectors.fleet import perf
from esxdiag.collectors.fleet.share import ShareTask, collect_share
from esxdiag.collectors.vsphere_session import api_errors, joined
from esxdiag.errors import CollectionError


@dataclass(frozen=True)
class WorkerLogin:
    creds: Credentials  # the password blanked: the cookie is the login
    cookie: str = field(repr=False)
    api_version: str
    timeout_s: float
    counters: dict[str, tuple[int, str]] = field(default_factory=dict)  # the shares' counters: name -> (id, unit)


SMALL_INVENTORY_PAGES = 2  # automatic: an inventory of at most this many pages is scanned without workers


def worker_count(requested: int | None, pages_read: int, more_pages: bool) -> int:
    """--workers N as given; automatic: once a vCenter's inventory has shown SMALL_INVENTORY_PAGES
    pages and more follow, the usable cores (at most 4), for this page's share on; until then the
    scanning process does the shares (a worker costs more CPU than it saves on two pages:
    docs/fleet-scan.md). One pool serves every vCenter."""
    if requested:
        return requested
    if not more_pages or pages_read < SMALL_INVENTORY_PAGES:
        return 1
    return pool_size(None)


def pool_size(requested: int | None) -> int:
    """--workers N, else the usable cores (at most 4)."""
    if requested:
        return requested
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, 4))


def login_for_workers(session: Any, timeout_s: float) -> WorkerLogin:
    """The scan's login for its workers, with the ids of the counters their shares read (the catalogue
    is read once per scan, here, not once per process)."""
    stub = session.si._stub
    known = perf.counter_keys(session)
    return WorkerLogin(dataclasses.replace(session.creds, password=""), stub.cookie, stub.version, timeout_s,
                       {name: known[name] for name in perf.VM_COUNTERS if name in known})


def spawn_context() -> multiprocessing.context.BaseContext:
    return multiprocessing.get_context("spawn")


class WorkerPool:
    """The scan's worker processes, shared by its vCenters; started the first time one needs them."""

    def __init__(self, requested: int | None):
        self.requested = requested
        self.size = 0
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def shares(self, login: WorkerLogin) -> "VcenterShares":
        """A vCenter's way into the pool, once worker_count says so."""
        with self._lock:
            if self._pool is None:
                self.size = pool_size(self.requested)
                self._pool = ProcessPoolExecutor(max_workers=self.size, mp_context=spawn_context())
        return VcenterShares(self._pool, login)

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)


class VcenterShares:
    """One vCenter's share tasks in the scan's pool, submitted as its inventory pages arrive."""

    def __init__(self, pool: ProcessPoolExecutor, login: WorkerLogin):
        self.where = f"{login.creds.host}:{login.creds.port}"
        self._pool, self._login = pool, login
        self._futures: dict[Future, ShareTask] = {}

    def submit(self, task: ShareTask) -> None:
        try:
            self._futures[self._pool.submit(_run_task, self._login, task)] = task
        except BrokenProcessPool as exc:
            raise CollectionError(f"{self.where}: a scan worker process ended unexpectedly ({exc})",
                                  kind="internal") from None

    def completed(self) -> Iterator[tuple[ShareTask, dict]]:
        """(task, result) as they finish, every result given back even after a failure (its
        requests count); then the first failure raised as a CollectionError."""
        failure = None
        for future in as_completed(self._futures):
            try:
                result = future.result()
            except CancelledError:
                continue
            except BrokenProcessPool as exc:
                raise CollectionError(f"{self.where}: a scan worker process ended unexpectedly ({exc})",
                                      kind="internal") from None
            yield self._futures[future], result
            if result["error"] and failure is None:
                failure = CollectionError(result["error"], kind=result["error_kind"])
                for other in self._futures:
                    other.cancel()
        if failure is not None:
            raise failure

    def close(self) -> None:
        """This vCenter's tasks not started are dropped; the running ones are waited for (they use
        its session, which the scan logs out next)."""
        for future in self._futures:
            future.cancel()
        wait(self._futures)


_SESSIONS: dict[tuple[str, str], Any] = {}  # in a worker: (vCenter URL, cookie) -> its joined session


def _run_task(login: WorkerLogin, task: ShareTask) -> dict:
    key = (login.creds.url, login.cookie)
    session = _SESSIONS.get(key)
    if session is None:  # a session object on the scan's login (so no password needed)
        session = joined(login.creds, login.cookie, login.api_version, login.timeout_s)
        session.counter_keys = dict(login.counters)
    before = session.request_count
    try:
        if key not in _SESSIONS:
            with api_errors(session, "attaching a worker to the session"):
                session.attach()  # one RetrieveContent per worker and vCenter, counted
                live = session.content.sessionManager.currentSession is not None  # and one check
            if not live:  # some servers answer an unknown session with empty results, not a fault
                raise CollectionError(f"{session.where}: a scan worker could not use the scan's session "
                                      "(not logged in: expired or ended?)", kind="auth")
            _SESSIONS[key] = session
        result = collect_share(session, task)
        result.update(error=None, error_kind=None)
    except CollectionError as exc:  # returned as data: an exception's extra fields do not survive pickling
        result = {"error": exc.one_line(), "error_kind": exc.kind}
    result["requests"] = session.request_count - before
    return result
