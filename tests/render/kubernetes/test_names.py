"""Names are validated as Kubernetes validates them before anything is looked up under them: a name that
would be a path (``.``, ``..``, ``a/b``) or any other name no object can have is a 422 on the field it
came from, and the lookup never hears of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from apiserver.render import ExpandError, ObjectIndex, ObjectRef, expand
from apiserver.render.kubernetes.names import label_errors, subdomain_errors

NS = "ns-a"
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


class Recording(ObjectIndex):
    """An index that remembers every ref asked for."""

    def __init__(self, objects: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(objects)
        self.asked: list[ObjectRef] = []

    def get(self, ref: ObjectRef) -> Mapping[str, Any] | None:
        self.asked.append(ref)
        return super().get(ref)


def machine(namespace: str = NS, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": namespace},
        "spec": {"template": {"spec": {"domain": {"devices": {}}}}, **spec},
    }


def refused(vm: dict[str, Any], *objects: Mapping[str, Any]) -> tuple[ExpandError, list[ObjectRef]]:
    lookup = Recording(objects)
    with pytest.raises(ExpandError) as err:
        expand(vm, lookup)
    return err.value, lookup.asked


def test_apimachinery_texts() -> None:
    assert subdomain_errors("example.com") == []
    assert subdomain_errors(".") == [SUBDOMAIN]
    assert subdomain_errors("a" * 253) == []
    assert subdomain_errors("a" * 254) == ["must be no more than 253 characters"]
    assert subdomain_errors("A" * 254) == ["must be no more than 253 characters", SUBDOMAIN]
    assert label_errors("ns-a") == []
    assert label_errors("a.b") == [LABEL]
    assert label_errors("a" * 64) == ["must be no more than 63 characters"]


@pytest.mark.parametrize(
    ("spec", "field", "value"),
    [
        (
            {"instancetype": {"kind": "VirtualMachineInstancetype", "name": "."}},
            "spec.instancetype.name",
            ".",
        ),
        ({"instancetype": {"name": ".."}}, "spec.instancetype.name", ".."),
        ({"preference": {"kind": "VirtualMachinePreference", "name": "a/b"}}, "spec.preference.name", "a/b"),
        ({"preference": {"name": "Upper"}}, "spec.preference.name", "Upper"),
        ({"instancetype": {"name": "it", "revisionName": "."}}, "spec.instancetype.revisionName", "."),
        ({"preference": {"name": "p", "revisionName": "%2e%2e"}}, "spec.preference.revisionName", "%2e%2e"),
    ],
)
def test_a_matcher_name_that_cannot_name_an_object_is_a_422_on_its_field(
    spec: dict[str, Any], field: str, value: str
) -> None:
    err, asked = refused(machine(**spec))
    assert err.code == 422
    cause = f'Invalid value: "{value}": {SUBDOMAIN}'
    assert err.causes == [{"reason": "FieldValueInvalid", "message": cause, "field": field}]
    assert err.message == f"{field}: {cause}"
    assert err.status["details"]["name"] == "vm"
    assert asked == []


def test_the_status_revision_name_is_checked_too() -> None:
    vm = machine(instancetype={"name": "it"})
    vm["status"] = {"instancetypeRef": {"name": "it", "controllerRevisionRef": {"name": ".."}}}
    err, asked = refused(vm)
    assert [c["field"] for c in err.causes] == ["status.instancetypeRef.controllerRevisionRef.name"]
    assert asked == []


def test_a_namespace_that_cannot_exist_is_a_422_on_metadata_namespace() -> None:
    err, asked = refused(machine("..", instancetype={"kind": "VirtualMachineInstancetype", "name": "it"}))
    assert err.causes == [
        {
            "reason": "FieldValueInvalid",
            "message": f'Invalid value: "..": {LABEL}',
            "field": "metadata.namespace",
        }
    ]
    assert asked == []


def test_cluster_kinds_need_no_namespace_check_and_valid_names_are_looked_up() -> None:
    err, asked = refused(machine("..", instancetype={"name": "it.small"}))
    assert err.causes[0]["reason"] == "FieldValueNotFound"
    assert asked == [ObjectRef("VirtualMachineClusterInstancetype", "", "it.small")]


def _inferring(volume: dict[str, Any], templates: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    vm = machine(instancetype={"inferFromVolume": "root"})
    vm["spec"]["template"]["spec"]["volumes"] = [{"name": "root", **volume}]
    if templates:
        vm["spec"]["dataVolumeTemplates"] = list(templates)
    return vm


@pytest.mark.parametrize(
    ("volume", "templates", "field", "value"),
    [
        (
            {"persistentVolumeClaim": {"claimName": "."}},
            (),
            "spec.template.spec.volumes[0].persistentVolumeClaim.claimName",
            ".",
        ),
        ({"dataVolume": {"name": ".."}}, (), "spec.template.spec.volumes[0].dataVolume.name", ".."),
        (
            {"dataVolume": {"name": "dv"}},
            [
                {
                    "metadata": {"name": "dv"},
                    "spec": {"source": {"pvc": {"name": "secret", "namespace": ".."}}},
                }
            ],
            "spec.dataVolumeTemplates[0].spec.source.pvc.namespace",
            "..",
        ),
        (
            {"dataVolume": {"name": "dv"}},
            [
                {
                    "metadata": {"name": "dv"},
                    "spec": {"source": {"snapshot": {"name": "a/b", "namespace": "x"}}},
                }
            ],
            "spec.dataVolumeTemplates[0].spec.source.snapshot.name",
            "a/b",
        ),
        (
            {"dataVolume": {"name": "dv"}},
            [{"metadata": {"name": "dv"}, "spec": {"sourceRef": {"kind": "DataSource", "name": "."}}}],
            "spec.dataVolumeTemplates[0].spec.sourceRef.name",
            ".",
        ),
    ],
)
def test_inferFromVolume_names_given_in_the_vm_are_checked_on_their_fields(
    volume: dict[str, Any], templates: Sequence[dict[str, Any]], field: str, value: str
) -> None:
    err, asked = refused(_inferring(volume, templates))
    assert [(c["field"], c["reason"]) for c in err.causes] == [(field, "FieldValueInvalid")]
    assert err.causes[0]["message"].startswith(f'Invalid value: "{value}": a lowercase RFC 1123')
    assert asked == []


def test_an_empty_claim_name_is_required_not_looked_up() -> None:
    err, asked = refused(_inferring({"persistentVolumeClaim": {"claimName": ""}}))
    assert err.causes == [
        {
            "reason": "FieldValueRequired",
            "message": "resource name may not be empty",
            "field": "spec.template.spec.volumes[0].persistentVolumeClaim.claimName",
        }
    ]
    assert asked == []


def test_a_bad_name_inside_a_datavolume_names_the_matcher_without_repeating_it() -> None:
    dv = {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "DataVolume",
        "metadata": {"name": "dv", "namespace": NS},
        "spec": {"source": {"pvc": {"name": "../secret-value", "namespace": NS}}},
    }
    err, asked = refused(_inferring({"dataVolume": {"name": "dv"}}), dv)
    assert asked == [ObjectRef("DataVolume", NS, "dv")]
    message = f"DataVolume {NS}/dv names a PersistentVolumeClaim by an invalid name or namespace in spec.source.pvc.name"
    assert err.causes == [
        {"reason": "FieldValueInvalid", "message": message, "field": "spec.instancetype.inferFromVolume"}
    ]
    assert "secret-value" not in str(err.status)
