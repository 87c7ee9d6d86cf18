"""Bring your own captures: a bundle with a manifest, or a plain folder / sosreport / vm-support
bundle (directory or tarball) whose manifest is inferred (folder.py) - in memory for analyze,
written for review by `esxdiag bundle init`."""

from __future__ import annotations

import difflib
import shlex
from pathlib import Path

from esxdiag.bundle import MANIFEST, Bundle
from esxdiag.intake import archive
from esxdiag.intake.folder import infer
from esxdiag.intake.found import IntakeError, Listed

MAX_BUNDLES_LISTED = 20


def open_bundle(source: str | Path, workdir: Path) -> Bundle:
    """The bundle at ``source``: its manifest.json if it has one, else one inferred from what is
    there. ``workdir`` (a temporary directory) receives unpacked archives and derived files."""
    source = Path(source)
    if source.is_dir() and (source / MANIFEST).exists():
        return Bundle.load(source)
    refuse_what_is_not_a_bundle(source)
    if archive.is_archive(source):
        root = workdir / "archive"  # holds nothing: every capture is located in the unpacked copy
        root.mkdir(parents=True, exist_ok=True)
        inference = infer(root, workdir, archives=(source,))
    else:
        inference = infer(source, workdir)
        root = source
    return Bundle.from_manifest(root, inference.manifest, f"{source} (inferred manifest)", inference.locations)


def refuse_what_is_not_a_bundle(source: Path) -> None:
    """One line that says what ``source`` is when it cannot be a bundle: a path that does not exist (with
    the closest names beside it), a manifest.json itself, a folder of bundles (each listed)."""
    if not source.exists():
        siblings = [p.name for p in source.parent.iterdir()] if source.parent.is_dir() else []
        close = difflib.get_close_matches(source.name, siblings, n=3)
        raise IntakeError(f"{source}: no such file or folder"
                          + (f" (did you mean {' or '.join(str(source.parent / c) for c in close)}?)" if close else ""))
    if source.is_file() and source.name == MANIFEST:
        raise IntakeError(f"{source} is a bundle's manifest: pass the folder that holds it "
                          f"(esxdiag analyze {source.parent})")
    if source.is_file() and not archive.is_archive(source):
        raise IntakeError(f"{source}: one file, not a bundle: analyze takes a folder of captures (put the file in "
                          "one) or a sosreport / vm-support tarball; one capture alone: esxdiag parse KIND FILE "
                          "(esxdiag parse --list)")
    if source.is_dir():
        bundles = sorted(str(m.parent.relative_to(source)) for depth in ("*", "*/*")
                         for m in source.glob(f"{depth}/{MANIFEST}"))
        if bundles:
            shown = bundles[:MAX_BUNDLES_LISTED] + ([f"... {len(bundles) - MAX_BUNDLES_LISTED} more"]
                                                     if len(bundles) > MAX_BUNDLES_LISTED else [])
            raise Listed(f"{source} holds {len(bundles)} bundle{'s' * (len(bundles) != 1)}, not one: analyze one of "
                         "them:", [f"esxdiag analyze {shlex.quote(str(source / b))}" if not b.startswith("...") else b
                          for b in shown])
