"""Disks: boot order and disks↔volumes, targets, buses, PCI addresses, serials, cache, IO, error policy,
names, block sizes (``apiserver/render/admission/disks.py``)."""

from __future__ import annotations

from typing import Any

from hack.oracle.admission.base import (
    INV,
    NO_BETA,
    NS,
    REQ,
    VMI_CREATE,
    add_disk,
    append,
    check,
    devices,
    go_file,
    sweep,
    variant,
)

_BUSES = ["virtio", "sata", "scsi", "usb", "ide", "bogus", "VIRTIO", ""]
_BLOCK: list[Any] = [
    {"custom": {"logical": 512, "physical": 512}},
    {"custom": {"logical": 4096, "physical": 512}},
    {"custom": {"logical": 256, "physical": 512}},
    {"custom": {"logical": 512, "physical": 4194304}},
    {"custom": {"logical": 1000, "physical": 1000}},
    {"custom": {"logical": 512, "physical": 1000}},
    {"custom": {"logical": 512, "physical": 4096, "discardGranularity": 1024}},
    {"custom": {"logical": 512, "physical": 4096, "discardGranularity": 1000}},
    {"custom": {"logical": 0, "physical": 0, "discardGranularity": 1000}},
    {"custom": {"logical": 4096, "physical": 4096}, "matchVolume": {"enabled": True}},
    {"custom": {"logical": 4096, "physical": 4096}, "matchVolume": {}},
    {"custom": {"logical": 4096, "physical": 4096}, "matchVolume": {"enabled": False}},
    {"matchVolume": {}},
    {"custom": {}},
    {"custom": {"logical": 2097152, "physical": 2097152}},
    {"custom": {"logical": 4194304, "physical": 4194304}},
]


def boot_order_variants() -> None:
    """Boot order and disks↔volumes (validateBootOrder)."""
    variant("disks", "disk without volume", lambda vm: add_disk(vm, "novol", {"disk": {"bus": "virtio"}}, {}))
    variant(
        "disks",
        "cdrom without volume",
        lambda vm: add_disk(vm, "emptycd", {"cdrom": {"bus": "sata"}}, {}),
        gates=("DeclarativeHotplugVolumes",),
        configs=(NO_BETA,),
    )
    sweep(
        "disks",
        "lun on volume={}",
        [
            {"persistentVolumeClaim": {"claimName": "p"}},
            {"dataVolume": {"name": "d"}},
            {"containerDisk": {"image": "i"}},
            {"emptyDisk": {"capacity": "1Gi"}},
            {"hostDisk": {"path": "/x", "type": "Disk"}},
        ],
        lambda vm, v: add_disk(vm, "lunny", {"lun": {}}, v),
    )
    sweep(
        "disks",
        "downwardMetrics volume on disk={}",
        [
            {"disk": {"bus": "virtio"}},
            {"disk": {}},
            {"disk": {"bus": "sata"}},
            {"lun": {}},
            {"cdrom": {}},
            {},
        ],
        lambda vm, v: add_disk(vm, "dm", v, {"downwardMetrics": {}}),
        gates=("DownwardMetrics",),
    )
    sweep(
        "disks",
        "bootOrder={} on a disk",
        [0, 1, 2, -1, 4294967295],
        lambda vm, v: add_disk(vm, "bo", {"bootOrder": v}),
    )
    variant(
        "disks",
        "three disks same bootOrder",
        lambda vm: (
            add_disk(vm, "b1", {"bootOrder": 3}),
            add_disk(vm, "b2", {"bootOrder": 3}),
            add_disk(vm, "b3", {"bootOrder": 3}),
        ),
    )


