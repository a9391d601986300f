"""Volumes: sources, cloud-init, host disks, service accounts, container disks, utility volumes, virtiofs
filesystems (``apiserver/render/admission/volumes.py``)."""

from __future__ import annotations

from typing import Any

from hack.oracle.admission.base import (
    INV,
    NF,
    REQ,
    VMI_CREATE,
    add_disk,
    add_volume,
    append,
    check,
    devices,
    go_file,
    sweep,
    tspec,
    variant,
)

_SOURCES: list[Any] = [
    {},
    {"persistentVolumeClaim": {"claimName": "p"}},
    {"sysprep": {"secret": {"name": "s"}}},
    {"containerDisk": {"image": "i"}},
    {"ephemeral": {"persistentVolumeClaim": {"claimName": "p"}}},
    {"emptyDisk": {"capacity": "1Gi"}},
    {"dataVolume": {"name": "d"}},
    {"dataVolume": {"name": ""}},
    {"dataVolume": {}},
    {"configMap": {"name": "c"}},
    {"configMap": {}},
    {"secret": {"secretName": "s"}},
    {"secret": {}},
    {"downwardAPI": {"fields": []}},
    {"serviceAccount": {"serviceAccountName": "sa"}},
    {"serviceAccount": {}},
    {"memoryDump": {"claimName": "m"}},
    {"containerPath": {"path": "/data"}},
    {"persistentVolumeClaim": {"claimName": "p"}, "containerDisk": {"image": "i"}},
    {"dataVolume": {"name": ""}, "secret": {}},
]
_B64_OK = "I2Nsb3VkLWNvbmZpZwo="
_CI_SETS: list[Any] = [
    {"userData": "x"},
    {"userDataBase64": _B64_OK},
    {"userDataBase64": "not base64!"},
    {"userDataBase64": "I2Nsb3VkLWNvbmZpZwo"},
    {"userDataBase64": "I2Nsb3VkLWNvbmZpZwo==="},
    {"userData": "x", "userDataBase64": _B64_OK},
    {"userDataSecretRef": {"name": "s"}, "userData": "x"},
    {"userDataSecretRef": {"name": ""}},
    {"userDataSecretRef": {}},
    {"userData": "x" * 2048},
    {"userData": "x" * 2049},
    {"userData": "\u00e9" * 1025},
    {"userDataBase64": "eA==" * 683},
    {"networkData": "n"},
    {"networkDataBase64": "bad!"},
    {"networkData": "n", "networkDataSecretRef": {"name": "s"}},
    {"networkData": "n" * 2049},
    {"networkDataBase64": "bg==", "networkData": "n", "userData": "x"},
    {},
    {"userData": ""},
    {"userDataBase64": "bad!", "networkDataBase64": "bad!", "userData": "x", "networkData": "y" * 3000},
    {"userDataBase64": "YQ"},
    {"userDataBase64": "YWJj\nZGVm"},
    {"userDataBase64": "YWJjZA=="},
    {"userDataBase64": "YWJjZA="},
    {"userDataBase64": "YWJj ZA=="},
]
_FS_SOURCES: list[Any] = [
    {"persistentVolumeClaim": {"claimName": "p"}},
    {"dataVolume": {"name": "d"}},
    {"configMap": {"name": "c"}},
    {"containerPath": {"path": "/x"}},
]


