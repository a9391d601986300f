"""The one reader of JSON/YAML bytes (PUT bodies, the command line, the folder source)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import yaml

from apiserver.documents.reader import (
    MAX_DEPTH,
    Document,
    DocumentError,
    Duplicate,
    KubeDumper,
    alias_budget,
    read_documents,
)


def one(data: bytes | str) -> Any:
    (doc,) = read_documents(data)
    return doc.value


def refused(data: bytes | str) -> DocumentError:
    with pytest.raises(DocumentError) as exc:
        read_documents(data)
    return exc.value


# --- scalars as kubectl (go-yaml v2) reads them ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("y", True),
        ("Yes", True),
        ("on", True),
        ("n", False),
        ("OFF", False),
        ("~", None),
        ("", None),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("0x1F", 31),
        ("0o17", 15),
        ("017", 15),
        ("0b101", 5),
        ("08", 8.0),  # not octal: Go reads it as a float
        ("1_000", 1000),
        ("-9223372036854775808", -(1 << 63)),
        ("18446744073709551615", (1 << 64) - 1),  # uint64
        ("18446744073709551616", 1.8446744073709552e19),  # beyond 64 bits: a float
        ("1" + "0" * 400, "1" + "0" * 400),  # beyond a float: the text
        ("52:54:00:12:34:56", "52:54:00:12:34:56"),  # no sexagesimal numbers
        ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),  # timestamps stay text
        ("=", "="),
        ("yes please", "yes please"),
    ],
)
def test_plain_scalars(text: str, value: Any) -> None:
    got = one(f"v: {text}\n")["v"]
    assert got == value and type(got) is type(value)


def test_tags() -> None:
    doc = one(
        "a: !!binary aGVsbG8=\nb: !!set {x, z}\nc: !!str 12\nd: !!float 1\ne: !custom text\n"
        "f: !!timestamp 2001-01-01\ng: '1'\nh: !!omap [{a: 1}]\n"
    )
    assert doc == {
        "a": "hello",
        "b": {"x": None, "z": None},
        "c": "12",
        "d": 1.0,
        "e": "text",
        "f": "2001-01-01",
        "g": "1",
        "h": [{"a": 1}],
    }
    json.dumps(doc)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: !!int x\n", "document 1, line 1: a: cannot decode `x` as a !!int"),
        ("a: !!binary '!!'\n", "document 1, line 1: a: !!binary value contains invalid base64 data"),
        ("a:\n  b: .nan\n", "document 1, line 2: a.b: .nan is not a JSON number"),
        ("a: [1, -.inf]\n", "document 1, line 1: a[1]: .inf is not a JSON number"),
        ("labels: {~: a}\n", "document 1, line 1: labels: a null mapping key is not supported"),
        ("? [a]\n: 1\n", "document 1, line 1: a mapping key must be a scalar, not a collection"),
        ("a: 1\n---\nb: &x {c: *x}\n", 'document 2, line 3: b.c: anchor "x" value contains itself'),
        ("a: *nope\n", 'document 1, line 1: a: unknown anchor "nope" referenced'),
        ("a: b: c\n", "document 1, line 1: mapping values are not allowed in this context"),
    ],
)
def test_refusals_name_document_line_and_field(text: str, message: str) -> None:
    assert str(refused(text)) == message


def test_scalar_keys_become_strings_as_sigs_k8s_io_yaml_makes_them() -> None:
    assert one("{1: a, true: b, 1.5: c, 1e3: d, 1e6: e, -2: f}") == {
        "1": "a",
        "true": "b",
        "1.5": "c",
        "1000": "d",
        "1e+06": "e",
        "-2": "f",
    }


def test_merge_keys_as_go_yaml_applies_them() -> None:
    doc = one(
        "base: &b {cpu: 1, mem: 2}\nx:\n  <<: *b\n  mem: 3\nz:\n  mem: 4\n  <<: [{mem: 5, io: 6}, *b]\n"
    )
    assert doc["x"] == {"cpu": 1, "mem": 3}
    # A merge sets its keys where it stands (earlier maps of a list win).
    assert doc["z"] == {"mem": 5, "cpu": 1, "io": 6}
    assert read_documents("x:\n  <<: {a: 1}\n  a: 2\n")[0].duplicates == ()
    assert "map merge requires" in str(refused("x:\n  <<: 5\n"))


def test_aliases_are_copies() -> None:
    doc = one("a: &a {x: [1]}\nb: *a\n")
    assert doc == {"a": {"x": [1]}, "b": {"x": [1]}}
    assert doc["a"] is not doc["b"] and doc["a"]["x"] is not doc["b"]["x"]


# --- documents and duplicates ----------------------------------------------------------------------


def test_documents_are_numbered_and_empty_ones_kept() -> None:
    docs = read_documents("---\na: 1\n---\n# nothing\n---\nb: 2\n...\n")
    assert [(d.number, d.value) for d in docs] == [(1, {"a": 1}), (2, None), (3, {"b": 2})]


def test_yaml_duplicates_are_reported_last_one_wins() -> None:
    (doc,) = read_documents("spec:\n  running: true\n  running: false\n  t: {a: 1, a: 2}\n")
    assert doc.value == {"spec": {"running": False, "t": {"a": 2}}}
    assert doc.duplicates == (Duplicate("spec.running", 3), Duplicate("spec.t.a", 4))
    assert doc.duplicates[0].message == 'duplicate field "spec.running"'


@pytest.mark.parametrize(
    "text",
    [
        b'{"spec": {"running": true, "running": false}}',
        b'{"spec": {"running": true,\n "running" : false}}',  # whitespace before the colon
        b'{"spec": {"x": "a\\":b", "running": true, "running": false}}',  # ": inside a string
        b'{"spec": {"x\\\\": 1, "running": true, "running": false}}',  # a key ending in a backslash
    ],
)
def test_json_duplicates_are_reported_last_one_wins(text: bytes) -> None:
    (doc,) = read_documents(text)
    assert doc.value["spec"]["running"] is False
    assert doc.duplicates == (Duplicate("spec.running"),)


@pytest.mark.parametrize(
    "text",
    [
        b'{"a": "x\\": 1", "b": {"c": "\\":"}}',  # escaped quotes before colons inside strings
        b'{\n  "a": "b",\n  "c": "d"\n}\n',
        b'{"a": "\\u0022:"}',
    ],
)
def test_json_without_duplicates_reports_none(text: bytes) -> None:
    assert read_documents(text)[0].duplicates == ()


def test_json_big_integers_are_kept_exactly() -> None:
    big = (1 << 70) + 1
    doc = one(f'{{"fieldsV1": {{"f:x": {big}, "y": -{big}, "z": 1.5e300}}}}'.encode())
    assert doc["fieldsV1"] == {"f:x": big, "y": -big, "z": 1.5e300}
    assert type(doc["fieldsV1"]["f:x"]) is int


def test_json_numbers_beyond_a_float_are_refused() -> None:
    err = refused(b'{"metadata": {"generation": 1' + b"0" * 5000 + b"}}")
    assert "number out of range" in str(err)


def test_json_streams_and_flow_yaml() -> None:
    assert [d.value for d in read_documents(b'{"a": 1}\n{"b": 2}\n')] == [{"a": 1}, {"b": 2}]
    assert one("{a: 1, b: [x]}") == {"a": 1, "b": ["x"]}


def test_broken_json_reports_the_json_error() -> None:
    err = refused(b'{"kind": "A",\n "spec": [1,}\n')
    assert err.line == 2 and err.syntax == "JSON"
    assert str(err) == "line 2: unexpected character, expected a JSON value (column 13)"


def test_large_broken_json_is_not_read_as_yaml_again() -> None:
    data = b'{"a": [' + b"1," * 200_000 + b"}"
    err = refused(data)
    assert err.syntax == "JSON" and "column" in str(err)


# --- bounds --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        "[" * 100_000 + "]" * 100_000,  # libyaml's own composer crashes the process at this depth
        "".join(" " * i + "- \n" for i in range(0, 2 * (MAX_DEPTH + 5), 2)),
        "a: &a " + "[" * 60 + "]" * 60 + "\nb: " + "[" * 50 + "*a" + "]" * 50 + "\n",  # through an alias
    ],
    ids=["flow", "flow-1e5", "block", "alias"],
)
def test_nesting_is_capped(text: str) -> None:
    assert f"nested deeper than {MAX_DEPTH} levels" in str(refused(text))
    assert f"nested deeper than {MAX_DEPTH} levels" in str(refused(text.encode()))


def test_nesting_up_to_the_cap_is_read() -> None:
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert one(deep) is not None
    assert one(deep.encode()) is not None


def test_json_nesting_is_capped_with_the_path() -> None:
    text = '{"metadata": {"managedFields": [{"fieldsV1": ' + '{"f:a": ' * 300 + "{}" + "}" * 300 + "}]}}"
    err = refused(text.encode())
    assert f"nested deeper than {MAX_DEPTH} levels" in str(err)
    assert err.path.startswith("metadata.managedFields[0].fieldsV1.f:a.f:a")


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_alias_bomb_is_refused_quickly() -> None:
    assert len(BOMB) < 500
    started = time.perf_counter()
    err = refused(BOMB)
    assert "too much aliasing" in str(err)
    assert time.perf_counter() - started < 5  # a guard against hanging, not a benchmark


def test_aliases_may_repeat_as_much_as_the_input_holds() -> None:
    block = "{" + ", ".join(f"k{i}: value{i}" for i in range(100)) + "}"
    uses = alias_budget(0) // 1500  # each use costs about 1,400
    ok = f"a: &a {block}\nb: [{', '.join(['*a'] * uses)}]\n"
    assert len(one(ok)["b"]) == uses
    assert "too much aliasing" in str(refused(f"a: &a {block}\nb: [{', '.join(['*a'] * uses * 2)}]\n"))


def test_every_value_is_json() -> None:
    doc = one(b"a: !!binary aGVsbG8=\nb: 2001-12-14\nc: !!set {x}\nd: [1, 2.5, true, null]\n")
    assert json.loads(json.dumps(doc)) == doc


def test_kube_dumper_quotes_what_kubectl_would_misread() -> None:
    value = {"a": "y", "n": "no", "b": "1e3", "c": "0o17", "d": "plain", "e": "<<", "f": ""}
    text = yaml.dump(value, Dumper=KubeDumper, sort_keys=False)
    assert "'y'" in text and "'1e3'" in text and "d: plain" in text
    assert read_documents(text) == [Document(1, value)]


# --- duplicates=False: for a caller that does not judge them (field validation Ignore) ------------------


@pytest.mark.parametrize(
    "text",
    [
        b'{"a": 1, "b": {"c": [1, 2.5, "x"]}}',
        b'{"a": 1, "b": 2, "a": 3}',  # the last value wins, in the first one's place, as with duplicates
        b'{"a": {"k": 1, "k": {"n": 12345678901234567890123}}}',  # an integer beyond 64 bits, exact
        b'{"a": 123456789012345678901234567890}',
        ("[" * 60 + "]" * 60).encode(),  # many openers, within the limit
        b"a: 1\na: 2\n",  # YAML: read as ever
    ],
    ids=["plain", "duplicate", "duplicate-and-big-int", "big-int", "many-openers", "yaml"],
)
def test_without_duplicates_the_values_are_the_same(text: bytes) -> None:
    (with_dups,) = read_documents(text)
    (without,) = read_documents(text, duplicates=False)
    assert without.value == with_dups.value
    assert list(json.dumps(without.value)) == list(json.dumps(with_dups.value))  # member order too
    if text == b'{"a": 1, "b": 2, "a": 3}':
        assert with_dups.duplicates == (Duplicate("a"),) and without.duplicates == ()  # not looked for


def test_without_duplicates_the_limits_hold() -> None:
    deep = ('{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)).encode()
    with pytest.raises(DocumentError, match=f"nested deeper than {MAX_DEPTH} levels"):
        read_documents(deep, duplicates=False)
    with pytest.raises(DocumentError, match="number out of range"):
        read_documents(b'{"a": 1e999}', duplicates=False)
    with pytest.raises(DocumentError) as broken:
        read_documents(b'{"a": 1,', duplicates=False)
    assert broken.value.syntax == "JSON" and "unexpected end of data" in str(broken.value)
