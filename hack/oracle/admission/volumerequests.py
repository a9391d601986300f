"""status.volumeRequests: hotplug requests on a VM, checked against its template and its running VMI
(``apiserver/render/admission/volumerequests.py``; the hotplug disk checks are in ``disks.py`` there)."""

from __future__ import annotations

from typing import Any

from hack.oracle.admission.base import INV, JSON, NS, VMS_ADMITTER, check, go_file, sweep, variant

# The addVolumeOptions of a valid hotplug of volume ``hp``.
ADD_OPTIONS = {
    "name": "hp",
    "disk": {"disk": {"bus": "scsi"}},
    "volumeSource": {"persistentVolumeClaim": {"claimName": "hp"}},
}
_VOLUME_REQUESTS: list[Any] = [
    [{"addVolumeOptions": ADD_OPTIONS}],
    [{"addVolumeOptions": {**ADD_OPTIONS, "disk": {"disk": {"bus": "sata"}}}}],
    [{"addVolumeOptions": {**ADD_OPTIONS, "disk": {"lun": {"bus": "virtio"}}}}],
    [{"addVolumeOptions": {**ADD_OPTIONS, "disk": {"lun": {"bus": "scsi"}}}}],
    [{"addVolumeOptions": {**ADD_OPTIONS, "disk": {"cdrom": {"bus": "sata"}}}}],
    [{"addVolumeOptions": {**ADD_OPTIONS, "disk": None}}],
    [{"addVolumeOptions": {k: v for k, v in ADD_OPTIONS.items() if k != "disk"}}],
    [{"addVolumeOptions": {**ADD_OPTIONS, "disk": {"disk": {"bus": "scsi"}, "dedicatedIOThread": True}}}],
    [{"addVolumeOptions": {**ADD_OPTIONS, "disk": {"disk": {"bus": "virtio"}, "bootOrder": 0}}}],
    [{"addVolumeOptions": {**ADD_OPTIONS, "disk": {"disk": {"bus": "virtio"}, "bootOrder": 1}}}],
    [{"addVolumeOptions": ADD_OPTIONS}, {"addVolumeOptions": ADD_OPTIONS}],
    [{"removeVolumeOptions": {"name": "hp"}}, {"removeVolumeOptions": {"name": "hp"}}],
    [{"removeVolumeOptions": {"name": "root"}}],
    [{"addVolumeOptions": ADD_OPTIONS, "removeVolumeOptions": {"name": "hp"}}],
    [{}],
    [{"addVolumeOptions": {**ADD_OPTIONS, "name": "root"}}],
    [{"addVolumeOptions": {**ADD_OPTIONS, "volumeSource": {"dataVolume": {"name": "x"}}}}],
    [{"addVolumeOptions": {**ADD_OPTIONS, "name": "Bad_Name"}}],
    [{"addVolumeOptions": {**ADD_OPTIONS, "disk": {"disk": {"bus": "virtio"}, "serial": "bad serial"}}}],
    [{"addVolumeOptions": ADD_OPTIONS}, {"removeVolumeOptions": {"name": "hp"}}],
]


def _vmis(volumes: list[JSON], migration: JSON | None = None, deleting: bool = False) -> tuple[JSON, ...]:
    """A running VMI for each base VM's name (the webhook reads the VM's VMI when the VM is ready)."""
    out = []
    for name in ("cd", "dv", "it", "min"):
        meta: JSON = {"name": name, "namespace": "default"}
        if deleting:
            meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        vmi: JSON = {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstance",
            "metadata": meta,
            "spec": {
                "domain": {"devices": {"disks": [{"name": v["name"]} for v in volumes]}},
                "volumes": volumes,
            },
        }
        if migration is not None:
            vmi["status"] = {"migrationState": migration}
        out.append(vmi)
    return tuple(out)


_HP_PVC = {"name": "hp", "persistentVolumeClaim": {"claimName": "hp"}}
_HP_OTHER = {"name": "hp", "persistentVolumeClaim": {"claimName": "other"}}


