"""Host devices: NVIDIA Grace GPU passthrough (GraceIOVirtualization) and its annotations
(``apiserver/render/admission/hostdevices.py``)."""

from __future__ import annotations

from hack.oracle.admission.base import (
    ADMITTERS,
    INV,
    REQ,
    check,
    cpu,
    devices,
    domain,
    gate_list,
    go_file,
    sweep,
    tmeta,
    tspec,
)

_GRACE_FILE = f"{ADMITTERS}/grace_io_virtualization.go"
_GRACE_CONFIG = {
    "permittedHostDevices": {
        "pciHostDevices": [
            {"pciVendorSelector": "10DE:2342", "resourceName": "nvidia.com/GH100"},
            {"pciVendorSelector": "10de:*", "resourceName": "nvidia.com/ANY"},
            {"pciVendorSelector": "8086:1234", "resourceName": "intel.com/X"},
            {"pciVendorSelector": "10DE:2941", "resourceName": "nvidia.com/GB200"},
        ]
    }
}


def variants() -> None:
    """validateGraceIOVirtualization, validateGraceIOVirtualizationAnnotations."""
    for grace_gates in (
        (),
        ("GraceIOVirtualization",),
        ("GraceIOVirtualization", "PCINUMAAwareTopology", "IOMMUFD"),
    ):
        sweep(
            "gpus",
            f"grace gpu={{}} gates={'+'.join(grace_gates) or 'none'}",
            ["nvidia.com/GH100", "nvidia.com/ANY", "intel.com/X", "nvidia.com/GB200", "unlisted/x"],
            lambda vm, v: (devices(vm).__setitem__("gpus", [{"name": "g", "deviceName": v}]),),
            configs=({**_GRACE_CONFIG, **gate_list(*grace_gates, "HostDevices")},),
        )
        sweep(
            "gpus",
            f"grace hostDevice={{}} arm64 virt dedicated gates={'+'.join(grace_gates) or 'none'}",
            ["nvidia.com/GH100", "nvidia.com/ANY"],
            lambda vm, v: (
                devices(vm).__setitem__("hostDevices", [{"name": "h", "deviceName": v}]),
                tspec(vm).__setitem__("architecture", "arm64"),
                domain(vm).__setitem__("machine", {"type": "virt"}),
                cpu(vm).__setitem__("dedicatedCpuPlacement", True),
            ),
            configs=({**_GRACE_CONFIG, **gate_list(*grace_gates, "HostDevices")},),
        )
    sweep(
        "gpus",
        "grace gpu with annotations={}",
        [
            {"kubevirt.io/placePCIDevicesOnRootComplex": "true"},
            {"kubevirt.io/disablePCIHole64": "true"},
            {"kubevirt.io/placePCIDevicesOnRootComplex": "false"},
            {"kubevirt.io/placePCIDevicesOnRootComplex": "true", "kubevirt.io/disablePCIHole64": "true"},
        ],
        lambda vm, v: (
            devices(vm).__setitem__("gpus", [{"name": "g", "deviceName": "nvidia.com/GH100"}]),
            tmeta(vm).__setitem__("annotations", v),
        ),
        configs=({**_GRACE_CONFIG, **gate_list("GraceIOVirtualization")}, _GRACE_CONFIG),
    )


def annotation_checks() -> None:
    go_file(_GRACE_FILE, "gpus")
    check(
        "grace.root-complex",
        "validateGraceIOVirtualizationAnnotations",
        INV,
        "not compatible with placing PCI devices on the root complex",
        gate="permittedHostDevices",
    )
    check(
        "grace.pci-hole",
        "validateGraceIOVirtualizationAnnotations",
        INV,
        "requires the 64-bit PCI hole",
        gate="permittedHostDevices",
    )


def checks() -> None:
    go_file(_GRACE_FILE, "gpus")
    check(
        "grace.ambiguous",
        "validateGraceIOVirtualization",
        INV,
        "requires an exact pciVendorSelector",
        gate="GraceIOVirtualization",
    )
    check(
        "grace.gate",
        "validateGraceIOVirtualization",
        INV,
        "feature gate must be enabled for NVIDIA Grace GPU passthrough",
        gate="GraceIOVirtualization",
    )
    check(
        "grace.arch",
        "validateGraceIOVirtualization",
        INV,
        "GraceIOVirtualization requires arm64 architecture",
    )
    check("grace.machine", "validateGraceIOVirtualization", INV, "machine type")
    check(
        "grace.dedicated",
        "validateGraceIOVirtualization",
        REQ,
        "GraceIOVirtualization requires dedicated CPU placement",
    )
    check(
        "grace.pci-numa",
        "validateGraceIOVirtualization",
        INV,
        "PCINUMAAwareTopology feature gate must be enabled",
        gate="PCINUMAAwareTopology",
    )
    check(
        "grace.iommufd",
        "validateGraceIOVirtualization",
        INV,
        "IOMMUFD feature gate must be enabled",
        gate="IOMMUFD",
    )