def variants() -> None:
    """validateVolumes, validateServiceAccountName, validateFilesystemsWithVirtIOFSEnabled."""
    variant(
        "volumes",
        "duplicate volume name",
        lambda vm: add_volume(
            vm, {"name": tspec(vm)["volumes"][0]["name"], "emptyDisk": {"capacity": "1Gi"}}
        ),
    )
    variant(
        "volumes",
        "three volumes same name",
        lambda vm: add_volume(vm, *[{"name": "same", "emptyDisk": {"capacity": "1Gi"}}] * 3),
    )
    sweep(
        "volumes",
        "volume source={}",
        _SOURCES,
        lambda vm, v: add_disk(vm, "src", {}, v),
        gates=("ContainerPathVolumes",),
    )
    sweep(
        "volumes",
        "volume source={} without disk",
        _SOURCES[:18],
        lambda vm, v: add_volume(vm, {"name": "src", **v}),
    )
    for ci in ("cloudInitNoCloud", "cloudInitConfigDrive"):
        sweep("volumes", f"{ci}={{}}", _CI_SETS, lambda vm, v, c=ci: add_disk(vm, "ci", {}, {c: v}))
    variant(
        "volumes",
        "noCloud and configDrive on one volume",
        lambda vm: add_disk(
            vm, "ci", {}, {"cloudInitNoCloud": {"userData": "a"}, "cloudInitConfigDrive": {}}
        ),
    )
    sweep(
        "volumes",
        "hostDisk={}",
        [
            {"path": "/d.img", "type": "Disk"},
            {"path": "/d.img", "type": "DiskOrCreate", "capacity": "1Gi"},
            {"path": "", "type": "Disk"},
            {"path": "/d.img", "type": "bogus"},
            {"path": "/d.img", "type": ""},
            {"path": "/d.img", "type": "Disk", "capacity": "1Gi"},
            {"path": "/d.img", "type": "Disk", "capacity": "0"},
            {},
            {"type": "Disk", "capacity": "-1"},
        ],
        lambda vm, v: add_disk(vm, "hd", {}, {"hostDisk": v}),
        gates=("HostDisk",),
    )
    variant(
        "volumes",
        "two serviceAccount volumes",
        lambda vm: (
            add_disk(vm, "sa1", {}, {"serviceAccount": {"serviceAccountName": "a"}}),
            add_disk(vm, "sa2", {}, {"serviceAccount": {"serviceAccountName": "a"}}),
        ),
    )
    variant(
        "volumes",
        "two downwardMetrics volumes",
        lambda vm: (
            add_disk(vm, "dm1", {}, {"downwardMetrics": {}}),
            add_disk(vm, "dm2", {}, {"downwardMetrics": {}}),
        ),
        gates=("DownwardMetrics",),
    )
    variant(
        "volumes",
        "two memoryDump volumes",
        lambda vm: add_volume(
            vm,
            {"name": "md1", "memoryDump": {"claimName": "a"}},
            {"name": "md2", "memoryDump": {"claimName": "b"}},
        ),
    )
    sweep(
        "volumes",
        "containerDisk path={}",
        ["/disk", "/", "disk", "/a/../b", "/a/", "//a", "/a/./b", ""],
        lambda vm, v: add_disk(vm, "cdp", {}, {"containerDisk": {"image": "i", "path": v}}),
    )
    sweep(
        "volumes",
        "utilityVolumes={}",
        [[], [{"name": "u", "persistentVolumeClaim": {"claimName": "x"}}]],
        lambda vm, v: tspec(vm).__setitem__("utilityVolumes", v),
        gates=("UtilityVolumes",),
    )
    sweep(
        "volumes",
        "serviceAccountName={} with sa volume sa",
        ["sa", "other", "Bad_SA", "", "a" * 254],
        lambda vm, v: (
            tspec(vm).__setitem__("serviceAccountName", v),
            add_disk(vm, "sav", {}, {"serviceAccount": {"serviceAccountName": "sa"}}),
        ),
    )
    sweep(
        "volumes",
        "serviceAccountName={}",
        ["ok", "Bad_SA", "a.b", "-a"],
        lambda vm, v: tspec(vm).__setitem__("serviceAccountName", v),
    )
    sweep(
        "volumes",
        "virtiofs filesystem on={}",
        _FS_SOURCES,
        lambda vm, v: (
            append(devices(vm), "filesystems", {"name": "fs", "virtiofs": {}}),
            add_volume(vm, {"name": "fs", **v}),
        ),
        gates=("EnableVirtioFsStorageVolumes",),
    )
    variant(
        "volumes",
        "filesystem without volume",
        lambda vm: append(devices(vm), "filesystems", {"name": "nofs", "virtiofs": {}}),
    )


