"""resource.Quantity parsing and printing, pinned to apimachinery v0.34 behaviour."""

from __future__ import annotations

import json
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest

from apiserver.render.kubernetes.quantity import (
    Quantity,
    QuantityError,
    canonical,
    cmp,
    cmp_and_promote,
    format_int,
    parse_quantity,
)
from apiserver.render.kubernetes.quantitymath import readable_bytes
from tests.support import shared
from tests.support.conformance import case_files

FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # re-rendered
        ("1024Mi", "1Gi"),
        ("1.5Gi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("2000M", "2G"),
        ("1000000000", "1G"),
        ("1000", "1k"),
        ("1.5", "1500m"),
        ("0.5", "500m"),
        ("0.1Ki", "102400m"),
        ("2.5Mi", "2560Ki"),
        ("1.5e3", "1500"),
        ("0.5n", "1n"),
        ("1e-10", "1e-9"),
        ("99999999999999999999Ki", "9223372036854775807"),
        ("-99999999999999999999Ki", "-9223372036854775807"),
        ("1000E", "1"),  # apimachinery v0.34: no suffix beyond E, and none is written
        ("10e2", "1e3"),
        ("1024", "1024"),
        ("8Gi", "8Gi"),  # not kept (multiple of 8) but re-renders the same
        ("1048576Ki", "1Gi"),
        ("0.0001Ki", "102400u"),  # BinarySI below 1 switches to DecimalSI
        ("-1.5Gi", "-1536Mi"),
        ("512Ki", "512Ki"),
        ("00", "0"),
        ("0.0", "0"),
        ("  1Gi\u00a0", "1Gi"),  # spaces written as they are in JSON are trimmed
        ("1e-1000000", "1e-9"),
        # kept verbatim
        ("3e9", "3e9"),
        ("966367616", "966367616"),
        ("+1", "+1"),
        ("05", "05"),
        ("1e0", "1e0"),
        ("1E3", "1E3"),
        ("1e+3", "1e+3"),
        ("1.G", "1.G"),
        ("1Gi", "1Gi"),
        ("12Mi", "12Mi"),
        ("1025Mi", "1025Mi"),
        ("0", "0"),
        ("64M", "64M"),
        ("500m", "500m"),
        ("1.5k", "1500"),  # scale 2 is not a multiple of 3: rendered
        # parser quirks: an empty number is zero
        ("Ki", "0"),
        ("-", "0"),
        (".", "0"),
    ],
)
def test_canonical_text(text: str, expected: str) -> None:
    assert canonical(text) == expected
    assert parse_quantity(text).canonical() == expected


@pytest.mark.parametrize(("number", "expected"), [(1.5, "1500m"), (2, "2"), (1024, "1024"), (0, "0")])
def test_json_numbers_parse_from_their_text(number: float, expected: str) -> None:
    assert canonical(number) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", FORMAT_WRONG),
        ("   ", FORMAT_WRONG),
        ("abc", FORMAT_WRONG),
        ("1.5.5", FORMAT_WRONG),
        ("1Gi ", None),  # trailing space is trimmed: valid
        ("1 Gi", FORMAT_WRONG),
        # JSON escapes a tab: UnmarshalJSON parses the raw \t, and Go's encoder escapes U+2028 too
        ("\t1Gi", FORMAT_WRONG),
        ("1Gi\n", FORMAT_WRONG),
        ("1Gi\u2028", FORMAT_WRONG),
        ("1e", "unable to parse quantity's suffix"),
        ("1ki", "unable to parse quantity's suffix"),
        ("1Gib", FORMAT_WRONG),
        ("1e99999999999999999999", "unable to parse quantity's suffix"),
        (".e-10", "unable to parse numeric part of quantity"),
        ("Pi", "unable to parse numeric part of quantity"),
        ("\uff11", FORMAT_WRONG),  # a non-ASCII digit is not a digit for Go
    ],
)
def test_errors(text: str, message: str | None) -> None:
    if message is None:
        parse_quantity(text)
        return
    with pytest.raises(QuantityError) as err:
        parse_quantity(text)
    assert str(err.value) == message