def variants() -> None:
    """storage/admitters ValidateDisks."""
    variant(
        "disks",
        "duplicate disk name",
        lambda vm: append(devices(vm), "disks", devices(vm).get("disks", [{"name": "root"}])[0]),
    )
    variant(
        "disks",
        "three disks same name",
        lambda vm: (add_disk(vm, "tri"), add_disk(vm, "tri", volume={}), add_disk(vm, "tri", volume={})),
    )
    sweep(
        "disks",
        "disk targets={}",
        [
            {"disk": {}, "lun": {}},
            {"disk": {}, "cdrom": {}},
            {"lun": {}, "cdrom": {}},
            {"disk": {}, "lun": {}, "cdrom": {}},
            {},
        ],
        lambda vm, v: add_disk(vm, "tgt", v, {"persistentVolumeClaim": {"claimName": "c"}}),
    )
    sweep(
        "disks",
        "disk pciAddress={} bus={}",
        [
            ("0000:81:00.1", "virtio"),
            ("0000:81:00.1", "scsi"),
            ("bogus", "virtio"),
            ("bogus", "sata"),
            ("0000:81:00.1", ""),
            ("0000:00:1f.8", "virtio"),
        ],
        lambda vm, v: add_disk(vm, "pci", {"disk": {"bus": v[1], "pciAddress": v[0]}}),
    )
    for target in ("disk", "lun", "cdrom"):
        sweep(
            "disks",
            f"{target} bus={{}}",
            _BUSES,
            lambda vm, v, t=target: add_disk(
                vm, "bus", {t: {"bus": v}}, {"persistentVolumeClaim": {"claimName": "c"}}
            ),
        )
        sweep(
            "disks",
            f"{target} dedicatedIOThread bus={{}}",
            ["virtio", "sata", "scsi", ""],
            lambda vm, v, t=target: add_disk(
                vm,
                "iot",
                {t: {"bus": v}, "dedicatedIOThread": True},
                {"persistentVolumeClaim": {"claimName": "c"}},
            ),
        )
    sweep(
        "disks",
        "readonly disk bus={}",
        ["sata", "virtio", "scsi"],
        lambda vm, v: add_disk(vm, "ro", {"disk": {"bus": v, "readonly": True}}),
    )
    variant(
        "disks",
        "readonly sata cdrom",
        lambda vm: add_disk(vm, "roc", {"cdrom": {"bus": "sata", "readonly": True}}),
    )
    variant(
        "disks",
        "dedicatedIOThread false on sata",
        lambda vm: add_disk(vm, "iof", {"disk": {"bus": "sata"}, "dedicatedIOThread": False}),
    )
    sweep(
        "disks",
        "serial={}",
        ["abc", "ABC_123.x+y-z", "bad serial!", "", "x" * 256, "x" * 257, "\u00e9" * 10, "a/b"],
        lambda vm, v: add_disk(vm, "ser", {"serial": v}),
    )
    sweep(
        "disks",
        "cache={}",
        ["none", "writethrough", "writeback", "unsafe", "None", "directsync", ""],
        lambda vm, v: add_disk(vm, "cch", {"cache": v}),
    )
    sweep(
        "disks",
        "io={}",
        ["native", "threads", "default", "Native", ""],
        lambda vm, v: add_disk(vm, "iom", {"io": v}),
    )
    sweep(
        "disks",
        "errorPolicy={}",
        ["stop", "ignore", "report", "enospace", "Stop", "bogus", ""],
        lambda vm, v: add_disk(vm, "erp", {"errorPolicy": v}),
    )
    sweep(
        "disks",
        "disk name={}",
        ["ok", "Bad", "a_b", "a.b", "x" * 63, "x" * 64, "-a", "1"],
        lambda vm, v: add_disk(vm, v),
    )
    sweep("disks", "blockSize={}", _BLOCK, lambda vm, v: add_disk(vm, "blk", {"blockSize": v}))
    sweep(
        "disks",
        "sata blockSize={}",
        _BLOCK[:8],
        lambda vm, v: add_disk(vm, "blk", {"disk": {"bus": "sata"}, "blockSize": v}),
    )


