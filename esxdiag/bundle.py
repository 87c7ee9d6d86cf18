"""The bundle: raw captures on disk plus manifest.json, the contract between collect and analyze.

Layout (docs/bundle-format.md):
    BUNDLE/manifest.json
    BUNDLE/<target-id>/<spec>[@key=value,...][.s<N>].txt
The writer rewrites manifest.json (atomically) after every capture, so an interrupted
collection still leaves a valid, partial bundle.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from esxdiag import __version__
from esxdiag.errors import BundleError
from esxdiag.manifest import validate
from esxdiag.specs import SPECS

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
MANIFEST_MAX_BYTES = 32 * 2**20
ERROR_KINDS = (
    "timeout", "auth", "host-key", "tls", "refused", "unreachable", "not-found", "ambiguous", "permission",
    "nonzero-exit", "disabled", "powered-off", "interrupted", "skipped", "truncated", "connection-lost", "error",
)
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
UNIQUE_ATTEMPTS = 100  # NAME, NAME-2 .. NAME-100: then the caller is told to clean up or name the output


def utcnow() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def inside(path: Path, root: Path) -> bool:
    """True when the resolved path is strictly below the resolved root (symlinks followed)."""
    return root.resolve() in path.resolve().parents


def read_manifest(mpath: Path) -> Any:
    """manifest.json as JSON: a regular file inside its bundle, of sane size and nesting."""
    try:
        if not mpath.is_file():
            if mpath.exists() or mpath.is_symlink():
                raise BundleError(f"{mpath}: not a regular file")
            raise BundleError(f"{mpath}: missing (a bundle needs a manifest.json: `esxdiag bundle init DIR` infers one for a folder of captures; `esxdiag help bundle-format` shows the format)")
        if not inside(mpath, mpath.parent):
            raise BundleError(f"{mpath}: a symlink out of the bundle")
        if mpath.stat().st_size > MANIFEST_MAX_BYTES:
            raise BundleError(f"{mpath}: larger than {MANIFEST_MAX_BYTES // 2**20} MiB")
        return json.loads(mpath.read_text(encoding="utf-8"))
    except RecursionError:
        raise BundleError(f"{mpath}: JSON nested too deeply") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, over-long integers
        raise BundleError(f"{mpath}: not valid JSON ({exc})") from None


def slug(text: str) -> str:
    return _SLUG.sub("_", text).strip("._") or "_"


def stamp() -> str:
    """Now in UTC, for output names: 20261123T024555Z."""
    return f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}"


def create_unique(parent: str | Path, stem: str, suffix: str = "", directory: bool = True) -> Path:
    """Create parent/STEM+suffix, else STEM-2+suffix, STEM-3 ... exclusively (mkdir, or O_CREAT|O_EXCL
    for a file) and return it: runs started in the same second never share a folder or a file."""
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, UNIQUE_ATTEMPTS + 1):
        path = parent / f"{stem}{'' if n == 1 else f'-{n}'}{suffix}"
        try:
            if directory:
                path.mkdir()
            else:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            continue
        return path
    raise BundleError(f"{parent / stem}{suffix}: taken, and so are -2 .. -{UNIQUE_ATTEMPTS}: remove old runs "
                      "or name the output")


def remove_if_empty(path: Path) -> None:
    """Undo create_unique when the run stopped before writing anything into it."""
    try:
        path.rmdir()
    except OSError:  # not empty (a partial bundle is kept), or already gone
        pass


@dataclass(frozen=True)
class Target:
    id: str
    kind: str  # vcenter, esxi, linux, windows
    address: str | None = None
    vm: str | None = None  # for guests: the VM they belong to

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "address": self.address, "vm": self.vm}


@dataclass(frozen=True)
class Capture:
    spec: str
    target: str
    file: str | None  # relative to the bundle root; None when nothing was written
    params: dict[str, str] = field(default_factory=dict)
    sample: int | None = None
    command: str | None = None
    started: str | None = None
    ended: str | None = None
    rc: int | None = None
    error_kind: str | None = None
    error: str | None = None
    root: Path | None = field(default=None, compare=False, repr=False)
    location: Path | None = field(default=None, compare=False, repr=False)  # set when not under root

    @property
    def ok(self) -> bool:
        return self.error_kind is None and self.file is not None

    @property
    def path(self) -> Path | None:
        if self.location is not None:
            return self.location
        return (self.root / self.file) if (self.root and self.file) else None

    @property
    def time(self) -> datetime | None:
        """When the counters were read: the end of the command if known, else its start."""
        return parse_time(self.ended) or parse_time(self.started)

    def to_json(self) -> dict[str, Any]:
        out = {
            "spec": self.spec, "target": self.target, "file": self.file, "params": self.params,
            "sample": self.sample, "command": self.command, "started": self.started,
            "ended": self.ended, "rc": self.rc, "error_kind": self.error_kind, "error": self.error,
        }
        return out


def capture_filename(spec: str, params: dict[str, str], sample: int | None) -> str:
    name = spec
    if params:
        name += "@" + ",".join(f"{k}={slug(str(v))}" for k, v in sorted(params.items()))
    if sample is not None:
        name += f".s{sample}"
    return name + (".json" if SPECS[spec].target == "vcenter" else ".txt")


class BundleWriter:
    """Writes captures verbatim and keeps manifest.json current after each one."""

    def __init__(self, root: str | Path, window_s: float | None = None, subject_vms: list[str] | None = None):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.manifest: dict[str, Any] = {
            "format_version": FORMAT_VERSION,
            "tool": f"esxdiag {__version__}",
            "created": utcnow(),
            "window_s": window_s,
            "subject": {"vms": list(subject_vms or [])},
            "targets": [],
            "captures": [],
            "notes": [],
        }
        self._flush()

    def add_target(self, target: Target) -> Target:
        if not any(t["id"] == target.id for t in self.manifest["targets"]):
            self.manifest["targets"].append(target.to_json())
            self._flush()
        return target

    def note(self, text: str) -> None:
        self.manifest["notes"].append(text)
        self._flush()

    def set(self, key: str, value: Any) -> None:
        self.manifest[key] = value
        self._flush()

    def failed(self, target: str, why: str) -> None:
        """The run failed on this target (not reached, or its connection lost): analysis gives no
        verdict resting on it."""
        self.manifest.setdefault("failed", []).append({"target": target, "why": why})
        self._flush()

    def output_file(self, spec: str, target: str, params: dict[str, str] | None = None,
                    sample: int | None = None) -> tuple[str, Path]:
        """(relative name, path) where a capture's output is streamed before ``record(written=...)``."""
        if spec not in SPECS:
            raise BundleError(f"unknown spec {spec!r}")
        rel = f"{slug(target)}/{capture_filename(spec, {k: str(v) for k, v in (params or {}).items()}, sample)}"
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        return rel, path

    def record(
        self,
        spec: str,
        target: str,
        output: str | bytes | None,
        *,
        written: str | None = None,
        params: dict[str, str] | None = None,
        sample: int | None = None,
        command: str | None = None,
        started: str | None = None,
        ended: str | None = None,
        rc: int | None = None,
        error_kind: str | None = None,
        error: str | None = None,
    ) -> Capture:
        if spec not in SPECS:
            raise BundleError(f"unknown spec {spec!r}")
        if error_kind is not None and error_kind not in ERROR_KINDS:
            raise BundleError(f"unknown error kind {error_kind!r}")
        params = {k: str(v) for k, v in (params or {}).items()}
        rel = written  # already streamed to output_file()
        if output is not None:
            rel = f"{slug(target)}/{capture_filename(spec, params, sample)}"
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(output if isinstance(output, bytes) else output.encode("utf-8"))
        cap = Capture(spec, target, rel, params, sample, command, started, ended, rc, error_kind, error, self.root)
        self.manifest["captures"].append(cap.to_json())
        self._flush()
        return cap

    def _flush(self) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".manifest.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(self.manifest, fh, indent=1, sort_keys=False)
            fh.write("\n")
        os.replace(tmp, self.root / MANIFEST)


