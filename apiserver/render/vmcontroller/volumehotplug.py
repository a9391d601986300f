"""Declarative volume hotplug: hot-pluggable volumes and their disks follow the VM onto the running VMI.

Mirrors ``handleDeclarativeVolumeHotplug`` (``pkg/virt-controller/watch/vm/vm.go``; on when the
``DeclarativeHotplugVolumes`` gate is and the deprecated ``HotplugVolumes`` is not) and
``pkg/storage/hotplug/hotplug.go`` (``HandleDeclarativeVolumes``, ``patchHotplugVolumes``,
``filterHotplugVMIVolumes``, ``getNewHotplugVMVolumes``, ``filterHotplugVMIDisks``, ``getNewHotplugVMDisks``).
"""

from __future__ import annotations

from typing import Any

from apiserver.render.golang import gojson
from apiserver.render.golang.tree import clone
from apiserver.render.vmcontroller._go import JSON, semantic_equal
from apiserver.render.vmcontroller.livevolumes import DISK, VOLUME

VOLUMES_PATH = "/spec/volumes"
DISKS_PATH = "/spec/domain/devices/disks"


def _declarative(volume: Any) -> bool:
    """``IsDeclarativeHotplugVolume``: a PVC or DataVolume marked hotpluggable."""
    if not isinstance(volume, dict):
        return False
    return any(
        isinstance(volume.get(kind), dict) and bool(volume[kind].get("hotpluggable"))
        for kind in ("persistentVolumeClaim", "dataVolume")
    )


def _by_name(items: Any) -> dict[str, JSON]:
    return {str(i.get("name", "")): i for i in items or () if isinstance(i, dict)}


def _disks(spec: JSON) -> list[JSON]:
    return list(((spec.get("domain") or {}).get("devices") or {}).get("disks") or ())


def _same_list(a: list[JSON], b: list[JSON], go_type: str) -> bool:
    return len(a) == len(b) and all(semantic_equal(x, y, go_type) for x, y in zip(a, b, strict=True))


def patch_hotplug_volumes(vm: JSON, vmi: JSON | None) -> dict[str, Any]:
    """``HandleDeclarativeVolumes``: the VMI patch (``{path: value}``; empty when nothing changes)."""
    spec = vm.get("spec") or {}
    if spec.get("updateVolumesStrategy") == "Migration":
        return {}
    if vmi is None or (vmi.get("status") or {}).get("phase") != "Running":
        return {}
    tspec = (spec.get("template") or {}).get("spec") or {}
    vmi_spec = vmi.get("spec") or {}
    vm_volumes = _by_name(tspec.get("volumes"))
    vmi_volume_list = list(vmi_spec.get("volumes") or ())
    volumes: list[JSON] = []
    for volume in vmi_volume_list:
        if _declarative(volume):
            wanted = vm_volumes.get(str(volume.get("name", "")))
            if wanted is None or (_declarative(wanted) and not semantic_equal(wanted, volume, VOLUME)):
                continue
        volumes.append(clone(volume))
    vmi_volumes = _by_name(vmi_volume_list)
    with_status = {
        str(s.get("name", ""))
        for s in (vmi.get("status") or {}).get("volumeStatus") or ()
        if isinstance(s, dict)
    }
    for volume in tspec.get("volumes") or ():
        name = str(volume.get("name", ""))
        if _declarative(volume) and name not in vmi_volumes and name not in with_status:
            volumes.append(clone(volume))

    new_by_name = _by_name(volumes)
    vm_disks = _by_name(_disks(tspec))
    vmi_disk_list = _disks(vmi_spec)
    disks: list[JSON] = []
    for disk in vmi_disk_list:
        name = str(disk.get("name", ""))
        if name not in new_by_name:
            wanted_disk = vm_disks.get(name)
            if wanted_disk is None:
                continue
            if name in vm_volumes and (wanted_disk.get("cdrom") is None or disk.get("cdrom") is None):
                continue
        disks.append(clone(disk))
    vmi_disks = _by_name(vmi_disk_list)
    for disk in _disks(tspec):
        name = str(disk.get("name", ""))
        if name in new_by_name and _declarative(new_by_name[name]) and name not in vmi_disks:
            disks.append(clone(disk))

    if _same_list(vmi_volume_list, volumes, VOLUME) and _same_list(vmi_disk_list, disks, DISK):
        return {}
    return {
        VOLUMES_PATH: [gojson.encode(v, VOLUME) for v in volumes] if volumes else None,
        DISKS_PATH: [gojson.encode(d, DISK) for d in disks] if disks else None,
    }
