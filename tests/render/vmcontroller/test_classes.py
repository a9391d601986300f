"""Issue 36's classes of the change preview, without the oracles: what the previews must answer, each
written from KubeVirt's answer (``expand-restart`` for one pass, ``expand-settle`` for the settled state)
on a running VM of the oracle corpus (its VMI made by KubeVirt's own ``startVMI`` and VMI webhook)."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from apiserver.render.objects import ObjectIndex
from apiserver.render.vmcontroller.preview import decide, preview

CORPUS = Path(__file__).with_name("corpus")
AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
        }
    }
}
TOLERATIONS = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]


def _case(family: str, name: str) -> dict[str, Any]:
    with gzip.open(CORPUS / f"{family}.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record["name"] == name:
                return copy.deepcopy(record["input"])  # type: ignore[no-any-return]
    raise AssertionError(f"no case {name!r} in {family}")


def _tspec(vm: dict[str, Any]) -> dict[str, Any]:
    return vm["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def _running_with(field: str, value: Any) -> dict[str, Any]:
    """A LiveUpdate VM started with ``field`` set, its VMI carrying it."""
    inp = _case("scheduling", "add node selector (LiveUpdate)")
    for vm in (inp["startVM"], inp["vm"]):
        _tspec(vm).pop("nodeSelector", None)
        _tspec(vm)[field] = copy.deepcopy(value)
    inp["vmi"]["spec"][field] = copy.deepcopy(value)
    return inp


# --- 1. null, not empty, in the live patches -------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "emptied", "patched"),
    [
        ("nodeSelector", {"zone": "a"}, {}, None),
        ("nodeSelector", {"zone": "a"}, None, None),
        ("tolerations", TOLERATIONS, [], None),
        ("tolerations", TOLERATIONS, None, None),
        ("affinity", AFFINITY, None, None),
        # a pointer to an empty struct survives Go's encoding: KubeVirt writes it as it is
        ("affinity", AFFINITY, {}, {}),
    ],
)
def test_an_emptied_scheduling_field_is_removed_from_the_vmi(
    field: str, value: Any, emptied: Any, patched: Any
) -> None:
    inp = _running_with(field, value)
    if emptied is None:
        del _tspec(inp["vm"])[field]
    else:
        _tspec(inp["vm"])[field] = emptied
    result = decide(
        inp["vm"],
        ObjectIndex(inp["objects"]),
        vmi=inp["vmi"],
        start_vm=inp["startVM"],
        kubevirt=inp["kubevirt"],
    )
    assert not result.restart_required
    assert result.live_updates == {f"/spec/{field}": patched}
    shown = preview(
        inp["vm"],
        ObjectIndex(inp["objects"]),
        current=inp["startVM"],
        vmi=inp["vmi"],
        start_vm=inp["startVM"],
        kubevirt=inp["kubevirt"],
    )
    assert shown.verdict == "live"
    assert shown.as_status()["liveUpdates"] == [{"path": f"/spec/{field}", "value": patched}]


# --- 2. volume migration ---------------------------------------------------------------------------------


def _pvc(name: str, modes: tuple[str, ...] = ("ReadWriteOnce",)) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": list(modes),
            "volumeMode": "Filesystem",
            "resources": {"requests": {"storage": "10Gi"}},
        },
        "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}},
    }


def _claim_changed(*, filesystem: bool = False) -> dict[str, Any]:
    """A LiveUpdate VM running on the claim ``old`` whose template now names ``new``, to migrate."""
    inp = _case("scheduling", "add node selector (LiveUpdate)")
    for spec in (_tspec(inp["startVM"]), _tspec(inp["vm"]), inp["vmi"]["spec"]):
        spec.pop("nodeSelector", None)
        spec["volumes"].append({"name": "data", "persistentVolumeClaim": {"claimName": "old"}})
        devices = spec["domain"]["devices"]
        if filesystem:
            devices["filesystems"] = [{"name": "data", "virtiofs": {}}]
        else:
            devices["disks"].append({"name": "data", "disk": {"bus": "virtio"}})
    inp["vm"]["spec"]["updateVolumesStrategy"] = "Migration"
    _tspec(inp["vm"])["volumes"][-1]["persistentVolumeClaim"]["claimName"] = "new"
    inp["objects"] = [_pvc("old"), _pvc("new")]
    return inp


def _decide(inp: dict[str, Any], *, settled: bool) -> Any:
    return decide(
        inp["vm"],
        ObjectIndex(inp["objects"]),
        vmi=inp["vmi"],
        start_vm=inp["startVM"],
        kubevirt=inp["kubevirt"],
        settled=settled,
    )


CLAIM_INFO = {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"}
SIZES = {"capacity": {"storage": "10Gi"}, "requests": {"storage": "10Gi"}}
MIGRATED = [
    {
        "volumeName": "data",
        "sourcePVCInfo": {"claimName": "old", **CLAIM_INFO, **SIZES},
        "destinationPVCInfo": {"claimName": "new", **CLAIM_INFO, **SIZES},
    }
]


def test_a_changed_claim_under_the_migration_strategy_migrates_live() -> None:
    inp = _claim_changed()
    one = _decide(inp, settled=False)
    # the first pass records the volumes to migrate; the VMI's volumes follow on the next pass
    assert not one.restart_required
    assert one.live_updates == {"/status/migratedVolumes": MIGRATED}
    settled = _decide(inp, settled=True)
    assert not settled.restart_required
    assert settled.live_updates["/status/migratedVolumes"] == MIGRATED
    assert settled.live_updates["/spec/volumes"][-1] == {
        "name": "data",
        "persistentVolumeClaim": {"claimName": "new"},
    }
    assert settled.passes == 3 and settled.settled
    shown = preview(
        inp["vm"],
        ObjectIndex(inp["objects"]),
        current=inp["startVM"],
        vmi=inp["vmi"],
        start_vm=inp["startVM"],
        kubevirt=inp["kubevirt"],
    ).as_status()
    assert shown["verdict"] == "live"
    assert shown["volumeUpdateState"] == {"volumeMigrationState": {"migratedVolumes": MIGRATED}}
    assert "notModelled" not in shown


def test_a_missing_destination_claim_is_the_vmis_volumes_change_condition() -> None:
    inp = _claim_changed()
    inp["objects"] = [_pvc("old")]
    result = _decide(inp, settled=True)
    assert not result.restart_required
    conditions = result.live_updates["/status/conditions"]
    assert conditions[-1]["type"] == "VolumesChange"
    assert conditions[-1]["status"] == "False"
    assert (
        conditions[-1]["message"] == "One of the destination volumes doesn't exist: the pvc new doesn't exist"
    )
    assert conditions[-1]["lastTransitionTime"]
    assert conditions[0] == {
        "type": "Ready",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": None,
    }


def test_a_filesystem_cannot_migrate_so_the_vm_needs_a_restart() -> None:
    result = _decide(_claim_changed(filesystem=True), settled=True)
    assert result.restart_required
    assert result.message == "invalid volumes to update with migration: filesystems: [data]"
    assert result.live_updates == {}


def test_a_migration_under_way_cannot_take_another_claim() -> None:
    inp = _claim_changed()
    inp["vmi"]["status"]["conditions"].append({"type": "VolumesChange", "status": "True"})
    inp["vmi"]["status"]["migratedVolumes"] = [
        {
            "volumeName": "data",
            "sourcePVCInfo": {"claimName": "older"},
            "destinationPVCInfo": {"claimName": "old"},
        }
    ]
    result = _decide(inp, settled=True)
    assert result.sync_error_reason == "VolumesUpdateError"
    assert result.sync_error == (
        "error encountered while handling volumes update requests: "
        "The volume can only be reverted to the previous version during the update"
    )


# --- 3. every sync pass ----------------------------------------------------------------------------------


def _hotplugged() -> dict[str, Any]:
    """A LiveUpdate VM with the preference p-virtio, which sets the interface model, and a bridge
    interface on a Multus network added to it."""
    inp = _case("preference-switch", "p-virtio -> p-sata (LiveUpdate)")
    vm = copy.deepcopy(inp["startVM"])
    _tspec(vm)["domain"]["devices"]["interfaces"].append({"name": "sec", "bridge": {}})
    _tspec(vm)["networks"].append({"name": "sec", "multus": {"networkName": "nad-a"}})
    inp["vm"] = vm
    return inp


def test_a_hotplug_the_preference_would_change_needs_a_restart_on_the_next_pass() -> None:
    inp = _hotplugged()
    one = _decide(inp, settled=False)
    assert not one.restart_required
    assert one.live_updates["/spec/domain/devices/interfaces"][-1] == {"name": "sec", "bridge": {}}
    settled = _decide(inp, settled=True)
    assert settled.restart_required
    assert settled.message == "a non-live-updatable field was changed in the template spec"
    assert settled.live_updates == one.live_updates
    shown = preview(
        inp["vm"],
        ObjectIndex(inp["objects"]),
        current=inp["startVM"],
        vmi=inp["vmi"],
        start_vm=inp["startVM"],
        kubevirt=inp["kubevirt"],
    )
    assert shown.verdict == "restart"
    assert shown.message == "a non-live-updatable field was changed in the template spec"


def test_the_same_hotplug_without_a_preference_stays_live() -> None:
    inp = _case("interfaces", "add bridge on multus (LiveUpdate, migratable=True)")
    settled = _decide(inp, settled=True)
    assert not settled.restart_required
    assert settled.live_updates["/spec/domain/devices/interfaces"][-1] == {"name": "sec", "bridge": {}}
    assert settled.passes == 2 and settled.settled
