"""Drift of a VM's captured revisions (apiserver/render/instancetype/drift.py), pure: which revision a
VM captured, and whether the live object still holds the same spec (revision.Compare's
equality.Semantic.DeepEqual: quantities by value, empty as absent)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.render.instancetype.drift import (
    CURRENT,
    INFERRED,
    NO_REVISION,
    NOT_COMPARABLE,
    OBJECT_NOT_FOUND,
    OUTDATED,
    matcher_drift,
    vm_drift,
)
from apiserver.render.objects import ObjectIndex
from tests.support.revisions import captured, status_ref

NS = "ns"
IT = "instancetype.kubevirt.io/v1beta1"


def instancetype(cpus: int = 2, memory: str = "2Gi", cluster: bool = False, **spec: Any) -> dict[str, Any]:
    kind = "VirtualMachineClusterInstancetype" if cluster else "VirtualMachineInstancetype"
    meta: dict[str, Any] = {"name": "small", "uid": "u-1", "generation": 1}
    if not cluster:
        meta["namespace"] = NS
    return {
        "apiVersion": IT,
        "kind": kind,
        "metadata": meta,
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": memory}, **spec},
    }


def preference(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": IT,
        "kind": "VirtualMachinePreference",
        "metadata": {"name": "pref", "namespace": NS, "uid": "p-1", "generation": 3},
        "spec": spec or {"cpu": {"preferredCPUTopology": "cores"}},
    }


def pinned_vm(
    *revisions: tuple[str, dict[str, Any], dict[str, Any]], by_spec: bool = False
) -> dict[str, Any]:
    """A VM whose matchers point at ``revisions`` ((member, matcher, revision)): through its status refs
    as the controller writes them, or ``by_spec`` through ``revisionName``."""
    spec: dict[str, Any] = {"template": {"spec": {"domain": {"devices": {}}}}}
    status: dict[str, Any] = {}
    for member, matcher, revision in revisions:
        spec[member] = dict(matcher)
        if by_spec:
            spec[member]["revisionName"] = revision["metadata"]["name"]
        else:
            status[member + "Ref"] = status_ref(matcher, revision)
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": NS},
    }
    return {**vm, "spec": spec, "status": status}


MATCHER = {"name": "small", "kind": "VirtualMachineInstancetype"}


@pytest.mark.parametrize("by_spec", [False, True], ids=["status-ref", "revisionName"])
def test_current_then_outdated_when_the_live_object_changes(by_spec: bool) -> None:
    taken = instancetype()
    rev = captured("vm", NS, taken)
    vm = pinned_vm(("instancetype", MATCHER, rev), by_spec=by_spec)
    same = matcher_drift("instancetype", vm, ObjectIndex([taken, rev]))
    assert same is not None and same.reason == CURRENT and not same.stale
    assert (
        same.revision == rev["metadata"]["name"] and same.describe() == "VirtualMachineInstancetype ns/small"
    )
    edited = instancetype(cpus=4)
    stale = matcher_drift("instancetype", vm, ObjectIndex([edited, rev]))
    assert stale is not None and stale.reason == OUTDATED and stale.stale
    assert stale.message == (
        f"VirtualMachineInstancetype ns/small changed since ControllerRevision {rev['metadata']['name']} was taken"
    )


def test_semantic_equality_quantities_by_value_and_empty_as_absent() -> None:
    """What Semantic.DeepEqual calls equal is not stale: 2Gi respelled, an empty map added; metadata
    (labels, a new generation) is no part of the spec."""
    rev = captured("vm", NS, instancetype())
    vm = pinned_vm(("instancetype", MATCHER, rev))
    respelled = instancetype(memory="2048Mi", annotations={})
    respelled["metadata"].update(generation=7, labels={"x": "y"})
    found = matcher_drift("instancetype", vm, ObjectIndex([respelled, rev]))
    assert found is not None and found.reason == CURRENT
    bigger = instancetype(memory="2049Mi")
    found = matcher_drift("instancetype", vm, ObjectIndex([bigger, rev]))
    assert found is not None and found.reason == OUTDATED


def test_cluster_kind_and_preference_each_on_their_own() -> None:
    it_obj, pref = instancetype(cluster=True), preference()
    it_rev, pref_rev = captured("vm", NS, it_obj), captured("vm", NS, pref)
    vm = pinned_vm(
        ("instancetype", {"name": "small", "kind": "virtualmachineclusterinstancetype"}, it_rev),
        ("preference", {"name": "pref", "kind": "VirtualMachinePreference"}, pref_rev),
    )
    edited = preference(cpu={"preferredCPUTopology": "threads"})
    it_drift, pref_drift = vm_drift(vm, ObjectIndex([it_obj, it_rev, edited, pref_rev]))
    assert it_drift is not None and pref_drift is not None
    assert (it_drift.kind, it_drift.namespace, it_drift.reason) == (
        "VirtualMachineClusterInstancetype",
        "",
        CURRENT,
    )
    assert (pref_drift.kind, pref_drift.namespace, pref_drift.reason) == (
        "VirtualMachinePreference",
        NS,
        OUTDATED,
    )


def test_no_revision_gone_object_inferred_and_broken_revision_are_not_stale() -> None:
    taken = instancetype()
    rev = captured("vm", NS, taken)
    unpinned = pinned_vm()
    unpinned["spec"]["instancetype"] = dict(MATCHER)
    found = matcher_drift("instancetype", unpinned, ObjectIndex([taken]))
    assert found is not None and found.reason == NO_REVISION and not found.stale and found.revision == ""
    vm = pinned_vm(("instancetype", MATCHER, rev))
    gone = matcher_drift("instancetype", vm, ObjectIndex([rev]))
    assert gone is not None and gone.reason == OBJECT_NOT_FOUND and not gone.stale
    assert "no longer exists" in gone.message and rev["metadata"]["name"] in gone.message
    missing_rev = matcher_drift(
        "instancetype", pinned_vm(("instancetype", MATCHER, rev), by_spec=True), ObjectIndex([taken])
    )
    assert missing_rev is not None and missing_rev.reason == NOT_COMPARABLE
    broken = copy.deepcopy(rev)
    broken["data"] = {"kind": "Nothing"}
    damaged = matcher_drift("instancetype", vm, ObjectIndex([taken, broken]))
    assert damaged is not None and damaged.reason == NOT_COMPARABLE
    inferred = pinned_vm()
    inferred["spec"]["instancetype"] = {"inferFromVolume": "root"}
    found = matcher_drift("instancetype", inferred, ObjectIndex([]))
    assert found is not None and found.reason == INFERRED
    assert matcher_drift("preference", inferred, ObjectIndex([])) is None


def test_a_status_ref_of_another_object_is_not_the_captured_revision() -> None:
    """The finder uses a status ref's revision only when it holds the object the matcher names (the VM
    was switched to another instancetype and the controller has not stored its revision yet)."""
    other = instancetype()
    other["metadata"]["name"] = "other"
    rev = captured("vm", NS, other)
    vm = pinned_vm(("instancetype", {"name": "other", "kind": "VirtualMachineInstancetype"}, rev))
    vm["spec"]["instancetype"] = dict(MATCHER)
    found = matcher_drift("instancetype", vm, ObjectIndex([instancetype(), other, rev]))
    assert found is not None and found.reason == NO_REVISION


@pytest.mark.parametrize(
    "vm",
    [
        {"spec": "x"},
        {"metadata": [], "spec": {"instancetype": {"name": 5, "kind": 7}}},
        {"spec": {"instancetype": {"name": "small"}}, "status": {"instancetypeRef": "x"}},
        {
            "spec": {"instancetype": {"name": "small"}},
            "status": {"instancetypeRef": {"controllerRevisionRef": 3}},
        },
        {
            "spec": {"instancetype": {"name": "small", "revisionName": "Not A Name"}},
            "metadata": {"namespace": NS},
        },
        {"spec": {"preference": {"name": "../x"}}, "metadata": {"namespace": NS}},
    ],
)
def test_a_vm_of_any_shape_gets_an_answer_not_an_exception(vm: dict[str, Any]) -> None:
    """The store computes the drift of every VM it holds, renderable or not: a malformed VM is not stale."""
    for found in vm_drift(vm, ObjectIndex([])):
        assert found is None or not found.stale


def test_a_status_ref_naming_a_missing_revision_is_not_comparable() -> None:
    """virt-controller writes the captured revision only to the status ref; when that revision is gone
    KubeVirt's finder fails on it (it does not fall back to the live object), so the VM is neither
    current nor uncaptured: not comparable, naming the revision."""
    taken = instancetype()
    rev = captured("vm", NS, taken)
    vm = pinned_vm(("instancetype", MATCHER, rev))
    found = matcher_drift("instancetype", vm, ObjectIndex([taken]))
    assert found is not None and (found.reason, found.revision) == (NOT_COMPARABLE, rev["metadata"]["name"])
    assert found.message == f"ControllerRevision {rev['metadata']['name']} not found" and not found.stale


def test_spec_revision_name_wins_over_the_status_ref() -> None:
    """A user's ``spec.<matcher>.revisionName`` is read before the status ref, whatever that names
    (``revisionFinder.Find``: "avoid a race with Store()")."""
    old, new = instancetype(cpus=2), instancetype(cpus=4)
    new["metadata"]["generation"] = 2
    old_rev, new_rev = captured("vm", NS, old), captured("vm", NS, new)
    vm = pinned_vm(("instancetype", MATCHER, new_rev))
    vm["spec"]["instancetype"]["revisionName"] = old_rev["metadata"]["name"]
    found = matcher_drift("instancetype", vm, ObjectIndex([new, old_rev, new_rev]))
    assert found is not None and (found.reason, found.revision) == (OUTDATED, old_rev["metadata"]["name"])
