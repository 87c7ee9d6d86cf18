"""`esxdiag bundle init DIR` (write the inferred manifest for review) and `esxdiag bundle check DIR`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from esxdiag.bundle import MANIFEST, Bundle
from esxdiag.errors import EXIT_BAD_INPUT, EXIT_OK, BundleError
from esxdiag.intake.folder import infer
from esxdiag.intake.sniff import sniff_file
from esxdiag.specs import SPECS


def register(sub) -> None:
    b = sub.add_parser("bundle", help="make or validate a bundle's manifest.json")
    bsub = b.add_subparsers(dest="bundle_command", metavar="ACTION")
    bsub.required = True
    init = bsub.add_parser("init", help="infer manifest.json for a folder of captures and write it for review")
    init.add_argument("dir")
    init.add_argument("--force", action="store_true", help="replace an existing manifest.json")
    init.add_argument("--window", type=float, metavar="SECONDS", help="the window length, when it cannot be inferred")
    init.set_defaults(func=cmd_init)
    check = bsub.add_parser("check", help="validate a bundle: fields, params, files; exit 2 on defects")
    check.add_argument("dir")
    check.set_defaults(func=cmd_check)


def cmd_init(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    target = folder / MANIFEST
    if (target.exists() or target.is_symlink()) and not args.force:
        raise BundleError(f"{target}: exists (check it with 'esxdiag bundle check', or --force to replace it)")
    inference = infer(folder, workdir=None)
    manifest = inference.manifest
    if args.window is not None:
        manifest["window_s"] = args.window
    Bundle.from_manifest(folder, json.loads(json.dumps(manifest)), str(target))  # the same checks as analyze
    tmp = folder / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    tmp.replace(target)
    print(f"wrote {target}: {len(manifest['targets'])} targets, {len(manifest['captures'])} captures, "
          f"window {manifest['window_s'] if manifest['window_s'] else 'unknown'} s")
    for note in manifest["notes"]:
        print(f"  {note}")
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    bundle = Bundle.load(args.dir)  # field defects raise: exit 2 naming the field
    defects, warnings = [], []
    for index, cap in enumerate(bundle.captures):
        where = f"captures[{index}] ({cap.spec})"
        if cap.file is None:
            continue
        path = cap.path
        if path is None or not path.exists():
            defects.append(f"{where}: file {cap.file} is listed but missing ({path})")
        elif not path.is_file():
            defects.append(f"{where}: {path} is not a regular file")
        else:
            kind, sniffed = SPECS[cap.spec].parser, sniff_file(path)
            if sniffed.kinds and kind not in sniffed.kinds:
                warnings.append(f"{where}: {path} looks like {' or '.join(sniffed.kinds)} output, not {kind}")
    ids = {t.id for t in bundle.targets}
    defects += [f"captures[{i}]: target {c.target!r} is not in targets" for i, c in enumerate(bundle.captures)
                if c.target not in ids]
    if bundle.window_s is None and not any(c.time for c in bundle.captures if c.sample is not None):
        warnings.append("no window_s and no capture times: rates per second cannot be computed")
    for line in defects:
        print(f"defect: {line}")
    for line in warnings:
        print(f"warning: {line}")
    where = Path(args.dir) / MANIFEST
    print(f"{where}: {'DEFECTS' if defects else 'ok'} ({len(bundle.captures)} captures, {len(bundle.targets)} targets"
          f", {len(defects)} defects, {len(warnings)} warnings)")
    return EXIT_BAD_INPUT if defects else EXIT_OK
