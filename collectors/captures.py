"""Command output into the bundle: each allowlisted command's stdout is streamed into its capture
file (capped, see SshConnection.run_spec) and recorded in the manifest with its outcome; a target
that could not be connected to is recorded as the capture that never ran."""

from __future__ import annotations

from esxdiag import specs
from esxdiag.bundle import ERROR_KINDS, BundleWriter, Capture, utcnow
from esxdiag.collectors.ssh import OnWait, SshConnection
from esxdiag.errors import CollectionError

# a capture that failed this way says its program cannot be used on that target (collectors/preflight.py)
MISSING_KINDS = {"not-found": "not found", "permission": "not allowed to run", "timeout": "did not answer"}


def run_capture(conn: SshConnection, writer: BundleWriter, target_id: str, spec_name: str,
                params: dict | None = None, sample: int | None = None, timeout_s: float | None = None,
                on_wait: OnWait | None = None, max_bytes: int | None = None) -> tuple[Capture, bytes]:
    """Run one spec with its stdout streamed into the bundle (capped) and record it.

    Returns the capture and the output kept (read back from the file; at most the cap). A param
    that fails validation (a host- or guest-supplied name), or whose program the preflight found
    missing (``conn.unavailable``), is recorded as skipped: nothing is sent."""
    params = {k: str(v) for k, v in (params or {}).items()}

    def skipped(why: str) -> tuple[Capture, bytes]:
        now = utcnow()
        return writer.record(spec_name, target_id, None, params=params, sample=sample, started=now, ended=now,
                             error_kind="skipped", error=why), b""

    argv = specs.spec(spec_name).argv
    if argv and argv[0] in conn.unavailable:
        return skipped(conn.unavailable[argv[0]])
    rel, path = writer.output_file(spec_name, target_id, params, sample)
    try:
        with open(path, "wb") as out:
            result = conn.run_spec(spec_name, params, timeout_s, on_wait, out=out, max_bytes=max_bytes)
    except ValueError as exc:
        path.unlink(missing_ok=True)
        return skipped(f"not sent: {exc}")
    keep = result.size > 0 or result.ok
    if not keep:
        path.unlink(missing_ok=True)
    capture = writer.record(spec_name, target_id, None, written=rel if keep else None, params=params,
                            sample=sample, command=result.command, started=result.started, ended=result.ended,
                            rc=result.rc, error_kind=result.error_kind, error=result.error)
    return capture, (path.read_bytes() if keep else b"")


def record_failure(writer: BundleWriter, target_id: str, spec_name: str, params: dict | None,
                   error: CollectionError, sample: int | None = None) -> Capture:
    """Store a capture that never ran because the connection failed (kind from the error)."""
    now = utcnow()
    kind = error.kind if error.kind in ERROR_KINDS else "error"
    return writer.record(spec_name, target_id, None, params=params, sample=sample, started=now, ended=now,
                         error_kind=kind, error=error.one_line())


def mark_missing(conn: SshConnection, writer: BundleWriter, capture: Capture, program: str, where: str,
                 cost: str) -> str | None:
    """When ``capture`` failed because ``program`` is not there, may not be run or hung: mark it
    unavailable on ``conn`` (its later captures are recorded as skipped with this reason, nothing
    sent), note it in the bundle and return the sentence; None for any other outcome."""
    if capture.ok or capture.error_kind not in MISSING_KINDS:
        return None
    why = f"{program} {MISSING_KINDS[capture.error_kind]} on {conn.target} {where}: {cost}"
    conn.unavailable[program] = why
    writer.note(why)
    return why