def variants() -> None:
    """validateVolumeRequests, ValidateHotplugDiskConfiguration."""
    sweep(
        "volumerequests",
        "status.volumeRequests={}",
        _VOLUME_REQUESTS,
        lambda vm, v: vm.__setitem__("status", {"volumeRequests": v}),
    )
    sweep(
        "volumerequests",
        "ready VM without VMI, volumeRequests={}",
        _VOLUME_REQUESTS[:3],
        lambda vm, v: vm.__setitem__("status", {"ready": True, "volumeRequests": v}),
    )
    for label, objects in (
        ("running VMI without the volume", _vmis([{"name": "root", "containerDisk": {"image": "i"}}])),
        ("running VMI with the same volume", _vmis([_HP_PVC])),
        ("running VMI with another volume of that name", _vmis([_HP_OTHER])),
        ("running VMI being deleted, other volume", _vmis([_HP_OTHER], deleting=True)),
        ("running VMI migrating", _vmis([], {"startTimestamp": "2024-01-01T00:00:00Z"})),
        (
            "running VMI migrated",
            _vmis([], {"startTimestamp": "2024-01-01T00:00:00Z", "endTimestamp": "2024-01-01T00:01:00Z"}),
        ),
        ("running VMI migration not started", _vmis([], {"targetNode": "n"})),
        ("running VMI with an invalid spec", _vmis([{"name": "x"}])),
    ):
        for ready in (True, False):
            variant(
                "volumerequests",
                f"{label}, ready={ready}, add hp",
                lambda vm, r=ready: vm.__setitem__(
                    "status", {"ready": r, "volumeRequests": [{"addVolumeOptions": ADD_OPTIONS}]}
                ),
                objects=objects,
            )
        variant(
            "volumerequests",
            f"{label}, ready, remove root",
            lambda vm: vm.__setitem__(
                "status", {"ready": True, "volumeRequests": [{"removeVolumeOptions": {"name": "root"}}]}
            ),
            objects=objects,
        )


def checks() -> None:
    go_file(VMS_ADMITTER, "volumerequests")
    check(
        "vr.both",
        "validateVolumeRequests",
        INV,
        "require either addVolumeOptions or removeVolumeOptions to be set, not both",
    )
    check("vr.add-twice", "validateVolumeRequests", INV, "re:^AddVolume request for \\[.*\\] aleady exists$")
    check(
        "vr.conflict-template",
        "validateVolumeRequests",
        INV,
        "conflicts with an existing volume of the same name on the vmi template.",
    )
    check(
        "vr.conflict-vmi",
        "validateVolumeRequests",
        INV,
        "conflicts with an existing volume of the same name on currently running vmi",
    )
    check("vr.remove-twice", "validateVolumeRequests", INV, "RemoveVolume request for [")
    check(
        "vr.neither",
        "validateVolumeRequests",
        INV,
        "require one of either addVolumeOptions or removeVolumeOptions",
    )
    check(
        "vr.migrating",
        "validateVolumeRequests",
        NS,
        "Cannot handle volume requests while VMI migration is in progress",
    )
    go_file("pkg/storage/admitters/storagehotplug.go", "volumerequests")
    check("hotplug.no-disk", "ValidateHotplugDiskConfiguration", INV, "requires the disk field to be set.")
    check(
        "hotplug.disk-bus", "ValidateHotplugDiskConfiguration", INV, "requires bus to be 'scsi' or 'virtio'."
    )
    check("hotplug.lun-bus", "ValidateHotplugDiskConfiguration", INV, "requires bus to be 'scsi'.")
    check(
        "hotplug.device",
        "ValidateHotplugDiskConfiguration",
        INV,
        "requires diskDevice of type 'disk' or 'lun' to be used.",
    )
    check("hotplug.iothreads", "ValidateHotplugDiskConfiguration", INV, "requires virtio bus for IOThreads.")
    check(
        "hotplug.boot-order",
        "ValidateHotplugDiskConfiguration",
        INV,
        "spec.domain.devices.disks[1] must have a boot order > 0",
    )
