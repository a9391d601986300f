"""Disk rules (``pkg/storage/admitters/disks.go``: ``ValidateDisks`` and the per-disk checks it runs,
``ValidateContainerDisks``, ``ValidatePath``; ``vmi-create-admitter.go``: ``validateBootOrder``,
``validateInterfaceBootOrder``; ``pkg/storage/admitters/storagehotplug.go``:
``ValidateHotplugDiskConfiguration``)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any

from apiserver.render.admission import featuregates as fg
from apiserver.render.admission._go import (
    Causes,
    has,
    invalid,
    items,
    not_supported,
    num,
    obj,
    required,
    text,
)
from apiserver.render.admission.clusterconfig import AdmissionConfig
from apiserver.render.admission.k8svalidation import is_dns1123_label
from apiserver.render.kubernetes.errors import Cause

_MAX_SERIAL = 256
_MIN_BLOCK = 512
_MAX_BLOCK = 2097152
_SERIAL = re.compile(r"[A-Za-z0-9_.+-]+")
PCI_ADDRESS = re.compile(r"([\da-fA-F]{4}):([\da-fA-F]{2}):([\da-fA-F]{2})\.([0-7])")
_BUSES = "[virtio scsi sata usb]"


def disk_bus(disk: Mapping[str, Any]) -> str:
    """``getDiskBus``."""
    for target in ("disk", "lun", "cdrom"):
        if has(disk, target):
            return text(disk[target], "bus")
    return ""


def disk_type(disk: Mapping[str, Any]) -> str:
    """``getDiskType``."""
    for target in ("disk", "lun", "cdrom"):
        if has(disk, target):
            return target
    return ""


def validate_disks(field: str, disks: Sequence[Mapping[str, Any]]) -> Causes:
    """``ValidateDisks``: ``field`` is ``...domain.devices.disks``."""
    causes: Causes = []
    for idx, disk in enumerate(disks):
        causes += _name(field, idx, disks)
        causes += _device_target(field, idx, disk)
        causes += _pci_address(field, idx, disk)
        causes += _boot_order_value(field, idx, disk)
        causes += _bus_support(field, idx, disk)
        causes += _serial(field, idx, disk)
        causes += _cache(field, idx, disk)
        causes += _io(field, idx, disk)
        causes += _error_policy(field, idx, disk)
        causes += [
            invalid(f"{field}.domain.devices.disks[{idx}].name", m)
            for m in is_dns1123_label(text(disk, "name"))
        ]
        causes += _block_size(field, idx, disk)
    return causes


def _name(field: str, idx: int, disks: Sequence[Mapping[str, Any]]) -> Causes:
    """``validateDiskName``: each earlier disk of the same name."""
    name = text(disks[idx], "name")
    return [
        invalid(f"{field}[{idx}].name", f"{field}[{idx}] and {field}[{other}] must not have the same Name.")
        for other in range(idx)
        if text(disks[other], "name") == name
    ]


def _device_target(field: str, idx: int, disk: Mapping[str, Any]) -> Causes:
    """``validateDeviceTarget``."""
    if sum(has(disk, t) for t in ("disk", "lun", "cdrom")) > 1:
        return [invalid(f"{field}[{idx}]", f"{field}[{idx}] can only have a single target type defined")]
    return []


def _pci_address(field: str, idx: int, disk: Mapping[str, Any]) -> Causes:
    """``validatePciAddress`` (its field paths repeat ``disks`` as KubeVirt's do)."""
    target = obj(disk, "disk")
    address = text(target, "pciAddress")
    if not address:
        return []
    causes: Causes = []
    base = f"{field}.domain.devices.disks.disk[{idx}]"
    if text(target, "bus") != "virtio":
        causes.append(
            invalid(
                f"{base}.pciAddress",
                f"disk {base}.name - setting a PCI address is only possible with bus type virtio.",
            )
        )
    if not PCI_ADDRESS.fullmatch(address):
        causes.append(
            invalid(f"{base}.pciAddress", f"disk {base}.name has malformed PCI address ({address}).")
        )
    return causes


def _boot_order_value(field: str, idx: int, disk: Mapping[str, Any]) -> Causes:
    """``validateBootOrderValue``."""
    if disk.get("bootOrder") is not None and disk["bootOrder"] < 1:
        return [
            invalid(f"{field}[{idx}].bootOrder", f"{field}[{idx}] must have a boot order > 0, if supplied")
        ]
    return []


def _bus_support(field: str, idx: int, disk: Mapping[str, Any]) -> Causes:
    """``validateBusSupport``."""
    bus = disk_bus(disk)
    kind = disk_type(disk)
    if not bus:
        return []
    causes: Causes = []
    if bus == "ide":
        causes.append(invalid(f"{field}[{idx}].{kind}.bus", "IDE bus is not supported"))
    elif bus == "virtio":
        if kind == "cdrom":
            causes.append(
                invalid(f"{field}[{idx}].cdrom.bus", f"Bus type {bus} is invalid for CD-ROM device")
            )
    elif bus == "sata":
        if has(disk, "disk") and disk["disk"].get("readonly"):
            causes.append(invalid(f"{field}[{idx}].disk.bus", f"{bus} hard-disks do not support read-only."))
    elif bus not in ("scsi", "usb"):
        causes.append(
            invalid(
                f"{field}[{idx}].{kind}.bus",
                f"{field}[{idx}] is set with an unrecognized bus {bus}, must be one of: {_BUSES}",
            )
        )
    if disk.get("dedicatedIOThread") and bus != "virtio":
        causes.append(
            not_supported(
                f"{field}.domain.devices.disks[{idx}]",
                f"IOThreads are not supported for disks on a {bus} bus",
            )
        )
    return causes


def _serial(field: str, idx: int, disk: Mapping[str, Any]) -> Causes:
    """``validateSerialNumValue`` and ``validateSerialNumLength``."""
    serial = text(disk, "serial")
    causes: Causes = []
    if serial and not _SERIAL.fullmatch(serial):
        causes.append(
            invalid(
                f"{field}[{idx}].serial",
                f"{field}[{idx}] must be made up of the following characters [A-Za-z0-9_.+-], if specified",
            )
        )
    if serial and len(serial) > _MAX_SERIAL:
        causes.append(
            invalid(
                f"{field}[{idx}].serial",
                f"{field}[{idx}] must be less than or equal to {_MAX_SERIAL} in length, if specified",
            )
        )
    return causes


def _cache(field: str, idx: int, disk: Mapping[str, Any]) -> Causes:
    """``validateCacheMode``."""
    cache = text(disk, "cache")
    if cache and cache not in ("none", "writethrough", "writeback"):
        return [invalid(f"{field}[{idx}].cache", f"{field}[{idx}].cache has invalid value {cache}")]
    return []


def _io(field: str, idx: int, disk: Mapping[str, Any]) -> Causes:
    """``validateIOMode``."""
    mode = text(disk, "io")
    if mode and mode not in ("native", "threads"):
        return [
            not_supported(
                f"{field}.domain.devices.disks[{idx}].io",
                f"Disk IO mode for {field} is not supported. Supported modes are: native, threads.",
            )
        ]
    return []


def _error_policy(field: str, idx: int, disk: Mapping[str, Any]) -> Causes:
    """``validateErrorPolicy``."""
    policy = disk.get("errorPolicy")
    if policy is not None and policy not in ("stop", "ignore", "report", "enospace"):
        return [
            invalid(f"{field}[{idx}].errorPolicy", f'{field}[{idx}].errorPolicy has invalid value "{policy}"')
        ]
    return []


def _custom_block_size(field: str, idx: int, kind: str, size: int) -> Causes:
    """``validateCustomBlockSize``."""
    path = f"{field}[{idx}].blockSize.custom.{kind}"
    if size < _MIN_BLOCK:
        return [
            invalid(path, f"Provided size of {size} is less than the supported minimum size of {_MIN_BLOCK}")
        ]
    if size > _MAX_BLOCK:
        return [
            invalid(
                path, f"Provided size of {size} is greater than the supported maximum size of {_MAX_BLOCK}"
            )
        ]
    if size & (size - 1):
        return [invalid(path, f"Provided size of {size} is not a power of 2")]
    return []


def _block_size(field: str, idx: int, disk: Mapping[str, Any]) -> Causes:
    """``validateBlockSize``."""
    block = obj(disk, "blockSize")
    custom = obj(block, "custom")
    if custom is None:
        return []
    match = obj(block, "matchVolume")
    if match is not None and (match.get("enabled") is None or match["enabled"]):
        return [
            invalid(
                f"{field}[{idx}].blockSize",
                "Block size matching can't be enabled together with a custom value",
            )
        ]
    logical, physical = num(custom, "logical"), num(custom, "physical")
    base = f"{field}[{idx}].blockSize.custom"
    if logical > physical:
        return [
            invalid(
                f"{base}.logical",
                f"Logical size {logical} must be the same or less than the physical size of {physical}",
            )
        ]
    if disk_bus(disk) == "sata" and logical != _MIN_BLOCK:
        return [invalid(f"{base}.logical", f"Logical size {logical} must be {_MIN_BLOCK} for SATA devices")]
    granularity = custom.get("discardGranularity")
    if granularity is not None and logical != 0 and granularity % logical != 0:
        return [
            invalid(
                f"{base}.discardGranularity",
                f"Discard granularity {granularity} must be multiples of logical size {logical}",
            )
        ]
    return _custom_block_size(field, idx, "logical", logical) + _custom_block_size(
        field, idx, "physical", physical
    )


def validate_path(field: str, path: str) -> Causes:
    """``ValidatePath``: absolute, no relative components, not the root."""
    if path == "/":
        return [invalid(field, f"{field} must not point to root")]
    cleaned = posixpath.normpath(posixpath.join("/", path))
    if cleaned.startswith("//"):
        cleaned = "/" + cleaned.lstrip("/")
    # strings.TrimSuffix removes one trailing slash, not all ("//" is "/" once trimmed, and clean).
    if cleaned != path.removesuffix("/"):
        return [invalid(field, f"{field} must be an absolute path to a file without relative components")]
    return []


def validate_container_disks(field: str, spec: Mapping[str, Any]) -> Causes:
    """``ValidateContainerDisks``: each containerDisk path."""
    causes: Causes = []
    for idx, volume in enumerate(items(spec, "volumes")):
        path = text(obj(volume, "containerDisk"), "path")
        if path:
            causes += validate_path(f"{field}.volumes[{idx}].containerDisk", path)
    return causes


def validate_boot_order(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateBootOrder``: disks against volumes, LUN and downwardMetrics mapping, unique boot orders."""
    causes: Causes = []
    seen: set[int] = set()
    volumes: dict[str, Mapping[str, Any]] = {}
    for entry in items(spec, "volumes"):
        volumes[text(entry, "name")] = entry
    disks_path = f"{field}.domain.devices.disks"
    for idx, disk in enumerate(items(obj(spec, "domain", "devices"), "disks")):
        volume = volumes.get(text(disk, "name"))
        if volume is None:
            if not has(disk, "cdrom"):
                causes.append(
                    invalid(
                        f"{disks_path}[{idx}].name",
                        f"{disks_path}[{idx}].Name '{text(disk, 'name')}' not found.",
                    )
                )
            elif not config.enabled(fg.DECLARATIVE_HOTPLUG_VOLUMES):
                causes.append(
                    invalid(
                        f"{disks_path}[{idx}].name",
                        "DeclarativeHotplugVolumes feature gate not enabled, cannot define an empty CD-ROM disk",
                    )
                )
        if (
            has(disk, "lun")
            and volume is not None
            and not has(volume, "persistentVolumeClaim")
            and not has(volume, "dataVolume")
        ):
            causes.append(
                invalid(
                    f"{disks_path}[{idx}].lun",
                    f"{disks_path}[{idx}].lun can only be mapped to a DataVolume or PersistentVolumeClaim volume.",
                )
            )
        if volume is not None and has(volume, "downwardMetrics"):
            if not has(disk, "disk"):
                causes.append(
                    required(
                        f"{disks_path}[{idx}].disk",
                        f"DownwardMetrics volume must be mapped to a disk, but disk is not set on {disks_path}[{idx}].disk.",
                    )
                )
            elif text(disk["disk"], "bus") not in ("virtio", ""):
                causes.append(
                    invalid(
                        f"{disks_path}[{idx}].disk.bus",
                        f"DownwardMetrics volume must be mapped to virtio bus, but {disks_path}[{idx}].disk.bus is set "
                        f"to {text(disk['disk'], 'bus')}",
                    )
                )
        order = disk.get("bootOrder")
        if order is not None:
            if order in seen:
                causes.append(
                    invalid(
                        f"{disks_path}[{idx}].bootOrder",
                        f"Boot order for {disks_path}[{idx}].bootOrder already set for a different device.",
                    )
                )
            seen.add(order)
    causes += _interface_boot_order(field, spec, seen)
    return causes


def _interface_boot_order(field: str, spec: Mapping[str, Any], seen: set[int]) -> Causes:
    """``validateInterfaceBootOrder`` (its first message names ``field[idx]``, as KubeVirt's does)."""
    causes: Causes = []
    path = f"{field}.domain.devices.interfaces"
    for idx, iface in enumerate(items(obj(spec, "domain", "devices"), "interfaces")):
        order = iface.get("bootOrder")
        if order is None:
            continue
        if order < 1:
            causes.append(
                invalid(
                    f"{field}[{idx}].bootOrder", f"{field}[{idx}] must have a boot order > 0, if supplied"
                )
            )
            continue
        if order in seen:
            causes.append(
                invalid(
                    f"{path}[{idx}].bootOrder",
                    f"Boot order for {path}[{idx}].bootOrder already set for a different device.",
                )
            )
        seen.add(order)
    return causes


def validate_hotplug_disk(disk: Mapping[str, Any] | None, name: str, prefix: str, field: str) -> list[Cause]:
    """``ValidateHotplugDiskConfiguration`` (its boot order cause names a fixed path, as KubeVirt's does)."""
    if disk is None:
        return [invalid(field, f"{prefix} for [{name}] requires the disk field to be set.")]
    bus = disk_bus(disk)
    if has(disk, "disk"):
        if bus not in ("scsi", "virtio"):
            return [
                invalid(
                    field,
                    f"{prefix} for disk [{name}] requires bus to be 'scsi' or 'virtio'. [{bus}] is not permitted.",
                )
            ]
    elif has(disk, "lun"):
        if bus != "scsi":
            return [
                invalid(
                    field, f"{prefix} for LUN [{name}] requires bus to be 'scsi'. [{bus}] is not permitted."
                )
            ]
    else:
        return [
            invalid(field, f"{prefix} for [{name}] requires diskDevice of type 'disk' or 'lun' to be used.")
        ]
    if disk.get("dedicatedIOThread") and bus != "virtio":
        return [invalid(field, f"{prefix} for [{name}] requires virtio bus for IOThreads.")]
    if disk.get("bootOrder") is not None and disk["bootOrder"] < 1:
        return [
            invalid(
                "spec.domain.devices.disks[1].bootOrder",
                "spec.domain.devices.disks[1] must have a boot order > 0, if supplied",
            )
        ]
    return []
