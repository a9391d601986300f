"""common-instancetypes' deprecation label (``instancetype.kubevirt.io/deprecated: "true"``): a warning
naming the object, from the object the rendering read (live, or the copy a pinned revision holds), and the
collection's ``Deprecated`` condition. KubeVirt itself does not warn: the rendering is unchanged."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from apiserver import expand
from apiserver.render import ObjectIndex
from apiserver.render import expand as render
from apiserver.render.summary import summarize

LABEL = "instancetype.kubevirt.io/deprecated"


def instancetype(
    kind: str = "VirtualMachineClusterInstancetype", deprecated: str | None = "true"
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "gn1.xlarge"}
    if kind == "VirtualMachineInstancetype":
        meta["namespace"] = "team"
    if deprecated is not None:
        meta["labels"] = {LABEL: deprecated, "instancetype.kubevirt.io/class": "gpu"}
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": kind,
        "metadata": meta,
        "spec": {"cpu": {"guest": 4}, "memory": {"guest": "16Gi"}},
    }


def preference(deprecated: bool) -> dict[str, Any]:
    labels = {LABEL: "true"} if deprecated else {}
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterPreference",
        "metadata": {"name": "centos.7", "labels": labels},
        "spec": {"devices": {"preferredDiskBus": "virtio"}},
    }


def vm(kind: str = "VirtualMachineClusterInstancetype", with_preference: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "instancetype": {"kind": kind, "name": "gn1.xlarge"},
        "template": {"spec": {"domain": {"devices": {}}}},
    }
    if with_preference:
        spec["preference"] = {"name": "centos.7"}
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "farm", "namespace": "team"},
        "spec": spec,
    }


def warning(kind: str, name: str) -> str:
    return f"{kind} {name} is deprecated (label {LABEL}=true) and may be removed in a future release"


@pytest.mark.parametrize(
    ("kind", "named"),
    [("VirtualMachineClusterInstancetype", "gn1.xlarge"), ("VirtualMachineInstancetype", "team/gn1.xlarge")],
)
def test_a_deprecated_instancetype_is_named_and_the_rendering_is_unchanged(kind: str, named: str) -> None:
    result = expand(vm(kind), [instancetype(kind)])
    assert result.warnings == (warning(kind, named),)
    plain = expand(vm(kind), [instancetype(kind, deprecated=None)])
    assert plain.warnings == ()
    assert json.dumps(result.vm) == json.dumps(plain.vm)


@pytest.mark.parametrize("value", ["false", "True", "yes", ""])
def test_only_the_value_true_deprecates(value: str) -> None:
    assert expand(vm(), [instancetype(deprecated=value)]).warnings == ()


def test_instancetype_and_preference_each_named() -> None:
    result = expand(vm(with_preference=True), [instancetype(), preference(True)])
    assert result.warnings == (
        warning("VirtualMachineClusterInstancetype", "gn1.xlarge"),
        warning("VirtualMachineClusterPreference", "centos.7"),
    )
    assert expand(vm(with_preference=True), [instancetype(deprecated=None), preference(False)]).warnings == ()


def revision(obj: dict[str, Any], as_bytes: bool) -> dict[str, Any]:
    data: Any = {**copy.deepcopy(obj), "apiVersion": "instancetype.kubevirt.io/v1beta1"}
    if as_bytes:
        data = json.dumps(data).encode()
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": "farm-gn1.xlarge-1",
            "namespace": "team",
            "labels": {
                "instancetype.kubevirt.io/object-name": "gn1.xlarge",
                "instancetype.kubevirt.io/object-kind": obj["kind"],
            },
        },
        "data": data,
    }


@pytest.mark.parametrize("by", ["status", "revisionName"])
@pytest.mark.parametrize("as_bytes", [False, True], ids=["parsed", "raw"])
def test_a_pinned_revision_warns_from_the_copy_it_holds(as_bytes: bool, by: str) -> None:
    # The engine itself: the cluster source hands it revisions with their data as the raw bytes. Pinned
    # as virt-controller pins it (the status ref) or as a user may (revisionName).
    pinned = vm()
    if by == "status":
        ref = {**pinned["spec"]["instancetype"], "controllerRevisionRef": {"name": "farm-gn1.xlarge-1"}}
        pinned["status"] = {"instancetypeRef": ref}
    else:
        pinned["spec"]["instancetype"]["revisionName"] = "farm-gn1.xlarge-1"
    result = render(pinned, ObjectIndex([revision(instancetype(), as_bytes)]))
    assert result.warnings == [
        warning("VirtualMachineClusterInstancetype", "gn1.xlarge")
        + " (as pinned by ControllerRevision farm-gn1.xlarge-1)",
    ]
    # The live object is not read for it: a revision taken before the label came says nothing.
    old = render(pinned, ObjectIndex([revision(instancetype(deprecated=None), as_bytes), instancetype()]))
    assert old.warnings == []


def test_the_collection_marks_the_object_and_adds_a_condition() -> None:
    kind = "VirtualMachineClusterInstancetype"
    obj = instancetype()
    from apiserver.render.objects import ObjectRef

    objects = {ObjectRef(kind, "", "gn1.xlarge"): obj}
    rendered = expand(vm(), [obj]).vm
    parts = summarize(vm(), rendered, None, objects)
    assert parts["summary"]["instancetype"] == {
        "kind": kind,
        "name": "gn1.xlarge",
        "source": "Object",
        "deprecated": True,
    }
    assert parts["conditions"][0]["type"] == "Rendered" and parts["conditions"][0]["status"] == "True"
    assert parts["conditions"][1] == {
        "type": "Deprecated",
        "status": "True",
        "reason": "DeprecatedObject",
        "message": warning(kind, "gn1.xlarge"),
    }
    plain_obj = instancetype(deprecated=None)
    plain = summarize(vm(), rendered, None, {ObjectRef(kind, "", "gn1.xlarge"): plain_obj})
    assert "deprecated" not in plain["summary"]["instancetype"] and len(plain["conditions"]) == 1
