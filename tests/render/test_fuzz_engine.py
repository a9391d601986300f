"""Property: whatever a Python caller hands to :func:`apiserver.expand`, it gets an expanded VM or an
:class:`ExpandError` carrying a clean 400/422 Status, within a bounded time, and its inputs untouched.

Inputs are the golden conformance cases, mutated by hypothesis (tests/support/fuzzing.py): members dropped,
replaced with odd values (huge numbers, NaN, odd strings, wrong types, 20,000-deep nesting, values
only Python has), duplicated, renamed, grafted from elsewhere. Regressions found by fuzzing are the
``@example`` cases below, plus whatever hypothesis keeps in tests/fuzz_regressions/.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

from apiserver import ExpandError, expand
from apiserver.http.media import JSON, YAML, encode
from apiserver.render.kubernetes.fieldvalidation import LEVELS
from tests.support.conformance import Case, error_matches
from tests.support.fuzzing import (
    case,
    case_paths,
    check_status,
    clone,
    count,
    fuzz,
    mutated,
    needs_cases,
    same,
    size_of,
    walk,
)

TARGET = "engine: expand()"


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


@st.composite
def inputs(draw: st.DrawFn) -> dict[str, Any]:
    """A conformance case's input with one of its parts (or all) mutated, and random options."""
    path = draw(case_paths)
    golden = case(path)
    given_kubevirt = golden.input.get("kubevirt")
    parts: dict[str, Any] = {
        "vm": golden.input["vm"],
        "objects": golden.input["objects"],
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
        "presets": draw(st.booleans()) or golden.id.startswith("presets-"),
        "validate": draw(st.booleans()),
        "field_validation": draw(st.sampled_from(LEVELS)),
    }


@needs_cases
@fuzz(TARGET, ci_examples=600)
@given(inputs())
# A hazard issue 12 names (a ValueError once, not an ExpandError):
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
# Found by this fuzzing:
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
        golden_still_holds(case(inp["case"]))


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
    golden = case(draw(case_paths))
    vm = clone(golden.input["vm"])
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
    return {"vm": vm, "objects": golden.input["objects"], "kubevirt": golden.input.get("kubevirt")}


@needs_cases
@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@fuzz("engine: many bad items", ci_examples=20)
@given(many_bad_items())
def test_many_bad_items_get_a_bounded_status(inp: dict[str, Any]) -> None:
    """However many items are wrong, the Status stays small: the first 100 causes and "N more"."""
    try:
        expand(inp["vm"], inp["objects"], inp["kubevirt"])
    except ExpandError as err:
        assert len(err.causes) <= 101, len(err.causes)
        assert len(orjson.dumps(err.status)) <= 256 * 1024
