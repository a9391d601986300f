"""Property: whatever a Python caller hands to :func:`apiserver.expand`, it gets an expanded VM or an
:class:`ExpandError` carrying a clean 400/422 Status, within a bounded time, and its inputs untouched.

Inputs are the golden conformance cases, mutated by hypothesis (tests/fuzzing.py): members dropped,
replaced with odd values (huge numbers, NaN, odd strings, wrong types, 20,000-deep nesting, values
only Python has), duplicated, renamed, grafted from elsewhere. Regressions found by fuzzing are the
``@example`` cases below, plus whatever hypothesis keeps in tests/fuzz_regressions/.
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

from apiserver import ExpandError, expand
from apiserver.http.media import JSON, YAML, encode
from apiserver.render.fieldvalidation import LEVELS
from tests.conformance import Case, case_files, error_matches, load
from tests.fuzzing import clone, count, fuzz, mutated, same, size_of, walk

TARGET = "engine: expand()"

_BY_AREA: dict[str, list[Path]] = defaultdict(list)
for _path in case_files():
    _BY_AREA[_path.stem.rsplit("-", 1)[0]].append(_path)
AREAS = sorted(_BY_AREA)

_KUBEVIRT = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "KubeVirt",
    "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
    "spec": {
        "configuration": {
            "architectureConfiguration": {"defaultArchitecture": "amd64"},
            "cpuRequest": "100m",
            "developerConfiguration": {"cpuAllocationRatio": 10, "memoryOvercommit": 150},
        }
    },
}

# Python's own error texts: one in a Status means an exception was dressed up, not handled.
PYTHON_INTERNALS = re.compile(
    r"Traceback|object has no attribute|NoneType|unhashable type|not subscriptable|not iterable"
    r"|invalid literal for|Exceeds the limit \(\d+ digits\)|maximum recursion depth|takes \d+ positional"
    r"|unsupported operand|can't multiply|object of type|must be str, not|list indices must"
)


@cache
def _case(path: Path) -> Case:
    return load(path)


@st.composite
def inputs(draw: st.DrawFn) -> dict[str, Any]:
    """A conformance case's input with one of its parts (or all) mutated, and random options."""
    area = draw(st.sampled_from(AREAS))
    path = draw(st.sampled_from(_BY_AREA[area]))
    case = _case(path)
    given_kubevirt = case.input.get("kubevirt")
    parts: dict[str, Any] = {
        "vm": case.input["vm"],
        "objects": case.input["objects"],
        "kubevirt": given_kubevirt,
    }
    which = draw(st.sampled_from(["vm", "vm", "vm", "objects", "objects", "kubevirt", "all"]))
    python_values = draw(st.booleans())
    for part in ("vm", "objects", "kubevirt") if which == "all" else (which,):
        start = parts[part]
        if start is None:
            start = draw(st.sampled_from([_KUBEVIRT, _KUBEVIRT["spec"]["configuration"]]))
        parts[part] = draw(mutated(start, python_values=python_values))
    if not isinstance(parts["objects"], list):
        parts["objects"] = [parts["objects"]]
    return {
        "case": path,
        **parts,
        "presets": draw(st.booleans()) or area == "presets",
        "validate": draw(st.booleans()),
        "field_validation": draw(st.sampled_from(LEVELS)),
    }


def check_status(status: dict[str, Any], input_size: int) -> None:
    """A failure is a Kubernetes Status a client can act on, not much bigger than what was sent."""
    assert status["kind"] == "Status" and status["apiVersion"] == "v1" and status["status"] == "Failure"
    assert status["code"] in (400, 422), status
    assert status["reason"] == {400: "BadRequest", 422: "Invalid"}[status["code"]]
    message = status["message"]
    assert isinstance(message, str) and message
    assert not PYTHON_INTERNALS.search(message), message
    for cause in status.get("details", {}).get("causes", []):
        assert set(cause) <= {"reason", "message", "field"}, cause
        assert all(isinstance(v, str) for v in cause.values()), cause
        assert not PYTHON_INTERNALS.search(cause.get("message", "")), cause
    encoded = orjson.dumps(status)
    assert len(encoded) <= 4 * input_size + 65_536, f"{len(encoded)} bytes for an input of {input_size}"


