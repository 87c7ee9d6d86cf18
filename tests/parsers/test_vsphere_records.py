"""The typed record checks behind vsphere_vm / vsphere_perf captures and the fleet snapshot: the
one-pass check of a flat list must accept exactly what the item-by-item check accepts."""

from __future__ import annotations

import typing
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from esxdiag.errors import ParseError
from esxdiag.parsers.numbers import U64_MAX
from esxdiag.parsers.vsphere import _converter, build_record


@dataclass(frozen=True)
class Series:
    values: tuple[int | None, ...]
    names: tuple[str, ...]


def item_by_item(values: list, item_type) -> tuple:
    """The precise path alone: every item through its own converter."""
    convert = _converter(item_type)
    return tuple(convert(v, f"values[{i}]") for i, v in enumerate(values))


ITEMS = st.one_of(st.none(), st.booleans(), st.integers(min_value=-3, max_value=U64_MAX + 3),
                  st.sampled_from([0, 1, U64_MAX, U64_MAX + 1, -1]), st.floats(allow_nan=True), st.text(max_size=3))


@settings(max_examples=300, derandomize=True)
@given(st.lists(ITEMS, max_size=12))
def test_flat_check_of_counts_agrees_with_the_item_by_item_check(values):
    try:
        expected = item_by_item(values, int | None)
    except ParseError:
        expected = None
    try:
        got = _converter(tuple[int | None, ...])(values, "values")
    except ParseError:
        got = None
    assert got == expected
    if got is not None:
        assert all(type(a) is type(b) for a, b in zip(got, expected))


@settings(max_examples=200, derandomize=True)
@given(st.lists(ITEMS, max_size=12))
def test_flat_check_of_strings_agrees_with_the_item_by_item_check(values):
    try:
        expected = item_by_item(values, str)
    except ParseError:
        expected = None
    try:
        got = _converter(tuple[str, ...])(values, "names")
    except ParseError:
        got = None
    assert got == expected


def test_errors_name_the_field_and_the_item():
    with pytest.raises(ParseError, match=r"values\[2\]: -1 is not a non-negative integer below 2\^64"):
        build_record(Series, {"values": [1, None, -1], "names": []}, "")
    with pytest.raises(ParseError, match=r"names\[0\]: expected str, got int"):
        build_record(Series, {"values": [], "names": [7]}, "")
    with pytest.raises(ParseError, match=r"values\[0\]: expected int, got bool"):
        build_record(Series, {"values": [True], "names": []}, "")
    assert build_record(Series, {"values": [0, None, U64_MAX], "names": ["a"]}, "") == Series((0, None, U64_MAX), ("a",))


@dataclass(frozen=True)
class Scalars:
    count: int
    maybe_count: int | None
    ratio: float
    maybe_ratio: float | None
    name: str
    maybe_name: str | None
    flag: bool


class Text(str):
    pass


SCALARS = st.one_of(ITEMS, st.builds(Text, st.text(max_size=3)))


def field_by_field(data: dict) -> tuple:
    """Every field through its own converter, as a record did before the shortcut for plain values."""
    hints = typing.get_type_hints(Scalars)
    return tuple(_converter(hints[name])(data[name], name) for name in hints)  # in field order: the first error


@settings(max_examples=400, derandomize=True)
@given(st.fixed_dictionaries({name: SCALARS for name in Scalars.__annotations__}))
def test_a_record_keeps_plain_values_exactly_as_the_field_converters_would(data):
    try:
        expected = field_by_field(data)
    except ParseError as exc:
        expected = str(exc)
    try:
        record = build_record(Scalars, data, "")
        got = tuple(getattr(record, name) for name in Scalars.__annotations__)
    except ParseError as exc:
        got = str(exc)
    assert got == expected
    if not isinstance(got, str):
        assert [type(v) for v in got] == [type(v) for v in expected]  # 3 for a float field: 3.0
