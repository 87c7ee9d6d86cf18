"""`esxdiag bundle init DIR` (write the inferred manifest for review) and `esxdiag bundle check DIR`."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from esxdiag.bundle import ERROR_KINDS, MANIFEST, Bundle, read_manifest
from esxdiag.errors import EXIT_BAD_INPUT, EXIT_OK, BundleError, EsxdiagError
from esxdiag.manifest import defects as manifest_defects
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
    check = bsub.add_parser("check", help="validate a bundle: fields, params, files, and every capture parsed as "
                            "analyze parses it; exit 2 listing every defect")
    check.add_argument("dir")
    check.set_defaults(func=cmd_check)


def cmd_init(args: argparse.Namespace) -> int:
    from esxdiag.intake.folder import infer  # intake loads only for the commands that read captures
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
    """Every defect at once: the manifest's fields (each one), then each capture listed and parsed
    with the code `analyze` uses; exit 2 when one is missing or unparseable."""
    from esxdiag.intake.sniff import sniff_file
    folder = Path(args.dir)
    if folder.is_dir() and not (folder / MANIFEST).exists() and not (folder / MANIFEST).is_symlink():
        return _check_loose(folder)
    try:
        bundle = Bundle.load(args.dir)
    except BundleError as exc:
        return _manifest_defects(folder, exc)
    defects, warnings, partial = [], [], []
    for index, cap in enumerate(bundle.captures):
        where = f"captures[{index}] ({kind_words(cap.spec)})"
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
    _parse_every_capture(bundle, defects, warnings, partial)
    if bundle.window_s is None and not any(c.time for c in bundle.captures if c.sample is not None):
        warnings.append("no window_s and no capture times: rates per second cannot be computed")
    for kind, lines in (("defect", defects), ("warning", warnings), ("partial", partial)):
        for line in lines:
            print(f"{kind}: {line}")
    where = Path(args.dir) / MANIFEST
    print(f"{where}: {'DEFECTS' if defects else 'ok'} ({len(bundle.captures)} captures, {len(bundle.targets)} targets"
          f", {len(defects)} defects, {len(warnings)} warnings, {len(partial)} partial captures)")
    if defects:
        print("the bundle format and what each spec holds: esxdiag help bundle-format")
    return EXIT_BAD_INPUT if defects else EXIT_OK


def _manifest_defects(folder: Path, error: BundleError) -> int:
    """A manifest that cannot be loaded: every field defect at once (the captures are read once it loads)."""
    mpath = folder / MANIFEST
    manifest = read_manifest(mpath) if folder.is_dir() else None  # not JSON: that error alone, exit 2
    found = []
    if isinstance(manifest, dict) and all(isinstance(manifest.get(k), list) for k in ("targets", "captures")):
        found = manifest_defects(manifest, str(mpath), ERROR_KINDS, SPECS)
    if not found:
        raise error
    captures = _raw_capture_defects(folder, manifest["captures"])
    for line in found + captures:
        print(f"defect: {line}")
    print(f"{mpath}: DEFECTS ({len(found)} defects in the manifest's fields, {len(captures)} in the captures it "
          "names; fix the fields first: the captures are read again once it loads)")
    print("the bundle format and what each spec holds: esxdiag help bundle-format")
    return EXIT_BAD_INPUT


def _raw_capture_defects(folder: Path, captures: list) -> list[str]:
    """The captures of a manifest that does not load, read as far as their own entries allow: a file listed but
    missing, or one its parser refuses (an entry without a usable spec or file is a field defect already)."""
    from esxdiag.parsers import parse_file
    root = folder.resolve()
    out = []
    for index, cap in enumerate(captures):
        spec, file = (cap.get("spec"), cap.get("file")) if isinstance(cap, dict) else (None, None)
        if spec not in SPECS or not isinstance(file, str) or not file:
            continue
        path = (folder / file).resolve()
        if not path.is_relative_to(root):
            continue  # outside the bundle: never opened
        where = f"captures[{index}] ({kind_words(spec)})"
        if not path.exists():
            out.append(f"{where}: file {file} is listed but missing ({path})")
        elif not path.is_file():
            out.append(f"{where}: {path} is not a regular file")
        else:
            try:
                parse_file(SPECS[spec].parser, path)
            except EsxdiagError as exc:
                out.append(f"{where} {file}: not readable: {exc.one_line()}")
    return out


def _parse_every_capture(bundle: Bundle, defects: list[str], warnings: list[str], partial: list[str]) -> None:
    """Each capture through the readers `analyze` uses (esxdiag.join.readings): unparseable is a
    defect naming file, line and why; no data a warning; read with warnings is listed as partial."""
    from esxdiag.join.readings import Readings
    index = {id(cap): i for i, cap in enumerate(bundle.captures)}
    items = Readings(bundle).coverage()
    for cap, item in zip(bundle.captures, items):
        if not cap.file or cap.path is None or not cap.path.is_file():
            continue
        where = f"captures[{index[id(cap)]}] ({kind_words(cap.spec)}) {cap.file}"
        if item.status == "unparsed":
            defects.append(f"{where}: not readable: {item.why}")
        elif item.status == "no-data":
            warnings.append(f"{where}: no data: {item.why}")
        elif item.status == "partial":
            more = f" (and {len(item.warnings) - 1} more)" if len(item.warnings) > 1 else ""
            partial.append(f"{where}: {item.warnings[0]}{more}")


def kind_words(spec: str) -> str:
    """A spec as the user sees it: the `esxdiag parse` kind, with the manifest's spec name beside it."""
    kind = SPECS[spec].parser if spec in SPECS else spec
    return kind if kind.replace("-", "_") == spec else f"{kind}, manifest spec {spec}"


def _check_loose(folder: Path) -> int:
    """A folder without manifest.json: what `bundle init` would infer (or every question it has),
    and the command that writes the manifest."""
    from esxdiag.intake.folder import infer
    from esxdiag.intake.found import IntakeError
    with tempfile.TemporaryDirectory(prefix="esxdiag-check-") as work:
        try:
            manifest = infer(folder, workdir=Path(work)).manifest
        except IntakeError as exc:
            print(f"defect: {exc.one_line()}")
            print(f"{folder}: no manifest.json, and its captures cannot all be placed: rename the files as said "
                  f"above, then run `esxdiag bundle init {folder}` (or write manifest.json by hand: "
                  "esxdiag help bundle-format)")
            return EXIT_BAD_INPUT
    unused = manifest.get("unused_files") or ()
    for item in unused:
        print(f"warning: {item['file']}: not used ({item['why']})")
    print(f"{folder}: no manifest.json: `esxdiag analyze {folder}` reads it as a folder of captures "
          f"({len(manifest['captures'])} captures and {len(manifest['targets'])} target(s) inferred); "
          f"run `esxdiag bundle init {folder}` to write that manifest for review, then `esxdiag bundle check "
          f"{folder}` again")
    return EXIT_BAD_INPUT
