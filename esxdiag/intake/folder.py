"""A plain folder of captures -> an inferred manifest: each file's kind from its content, sub-folders
and sosreport / vm-support trees as machines, then params, targets and sample order (targets.py,
order.py). Nothing is written into the folder; unpacked or derived files go to ``workdir``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from esxdiag.bundle import FORMAT_VERSION, MANIFEST, inside, slug
from esxdiag.errors import EsxdiagError
from esxdiag.intake import names, sosreport, vmsupport
from esxdiag.intake.found import Found, IntakeError, Questions, read_head
from esxdiag.intake.order import order_samples
from esxdiag.intake.sniff import netstat_spec, sniff_file, text_spec
from esxdiag.intake.targets import assign_targets
from esxdiag.parsers import parse_file
from esxdiag.specs import SPECS

MAX_FILES = 5000
DERIVED = ".esxdiag-derived"
MAX_DEPTH = 8
_SKIP_NAMES = {MANIFEST, "report.html", "report.json", "README.md", "README.txt"}
_BY_KIND = {spec.parser: name for name, spec in reversed(SPECS.items())}  # kind -> its first spec


@dataclass
class Inference:
    manifest: dict
    locations: dict[str, Path]  # logical file -> real path, for files not under the folder itself


def infer(folder: Path, workdir: Path | None, archives: tuple[Path, ...] = ()) -> Inference:
    folder = Path(folder)
    if not folder.is_dir():
        raise IntakeError(f"{folder}: not a directory")
    found: list[Found] = []
    skipped: list[tuple[str, str]] = []
    notes: list[str] = []
    trees = _trees(folder)
    walked = [(a.name, a, "") for a in archives] + list(_walk(folder, trees, skipped))
    for rel, path, group in walked:
        module = sosreport if sosreport.is_tarball(path) else vmsupport if vmsupport.is_tarball(path) else None
        if module is not None:  # bundle init unpacks beside the manifest that will name the files
            tree = module.unpack(path, (workdir or folder / DERIVED) / f"unpacked-{slug(rel)}", skipped)
            prefix = rel if workdir is not None else tree.relative_to(folder).as_posix()
            found += module.captures(tree, prefix, _deriver(folder, workdir), notes)
            continue
        item = _sniffed(rel, path, group, skipped)
        if item is not None:
            found.append(item)
    for tree, module in trees.items():
        prefix = "" if tree == folder else tree.relative_to(folder).as_posix()
        found += module.captures(tree, prefix, _deriver(folder, workdir), notes)
    if not found:
        raise IntakeError(f"{archives[0] if archives else folder}: no manifest.json and no recognisable captures"
                          + (f" ({'; '.join(f'{w}: {y}' for w, y in skipped[:5])})" if skipped else "")
                          + " - see `esxdiag help bundle-format`")
    asked: list[str] = []
    targets = assign_targets(found, notes, asked)
    window_s = order_samples(found, notes, asked)
    if asked:  # every file that cannot be placed, in one run
        raise Questions(str(archives[0] if archives else folder), asked)
    manifest = {
        "format_version": FORMAT_VERSION,
        "tool": "inferred by esxdiag from the folder's contents (review before relying on it)",
        "created": None,
        "window_s": window_s,
        "subject": {"vms": []},
        "targets": targets,
        "captures": [_capture(f) for f in sorted(found, key=lambda f: (f.group, f.spec, f.rel))],
        "notes": notes,
        "unused_files": [{"file": where, "why": why} for where, why in skipped],  # shown in the coverage
    }
    locations = {f.rel: f.path for f in found if f.path != folder / f.rel}
    return Inference(manifest, locations)


def _capture(f: Found) -> dict:
    return {"spec": f.spec, "target": f.target, "file": f.rel, "params": f.params,
            "sample": f.sample, "command": None, "started": None, "ended": f.ended, "rc": None,
            "error_kind": None, "error": None}


def _walk(folder: Path, trees: dict, skipped: list[tuple[str, str]]):
    """Files under the folder. A sosreport is read by its own module only; of a vm-support tree only
    the loose files at its top (vsish -c outputs put there) are sniffed."""
    count = 0
    stack = [(folder, 0)]
    while stack:
        directory, depth = stack.pop()
        if trees.get(directory) is sosreport:
            continue
        for entry in sorted(directory.iterdir()):
            rel = entry.relative_to(folder).as_posix()
            if entry.name.startswith(".") or entry.name in _SKIP_NAMES:
                continue
            if entry.is_symlink() and not inside(entry, folder):
                skipped.append((rel, "a link out of the folder"))
                continue
            if entry.is_dir():
                if depth + 1 < MAX_DEPTH and directory not in trees and not entry.is_symlink():
                    stack.append((entry, depth + 1))
                continue
            if not entry.is_file():
                skipped.append((rel, "not a regular file"))
                continue
            count += 1
            if count > MAX_FILES:
                raise IntakeError(f"{folder}: more than {MAX_FILES} files: point esxdiag at the folder of captures")
            yield rel, entry, rel.split("/", 1)[0] if "/" in rel else ""


def _trees(folder: Path) -> dict:
    """The folder itself or its direct sub-folders that are sosreports or vm-support bundles."""
    out = {}
    for candidate in [folder] + sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink()):
        if sosreport.is_tree(candidate):
            out[candidate] = sosreport
        elif vmsupport.is_tree(candidate):
            out[candidate] = vmsupport
    return out


def _deriver(folder: Path, workdir: Path | None):
    """Where files esxdiag makes (joined FRAG pieces, a vCPU count from proc/cpuinfo) are written:
    the work directory for analyze, the folder's .esxdiag-derived/ for bundle init."""
    base = workdir if workdir is not None else folder / DERIVED

    def derive(name: str, content: str) -> tuple[str, Path]:
        path = base / "derived" / name.replace("/", "__") if workdir is not None else base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        return (name if workdir is not None else path.relative_to(folder).as_posix()), path

    return derive


