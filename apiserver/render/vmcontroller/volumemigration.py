"""Volume migration: a running VM's PVC and DataVolume claims changed under ``updateVolumesStrategy: Migration``.

Mirrors ``handleVolumeUpdateRequest``, ``handleValidationErrors`` and ``handleWaitAsReceiverVolumeInfo``
(``pkg/virt-controller/watch/vm/vm.go``) with the package they call,
``pkg/virt-controller/watch/volume-migration`` (``VolumeMigrationCancel``, ``PersistentVolumesUpdated``,
``ValidateVolumes``, ``GenerateMigratedVolumes``, ``GenerateReceiverMigratedVolumes``,
``ValidateVolumesUpdateMigration``, ``PatchVMIStatusWithMigratedVolumes``, ``PatchVMIVolumes``,
``SetVolumesChangeCondition``, ``UnsetVolumeChangeCondition``), and ``pkg/storage/types``'
``PVCNameFromVirtVolume``. The handlers record the VMI patches KubeVirt writes (``{path: value}``), set
``RestartRequired`` or ``status.volumeUpdateState`` on the VM, or fail (:class:`.hotplug.HandlerError`).

The VMI's ``VolumesChange`` condition carries ``metav1.Now()`` as its ``lastTransitionTime``: here the
clock of the call (``now``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from apiserver.render.golang import gojson
from apiserver.render.golang.gojson import GoDecodeError
from apiserver.render.golang.tree import clone
from apiserver.render.objects import DATA_VOLUME, PERSISTENT_VOLUME_CLAIM, ObjectLookup, ObjectRef
from apiserver.render.vmcontroller._go import JSON, set_restart_required
from apiserver.render.vmcontroller.hotplug import HandlerError
from apiserver.render.vmcontroller.livevolumes import VOLUME

MIGRATED_VOLUME = "kubevirt.io/api/core/v1.StorageMigratedVolumeInfo"
UPDATE_STATE = "kubevirt.io/api/core/v1.VolumeUpdateState"
VOLUMES_CHANGE = "VolumesChange"
STORAGE_LIVE_MIGRATABLE = "StorageLiveMigratable"
CANCELLATION = "VolumesChangeCancellation"
INVALID_UPDATE = "The volume can only be reverted to the previous version during the update"
BACKEND_STORAGE_PREFIX = "persistent-state-for"
CONDITIONS_PATH = "/status/conditions"
MIGRATED_PATH = "/status/migratedVolumes"
VOLUMES_PATH = "/spec/volumes"

Patch = dict[str, Any]


class _NotFound(Exception):
    """``storagetypes.ErrPVCNotFound`` / ``ErrDVNotFound``: the destination claim is not there."""


def _now_text(now: datetime | None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _items(value: Any) -> list[JSON]:
    return [v for v in value or () if isinstance(v, dict)] if isinstance(value, list) else []


def pvc_name(volume: Mapping[str, Any]) -> str:
    """``PVCNameFromVirtVolume``: the claim of a DataVolume, PVC or memory-dump volume ("" for others)."""
    for kind, key in (
        ("dataVolume", "name"),
        ("persistentVolumeClaim", "claimName"),
        ("memoryDump", "claimName"),
    ):
        source = volume.get(kind)
        if isinstance(source, dict):
            return str(source.get(key) or "")
    return ""


def _volumes(spec: Mapping[str, Any] | None) -> list[JSON]:
    return _items((spec or {}).get("volumes"))


def _tspec(vm: JSON) -> JSON:
    return ((vm.get("spec") or {}).get("template") or {}).get("spec") or {}


def _status(vmi: JSON) -> JSON:
    found = vmi.get("status")
    return found if isinstance(found, dict) else {}


def _migrated(vmi: JSON) -> list[JSON]:
    return _items(_status(vmi).get("migratedVolumes"))


def _conditions(vmi: JSON) -> list[JSON]:
    return _items(_status(vmi).get("conditions"))


def _has_condition(vmi: JSON, ctype: str, status: str) -> bool:
    return any(c.get("type") == ctype and c.get("status", "") == status for c in _conditions(vmi))


def updated_volumes_mapping(vmi: JSON, vm: JSON) -> dict[str, str]:
    """``updatedVolumesMapping``: volume name -> the VM's claim, for the VMI's claims the VM changed."""
    vm_claims = {str(v.get("name", "")): name for v in _volumes(_tspec(vm)) if (name := pvc_name(v))}
    out: dict[str, str] = {}
    for volume in _volumes(vmi.get("spec")):
        name = pvc_name(volume)
        claim = vm_claims.get(str(volume.get("name", "")))
        if name and claim is not None and name != claim:
            out[str(volume.get("name", ""))] = claim
    return out


def persistent_volumes_updated(vm_tspec: JSON, vmi_spec: JSON) -> bool:
    """``PersistentVolumesUpdated``: a volume's claim differs between the VM template and the VMI."""
    vmi_volumes = {str(v.get("name", "")): v for v in _volumes(vmi_spec)}
    for volume in _volumes(vm_tspec):
        claim = pvc_name(volume)
        running = vmi_volumes.get(str(volume.get("name", "")))
        if not claim or running is None:
            continue
        running_claim = pvc_name(running)
        if running_claim and running_claim != claim:
            return True
    return False


