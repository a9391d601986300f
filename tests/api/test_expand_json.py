"""``apiserver.expand_json``: a VM as JSON (or YAML) text in, the expanded VM as the server's compact JSON
out, with every answer ``expand_vm`` gives for the same VM, and the reader's refusals for bad text."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from apiserver import Expander, ExpandError, ExpandWarning, expand_json, expand_vm
from apiserver.documents.manifests import read_manifest_paths

ROOT = Path(__file__).resolve().parents[2]
OBJECTS = [obj for _, obj in read_manifest_paths([ROOT / "examples"])]
VMS = {o["metadata"]["name"]: o for o in OBJECTS if o["kind"] == "VirtualMachine"}
KUBEVIRT = next(o for o in OBJECTS if o["kind"] == "KubeVirt")


@pytest.mark.parametrize("name", sorted(VMS))
@pytest.mark.parametrize("as_text", [False, True], ids=["bytes", "str"])
def test_the_answer_is_expand_vms_as_compact_json(name: str, as_text: bool) -> None:
    vm = VMS[name]
    expected = orjson.dumps(expand_vm(vm, OBJECTS, KUBEVIRT))
    document: bytes | str = orjson.dumps(vm)
    if as_text:
        document = orjson.dumps(vm, option=orjson.OPT_INDENT_2).decode()
    assert expand_json(document, OBJECTS, KUBEVIRT) == expected
    assert Expander(OBJECTS, KUBEVIRT).expand_json(document) == expected


def test_yaml_text_is_read_as_the_server_reads_a_body() -> None:
    vm = VMS["fedora"]
    text = yaml.safe_dump(vm, sort_keys=False)
    assert orjson.loads(expand_json(text, OBJECTS)) == expand_vm(vm, OBJECTS)


def test_the_errors_are_expand_vms() -> None:
    vm = {**VMS["fedora"], "spec": {**VMS["fedora"]["spec"], "instancetype": {"name": "nope"}}}
    with pytest.raises(ExpandError) as by_dict:
        expand_vm(vm, OBJECTS)
    with pytest.raises(ExpandError) as by_text:
        expand_json(orjson.dumps(vm), OBJECTS)
    assert by_text.value.code == 422
    assert by_text.value.status == by_dict.value.status


def _duplicated() -> bytes:
    text = orjson.dumps(VMS["fedora"])
    # "running" given twice, as a hand-edited file may: the last one wins, as in Go.
    return text.replace(b'"spec":{', b'"spec":{"running":true,"running":false,', 1)


def test_a_field_given_twice_is_judged_as_the_server_judges_it() -> None:
    with pytest.raises(ExpandError) as err:
        expand_json(_duplicated(), OBJECTS)
    assert err.value.code == 422 and 'duplicate field "spec.running"' in err.value.message
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = orjson.loads(expand_json(_duplicated(), OBJECTS, field_validation="Warn"))
    assert [str(w.message) for w in caught if w.category is ExpandWarning] == [
        'duplicate field "spec.running"'
    ]
    assert out["spec"]["running"] is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert orjson.loads(expand_json(_duplicated(), OBJECTS, field_validation="Ignore")) == out


def _deep(levels: int) -> str:
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (b'{"kind": "VirtualMachine",', "the VM's text is not valid JSON: "),
        (b"", "the VM's text holds no document: pass one VirtualMachine"),
        (b"kind: A\n---\nkind: B\n", "the VM's text holds 2 documents: pass one VirtualMachine"),
        (
            b'{"kind":"VirtualMachine","spec":{"x":1e999}}',
            "number out of range",
        ),
        (('{"kind":"VirtualMachine","status":' + _deep(120) + "}").encode(), "nested deeper than 100 levels"),
        ({"kind": "VirtualMachine"}, "expected the VM as JSON or YAML text (bytes or str), got a dict"),
        (b"[1, 2]", "expected a VirtualMachine object, got a list"),
    ],
    ids=["broken", "empty", "two-documents", "number-out-of-range", "too-deep", "a-dict", "a-list"],
)
def test_bad_text_is_a_400_naming_the_problem(document: Any, message: str) -> None:
    with pytest.raises(ExpandError) as err:
        expand_json(document, OBJECTS)
    assert err.value.code == 400 and err.value.reason == "BadRequest"
    assert message in err.value.message
    with pytest.raises(ExpandError) as by_expander:
        Expander(OBJECTS).expand_json(document)
    assert by_expander.value.status == err.value.status


def test_an_integer_beyond_64_bits_comes_back_as_written() -> None:
    # In managedFields' free-form fieldsV1, kept exactly, as the server keeps it.
    fields = b'"managedFields":[{"manager":"m","fieldsV1":{"f:n":123456789012345678901234}}],'
    vm = orjson.dumps(VMS["fedora"]).replace(b'"metadata":{', b'"metadata":{' + fields, 1)
    assert b'"fieldsV1":{"f:n":123456789012345678901234}' in expand_json(vm, OBJECTS)


def test_a_bad_object_is_refused_as_expand_refuses_it() -> None:
    with pytest.raises(ExpandError) as err:
        expand_json(orjson.dumps(VMS["fedora"]), [*OBJECTS, [1]])
    assert err.value.code == 400
    assert err.value.message == f"objects[{len(OBJECTS)}]: expected an object (a mapping), got a list"