class Bundle:
    """A bundle read back for analysis. ``locations`` maps a capture's ``file`` to where it really
    is when the captures were inferred from several places (a folder and an unpacked tarball)."""

    def __init__(self, root: Path, manifest: dict[str, Any], locations: dict[str, Path] | None = None):
        self.root = root
        self.manifest = manifest
        self.locations = dict(locations or {})
        self.targets = [Target(**{k: t.get(k) for k in ("id", "kind", "address", "vm")}) for t in manifest["targets"]]
        self.captures = [self._capture(i, c) for i, c in enumerate(manifest["captures"])]

    @classmethod
    def load(cls, root: str | Path) -> "Bundle":
        root = Path(root)
        mpath = root / MANIFEST
        if not root.is_dir():
            raise BundleError(f"{root}: not a bundle directory")
        return cls.from_manifest(root, read_manifest(mpath), str(mpath))

    @classmethod
    def from_manifest(cls, root: Path, manifest: Any, where: str,
                      locations: dict[str, Path] | None = None) -> "Bundle":
        if not isinstance(manifest, dict):
            raise BundleError(f"{where}: expected a JSON object")
        version = manifest.get("format_version")
        if version != FORMAT_VERSION:
            raise BundleError(f"{where}: format_version {version!r:.40} is not supported (expected {FORMAT_VERSION})")
        for key in ("targets", "captures"):
            if not isinstance(manifest.get(key), list):
                raise BundleError(f"{where}: '{key}' must be a list")
        validate(manifest, where, ERROR_KINDS, SPECS)
        manifest.setdefault("subject", {"vms": []})
        manifest.setdefault("notes", [])
        return cls(root, manifest, locations)

    def _capture(self, index: int, raw: Any) -> Capture:
        where = f"{self.root / MANIFEST}: captures[{index}]"
        file = raw.get("file")
        location = self.locations.get(file) if file is not None else None  # placed (and checked) by intake
        if file is not None and location is None and not inside(self.root / file, self.root):
            raise BundleError(f"{where}: file {file!r} points outside the bundle")
        return Capture(
            spec=raw["spec"], target=raw["target"], file=file,
            params={k: str(v) for k, v in (raw.get("params") or {}).items()},
            sample=raw.get("sample"), command=raw.get("command"), started=raw.get("started"),
            ended=raw.get("ended"), rc=raw.get("rc"), error_kind=raw.get("error_kind"),
            error=raw.get("error"), root=self.root, location=location,
        )

    @property
    def window_s(self) -> float | None:
        return self.manifest.get("window_s")

    @property
    def subject_vms(self) -> list[str]:
        return list(self.manifest.get("subject", {}).get("vms") or [])

    def target(self, target_id: str) -> Target | None:
        return next((t for t in self.targets if t.id == target_id), None)

    def find(self, spec: str, target: str | None = None, **params: str) -> Iterator[Capture]:
        for cap in self.captures:
            if cap.spec != spec or (target is not None and cap.target != target):
                continue
            if all(cap.params.get(k) == str(v) for k, v in params.items()):
                yield cap
