"""Bring your own captures: a bundle with a manifest, or a plain folder / sosreport / vm-support
bundle (directory or tarball) whose manifest is inferred (folder.py) - in memory for analyze,
written for review by `esxdiag bundle init`."""

from __future__ import annotations

from pathlib import Path

from esxdiag.bundle import MANIFEST, Bundle
from esxdiag.intake import archive
from esxdiag.intake.folder import infer


def open_bundle(source: str | Path, workdir: Path) -> Bundle:
    """The bundle at ``source``: its manifest.json if it has one, else one inferred from what is
    there. ``workdir`` (a temporary directory) receives unpacked archives and derived files."""
    source = Path(source)
    if source.is_dir() and (source / MANIFEST).exists():
        return Bundle.load(source)
    if archive.is_archive(source):
        root = workdir / "archive"  # holds nothing: every capture is located in the unpacked copy
        root.mkdir(parents=True, exist_ok=True)
        inference = infer(root, workdir, archives=(source,))
    else:
        inference = infer(source, workdir)
        root = source
    return Bundle.from_manifest(root, inference.manifest, f"{source} (inferred manifest)", inference.locations)
