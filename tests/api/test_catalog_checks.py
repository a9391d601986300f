"""What the package's top exports as the docs name it, and an Expander that refuses, when it is made,
instancetypes and preferences that could never be used (no name, a spec KubeVirt cannot decode)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import apiserver
from apiserver import AdmissionDenied, Expander, ExpandError, expand_vm, read_manifest_paths
from tests.support.http_helpers import EXAMPLES


def example_objects() -> list[dict[str, Any]]:
    return [obj for _, obj in read_manifest_paths([str(EXAMPLES)])]


def test_the_top_exports_what_the_docs_name() -> None:
    for name in apiserver.__all__:
        assert getattr(apiserver, name) is not None, name
    assert {"AdmissionDenied", "read_manifest_paths", "parse_manifests", "ManifestError"} <= set(
        apiserver.__all__
    )
    assert apiserver.parse_manifests("kind: VirtualMachine\nmetadata: {name: a}\n", "a.yaml")[0]["kind"] == (
        "VirtualMachine"
    )


def test_admission_denied_is_what_a_refused_vm_raises() -> None:
    objects = example_objects()
    vm = copy.deepcopy(next(o for o in objects if o["kind"] == "VirtualMachine"))
    vm["spec"]["template"]["spec"]["domain"]["cpu"] = {"cores": 4}  # the instancetype sets the CPU
    with pytest.raises(AdmissionDenied) as caught:
        expand_vm(vm, objects, validate=True)
    assert isinstance(caught.value, ExpandError) and caught.value.code == 422


def test_an_expander_of_good_objects_is_made() -> None:
    assert len(Expander(example_objects())) > 0


def instancetype(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": "two-cpus"},
        "spec": {"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}, **spec},
    }


def test_an_expander_refuses_an_instancetype_that_could_never_be_one() -> None:
    nameless = instancetype()
    del nameless["metadata"]
    bad_cpu = instancetype(cpu={"guest": "two"})
    preference = {"apiVersion": "instancetype.kubevirt.io/v1beta1", "kind": "VirtualMachinePreference"}
    objects = [*example_objects(), nameless, bad_cpu, preference]
    with pytest.raises(ExpandError) as caught:
        Expander(objects)
    err = caught.value
    assert err.code == 400
    first = len(objects) - 3
    assert [(c["field"], c["reason"]) for c in err.causes] == [
        (f"objects[{first}].metadata.name", "FieldValueRequired"),
        (f"objects[{first + 1}]", "FieldValueInvalid"),
        (f"objects[{first + 2}].metadata.name", "FieldValueRequired"),
    ]
    assert "VirtualMachineClusterInstancetype 'two-cpus'" in err.causes[1]["message"]
    assert "spec.cpu.guest" in err.causes[1]["message"]
    assert err.message.startswith("3 objects could never be an instancetype or preference: ")