def _unjoined(kind: str, path: Path) -> str:
    """What a capture the analysis does not join says, for the list of unused files: the migrations
    of vCenter events pasted as text (no zone and no window in them: not placed in the window), the
    ports dropping packets in a pasted esxtop network screen (one moment, not the window)."""
    try:
        record = parse_file(kind, path)
    except EsxdiagError:
        return ""
    if kind == "vcenter-events-text":
        moves = [f"{e.vm} {e.source_host} -> {e.host} at {e.time} ({e.type})" for e in record.migrations]
        return (f": it names {len(moves)} migration(s): {'; '.join(moves[:5])}{' ...' if len(moves) > 5 else ''}; "
                "the times carry no zone, so they are not placed in the window (check them against it by hand)"
                if moves else ": it names no VM migration")
    if kind == "esxtop-net-panel":
        dropping = [f"port {p.port_id} ({p.used_by}) %DRPRX {p.dropped_rx_pct:g}" for p in record.ports
                    if p.dropped_rx_pct]
        if "%DRPRX" not in record.columns:
            return ": no %DRPRX column in the paste"
        return (f": one screen, one moment: {'; '.join(dropping[:5])}{' ...' if len(dropping) > 5 else ''} "
                "(capture esxtop -b over the window to have it analysed)" if dropping
                else ": one screen, one moment: no port shows %DRPRX above 0")
    return ""


def _sniffed(rel: str, path: Path, group: str, skipped: list[tuple[str, str]]) -> Found | None:
    sniffed = sniff_file(path)
    if sniffed.why == "empty" and "persist" in rel.rsplit("/", 1)[-1].lower():
        return Found(rel, path, "ring_persistence", group, origin="file name (empty grep output: nothing persists)")
    if sniffed.why:
        skipped.append((rel, sniffed.why))
        return None
    if not sniffed.kinds:
        skipped.append((rel, "not a capture esxdiag reads (no parser kind recognised it)"))
        return None
    if sniffed.kind is None:
        skipped.append((rel, f"ambiguous, looks like {' and '.join(sniffed.kinds)}"))
        return None
    kind = sniffed.kind
    head = read_head(path, 4096).decode("utf-8", "replace")
    named = names.stem(rel).split("@")[0]
    if kind == "text":
        spec = text_spec(head, windows=False)
    elif kind == "netstat":
        spec = netstat_spec(head)
    elif named in SPECS and SPECS[named].parser == kind:
        spec = named  # esxdiag's own file name says which spec of the kind (esxtop_probe, not esxtop_batch)
    elif kind in _BY_KIND:
        spec = _BY_KIND[kind]
    else:
        skipped.append((rel, f"{kind} output is not used by the analysis" + _unjoined(kind, path)))
        return None
    return Found(rel, path, spec, group, head=head)