def boot_order_checks() -> None:
    go_file(VMI_CREATE, "disks")
    check("boot.disk-no-volume", "validateBootOrder", INV, "not found.", field="disks[")
    check(
        "boot.empty-cdrom",
        "validateBootOrder",
        INV,
        "feature gate not enabled, cannot define an empty CD-ROM disk",
        gate="DeclarativeHotplugVolumes",
    )
    check(
        "boot.lun-volume",
        "validateBootOrder",
        INV,
        "can only be mapped to a DataVolume or PersistentVolumeClaim volume.",
    )
    check(
        "boot.downward-metrics-disk",
        "validateBootOrder",
        REQ,
        "DownwardMetrics volume must be mapped to a disk",
    )
    check(
        "boot.downward-metrics-bus",
        "validateBootOrder",
        INV,
        "DownwardMetrics volume must be mapped to virtio bus",
    )
    check(
        "boot.duplicate-disk", "validateBootOrder", INV, "already set for a different device.", field="disks["
    )
    check(
        "boot.iface-order",
        "validateInterfaceBootOrder",
        INV,
        "must have a boot order > 0, if supplied",
        field="spec.template.spec[",
    )
    check(
        "boot.duplicate-iface",
        "validateInterfaceBootOrder",
        INV,
        "already set for a different device.",
        field="interfaces[",
    )


def checks() -> None:
    go_file("pkg/storage/admitters/disks.go", "disks")
    check("disks.name-duplicate", "validateDiskName", INV, "must not have the same Name.", field="disks[")
    check("disks.target", "validateDeviceTarget", INV, "can only have a single target type defined")
    check(
        "disks.pci-bus",
        "validatePciAddress",
        INV,
        "setting a PCI address is only possible with bus type virtio.",
    )
    check("disks.pci", "validatePciAddress", INV, "has malformed PCI address", field="disks")
    check(
        "disks.boot-order",
        "validateBootOrderValue",
        INV,
        "must have a boot order > 0, if supplied",
        field="disks",
    )
    check("disks.ide", "validateBusSupport", INV, "IDE bus is not supported")
    check("disks.cdrom-virtio", "validateBusSupport", INV, "is invalid for CD-ROM device")
    check("disks.sata-readonly", "validateBusSupport", INV, "hard-disks do not support read-only.")
    check("disks.bus", "validateBusSupport", INV, "is set with an unrecognized bus")
    check("disks.iothread-bus", "validateBusSupport", NS, "IOThreads are not supported for disks on a")
    check("disks.serial-chars", "validateSerialNumValue", INV, "must be made up of the following characters")
    check(
        "disks.serial-length", "validateSerialNumLength", INV, "must be less than or equal to 256 in length"
    )
    check("disks.cache", "validateCacheMode", INV, "has invalid value", field="cache")
    check("disks.io", "validateIOMode", NS, "Disk IO mode for")
    check("disks.error-policy", "validateErrorPolicy", INV, "has invalid value", field="errorPolicy")
    check(
        "disks.name-label",
        "validateDiskNameAsContainerName",
        INV,
        "re:^(a lowercase RFC 1123 label|must be no more than 63|must not contain dots)",
        field="disks[",
    )
    check(
        "disks.block-match",
        "validateBlockSize",
        INV,
        "Block size matching can't be enabled together with a custom value",
    )
    check(
        "disks.block-logical-physical",
        "validateBlockSize",
        INV,
        "must be the same or less than the physical size",
    )
    check("disks.block-sata", "validateBlockSize", INV, "must be 512 for SATA devices")
    check("disks.block-discard", "validateBlockSize", INV, "Discard granularity")
    check("disks.block-min", "validateCustomBlockSize", INV, "is less than the supported minimum size")
    check("disks.block-max", "validateCustomBlockSize", INV, "is greater than the supported maximum size")
    check("disks.block-power", "validateCustomBlockSize", INV, "is not a power of 2")
