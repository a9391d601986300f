"""inferFromVolume resolution, case by case as KubeVirt's pkg/instancetype/infer tests exercise it."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from apiserver.render.instancetype.infer import infer_matchers
from apiserver.render.kubernetes.errors import ExpandError
from apiserver.render.objects import LookupPending, ObjectIndex, ObjectRef

NS = "vm-ns"
IT_LABELS = {
    "instancetype.kubevirt.io/default-instancetype": "u1.medium",
    "instancetype.kubevirt.io/default-instancetype-kind": "VirtualMachineClusterInstancetype",
    "instancetype.kubevirt.io/default-preference": "fedora",
    "instancetype.kubevirt.io/default-preference-kind": "VirtualMachineClusterPreference",
}
INFERRED = {
    "instancetype": {"name": "u1.medium", "kind": "VirtualMachineClusterInstancetype"},
    "preference": {"name": "fedora", "kind": "VirtualMachineClusterPreference"},
}


def vm(
    volume: dict[str, Any],
    *,
    templates: Sequence[dict[str, Any]] = (),
    policy: str | None = None,
    which: Sequence[str] = ("instancetype", "preference"),
) -> dict[str, Any]:
    matcher: dict[str, Any] = {"inferFromVolume": "root"}
    if policy:
        matcher["inferFromVolumeFailurePolicy"] = policy
    spec: dict[str, Any] = {w: dict(matcher) for w in which}
    spec["template"] = {
        "spec": {
            "domain": {"memory": {"guest": "1Gi"}, "devices": {}},
            "volumes": [{"name": "root", **volume}],
        }
    }
    if templates:
        spec["dataVolumeTemplates"] = list(templates)
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": NS},
        "spec": spec,
    }


def thing(
    kind: str, name: str, ns: str = NS, labels: Mapping[str, str] | None = None, **rest: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if labels is not None:
        meta["labels"] = dict(labels)
    return {"kind": kind, "metadata": meta, **rest}


PVC_VOLUME = {"persistentVolumeClaim": {"claimName": "disk"}}
DV_VOLUME = {"dataVolume": {"name": "dv"}}


def run(machine: dict[str, Any], *objects: dict[str, Any]) -> dict[str, Any]:
    infer_matchers(machine, ObjectIndex(objects))
    return machine


def matchers(machine: Mapping[str, Any]) -> dict[str, Any]:
    return {k: machine["spec"].get(k) for k in ("instancetype", "preference")}


@pytest.mark.parametrize(
    ("volume", "templates", "objects"),
    [
        pytest.param(PVC_VOLUME, (), [thing("PersistentVolumeClaim", "disk", labels=IT_LABELS)], id="pvc"),
        pytest.param(DV_VOLUME, (), [thing("DataVolume", "dv", labels=IT_LABELS)], id="datavolume-labels"),
        pytest.param(
            DV_VOLUME,
            (),
            [
                thing("DataVolume", "dv", spec={"source": {"pvc": {"name": "src", "namespace": "images"}}}),
                thing("PersistentVolumeClaim", "src", ns="images", labels=IT_LABELS),
            ],
            id="datavolume-source-pvc",
        ),
        pytest.param(
            DV_VOLUME,
            (),
            [
                thing(
                    "DataVolume",
                    "dv",
                    labels={},
                    spec={"source": {"snapshot": {"name": "s", "namespace": "x"}}},
                ),
                thing("VolumeSnapshot", "s", ns="x", labels=IT_LABELS),
            ],
            id="datavolume-source-snapshot",
        ),
        pytest.param(
            DV_VOLUME,
            (),
            [
                thing("DataVolume", "dv", spec={"sourceRef": {"kind": "DataSource", "name": "ds"}}),
                thing("DataSource", "ds", labels=IT_LABELS),
            ],
            id="datavolume-sourceref-datasource-labels",
        ),
        pytest.param(
            DV_VOLUME,
            [
                {
                    "metadata": {"name": "dv"},
                    "spec": {"source": {"pvc": {"name": "src", "namespace": "images"}}},
                }
            ],
            [thing("PersistentVolumeClaim", "src", ns="images", labels=IT_LABELS)],
            id="template-source-pvc",
        ),
        pytest.param(
            DV_VOLUME,
            [
                {
                    "metadata": {"name": "dv"},
                    "spec": {"source": {"snapshot": {"name": "s", "namespace": "snaps"}}},
                }
            ],
            [thing("VolumeSnapshot", "s", ns="snaps", labels=IT_LABELS)],
            id="template-source-snapshot",
        ),
        pytest.param(
            DV_VOLUME,
            [
                {
                    "metadata": {"name": "dv"},
                    "spec": {"sourceRef": {"kind": "DataSource", "name": "ds", "namespace": "os"}},
                }
            ],
            [
                thing(
                    "DataSource",
                    "ds",
                    ns="os",
                    spec={"source": {"pvc": {"name": "golden", "namespace": "os"}}},
                ),
                thing("PersistentVolumeClaim", "golden", ns="os", labels=IT_LABELS),
            ],
            id="template-datasource-pvc",
        ),
        pytest.param(
            DV_VOLUME,
            [{"metadata": {"name": "dv"}, "spec": {"sourceRef": {"kind": "DataSource", "name": "ds"}}}],
            [
                thing(
                    "DataSource", "ds", spec={"source": {"snapshot": {"name": "golden", "namespace": "os"}}}
                ),
                thing("VolumeSnapshot", "golden", ns="os", labels=IT_LABELS),
            ],
            id="template-datasource-without-namespace-snapshot",
        ),
        pytest.param(
            DV_VOLUME,
            (),
            [thing("PersistentVolumeClaim", "dv", labels=IT_LABELS)],
            id="garbage-collected-datavolume-uses-pvc-of-same-name",
        ),
    ],
)
def test_inferred_from(
    volume: dict[str, Any], templates: Sequence[dict[str, Any]], objects: list[dict[str, Any]]
) -> None:
    machine = run(vm(volume, templates=templates), *objects)
    assert matchers(machine) == INFERRED
    assert machine["spec"]["template"]["spec"]["domain"]["memory"] == {"guest": "1Gi"}


def test_a_template_wins_over_a_datavolume_of_the_same_name() -> None:
    templates = [{"metadata": {"name": "dv"}, "spec": {"source": {"http": {"url": "x"}}}}]
    with pytest.raises(ExpandError) as err:
        run(vm(DV_VOLUME, templates=templates), thing("DataVolume", "dv", labels=IT_LABELS))
    assert (
        err.value.message
        == "unable to infer defaults from DataVolumeSpec as DataVolumeSource is not supported"
    )


def test_kind_label_is_optional() -> None:
    labels = {"instancetype.kubevirt.io/default-instancetype": "small"}
    machine = run(
        vm(PVC_VOLUME, which=["instancetype"]), thing("PersistentVolumeClaim", "disk", labels=labels)
    )
    assert machine["spec"]["instancetype"] == {"name": "small"}


FAILURES = [
    pytest.param(
        {"persistentVolumeClaim": {"claimName": "disk"}},
        [],
        'persistentvolumeclaims "disk" not found',
        False,
        id="unknown-pvc",
    ),
    pytest.param(DV_VOLUME, [], 'persistentvolumeclaims "dv" not found', False, id="unknown-dv-and-pvc"),
    pytest.param(
        DV_VOLUME,
        [thing("DataVolume", "dv", spec={"sourceRef": {"kind": "DataSource", "name": "ds"}})],
        'datasources.cdi.kubevirt.io "ds" not found',
        False,
        id="unknown-datasource",
    ),
    pytest.param(
        DV_VOLUME,
        [thing("DataVolume", "dv", spec={"source": {"snapshot": {"name": "s", "namespace": NS}}})],
        'volumesnapshots.snapshot.storage.k8s.io "s" not found',
        False,
        id="unknown-snapshot",
    ),
    pytest.param(
        {"containerDisk": {"image": "x"}},
        [],
        "unable to infer defaults from volume root as type is not supported",
        True,
        id="unsupported-volume-type",
    ),
    pytest.param(
        DV_VOLUME,
        [thing("DataVolume", "dv", spec={"source": {"http": {"url": "u"}}})],
        "unable to infer defaults from DataVolumeSpec as DataVolumeSource is not supported",
        True,
        id="unsupported-datavolume-source",
    ),
    pytest.param(
        DV_VOLUME,
        [thing("DataVolume", "dv", spec={"sourceRef": {"kind": "foo", "name": "ds"}})],
        "unable to infer defaults from DataVolumeSourceRef as Kind foo is not supported",
        True,
        id="unsupported-sourceref-kind",
    ),
    pytest.param(
        DV_VOLUME,
        [
            thing("DataVolume", "dv", spec={"sourceRef": {"kind": "DataSource", "name": "ds"}}),
            thing("DataSource", "ds", spec={"source": {}}),
        ],
        "unable to infer defaults from DataSource that doesn't provide DataVolumeSourcePVC or "
        "DataVolumeSourceSnapshot",
        True,
        id="datasource-without-source",
    ),
]


@pytest.mark.parametrize(("volume", "objects", "message", "ignorable"), FAILURES)
@pytest.mark.parametrize("policy", [None, "RejectInferFromVolumeFailure", "IgnoreInferFromVolumeFailure"])
@pytest.mark.parametrize("which", ["instancetype", "preference"])
def test_failures(
    volume: dict[str, Any],
    objects: list[dict[str, Any]],
    message: str,
    ignorable: bool,
    policy: str | None,
    which: str,
) -> None:
    machine = vm(volume, policy=policy, which=[which])
    if ignorable and policy == "IgnoreInferFromVolumeFailure":
        run(machine, *objects)
        assert which not in machine["spec"]
        assert machine["spec"]["template"]["spec"]["domain"]["memory"] == {"guest": "1Gi"}
        return
    with pytest.raises(ExpandError) as err:
        run(machine, *objects)
    assert err.value.code == 422 and err.value.reason == "Invalid"
    assert err.value.message == message
    [cause] = err.value.causes
    assert cause["field"] == f"spec.{which}.inferFromVolume" and cause["message"] == message
    assert cause["reason"] == ("FieldValueInvalid" if ignorable else "FieldValueNotFound")
    assert err.value.status["details"]["name"] == "vm"


@pytest.mark.parametrize("which", ["instancetype", "preference"])
def test_missing_label(which: str) -> None:
    pvc = thing("PersistentVolumeClaim", "disk", labels={"app": "x"})
    with pytest.raises(ExpandError) as err:
        run(vm(PVC_VOLUME, which=[which]), pvc)
    assert (
        err.value.message
        == f"unable to find required instancetype.kubevirt.io/default-{which} label on the volume"
    )
    machine = run(vm(PVC_VOLUME, which=[which], policy="IgnoreInferFromVolumeFailure"), pvc)
    assert which not in machine["spec"]


def test_unknown_volume_is_never_ignored() -> None:
    machine = vm(PVC_VOLUME, policy="IgnoreInferFromVolumeFailure")
    machine["spec"]["instancetype"]["inferFromVolume"] = "other"
    with pytest.raises(ExpandError) as err:
        run(machine)
    assert err.value.message == "unable to find volume other to infer defaults"


@pytest.mark.parametrize(
    ("policy", "cleared"), [("IgnoreInferFromVolumeFailure", True), ("RejectInferFromVolumeFailure", False)]
)
def test_memory_cleared_after_instancetype_inferred_under_ignore(policy: str, cleared: bool) -> None:
    machine = run(vm(PVC_VOLUME, policy=policy), thing("PersistentVolumeClaim", "disk", labels=IT_LABELS))
    assert matchers(machine) == INFERRED
    assert ("memory" not in machine["spec"]["template"]["spec"]["domain"]) is cleared


def test_memory_kept_when_only_the_preference_is_inferred_under_ignore() -> None:
    machine = vm(PVC_VOLUME, policy="IgnoreInferFromVolumeFailure", which=["preference"])
    run(machine, thing("PersistentVolumeClaim", "disk", labels=IT_LABELS))
    assert machine["spec"]["template"]["spec"]["domain"]["memory"] == {"guest": "1Gi"}


def test_matchers_with_a_name_or_revision_are_left_as_kubevirt_expand_reads_them() -> None:
    machine = vm(PVC_VOLUME)
    machine["spec"]["instancetype"]["name"] = "explicit"
    machine["spec"]["preference"]["revisionName"] = "rev"
    before = copy.deepcopy(machine)
    run(machine)  # nothing looked up: the PVC does not even exist
    assert machine == before


def test_matchers_without_inference_are_untouched() -> None:
    machine = vm(PVC_VOLUME)
    machine["spec"]["instancetype"] = {"name": "a", "kind": "VirtualMachineInstancetype"}
    del machine["spec"]["preference"]
    before = copy.deepcopy(machine)
    assert run(machine) == before


def test_webhook_matcher_checks() -> None:
    machine = vm(PVC_VOLUME, policy="Sometimes")
    machine["spec"]["preference"]["kind"] = "VirtualMachinePreference"
    with pytest.raises(ExpandError) as err:
        run(machine, thing("PersistentVolumeClaim", "disk", labels=IT_LABELS))
    assert [(c["field"], c["reason"]) for c in err.value.causes] == [
        ("spec.instancetype.inferFromVolumeFailurePolicy", "FieldValueInvalid"),
        ("spec.preference.kind", "FieldValueNotSupported"),
        ("spec.preference.inferFromVolumeFailurePolicy", "FieldValueInvalid"),
    ]
    assert err.value.message == (
        "Invalid value 'Sometimes' for InferFromVolumeFailurePolicy, "
        "Kind already set, should be cleared before setting inferFromVolume, "
        "Invalid value 'Sometimes' for InferFromVolumeFailurePolicy"
    )


class _Pending:
    """A lookup that holds nothing yet, like the asynchronous sources' first round."""

    def __init__(self) -> None:
        self.asked: list[ObjectRef] = []

    def get(self, ref: ObjectRef) -> Mapping[str, Any] | None:
        self.asked.append(ref)
        raise LookupPending(ref)

    def presets(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        raise LookupPending(presets_namespace=namespace)


def test_lookups_are_asked_for_one_at_a_time() -> None:
    lookup = _Pending()
    with pytest.raises(LookupPending) as pending:
        infer_matchers(vm(DV_VOLUME), lookup)
    assert pending.value.ref == ObjectRef("DataVolume", NS, "dv")
