"""``status.volumeRequests`` (``vms-admitter.go``: ``validateVolumeRequests``; ``pkg/controller``:
``ApplyVolumeRequestOnVMISpec``).

Needs cluster state when the VM says it is ready: KubeVirt then reads the VM's running VMI and checks the
requests against it too. The VMI is asked of the lookup (kind ``VirtualMachineInstance``); a lookup that
does not hold one answers "none running", which is what KubeVirt concludes when the VMI does not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from apiserver.render.admission._go import Causes, has, invalid, items, obj, text
from apiserver.render.admission.disks import validate_hotplug_disk
from apiserver.render.golang import gojson
from apiserver.render.golang.tree import clone
from apiserver.render.kubernetes.errors import Cause

_FIELD = "Status.volumeRequests"
_VOLUME = "kubevirt.io/api/core/v1.Volume"

JSON = dict[str, Any]
SpecValidator = Callable[[str, Mapping[str, Any]], Causes]


def _same_volume(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``equality.Semantic.DeepEqual`` of two volumes: equal as Go values (zero members do not count)."""
    try:
        return bool(gojson.encode(clone(dict(a)), _VOLUME) == gojson.encode(clone(dict(b)), _VOLUME))
    except Exception:
        return False


def _apply(spec: JSON, request: Mapping[str, Any]) -> None:
    """``ApplyVolumeRequestOnVMISpec``, in place."""
    add = obj(request, "addVolumeOptions")
    if add is not None:
        name = text(add, "name")
        volumes = spec.setdefault("volumes", [])
        if any(text(v, "name") == name for v in volumes if isinstance(v, dict)):
            return
        volume: JSON = {"name": name}
        source = obj(add, "volumeSource") or {}
        for kind in ("persistentVolumeClaim", "dataVolume"):
            if has(source, kind):
                volume[kind] = {**clone(source[kind]), "hotpluggable": True}
                break
        volumes.append(volume)
        if add.get("disk") is not None:
            disk = {**clone(add["disk"]), "name": name}
            devices = spec.setdefault("domain", {}).setdefault("devices", {})
            devices.setdefault("disks", []).append(disk)
        return
    remove = obj(request, "removeVolumeOptions")
    if remove is not None:
        name = text(remove, "name")
        spec["volumes"] = [v for v in items(spec, "volumes") if text(v, "name") != name]
        devices = spec.setdefault("domain", {}).setdefault("devices", {})
        devices["disks"] = [d for d in items(devices, "disks") if text(d, "name") != name]


def _is_migrating(vmi: Mapping[str, Any]) -> bool:
    """``migrations.IsMigrating``: started and not ended (timestamps taken as past, as they are in practice)."""
    state = obj(vmi, "status", "migrationState")
    return state is not None and state.get("startTimestamp") is not None and state.get("endTimestamp") is None


def validate_volume_requests(
    vm: Mapping[str, Any], running_vmi: Mapping[str, Any] | None, validate_spec: SpecValidator
) -> list[Cause]:
    """``validateVolumeRequests`` for a CREATE. ``running_vmi`` is the VM's VMI when ``status.ready`` (or None);
    ``validate_spec(field, spec)`` is ``ValidateVirtualMachineInstanceSpec``."""
    requests = items(obj(vm, "status"), "volumeRequests")
    if not requests:
        return []
    vmi = (
        running_vmi
        if running_vmi is not None and obj(running_vmi, "metadata", "deletionTimestamp") is None
        else None
    )
    if vmi is not None and (obj(vmi, "metadata") or {}).get("deletionTimestamp") is not None:
        vmi = None
    tspec = obj(vm, "spec", "template", "spec") or {}
    vm_volumes = {text(v, "name"): v for v in items(tspec, "volumes")}
    vmi_spec: JSON | None = clone(obj(vmi, "spec") or {}) if vmi is not None else None
    vmi_volumes = {text(v, "name"): v for v in items(vmi_spec, "volumes")} if vmi_spec is not None else {}
    new_spec: JSON = clone(tspec)
    added: set[str] = set()
    removed: set[str] = set()
    for request in requests:
        add, remove = obj(request, "addVolumeOptions"), obj(request, "removeVolumeOptions")
        if add is not None and remove is not None:
            return [
                invalid(
                    _FIELD,
                    "VolumeRequests require either addVolumeOptions or removeVolumeOptions to be set, not both",
                )
            ]
        if add is not None:
            name = text(add, "name")
            if name in added:
                return [invalid(_FIELD, f"AddVolume request for [{name}] aleady exists")]
            problem = validate_hotplug_disk(obj(add, "disk"), name, "AddVolume request", _FIELD)
            if problem:
                return problem
            new_volume: JSON = {"name": name}
            source = obj(add, "volumeSource") or {}
            for kind in ("persistentVolumeClaim", "dataVolume"):
                if has(source, kind):
                    new_volume[kind] = source[kind]
                    break
            if name in vm_volumes and not _same_volume(new_volume, vm_volumes[name]):
                return [
                    invalid(
                        _FIELD,
                        f"AddVolume request for [{name}] conflicts with an existing volume of the same name on the vmi template.",
                    )
                ]
            if name in vmi_volumes and not _same_volume(new_volume, vmi_volumes[name]):
                return [
                    invalid(
                        _FIELD,
                        f"AddVolume request for [{name}] conflicts with an existing volume of the same name on currently running vmi",
                    )
                ]
            added.add(name)
        elif remove is not None:
            name = text(remove, "name")
            if name in removed:
                return [invalid(_FIELD, f"RemoveVolume request for [{name}] aleady exists")]
            removed.add(name)
        else:
            return [
                invalid(
                    _FIELD,
                    "VolumeRequests require one of either addVolumeOptions or removeVolumeOptions to be set",
                )
            ]
        _apply(new_spec, request)
        if vmi_spec is not None:
            _apply(vmi_spec, request)
    causes = validate_spec("spec.template.spec", new_spec)
    if causes:
        return causes
    if vmi_spec is not None and vmi is not None:
        causes = validate_spec("spec.template.spec", vmi_spec)
        if causes:
            return causes
        if _is_migrating(vmi):
            return [
                Cause(
                    "spec",
                    "Cannot handle volume requests while VMI migration is in progress",
                    "FieldValueNotSupported",
                )
            ]
    return []