@pytest.mark.parametrize("value", [True, False, None, {}, []])
def test_non_string_non_number_is_a_format_error(value: Any) -> None:
    with pytest.raises(QuantityError, match="quantities must match"):
        parse_quantity(value)
    with pytest.raises(QuantityError):
        canonical(value)


def test_values_and_formats() -> None:
    q = parse_quantity("1.5Gi")
    assert q.value == Fraction(3 * 2**29)
    assert q.format == "BinarySI"
    assert q.kept is None
    assert parse_quantity("1G").format == "DecimalSI"
    assert parse_quantity("1e3").format == "DecimalExponent"
    assert parse_quantity("1.5").value == Fraction(3, 2)
    assert parse_quantity("-2k").value == -2000
    assert parse_quantity("0").is_zero() and parse_quantity("0Mi").is_zero()
    assert not parse_quantity("1n").is_zero()


@pytest.mark.parametrize(
    ("text", "ceil", "milli"),
    [
        ("1", 1, 1000),
        ("1.5", 2, 1500),
        ("100m", 1, 100),
        ("1n", 1, 1),
        ("1Gi", 2**30, 2**30 * 1000),
        ("2.5Gi", 5 * 2**29, 5 * 2**29 * 1000),
        ("0", 0, 0),
        ("-1.5", -2, -1500),  # fast path rounds away from zero
        # inf.Dec values truncate, then add one when inexact: -1e-19 -> -1n -> 1, -1.5 -> 0
        ("-0.0000000000000000001", 1, 1),
        ("-1.50000000000000000000", 0, -1500),
        # Beyond int64 apimachinery neither saturates nor fails (the figures are Go's, v0.34.2):
        ("1e30", 0, 0),  # int64 amount, scale 30: the multiplication loop gives 0
        ("1e19", 0, 0),
        ("999999999999999999k", 3875820019684211736, 2003764205205896640),  # scale 3: wraps
        ("10000000000000000000", -8446744073709551616, 1864712049423024128),  # inf.Dec: wraps
        ("123456789012345678901234567890", -4362896299872285998, 8982045596877734992),
        # BinarySI capped at 2**63-1, fractions too (the Dec then has scale 0)
        ("892901702192991641.748638876442Ki", 2**63 - 1, -1000),
        ("-6862452213369916783506880.Ki", -(2**63) + 1, 1000),
        # More of Go's figures (v0.34.2): the slow path's truncating division, 10**-22 below -1.5
        ("-1.5000000000000000000001", 0, -1499),
        ("1e20", 0, 0),  # an int64 amount scaled up by 10 at a time is 0 beyond int64 ...
        # ... by 1000 (MilliValue of a mega amount) it wraps
        ("107453132456M", 107453132456000000, -3227331986257309696),
        # an inf.Dec keeps big.Int.Int64's low 64 bits
        ("1000000000000000000000000000000", 5076944270305263616, 4089650035136921600),
        ("9223372036854775808", -(2**63), 0),
        # BinarySI is capped at 2**63-1, a Dec at scale 0 whose MilliValue wraps
        ("16Ei", 2**63 - 1, -1000),
        ("-16Ei", -(2**63 - 1), 1000),
    ],
)
def test_value_ceil(text: str, ceil: int, milli: int) -> None:
    q = parse_quantity(text)
    assert q.value_ceil() == ceil
    assert q.milli_value_ceil() == milli


def test_comparisons() -> None:
    p = parse_quantity
    assert p("2G") < p("2Gi")
    assert cmp(p("2G"), p("2Gi")) == -1
    assert cmp(p("2Gi"), p("2G")) == 1
    assert cmp(p("1Gi"), p("1024Mi")) == 0
    assert p("1Gi") == p("1024Mi") and hash(p("1Gi")) == hash(p("1073741824"))
    assert p("1000m") == p("1")
    assert p("-1") < p("0") < p("1n")
    assert p("-2") < p("-1")
    assert p("1e2000000000") > p("99999999999999999999Ki")
    assert p("1.5") >= p("1500m") and p("1.5") <= p("1500m")
    assert cmp(p("999"), p("1k")) == -1
    assert cmp(p("1001"), p("1k")) == 1