def _get(lookup: ObjectLookup, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
    return lookup.get(ObjectRef(kind, namespace, name))


def validate_volumes(vmi: JSON, vm: JSON, lookup: ObjectLookup) -> str | None:
    """``ValidateVolumes``: the message of the volumes that cannot migrate (None when all can); raises
    :class:`_NotFound` for a destination claim or DataVolume that does not exist."""
    updated = updated_volumes_mapping(vmi, vm)
    vmi_spec = vmi.get("spec") or {}
    devices = (vmi_spec.get("domain") or {}).get("devices") or {}
    disks = {str(d.get("name", "")): d for d in _items(devices.get("disks"))}
    filesystems = {str(f.get("name", "")) for f in _items(devices.get("filesystems"))}
    namespace = str((vm.get("metadata") or {}).get("namespace") or "default")
    invalid: dict[str, list[str]] = {"fs": [], "shareable": [], "luns": [], "noCSIDVs": []}
    for volume in _volumes(_tspec(vm)):
        name = str(volume.get("name", ""))
        if name not in updated:
            continue
        if name in filesystems:
            invalid["fs"].append(name)
            continue
        disk = disks.get(name)
        if disk is None:
            continue
        if disk.get("shareable") is True:
            invalid["shareable"].append(name)
            continue
        if disk.get("lun") is not None:
            invalid["luns"].append(name)
            continue
        claim_source = volume.get("persistentVolumeClaim")
        if isinstance(claim_source, dict):
            claim = str(claim_source.get("claimName") or "")
            if _get(lookup, PERSISTENT_VOLUME_CLAIM, namespace, claim) is None:
                raise _NotFound(_pvc_not_found(claim))
        dv_source = volume.get("dataVolume")
        if isinstance(dv_source, dict):
            dv_name = str(dv_source.get("name") or "")
            dv = _get(lookup, DATA_VOLUME, namespace, dv_name)
            if dv is None:
                raise _NotFound(
                    f"the datavolume {dv_name} doesn't exist" if dv_name else "datavolume not defined"
                )
            dv_status = dv.get("status")
            if isinstance(dv_status, Mapping) and dv_status.get("phase") == "Succeeded":
                continue
            pvc = _get(lookup, PERSISTENT_VOLUME_CLAIM, namespace, dv_name)
            if pvc is None:
                raise _NotFound(_pvc_not_found(dv_name))
            spec = pvc.get("spec")
            if not isinstance(spec, Mapping) or spec.get("dataSourceRef") is None:
                invalid["noCSIDVs"].append(name)
    parts = []
    for key, label in (
        ("fs", "filesystems"),
        ("shareable", "shareable"),
        ("luns", "luns"),
        ("noCSIDVs", "DV storage class isn't a CSI or not using volume populators"),
    ):
        if invalid[key]:
            parts.append(f" {label}: [{' '.join(invalid[key])}]")
    return "invalid volumes to update with migration:" + "".join(parts) if parts else None


def _pvc_not_found(name: str) -> str:
    return f"the pvc {name} doesn't exist" if name else "persistent volume claim not defined"


def _claim_info(claim: str, pvc: Mapping[str, Any] | None) -> JSON:
    """A ``PersistentVolumeClaimInfo`` of ``claim`` from its PVC (the name alone when there is none)."""
    info: JSON = {"claimName": claim}
    if pvc is None:
        return info
    spec = pvc.get("spec") if isinstance(pvc.get("spec"), Mapping) else {}
    status = pvc.get("status") if isinstance(pvc.get("status"), Mapping) else {}
    assert isinstance(spec, Mapping) and isinstance(status, Mapping)
    resources = spec.get("resources") if isinstance(spec.get("resources"), Mapping) else {}
    assert isinstance(resources, Mapping)
    for key, value in (
        ("volumeMode", spec.get("volumeMode")),
        ("accessModes", spec.get("accessModes")),
        ("requests", resources.get("requests")),
        ("capacity", status.get("capacity")),
    ):
        if value is not None:
            info[key] = value
    return info


def _encoded_infos(infos: list[JSON]) -> list[JSON]:
    """The migrated volumes as Go writes them (members in Go's order, quantities canonical); a PVC's
    member Go cannot decode is left out, as the informer would not hold such a PVC as it is."""
    out: list[JSON] = []
    for info in infos:
        try:
            out.append(gojson.encode(gojson.decode(info, MIGRATED_VOLUME, exact_names=True), MIGRATED_VOLUME))
        except GoDecodeError:
            for side in ("sourcePVCInfo", "destinationPVCInfo"):
                if isinstance(info.get(side), dict):
                    info[side] = {"claimName": info[side].get("claimName", "")}
            out.append(gojson.encode(gojson.decode(info, MIGRATED_VOLUME), MIGRATED_VOLUME))
    return out


def generate_migrated_volumes(vmi: JSON, vm: JSON, lookup: ObjectLookup) -> list[JSON]:
    """``GenerateMigratedVolumes``: source and destination claims of every volume whose claim changed."""
    namespace = str((vmi.get("metadata") or {}).get("namespace") or "default")
    old = {str(v.get("name", "")): name for v in _volumes(vmi.get("spec")) if (name := pvc_name(v))}
    infos: list[JSON] = []
    for volume in _volumes(_tspec(vm)):
        claim = pvc_name(volume)
        old_claim = old.get(str(volume.get("name", "")))
        if not claim or old_claim is None or old_claim == claim:
            continue
        source = _get(lookup, PERSISTENT_VOLUME_CLAIM, namespace, old_claim)
        destination = _get(lookup, PERSISTENT_VOLUME_CLAIM, namespace, claim)
        infos.append(
            {
                "volumeName": str(volume.get("name", "")),
                "destinationPVCInfo": _claim_info(claim, destination),
                "sourcePVCInfo": _claim_info(old_claim, source),
            }
        )
    return _encoded_infos(infos)


def generate_receiver_migrated_volumes(vmi: JSON, vm: JSON, lookup: ObjectLookup) -> list[JSON]:
    """``GenerateReceiverMigratedVolumes``: every claim of the VM that exists, with the source the VMI
    recorded."""
    namespace = str((vmi.get("metadata") or {}).get("namespace") or "default")
    sources = {
        str(v.get("volumeName", "")): v["sourcePVCInfo"]
        for v in _migrated(vmi)
        if isinstance(v.get("sourcePVCInfo"), dict)
    }
    infos: list[JSON] = []
    for volume in _volumes(_tspec(vm)):
        claim = pvc_name(volume)
        if not claim:
            continue
        pvc = _get(lookup, PERSISTENT_VOLUME_CLAIM, namespace, claim)
        if pvc is None:
            continue
        info: JSON = {
            "volumeName": str(volume.get("name", "")),
            "destinationPVCInfo": _claim_info(claim, pvc),
        }
        source = sources.get(str(volume.get("name", "")))
        if source is not None:
            info["sourcePVCInfo"] = {
                k: clone(source[k])
                for k in ("claimName", "volumeMode", "accessModes", "requests", "capacity")
                if k in source
            }
        infos.append(info)
    return _encoded_infos(infos)


def validate_volumes_update_migration(vmi: JSON, migrated: list[JSON]) -> str | None:
    """``ValidateVolumesUpdateMigration``: why the VMI cannot migrate these volumes (None when it can)."""
    if not migrated:
        return None
    for cond in _conditions(vmi):
        if cond.get("type") == STORAGE_LIVE_MIGRATABLE and cond.get("status") == "False":
            return f"cannot migrate the volumes as the VMI isn't migratable: {cond.get('message', '')}"
    names = {str(v.get("volumeName", "")) for v in migrated}
    for status in _items(_status(vmi).get("volumeStatus")):
        info = status.get("persistentVolumeClaimInfo")
        if not isinstance(info, dict):
            continue
        name = str(status.get("name", ""))
        if name.startswith(BACKEND_STORAGE_PREFIX):
            continue
        modes = info.get("accessModes")
        shared = isinstance(modes, list) and any(m in ("ReadOnlyMany", "ReadWriteMany") for m in modes)
        read_write_once = not shared
        if read_write_once and name not in names:
            return (
                f"cannot migrate the VM. The volume {name} is RWO and not included in the migration volumes"
            )
    return None


def _encoded_condition(cond: Mapping[str, Any]) -> JSON:
    """A ``VirtualMachineInstanceCondition`` as Go writes it (the times are written even when zero)."""
    out: JSON = {
        "type": str(cond.get("type", "")),
        "status": str(cond.get("status", "")),
        "lastProbeTime": cond.get("lastProbeTime") or None,
        "lastTransitionTime": cond.get("lastTransitionTime") or None,
    }
    for key in ("reason", "message"):
        if cond.get(key):
            out[key] = str(cond[key])
    return out


def _conditions_patch(vmi: JSON, conditions: list[JSON]) -> Patch:
    """``patchConditions``: the VMI's conditions replaced, when they changed."""
    before = [_encoded_condition(c) for c in _conditions(vmi)]
    after = [_encoded_condition(c) for c in conditions]
    if before == after:
        return {}
    return {CONDITIONS_PATH: after or None}


def _update_condition(conditions: list[JSON], new: JSON) -> list[JSON]:
    """``VirtualMachineInstanceConditionManager.UpdateCondition``: replaced when status or reason differ."""
    out = [clone(c) for c in conditions]
    for i, cond in enumerate(out):
        if cond.get("type") != new["type"]:
            continue
        if cond.get("status", "") != new["status"] or cond.get("reason", "") != new.get("reason", ""):
            out[i] = new
        return out
    out.append(new)
    return out


def set_volumes_change_condition(vmi: JSON, status: str, message: str, now: datetime | None) -> Patch:
    """``SetVolumesChangeCondition``."""
    new = {"type": VOLUMES_CHANGE, "status": status, "lastTransitionTime": _now_text(now), "message": message}
    return _conditions_patch(vmi, _update_condition(_conditions(vmi), new))


def unset_volume_change_condition(vmi: JSON) -> Patch:
    """``UnsetVolumeChangeCondition``."""
    return _conditions_patch(vmi, [c for c in _conditions(vmi) if c.get("type") != VOLUMES_CHANGE])


def patch_vmi_status_with_migrated_volumes(vmi: JSON, migrated: list[JSON]) -> Patch:
    """``PatchVMIStatusWithMigratedVolumes``: written once, while the VMI records none."""
    if _migrated(vmi) or not migrated:
        return {}
    return {MIGRATED_PATH: migrated}


def patch_vmi_volumes(vmi: JSON, vm: JSON) -> Patch:
    """``PatchVMIVolumes``: the VMI's migrating volumes replaced with the VM's (once the VMI records its
    migrated volumes, so the pass after the one that wrote them)."""
    migrating = {str(v.get("volumeName", "")) for v in _migrated(vmi)}
    if not migrating:
        return {}
    wanted = {str(v.get("name", "")): v for v in _volumes(_tspec(vm))}
    running = _volumes(vmi.get("spec"))
    volumes = [
        clone(wanted[name]) if (name := str(v.get("name", ""))) in migrating and name in wanted else v
        for v in running
    ]
    before = [gojson.encode(v, VOLUME) for v in running]
    after = [gojson.encode(v, VOLUME) for v in volumes]
    return {} if before == after else {VOLUMES_PATH: after or None}


def _volume_migrating(vmi: JSON) -> bool:
    """``IsVolumeMigrating``: the VMI's VolumesChange condition is True."""
    return _has_condition(vmi, VOLUMES_CHANGE, "True")


def volume_migration_cancel(vmi: JSON, vm: JSON, now: datetime | None = None) -> tuple[bool, Patch]:
    """``VolumeMigrationCancel``: whether a migration under way ends here (the VM changed a migrating
    volume), and the patches cancelling it (``cancelVolumeMigration``) when the VM went back to the old
    claims; raises :class:`.hotplug.HandlerError` for any other change of a migrating volume."""
    updated = updated_volumes_mapping(vmi, vm)
    migrated = _migrated(vmi)
    if not _volume_migrating(vmi) or not any(str(v.get("volumeName", "")) in updated for v in migrated):
        return False, {}
    remaining = dict(updated)
    for volume in migrated:
        source = volume.get("sourcePVCInfo")
        claim = remaining.get(str(volume.get("volumeName", "")))
        if not isinstance(source, dict) or claim is None or source.get("claimName", "") != claim:
            raise HandlerError(INVALID_UPDATE)
        del remaining[str(volume.get("volumeName", ""))]
    if remaining:
        raise HandlerError(INVALID_UPDATE)
    patch = patch_vmi_volumes(vmi, vm)
    cancelled = _update_condition(
        _conditions(vmi),
        {
            "type": VOLUMES_CHANGE,
            "status": "False",
            "lastTransitionTime": _now_text(now),
            "reason": CANCELLATION,
        },
    )
    # the migrated volumes are dropped, so the status always changes: both members are written
    patch[CONDITIONS_PATH] = [_encoded_condition(c) for c in cancelled]
    patch[MIGRATED_PATH] = None
    return True, patch


def _set_update_state(vm: JSON, migrated: list[JSON]) -> None:
    status = vm.setdefault("status", {})
    state = status.get("volumeUpdateState")
    if not isinstance(state, dict):
        state = status["volumeUpdateState"] = {}
    if migrated:
        decoded = gojson.decode({"volumeMigrationState": {"migratedVolumes": migrated}}, UPDATE_STATE)
        state["volumeMigrationState"] = decoded["volumeMigrationState"]


def handle_volume_update_request(
    vm: JSON, vmi: JSON | None, lookup: ObjectLookup, now: datetime | None = None
) -> Patch:
    """``handleVolumeUpdateRequest`` (with ``handleValidationErrors``) on ``vm`` (the sync's VM copy)."""
    if vmi is None:
        return {}
    aborted, patch = volume_migration_cancel(vmi, vm, now)
    if aborted:
        return patch
    strategy = (vm.get("spec") or {}).get("updateVolumesStrategy")
    if strategy in (None, "Replacement"):
        return {}
    if strategy != "Migration":
        raise HandlerError(f"updateVolumes strategy not recognized: {strategy}")
    if not persistent_volumes_updated(_tspec(vm), vmi.get("spec") or {}):
        return {}
    try:
        invalid = validate_volumes(vmi, vm, lookup)
    except _NotFound as missing:
        return set_volumes_change_condition(
            vmi, "False", f"One of the destination volumes doesn't exist: {missing}", now
        )
    if invalid is not None:
        set_restart_required(vm, invalid)
        return {}
    patch = unset_volume_change_condition(vmi)
    migrated = generate_migrated_volumes(vmi, vm, lookup)
    problem = validate_volumes_update_migration(vmi, migrated)
    if problem is not None:
        set_restart_required(vm, problem)
        return patch
    patch.update(patch_vmi_status_with_migrated_volumes(vmi, migrated))
    patch.update(patch_vmi_volumes(vmi, vm))
    _set_update_state(vm, migrated)
    return patch


def handle_wait_as_receiver_volume_info(vm: JSON, vmi: JSON | None, lookup: ObjectLookup) -> Patch:
    """``handleWaitAsReceiverVolumeInfo``: a receiving VMI records the claims it will run on."""
    if vmi is None:
        return {}
    state = _status(vmi).get("migrationState")
    if isinstance(state, dict) and state.get("completed") is True:
        return {}
    return patch_vmi_status_with_migrated_volumes(vmi, generate_receiver_migrated_volumes(vmi, vm, lookup))
