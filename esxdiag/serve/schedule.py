"""When each vCenter is scanned: once per interval, on its own thread, never two cycles of one
vCenter at once.

Each vCenter's cycles sit on a grid, ``start + offset + k * interval``: the offset (random in
[0, jitter)) spreads the vCenters, and each cycle starts a further random [0, jitter) after its grid
point, so several serve instances, or vCenter's own 5-minute jobs, do not fall in step. A cycle
that runs past the next grid point makes that cycle late: it is skipped and counted, and the next
starts at the first grid point after the late one ended. Stopping sets one event: a waiting loop
ends at once, a running scan ends at its next inventory page (interrupted, recorded nowhere), and
``stop(grace)`` waits at most ``grace`` seconds before it abandons what still runs.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from esxdiag.fleet.merge import failed_status
from esxdiag.serve.cycle import Outcome, settle
from esxdiag.serve.state import State

log = logging.getLogger("esxdiag.serve")


class Clock:
    """Real time; tests pass one whose wait() moves time on instead of sleeping."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        """Sleep up to ``seconds``; True when stopped."""
        return stop.wait(max(0.0, seconds))


def next_slot(slot: float, now: float, interval: float) -> tuple[float, int]:
    """The first grid point after ``now`` following ``slot``, and the grid points skipped on the way."""
    nxt, skipped = slot + interval, 0
    while nxt <= now:
        nxt += interval
        skipped += 1
    return nxt, skipped


@dataclass
class Scheduler:
    targets: list  # Credentials, one per vCenter
    cycle: Callable  # (creds, stop, VcenterState) -> Outcome
    state: State
    interval_s: float
    jitter_s: float
    deep_max_age_s: float
    clock: Clock = field(default_factory=Clock)
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self):
        self.stop_event = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for creds in self.targets:
            thread = threading.Thread(target=self.loop, args=(creds,), name=f"cycle-{creds.host}:{creds.port}",
                                      daemon=True)  # abandoned at exit when it outlives the grace period
            thread.start()
            self._threads.append(thread)

    def stop(self, grace_s: float) -> list[str]:
        """Stop every loop; the names of the threads still running after ``grace_s`` (abandoned)."""
        self.stop_event.set()
        deadline = time.monotonic() + grace_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return [t.name for t in self._threads if t.is_alive()]

    def loop(self, creds, cycles: int | None = None) -> None:
        """Run one vCenter's cycles until stopped (or ``cycles`` of them: tests)."""
        name = f"{creds.host}:{creds.port}"
        slot = self.clock.monotonic() + self.rng.uniform(0, self.jitter_s)
        done = 0
        while cycles is None or done < cycles:
            if self.clock.wait(self.stop_event, slot + self.rng.uniform(0, self.jitter_s) - self.clock.monotonic()):
                return
            self.run_one(creds, name)
            done += 1
            slot, skipped = next_slot(slot, self.clock.monotonic(), self.interval_s)
            if skipped:
                self.state.add(name, skipped=skipped)
                log.warning("%s: the cycle ran past the next one's start: %d cycle(s) skipped", name, skipped)

    def run_one(self, creds, name: str) -> None:
        started = self.clock.monotonic()
        self.state.update(name, running=True, running_since_ts=self.clock.wall())
        try:
            outcome = self.cycle(creds, self.stop_event, self.state.get(name))
        except Exception as exc:  # a bug in one cycle must not end the watch: counted as kind internal
            if self.stop_event.is_set():
                outcome = Outcome(None)  # shutdown broke it: abandoned
            else:
                log.exception("%s: cycle failed", name)
                outcome = _failed(name, creds.url, f"internal error: {type(exc).__name__}: {exc}", "internal")
        if outcome.abandoned:  # at shutdown
            self.state.update(name, running=False, running_since_ts=None)
            return
        seconds = self.clock.monotonic() - started
        if seconds > self.interval_s:
            self.state.add(name, overran=1)
            log.warning("%s: the cycle took %.0f s, longer than the %g s interval", name, seconds, self.interval_s)
        settle(self.state, name, outcome, self.clock.wall(), seconds, self.deep_max_age_s)
        entry = self.state.get(name)
        if entry.last_ok:
            log.info("%s: %d VMs in %.1f s, %s requests", name, entry.last_vms, seconds, entry.last_requests)
        else:
            log.warning("%s: not scanned (%s): %s", name, entry.last_error_kind, entry.last_error)


def _failed(name: str, url: str, error: str, kind: str) -> Outcome:
    """A cycle that ended in a bug, as a failed scan of its vCenter."""
    return Outcome(None, failed=failed_status(name, url, f"{name}: {error}", kind))