@pytest.mark.parametrize(
    ("receiver", "other", "order", "before", "after"),
    [
        # (Value, MilliValue) before and after q.Cmp(y), Go's figures (apimachinery v0.34, KubeVirt's vendor)
        ("10E", "18446744073709551616", -1, (0, 0), (-8446744073709551616, 0)),
        ("100E", "1e-10", 1, (0, 0), (7766279631452241920, 0)),
        ("100E", "9.223372036854775807e18", 1, (0, 0), (7766279631452241920, 0)),
        ("-1500m", "18446744073709551616", -1, (-2, -1500), (0, -1500)),
        ("1Gi", "18446744073709551616", -1, (1073741824, 1073741824000), (1073741824, 1073741824000)),
    ],
)
def test_cmp_against_a_dec_promotes_the_receiver(
    receiver: str, other: str, order: int, before: tuple[int, int], after: tuple[int, int]
) -> None:
    q, y = parse_quantity(receiver), parse_quantity(other)
    assert (q.value_ceil(), q.milli_value_ceil()) == before
    result, promoted = cmp_and_promote(q, y)
    assert result == order == cmp(q, y)
    assert (promoted.value_ceil(), promoted.milli_value_ceil()) == after
    assert promoted == q and promoted.canonical() == q.canonical() == receiver  # value and text unchanged
    assert promoted.internal is None and not promoted.go_equal(q)
    assert cmp_and_promote(y, q)[1] is y  # a Dec stays as it is; y, passed by value, is never changed


def test_cmp_of_two_int64_amounts_changes_nothing() -> None:
    q = parse_quantity("10E")
    assert cmp_and_promote(q, parse_quantity("20E")) == (-1, q)
    assert cmp_and_promote(q, parse_quantity("20E"))[1] is q
    assert q.value_ceil() == 0


def test_go_equal_models_struct_equality() -> None:
    p = parse_quantity
    assert p("8192Mi").go_equal(p("8Gi"))  # same int64 amount, neither keeps text
    assert p("1024Mi").go_equal(p("1048576Ki"))
    assert p("1Gi").go_equal(p("1Gi"))
    assert p("64M").go_equal(p("64M"))
    assert not p("1024Mi").go_equal(p("1Gi"))  # "1Gi" keeps its text
    assert not p("1000M").go_equal(p("1G"))
    assert not p("3072Mi").go_equal(p("3Gi"))
    assert not p("1.5Gi").go_equal(p("1.5Gi"))  # slow path: distinct inf.Dec pointers
    assert not p("1Pi").go_equal(p("1Pi"))
    assert not p("1000").go_equal(p("1e3"))  # different format
    assert p("1000").go_equal(p("1000"))
    assert not p("1000m").go_equal(p("1"))  # different scale


def test_format_int() -> None:
    assert format_int(966367616, "BinarySI") == "966367616"
    assert format_int(805306368, "BinarySI") == "768Mi"
    assert format_int(435200000, "DecimalSI") == "435200k"
    assert format_int(0, "BinarySI") == "0"
    assert format_int(1000, "BinarySI") == "1k"  # below 1024: DecimalSI rendering
    assert format_int(2**30, "BinarySI") == "1Gi"
    assert format_int(3 * 10**9, "DecimalExponent") == "3e9"
    assert format_int(10**21, "DecimalSI") == "1"
    q = Quantity.from_int(805306368, "BinarySI")
    assert q.canonical() == "768Mi" and q.go_equal(parse_quantity("768Mi"))  # 768: multiple of 8, not kept
    assert q.go_equal(parse_quantity("786432Ki"))
    assert not Quantity.from_int(2**30, "BinarySI").go_equal(parse_quantity("1Gi"))