@fuzz(TARGET, ci_examples=600)
@given(inputs())
# Regressions fuzzing found (each was a Python error, not an ExpandError):
@example(  # a non-string key inside an object
    {
        "vm": {"kind": "VirtualMachine", "spec": {"template": {"spec": {}}}},
        "objects": [{"kind": "VirtualMachineInstancetype", "metadata": {1: "a"}}],
        "kubevirt": None,
        "presets": False,
        "validate": False,
        "field_validation": "Strict",
    }
)
@example(  # an item of objects that is null: the message said "a NoneType"
    {
        "vm": {"kind": "VirtualMachine", "spec": {"template": {"spec": {}}}},
        "objects": [None],
        "kubevirt": None,
        "presets": False,
        "validate": False,
        "field_validation": "Ignore",
    }
)
def test_expand_gives_a_vm_or_an_expand_error(inp: dict[str, Any]) -> None:
    count(TARGET)
    before = clone(inp)
    try:
        result = expand(
            inp["vm"],
            inp["objects"],
            inp["kubevirt"],
            presets=inp["presets"],
            validate=inp["validate"],
            field_validation=inp["field_validation"],
        )
    except ExpandError as err:
        event(f"refused {err.code}")
        check_status(err.status, size_of(inp))
    else:
        event("expanded")
        assert isinstance(result.vm, dict)
        for media_type in (JSON, YAML):  # what the server would send
            assert encode(result.vm, media_type)
        assert all(isinstance(w, str) for w in result.warnings)
    assert same(inp, before), "expand() changed its input"
    if "case" in inp:
        golden_still_holds(_case(inp["case"]))


def golden_still_holds(case: Case) -> None:
    """The unmutated case still expands as KubeVirt does: nothing a hostile input did stayed behind
    (a cache, a shared default changed in place)."""
    inp, exp = case.input, case.expected
    try:
        result = expand(
            inp["vm"],
            inp["objects"],
            inp.get("kubevirt"),
            presets=case.id.startswith("presets-"),
            field_validation="Ignore",
        )
    except ExpandError as err:
        assert "error" in exp and error_matches(exp, err.message), err.status
    else:
        assert result.vm == exp["expanded"]


def test_a_null_object_is_named_in_json_words() -> None:
    """Found by fuzzing: Python's ``NoneType`` leaked into the message."""
    vm = {"kind": "VirtualMachine", "spec": {"template": {"spec": {}}}}
    for value, named in (
        (None, "null"),
        (1, "a number"),
        ("x", "a string"),
        ([], "a list"),
        (True, "a boolean"),
    ):
        with pytest.raises(ExpandError) as caught:
            expand(vm, [{"kind": "X"}, value])
        assert caught.value.code == 400
        assert caught.value.message == f"objects[1]: expected an object (a mapping), got {named}"


@st.composite
def many_bad_items(draw: st.DrawFn) -> dict[str, Any]:
    """A case's VM with one of its lists (volumes, disks, interfaces, networks, ...) holding hundreds
    to thousands of copies of one mutated item: each copy a cause of its own."""
    case = _case(draw(st.sampled_from(_BY_AREA[draw(st.sampled_from(AREAS))])))
    vm = clone(case.input["vm"])
    lists = [
        (path, node)
        for path, node in walk(vm)
        if isinstance(node, list) and node and isinstance(node[0], dict) and len(path) > 2
    ]
    if not lists:
        vm["spec"]["template"]["spec"]["volumes"] = [{"name": "a"}]
        lists = [((), vm["spec"]["template"]["spec"]["volumes"])]
    _, target = draw(st.sampled_from(lists))
    item = draw(mutated(target[0], deep=False))
    target[:] = [clone(item) for _ in range(draw(st.sampled_from([500, 2_000, 5_000])))]
    return {"vm": vm, "objects": case.input["objects"], "kubevirt": case.input.get("kubevirt")}


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@pytest.mark.xfail(
    strict=True,
    reason="issue 12 item 3 (error amplification): causes are not capped yet; the hardening branch caps "
    "them at 100 - remove this mark when it lands",
)
@fuzz("engine: many bad items", ci_examples=20, keep_failures=False)  # a known failure, not a regression
@given(many_bad_items())
def test_many_bad_items_get_a_bounded_status(inp: dict[str, Any]) -> None:
    """However many items are wrong, the Status stays small: the first 100 causes and "N more"."""
    try:
        expand(inp["vm"], inp["objects"], inp["kubevirt"])
    except ExpandError as err:
        assert len(err.causes) <= 101, len(err.causes)
        assert len(orjson.dumps(err.status)) <= 256 * 1024
