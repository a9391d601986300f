"""Which volume and disk changes a running VM takes live.

Mirrors ``validLiveUpdateVolumes`` and ``validLiveUpdateDisks`` (``pkg/virt-controller/watch/vm/vm.go``)
with ``pkg/storage/types``' ``IsHotplugVolume`` and ``IsDeclarativeHotplugVolume``.
"""

from __future__ import annotations

from typing import Any

from apiserver.render.vmcontroller._go import JSON, semantic_equal

VOLUME = "kubevirt.io/api/core/v1.Volume"
DISK = "kubevirt.io/api/core/v1.Disk"


def is_hotplug_volume(volume: Any) -> bool:
    """``IsHotplugVolume``: a PVC or DataVolume marked hotpluggable, or a hotpluggable memory dump."""
    if not isinstance(volume, dict):
        return False
    for source in ("persistentVolumeClaim", "dataVolume", "memoryDump"):
        found = volume.get(source)
        if isinstance(found, dict) and found.get("hotpluggable"):
            return True
    return False


def _by_name(items: Any) -> dict[str, JSON]:
    out: dict[str, JSON] = {}
    for item in items or ():
        if isinstance(item, dict):
            out[str(item.get("name", ""))] = item
    return out


def valid_live_update_volumes(old_tspec: JSON, vm_spec: JSON, tspec: JSON) -> bool:
    """``validLiveUpdateVolumes``: every added, changed or removed volume is a hotplug volume (or, under
    the ``Migration`` update strategy, a PVC or DataVolume whose claim may change)."""
    old = _by_name(old_tspec.get("volumes"))
    migration = vm_spec.get("updateVolumesStrategy") == "Migration"
    for volume in tspec.get("volumes") or ():
        name = str(volume.get("name", ""))
        if is_hotplug_volume(volume):
            old.pop(name, None)
        elif name not in old:
            return False
        elif (
            volume.get("persistentVolumeClaim") is not None or volume.get("dataVolume") is not None
        ) and migration:
            old.pop(name, None)
        elif not semantic_equal(old[name], volume, VOLUME):
            return False
        else:
            old.pop(name, None)
    return all(is_hotplug_volume(v) for v in old.values())


def valid_live_update_disks(old_tspec: JSON, tspec: JSON) -> bool:
    """``validLiveUpdateDisks``: every added, changed or removed disk belongs to a hotplug volume, and no
    CD-ROM disk was removed."""
    old_disks = _by_name((old_tspec.get("domain") or {}).get("devices", {}).get("disks"))
    old_volumes = _by_name(old_tspec.get("volumes"))
    volumes = _by_name(tspec.get("volumes"))
    new_disks = _by_name((tspec.get("domain") or {}).get("devices", {}).get("disks"))
    for disk in (tspec.get("domain") or {}).get("devices", {}).get("disks") or ():
        name = str(disk.get("name", ""))
        if name in volumes and is_hotplug_volume(volumes[name]):
            old_disks.pop(name, None)
        elif name not in old_disks or not semantic_equal(old_disks[name], disk, DISK):
            return False
        else:
            old_disks.pop(name, None)
    for name, old_disk in old_disks.items():
        if name in old_volumes and not is_hotplug_volume(old_volumes[name]):
            return False
        if old_disk.get("cdrom") is not None and name not in new_disks:
            return False
    return True