def checks() -> None:
    go_file(VMI_CREATE, "volumes")
    check("volumes.name-duplicate", "validateVolumes", INV, "must not have the same Name.", field="volumes[")
    check("volumes.dv-name", "validateVolumes", REQ, "DataVolume 'name' must be set")
    check("volumes.one-source", "validateVolumes", INV, "must have exactly one source type set")
    check("volumes.base64-user", "validateVolumes", INV, "userDataBase64 is not a valid base64 value.")
    check("volumes.user-sources", "validateVolumes", INV, "must have only one userdatasource set.")
    check("volumes.user-size", "validateVolumes", INV, "userdata exceeds 2048 byte limit.")
    check("volumes.base64-network", "validateVolumes", INV, "networkDataBase64 is not a valid base64 value.")
    check("volumes.network-sources", "validateVolumes", INV, "must have only one networkdata source set.")
    check("volumes.network-size", "validateVolumes", INV, "networkdata exceeds 2048 byte limit.")
    check(
        "volumes.cloud-init-empty",
        "validateVolumes",
        INV,
        "must have at least one userdatasource or one networkdatasource set.",
    )
    check(
        "volumes.downward-metrics-gate",
        "validateVolumes",
        INV,
        "downwardMetrics disks are not allowed",
        gate="DownwardMetrics",
    )
    check(
        "volumes.hostdisk-gate",
        "validateVolumes",
        INV,
        "HostDisk feature gate is not enabled",
        gate="HostDisk",
    )
    check("volumes.hostdisk-path", "validateVolumes", NF, "is required for hostDisk volume")
    check("volumes.hostdisk-type", "validateVolumes", INV, "allowed are 'Disk' or 'DiskOrCreate'")
    check("volumes.hostdisk-capacity", "validateVolumes", INV, "is allowed to pass only with")
    check("volumes.configmap-name", "validateVolumes", INV, "is a required field", field="configMap.name")
    check("volumes.secret-name", "validateVolumes", INV, "is a required field", field="secret.secretName")
    check("volumes.sa-name", "validateVolumes", INV, "is a required field", field="serviceAccountName")
    check("volumes.sa-count", "validateVolumes", INV, "must have max one serviceAccount volume set")
    check(
        "volumes.downward-metrics-count",
        "validateVolumes",
        INV,
        "must have max one downwardMetric volume set",
    )
    check("volumes.memory-dump-count", "validateVolumes", INV, "must have max one memory dump volume set")
    check(
        "volumes.container-disk-root",
        "storage/admitters ValidateContainerDisks (ValidatePath)",
        INV,
        "must not point to root",
        field="containerDisk",
    )
    check(
        "volumes.container-disk-relative",
        "storage/admitters ValidateContainerDisks (ValidatePath)",
        INV,
        "must be an absolute path",
        field="containerDisk",
    )
    check(
        "volumes.utility",
        "storage/admitters ValidateUtilityVolumesNotPresentOnCreation",
        INV,
        "utility volumes can only be added via hotplug",
    )


def virtiofs_check() -> None:
    go_file(VMI_CREATE, "devices")
    check(
        "volumes.virtiofs-pvc",
        "validateFilesystemsWithVirtIOFSEnabled",
        INV,
        "virtiofs feature gate is not enabled for PVC",
        gate="EnableVirtioFsStorageVolumes",
    )


def service_account_checks() -> None:
    go_file(VMI_CREATE, "devices")
    check("volumes.sa-name-format", "validateServiceAccountName", INV, "is not a valid service account name")
    check(
        "volumes.sa-name-match", "validateServiceAccountName", INV, "must reference the same service account"
    )
