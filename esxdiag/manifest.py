"""manifest.json checked field by field before analysis, so a hand-edited or damaged manifest
gives clear errors naming each field instead of a crash or silently wrong joins (`bundle check`
lists every one at once)."""

from __future__ import annotations

import math
from typing import Any

from esxdiag.errors import BundleError

TARGET_KINDS = ("vcenter", "esxi", "linux", "windows")
_OPTIONAL_TEXT = ("command", "started", "ended", "error")
# params the joins need to place a capture: without them it would silently join nothing
JOIN_PARAMS = ("portset", "port", "queue", "iface")


def _fail(where: str, field: str, expected: str, value: Any) -> None:
    raise BundleError(f"{where}: '{field}' must be {expected}, got {type(value).__name__} {value!r:.60}")


def _text_or_null(where: str, field: str, value: Any) -> None:
    if value is not None and not isinstance(value, str):
        _fail(where, field, "a string or null", value)
    if isinstance(value, str) and "\x00" in value:
        _fail(where, field, "text without NUL bytes", value)


def _relative_file(where: str, value: Any) -> None:
    _text_or_null(where, "file", value)
    if isinstance(value, str) and (not value.strip() or value.startswith(("/", "\\")) or ":" in value[:3]):
        _fail(where, "file", "a path relative to the bundle", value)


def _int_or_null(where: str, field: str, value: Any) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        _fail(where, field, "an integer or null", value)


def validate(manifest: dict[str, Any], where: str, error_kinds: tuple[str, ...], specs: dict) -> None:
    """The first defect, as a BundleError naming the field (and how many more `bundle check` lists)."""
    found = defects(manifest, where, error_kinds, specs)
    if found:
        more = (f" (and {len(found) - 1} more defect{'s' if len(found) > 2 else ''}: `esxdiag bundle check` lists "
                "every one)") if len(found) > 1 else ""
        raise BundleError(found[0] + more)


def defects(manifest: dict[str, Any], where: str, error_kinds: tuple[str, ...], specs: dict) -> list[str]:
    """Every field defect of the manifest at once, each naming its field ("targets" and "captures" are
    lists: checked before). A defect in one field never hides the next field's."""
    found: list[str] = []

    def check(test, *args) -> bool:
        try:
            test(*args)
        except BundleError as exc:
            found.append(str(exc))
            return False
        return True

    check(_subject, where, manifest.get("subject", {"vms": []}))
    check(_window, where, manifest.get("window_s"))
    if not isinstance(manifest.get("notes", []), list):
        check(_fail, where, "notes", "a list", manifest.get("notes"))
    failed = manifest.get("failed", [])
    if not isinstance(failed, list) or not all(isinstance(f, dict) and isinstance(f.get("target"), str)
                                               and isinstance(f.get("why"), str) for f in failed):
        check(_fail, where, "failed", 'a list of {"target": id, "why": text}', failed)
    unused = manifest.get("unused_files", [])
    if not isinstance(unused, list) or not all(isinstance(u, dict) and isinstance(u.get("file"), str)
                                               and isinstance(u.get("why"), str) for u in unused):
        check(_fail, where, "unused_files", 'a list of {"file": text, "why": text}', unused)
    for i, target in enumerate(manifest["targets"]):
        here = f"{where}: targets[{i}]"
        if not isinstance(target, dict):
            check(_fail, here, "target", "an object", target)
            continue
        if not isinstance(target.get("id"), str) or not target["id"]:
            check(_fail, here, "id", "a non-empty string", target.get("id"))
        if target.get("kind") not in TARGET_KINDS:
            check(_fail, here, "kind", f"one of {', '.join(TARGET_KINDS)}", target.get("kind"))
        for field in ("address", "vm"):
            check(_text_or_null, here, field, target.get(field))
    seen: dict[tuple, int] = {}
    for i, cap in enumerate(manifest["captures"]):
        here = f"{where}: captures[{i}]"
        if not isinstance(cap, dict):
            check(_fail, here, "capture", "an object", cap)
            continue
        spec_ok = isinstance(cap.get("spec"), str) or check(_fail, here, "spec", "a spec name (string)",
                                                            cap.get("spec"))
        if spec_ok and cap["spec"] not in specs:
            found.append(f"{here}: unknown spec {cap['spec']!r:.60}")
            spec_ok = False
        if not isinstance(cap.get("target"), str):
            check(_fail, here, "target", "a target id (string)", cap.get("target"))
        params = cap.get("params") or {}
        params_ok = isinstance(params, dict) and all(isinstance(v, str) or (isinstance(v, int) and
                                                     not isinstance(v, bool) and abs(v) < 10 ** 18)
                                                     for v in params.values())
        if not params_ok:
            check(_fail, here, "params", "an object of strings", params)
        elif spec_ok:
            check(_check_params, here, specs[cap["spec"]], params)
        check(_relative_file, here, cap.get("file"))
        check(_int_or_null, here, "sample", cap.get("sample"))
        check(_int_or_null, here, "rc", cap.get("rc"))
        for field in _OPTIONAL_TEXT:
            check(_text_or_null, here, field, cap.get(field))
        if cap.get("error_kind") is not None and cap["error_kind"] not in error_kinds:
            check(_fail, here, "error_kind", f"null or one of {', '.join(error_kinds)}", cap["error_kind"])
        if not (spec_ok and params_ok and isinstance(cap.get("target"), str)):
            continue
        key = (cap["spec"], cap["target"], tuple(sorted((k, str(v)) for k, v in params.items())), cap.get("sample"))
        if key in seen:
            found.append(f"{here}: the same capture as captures[{seen[key]}] (spec, target, params, sample): "
                         "which one to use is ambiguous")
        seen.setdefault(key, i)
    return found


def _subject(where: str, subject: Any) -> None:
    if not isinstance(subject, dict) or not isinstance(subject.get("vms", []), list) \
            or not all(isinstance(v, str) for v in subject.get("vms", [])):
        _fail(where, "subject", 'an object {"vms": [names]}', subject)


def _window(where: str, window: Any) -> None:
    if window is not None and (not isinstance(window, (int, float)) or isinstance(window, bool)
                               or not math.isfinite(window) or window <= 0):
        _fail(where, "window_s", "a finite positive number of seconds or null", window)


def _check_params(where: str, spec: Any, params: dict[str, Any]) -> None:
    """A misspelt param ("q" for "queue") would make the capture join nothing, silently."""
    unknown = sorted(k for k in params if k not in spec.params)
    if unknown:
        expected = ", ".join(spec.params) or "none"
        raise BundleError(f"{where}: params {', '.join(repr(k) for k in unknown)} unknown for {spec.name} "
                          f"(expected: {expected})")
    missing = [k for k in spec.params if k in JOIN_PARAMS and k not in params]
    if missing:
        raise BundleError(f"{where}: params {', '.join(repr(k) for k in missing)} missing for {spec.name}: "
                          "the capture cannot be joined to a vNIC without them")
    for key, value in params.items():
        if "\x00" in str(value):
            _fail(where, f"params.{key}", "text without NUL bytes", value)
