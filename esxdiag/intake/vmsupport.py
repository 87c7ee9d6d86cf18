"""An ESXi vm-support bundle (directory or .tgz): the text command outputs esxdiag has parsers for,
with large outputs joined from their .FRAG-NNNNN pieces. The VSI dump (commands/vsi_traverse_-s.txt)
is not text: `vsish -c FILE -e get ...` on any ESXi host reads it (docs/bundle-format.md), and those
outputs, placed beside the bundle's folders, are recognised by their content like any other file."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from esxdiag.intake import archive
from esxdiag.intake.found import Found, IntakeError, read_head, under
from esxdiag.intake.sosreport import Derive
from esxdiag.specs import SPECS

COMMANDS = {spec.vm_support_file: name for name, spec in SPECS.items() if spec.vm_support}  # file -> spec
VSI_DUMP = "commands/vsi_traverse_-s.txt"
_FRAG = re.compile(r"^(?P<base>.+\.txt)\.FRAG-(?P<n>\d{1,6})$")
MAX_JOINED = 64 * 2**20


def is_tree(path: Path) -> bool:
    commands = path / "commands"
    return commands.is_dir() and any((commands / name).exists() or any(commands.glob(name + ".FRAG-*"))
                                     for name in COMMANDS)


def is_tarball(path: Path) -> bool:
    name = path.name.lower()
    return archive.is_archive(path) and (name.startswith("esx-") or "vm-support" in name or "vmsupport" in name)


def _base(name: str) -> str:
    m = _FRAG.match(name)
    return m["base"] if m else name


def _wanted(inner: PurePosixPath) -> bool:
    return len(inner.parts) == 2 and inner.parts[0] == "commands" and _base(inner.name) in COMMANDS


def unpack(path: Path, dest: Path, skipped: list[tuple[str, str]]) -> Path:
    tree = archive.unpack(path, dest, _wanted, skipped)
    if not is_tree(tree):
        raise IntakeError(f"{path}: no commands/net-stats_-l.txt or commands/vmware_-vl.txt inside: "
                          "not an ESXi vm-support bundle")
    return tree


def captures(tree: Path, prefix: str, derive: Derive, notes: list[str]) -> list[Found]:
    commands = tree / "commands"
    out = []
    for name, spec in COMMANDS.items():
        whole = commands / name
        frags = sorted(((int(m["n"]), p) for p in commands.glob(name + ".FRAG-*")
                        if p.is_file() and not p.is_symlink() and (m := _FRAG.match(p.name))), key=lambda t: t[0])
        if whole.is_file() and not whole.is_symlink() and not frags:
            rel = under(prefix, f"commands/{name}")
            out.append(Found(rel, whole, spec, prefix, head=read_head(whole, 4096).decode("utf-8", "replace"),
                             origin="vm-support file name"))
        elif frags:
            joined = bytearray()
            for _, piece in frags:
                joined += read_head(piece, MAX_JOINED - len(joined))
            rel, path = derive(under(prefix, f"commands/{name} (joined from {len(frags)} FRAG pieces)"),
                               bytes(joined).decode("utf-8", "replace"))
            out.append(Found(rel, path, spec, prefix, origin="vm-support FRAG pieces, joined in order"))
    if (tree / VSI_DUMP).exists() or any(commands.glob("vsi_traverse_-s.txt.FRAG-*")):
        notes.append(f"{prefix or 'the folder'}: the VSI dump is not text: extract rxSummary, clientStats and rx queue status "
                     "with `vsish -c` on an ESXi host (`esxdiag help bundle-format`) and put the outputs in this folder")
    notes.append(f"{prefix or 'the folder'}: ESXi vm-support bundle read ({len(out)} captures)")
    return out
