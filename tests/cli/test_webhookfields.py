"""The fields behind the webhook's field-less causes (apiserver/cli/webhookfields.py): each place in the VM a
go-openapi message is about, as Kubernetes writes a field; the Status's other causes as they are."""

from __future__ import annotations

from typing import Any

from apiserver.cli.webhookfields import MAX_PLACES, placed_causes
from apiserver.render.admission.schema import validate_schema

TEMPLATE = "spec.template.spec"


def refusal(*messages: str) -> dict[str, Any]:
    causes = [{"reason": "", "message": m, "field": ""} for m in messages]
    return {"code": 422, "details": {"causes": causes}}


def vm(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "a"}, "spec": spec}


def template(tspec: dict[str, Any]) -> dict[str, Any]:
    return vm({"runStrategy": "Always", "template": {"spec": tspec}})


def placed(obj: dict[str, Any]) -> list[tuple[str, str]]:
    """(reason, field) of each cause the schema check gives ``obj``, placed."""
    return [(c["reason"], c["field"]) for c in placed_causes(obj, refusal(*validate_schema(obj)))]


def disks(*items: dict[str, Any]) -> dict[str, Any]:
    return template({"domain": {"devices": {"disks": list(items)}}})


def test_an_unknown_member_of_a_list_item_is_placed_at_each_item_that_has_it() -> None:
    obj = disks(
        {"name": "a", "disk": {"bus": "virtio"}},
        {"name": "b", "disk": {"buss": "virtio"}},
        {"name": "c", "disk": {"buss": "sata"}},
    )
    assert placed(obj) == [
        ("FieldValueUnknownField", f"{TEMPLATE}.domain.devices.disks[1].disk.buss"),
        ("FieldValueUnknownField", f"{TEMPLATE}.domain.devices.disks[2].disk.buss"),
    ]


def test_a_wrong_type_is_placed_at_the_value_of_that_type() -> None:
    obj = disks({"name": "a", "bootOrder": 1, "disk": {}}, {"name": "b", "bootOrder": "2", "disk": {}})
    assert placed(obj) == [("FieldValueTypeInvalid", f"{TEMPLATE}.domain.devices.disks[1].bootOrder")]
    # an item of the wrong type is under its list's path in the message
    assert placed(disks({"name": "a"}, "b")) == [
        ("FieldValueTypeInvalid", f"{TEMPLATE}.domain.devices.disks[1]")
    ]


def test_a_missing_required_member_is_placed_at_the_item_that_lacks_it() -> None:
    terms = [{"weight": 1, "podAffinityTerm": {"topologyKey": "zone"}}, {"weight": 2}]
    obj = template(
        {
            "domain": {"devices": {}},
            "affinity": {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}},
        }
    )
    field = (
        f"{TEMPLATE}.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[1].podAffinityTerm"
    )
    assert placed(obj) == [("FieldValueRequired", field)]
    # no spec: required, and (as go-openapi checks the null it reads) of the wrong type, both at spec
    assert placed({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine"}) == [
        ("FieldValueRequired", "spec"),
        ("FieldValueTypeInvalid", "spec"),
    ]


def test_top_level_and_dotted_keys() -> None:
    obj = {**vm({"runStrategy": "Always", "template": {"spec": {"domain": {"devices": {}}}}}), "spek": {}}
    assert placed(obj) == [("FieldValueUnknownField", "spek")]
    labelled = template({"domain": {"devices": {}}, "nodeSelector": {"kubernetes.io/hostname": 3}})
    assert placed(labelled) == [("FieldValueTypeInvalid", f"{TEMPLATE}.nodeSelector[kubernetes.io/hostname]")]


def test_a_value_out_of_its_enum() -> None:
    volumes = [
        {"name": "a", "containerDisk": {"image": "x", "imagePullPolicy": "Always"}},
        {"name": "b", "containerDisk": {"image": "x", "imagePullPolicy": "Sometimes"}},
    ]
    obj = template({"domain": {"devices": {}}, "volumes": volumes})
    assert placed(obj) == [("FieldValueNotSupported", f"{TEMPLATE}.volumes[1].containerDisk.imagePullPolicy")]


def test_places_are_bounded_and_fields_given_are_kept() -> None:
    many = disks(*({"name": f"d{i}", "disk": {"buss": "virtio"}} for i in range(50)))
    assert len(placed(many)) == MAX_PLACES
    status = refusal('spec.template.spec.domain.cpu.cores in body must be of type integer: "string"')
    status["details"]["causes"].append({"reason": "FieldValueInvalid", "message": "m", "field": "spec.x"})
    got = placed_causes(template({"domain": {"cpu": {"cores": "two"}}}), status)
    assert [c["field"] for c in got] == [f"{TEMPLATE}.domain.cpu.cores", "spec.x"]
    # every cause with a field already: nothing to add (the report takes the Status's causes)
    assert (
        placed_causes(vm({}), {"details": {"causes": [{"reason": "r", "message": "m", "field": "spec"}]}})
        == []
    )


def test_a_message_it_cannot_place_keeps_its_path_as_written() -> None:
    got = placed_causes(vm({}), refusal("spec.template.spec.gone in body is a forbidden property"))
    assert [(c["reason"], c["field"]) for c in got] == [("FieldValueUnknownField", "spec.template.spec.gone")]
