"""apiserver.Expander: objects checked and copied once, then the same answers as apiserver.expand."""

from __future__ import annotations

import copy
import json
import warnings
from typing import Any

import pytest

from apiserver import Expanded, Expander, ExpandError, ExpandWarning, expand, expand_vm
from tests.support import admission_cases
from tests.support.conformance import error_matches, iter_cases
from tests.support.shared import ADMISSION_CASES_DIR, CASES_DIR, needs_shared

IT = "instancetype.kubevirt.io/v1beta1"


def _vm(name: str = "it") -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": "default"},
        "spec": {"instancetype": {"name": name}, "template": {"spec": {"domain": {"devices": {}}}}},
    }


def _instancetype(guest: int, name: str = "it") -> dict[str, Any]:
    return {
        "apiVersion": IT,
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": name},
        "spec": {"cpu": {"guest": guest}, "memory": {"guest": "1Gi"}},
    }


def _sockets(vm: dict[str, Any]) -> int:
    sockets: int = vm["spec"]["template"]["spec"]["domain"]["cpu"]["sockets"]
    return sockets


@needs_shared(CASES_DIR)
def test_every_golden_case_gives_kubevirts_answer() -> None:
    """The whole corpus through one Expander per case: the same VMs, errors and warnings as KubeVirt's."""
    checked = 0
    for case in iter_cases():
        inp, exp = case.input, case.expected
        presets = case.id.startswith("presets-")
        try:
            expander = Expander(inp["objects"], inp.get("kubevirt"))
            result = expander.expand(inp["vm"], presets=presets, field_validation="Ignore")
        except ExpandError as err:
            assert "error" in exp and error_matches(exp, err.message), (case.id, err.status)
            assert err.code == 422, case.id
            checked += 1
            continue
        assert "error" not in exp, case.id
        assert json.dumps(result.vm) == json.dumps(exp["expanded"]), case.id  # member order too
        assert result == expand(
            inp["vm"], inp["objects"], inp.get("kubevirt"), presets=presets, field_validation="Ignore"
        )
        checked += 1
    assert checked > 2000


def _through_an_expander(
    vm: dict[str, Any], objects: list[dict[str, Any]], kubevirt: dict[str, Any] | None, **options: Any
) -> Expanded:
    return Expander(objects, kubevirt).expand(vm, **options)


@needs_shared(ADMISSION_CASES_DIR)
def test_every_admission_case_gives_kubevirts_verdict() -> None:
    """validate=True through an Expander: KubeVirt's webhook verdicts, causes and warnings."""
    files = admission_cases.case_files()
    for path in files:
        admission_cases.check_case(admission_cases.load(path), render=_through_an_expander)
    assert len(files) > 1000


def test_later_edits_to_the_callers_objects_change_nothing() -> None:
    it = _instancetype(2)
    config: dict[str, Any] = {"machineType": "pc-q35-rhel9.2.0"}
    expander = Expander([it], config)
    it["spec"]["cpu"]["guest"] = 4
    it["metadata"]["name"] = "renamed"
    config["machineType"] = "pc"
    vm = expander.expand_vm(_vm(), field_validation="Ignore")
    assert _sockets(vm) == 2
    assert vm["spec"]["template"]["spec"]["domain"]["machine"] == {"type": "pc-q35-rhel9.2.0"}
    assert _sockets(Expander([it]).expand_vm(_vm("renamed"), field_validation="Ignore")) == 4


def test_a_vm_edited_in_place_is_checked_afresh() -> None:
    expander = Expander([_instancetype(2)])
    vm = _vm()
    assert _sockets(expander.expand_vm(vm)) == 2  # Strict passes
    vm["spec"]["template"]["spec"]["domain"]["bogus"] = 1
    with pytest.raises(ExpandError) as err:
        expander.expand(vm)
    assert err.value.code == 422 and [c["field"] for c in err.value.causes] == [
        "spec.template.spec.domain.bogus"
    ]
    vm["spec"]["template"]["spec"]["domain"]["bogus"] = {1, 2}
    with pytest.raises(ExpandError) as err:
        expander.expand(vm)
    assert err.value.code == 400 and "a set is not a JSON value" in err.value.message


def test_many_objects_and_the_last_of_a_name_wins() -> None:
    catalog = [_instancetype(1 + i % 8, f"it-{i}") for i in range(300)] + [_instancetype(3, "it-7")]
    expander = Expander(catalog)
    assert len(expander) == 300
    assert _sockets(expander.expand_vm(_vm("it-5"))) == 6
    assert _sockets(expander.expand_vm(_vm("it-7"))) == 3
    with pytest.raises(ExpandError) as err:
        expander.expand(_vm("it-300"))
    assert err.value.code == 422 and err.value.causes[0]["field"] == "spec.instancetype.name"
    assert err.value.message.endswith('"it-300" not found')


def test_bad_objects_and_configurations_are_refused_when_it_is_made() -> None:
    with pytest.raises(ExpandError) as err:
        Expander([_instancetype(2), ["not", "an", "object"]])
    assert err.value.code == 400
    assert err.value.message == "objects[1]: expected an object (a mapping), got a list"
    bad = _instancetype(2)
    bad["metadata"]["labels"] = {"a": float("nan")}
    with pytest.raises(ExpandError) as err:
        Expander([bad])
    assert (
        err.value.code == 400
        and err.value.message == "objects[0].metadata.labels.a: nan is not a JSON number"
    )
    with pytest.raises(ExpandError) as err:
        Expander([], ["configuration"])  # type: ignore[arg-type]
    assert err.value.code == 400 and err.value.message.startswith("kubevirt: expected a KubeVirt CR")
    with pytest.raises(ValueError, match="field_validation must be one of"):
        Expander([]).expand(_vm(), field_validation="strict")


def test_objects_json_cannot_write_are_copied_too() -> None:
    # orjson writes no integer beyond 64 bits: such an object is copied another way, edits still unseen.
    it = _instancetype(2)
    it["metadata"]["annotations"] = {"n": "1"}
    it["spec"]["extra"] = 1 << 70
    expander = Expander([it])
    it["spec"]["cpu"]["guest"] = 5
    assert _sockets(expander.expand_vm(_vm(), field_validation="Ignore")) == 2


def test_warnings_are_returned_or_issued() -> None:
    expander = Expander([_instancetype(2)])
    vm = copy.deepcopy(_vm())
    vm["spec"]["template"]["spec"]["domain"]["cpuu"] = {}
    assert expander.expand(vm, field_validation="Warn").warnings == (
        'unknown field "spec.template.spec.domain.cpuu"',
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        expander.expand_vm(vm, field_validation="Warn")
        expand_vm(vm, [_instancetype(2)], field_validation="Warn")
    # Both issued from the caller's line, as warnings.warn's stacklevel promises.
    assert [(w.category, str(w.message), w.filename) for w in caught] == [
        (ExpandWarning, 'unknown field "spec.template.spec.domain.cpuu"', __file__)
    ] * 2