def test_canonical_is_a_fixed_point_of_its_own_output() -> None:
    for text in ["1024Mi", "1.5Gi", "0.1Ki", "1e-10", "1.5e3", "99999999999999999999Ki", "1000E", "10e2"]:
        once = canonical(text)
        assert canonical(once) == once


# --- corpus ------------------------------------------------------------------------------------------

QUANTITY_TYPE = "k8s.io/apimachinery/pkg/api/resource.Quantity"


def _quantity_strings(types: dict[str, Any], ref: dict[str, Any], value: Any) -> Iterator[str]:
    """Every Quantity value in ``value``, found by following the Go type description."""
    if value is None:
        return
    if ref.get("type") == QUANTITY_TYPE:
        yield value
        return
    kind = ref["kind"]
    if kind == "struct":
        entry = types[ref["type"]]
        for member in entry.get("jsonFields", ()):
            if member["json"] in value:
                yield from _quantity_strings(types, member, value[member["json"]])
    elif kind == "slice":
        for item in value:
            yield from _quantity_strings(types, ref["elem"], item)
    elif kind == "map":
        for item in value.values():
            yield from _quantity_strings(types, ref["elem"], item)
    elif "underlying" in types.get(ref.get("type", ""), {}):
        yield from _quantity_strings(types, types[ref["type"]]["underlying"], value)


@shared.needs_shared(shared.CASES_DIR)
@shared.needs_shared(shared.TYPES_DIR)
def test_corpus_quantities_are_fixed_points() -> None:
    gotypes = json.loads((shared.TYPES_DIR / "go-json-fields.json").read_text())
    types = gotypes["types"]
    root = {"kind": "struct", "type": gotypes["roots"]["VirtualMachine"]}
    seen = 0
    for path in case_files():
        case = json.loads(path.read_text())
        expanded = case["expected"].get("expanded")
        if expanded is None:
            continue
        for text in _quantity_strings(types, root, expanded):
            seen += 1
            assert canonical(text) == text, (path.name, text)
    assert seen > 1000


# --- numbers longer than Python converts at once (4,300 digits) ---------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1" + "0" * 5000, "100"),  # 1e5000 as DecimalSI: beyond E Go writes no suffix
        ("12345" + "0" * 4990, "123450"),
        (10**5000, "100"),  # a JSON number: Go parses its digits
        (-(10**5000), "-100"),
        ("1" + "0" * 5000 + "Ki", "9223372036854775807"),  # BinarySI is capped at 2**63-1
        ("0." + "0" * 5000 + "1", "1n"),  # rounded up to a nano
    ],
    ids=["1e5000", "12345e4990", "int-1e5000", "int-minus-1e5000", "1e5000Ki", "tiny"],
)
def test_long_numbers_parse_like_go(value: str | int, expected: str) -> None:
    assert canonical(value) == expected


@pytest.mark.parametrize(
    "value", ["12345" * 1000, 7**6000, "1." + "3" * 4001], ids=["text", "int", "fraction"]
)
def test_more_significant_digits_than_we_hold_is_a_quantity_error(value: str | int) -> None:
    with pytest.raises(QuantityError, match="at most 4000 significant digits"):
        parse_quantity(value)


def test_an_exponent_beyond_int64_is_refused_without_converting_it() -> None:
    with pytest.raises(QuantityError, match="suffix"):
        parse_quantity("1e" + "9" * 5000)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("4Gi", "4Gi"),
        ("4294967296", "4Gi"),
        ("444Mi", "444Mi"),
        ("1410731712", "1346Mi"),  # 1345.375Mi, rounded up
        ("1G", "954Mi"),
        ("1500", "2Ki"),
        ("512", "512"),
        ("0", "0"),
        ("not a quantity", "not a quantity"),
    ],
)
def test_readable_bytes_is_a_binary_unit_rounded_up(text: str, shown: str) -> None:
    assert readable_bytes(text) == shown
