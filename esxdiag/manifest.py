"""manifest.json checked field by field before analysis, so a hand-edited or damaged manifest
gives one clear error naming the field instead of a crash or silently wrong joins."""

from __future__ import annotations

from typing import Any

from esxdiag.errors import BundleError

TARGET_KINDS = ("vcenter", "esxi", "linux", "windows")
_OPTIONAL_TEXT = ("command", "started", "ended", "error")


def _fail(where: str, field: str, expected: str, value: Any) -> None:
    raise BundleError(f"{where}: '{field}' must be {expected}, got {type(value).__name__} {value!r:.60}")


def _text_or_null(where: str, field: str, value: Any) -> None:
    if value is not None and not isinstance(value, str):
        _fail(where, field, "a string or null", value)


def _int_or_null(where: str, field: str, value: Any) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        _fail(where, field, "an integer or null", value)


def validate(manifest: dict[str, Any], where: str, error_kinds: tuple[str, ...], specs: dict) -> None:
    subject = manifest.get("subject", {"vms": []})
    if not isinstance(subject, dict) or not isinstance(subject.get("vms", []), list) \
            or not all(isinstance(v, str) for v in subject.get("vms", [])):
        _fail(where, "subject", 'an object {"vms": [names]}', subject)
    window = manifest.get("window_s")
    if window is not None and (not isinstance(window, (int, float)) or isinstance(window, bool) or window <= 0):
        _fail(where, "window_s", "a positive number or null", window)
    if not isinstance(manifest.get("notes", []), list):
        _fail(where, "notes", "a list", manifest.get("notes"))
    ids = set()
    for i, target in enumerate(manifest["targets"]):
        here = f"{where}: targets[{i}]"
        if not isinstance(target, dict):
            _fail(here, "target", "an object", target)
        if not isinstance(target.get("id"), str) or not target["id"]:
            _fail(here, "id", "a non-empty string", target.get("id"))
        if target.get("kind") not in TARGET_KINDS:
            _fail(here, "kind", f"one of {', '.join(TARGET_KINDS)}", target.get("kind"))
        for field in ("address", "vm"):
            _text_or_null(here, field, target.get(field))
        ids.add(target["id"])
    seen: dict[tuple, int] = {}
    for i, cap in enumerate(manifest["captures"]):
        here = f"{where}: captures[{i}]"
        if not isinstance(cap, dict):
            _fail(here, "capture", "an object", cap)
        if cap.get("spec") not in specs:
            raise BundleError(f"{here}: unknown spec {cap.get('spec')!r}")
        if not isinstance(cap.get("target"), str):
            _fail(here, "target", "a target id (string)", cap.get("target"))
        params = cap.get("params") or {}
        if not isinstance(params, dict) or not all(isinstance(v, (str, int)) and not isinstance(v, bool)
                                                   for v in params.values()):
            _fail(here, "params", "an object of strings", params)
        _text_or_null(here, "file", cap.get("file"))
        _int_or_null(here, "sample", cap.get("sample"))
        _int_or_null(here, "rc", cap.get("rc"))
        for field in _OPTIONAL_TEXT:
            _text_or_null(here, field, cap.get(field))
        if cap.get("error_kind") is not None and cap["error_kind"] not in error_kinds:
            _fail(here, "error_kind", f"null or one of {', '.join(error_kinds)}", cap["error_kind"])
        key = (cap["spec"], cap["target"], tuple(sorted((k, str(v)) for k, v in params.items())), cap.get("sample"))
        if key in seen:
            raise BundleError(f"{here}: the same capture as captures[{seen[key]}] (spec, target, params, sample): "
                              "which one to use is ambiguous")
        seen[key] = i
