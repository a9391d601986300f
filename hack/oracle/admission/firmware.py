"""Firmware: emulated machine, ACPI, bootloader, kernel boot, secure boot
(``apiserver/render/admission/firmware.py``)."""

from __future__ import annotations

from typing import Any

from hack.oracle.admission.base import (
    INV,
    REQ,
    VMI_CREATE,
    add_volume,
    check,
    domain,
    features,
    firmware,
    go_file,
    sweep,
    tspec,
    variant,
)

_MACHINES = [
    "q35",
    "pc-q35-rhel9.4.0",
    "pc-i440fx-2.12",
    "virt",
    "s390-ccw-virtio",
    "bogus",
    "Q35",
    "q35*",
    "pc-q35",
    "[q35]",
]
_KERNEL: list[Any] = [
    {"kernelArgs": "console=ttyS0"},
    {},
    {"container": {}},
    {"container": {"image": "img"}},
    {"container": {"image": "img", "kernelPath": "/boot/vmlinuz"}},
    {"container": {"image": "", "initrdPath": "/boot/initrd"}},
    {"container": {"image": "img", "kernelPath": "boot/vmlinuz"}},
    {"container": {"image": "img", "kernelPath": "/"}},
    {"container": {"image": "img", "kernelPath": "/boot/../vmlinuz", "initrdPath": "/a//b"}},
    {"container": {"image": "img", "kernelPath": "/boot/vmlinuz/", "initrdPath": "/./x"}},
    {"container": {"image": "img", "initrdPath": "//"}},
    {"container": {"image": "img", "kernelPath": "/k"}, "kernelArgs": "x"},
]


def machine_variants() -> None:
    """Emulated machine (validateEmulatedMachine)."""
    sweep(
        "firmware", "machine.type={}", _MACHINES, lambda vm, v: domain(vm).__setitem__("machine", {"type": v})
    )
    sweep(
        "firmware",
        "machine.type={} on arm64",
        ["virt", "virt-rhel9", "q35", ""],
        lambda vm, v: (
            tspec(vm).__setitem__("architecture", "arm64"),
            domain(vm).__setitem__("machine", {"type": v}),
        ),
    )
    sweep(
        "firmware",
        "machine.type={} with emulatedMachines config",
        ["q35", "pc-i440fx-2.12", "custom-1"],
        lambda vm, v: domain(vm).__setitem__("machine", {"type": v}),
        configs=(
            {"emulatedMachines": ["pc-i440fx*", "custom-?"]},
            {"architectureConfiguration": {"amd64": {"emulatedMachines": ["pc-*"]}}},
        ),
    )
    variant("firmware", "machine {} (empty type)", lambda vm: domain(vm).__setitem__("machine", {}))


def acpi_variants() -> None:
    """validateFirmwareACPI, validateACPIRef."""
    sweep(
        "firmware",
        "acpi={}",
        [
            {},
            {"slicNameRef": "slic"},
            {"msdmNameRef": "msdm"},
            {"slicNameRef": "slic", "msdmNameRef": "msdm"},
            {"slicNameRef": "nope"},
            {"slicNameRef": "root"},
        ],
        lambda vm, v: (
            firmware(vm).__setitem__("acpi", v),
            add_volume(
                vm,
                {"name": "slic", "secret": {"secretName": "s"}},
                {"name": "msdm", "configMap": {"name": "c"}},
            ),
        ),
    )


def boot_variants() -> None:
    """Bootloader, kernel boot, secure boot."""
    sweep(
        "firmware",
        "bootloader={}",
        [
            {"efi": {}, "bios": {}},
            {"bios": {}},
            {"efi": {"secureBoot": False}},
            {"efi": {}},
            {"efi": {"secureBoot": True}},
            {},
        ],
        lambda vm, v: firmware(vm).__setitem__("bootloader", v),
    )
    sweep(
        "firmware",
        "secure boot efi={} smm={}",
        [
            ({}, None),
            ({}, {}),
            ({}, {"enabled": False}),
            ({"secureBoot": True}, {"enabled": True}),
            ({"secureBoot": False}, None),
            ({"secureBoot": True}, {"enabled": False}),
        ],
        lambda vm, v: (
            firmware(vm).__setitem__("bootloader", {"efi": v[0]}),
            features(vm).__setitem__("smm", v[1]) if v[1] is not None else None,
        ),
    )
    variant(
        "firmware",
        "secure boot without SMM under TDX",
        lambda vm: (
            firmware(vm).__setitem__("bootloader", {"efi": {}}),
            domain(vm).__setitem__("launchSecurity", {"tdx": {}}),
        ),
        gates=("WorkloadEncryptionTDX",),
    )
    sweep("firmware", "kernelBoot={}", _KERNEL, lambda vm, v: firmware(vm).__setitem__("kernelBoot", v))


def machine_checks() -> None:
    go_file(VMI_CREATE, "firmware")
    check("firmware.machine-type", "validateEmulatedMachine", INV, "is not supported: ", field="machine.type")
    check(
        "firmware.acpi-empty",
        "validateFirmwareACPI",
        INV,
        "ACPI was set but no SLIC nor MSDM volume reference was set",
    )
    check("firmware.acpi-volume-type", "validateACPIRef", INV, "refers to Volume of unsupported type.")
    check("firmware.acpi-no-volume", "validateACPIRef", INV, "does not have a matching Volume.")


def checks() -> None:
    """validateBootloader, validateKernelBoot (with storage's ValidatePath), secure boot's SMM."""
    go_file(VMI_CREATE, "firmware")
    check("firmware.efi-and-bios", "validateBootloader", INV, "has both EFI and BIOS configured")
    check(
        "firmware.kernel-args",
        "validateKernelBoot",
        INV,
        "kernel arguments cannot be provided without an external kernel",
    )
    check("firmware.kernel-image", "validateKernelBoot", REQ, "must be defined with an image")
    check(
        "firmware.kernel-paths",
        "validateKernelBoot",
        REQ,
        "must be defined with at least one of the following: kernelPath, initrdPath",
    )
    check("paths.root", "storage/admitters ValidatePath", INV, "must not point to root", field="kernelBoot")
    check(
        "paths.relative",
        "storage/admitters ValidatePath",
        INV,
        "must be an absolute path to a file without relative components",
        field="kernelBoot",
    )
    check(
        "firmware.secure-boot-smm",
        "validateDomainSpec",
        INV,
        "SecureBoot requires SMM, which is currently disabled.",
    )
