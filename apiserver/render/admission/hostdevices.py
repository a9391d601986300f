"""NVIDIA Grace GPU passthrough rules (``grace_io_virtualization.go``: ``validateGraceIOVirtualization``,
``validateGraceIOVirtualizationAnnotations``; ``pkg/util/hardware/grace.go``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.admission import featuregates as fg
from apiserver.render.admission._go import Causes, flag, invalid, items, obj, required, text
from apiserver.render.admission.clusterconfig import AdmissionConfig

_NVIDIA = "10DE"
_GRACE_DEVICES = frozenset({"2342", "2348", "2941"})
_HEX = frozenset("0123456789ABCDEF")


def _normalize(pci_id: str) -> str:
    upper = pci_id.strip().upper()
    return upper.removeprefix("0X")


def _selector(selector: str) -> tuple[str, str] | None:
    """``ParsePCIVendorSelector``."""
    parts = selector.split(":")
    if len(parts) != 2:
        return None
    vendor, device = _normalize(parts[0]), _normalize(parts[1])
    if len(vendor) != 4 or not set(vendor) <= _HEX:
        return None
    if device != "*" and (len(device) != 4 or not set(device) <= _HEX):
        return None
    return vendor, device


def _requests(
    field: str, spec: Mapping[str, Any], config: AdmissionConfig
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``gracePCIDeviceRequests``: (path, resource) of Grace requests and of ambiguous NVIDIA ones."""
    selectors = {name: sel for name, sel in config.permitted_pci_host_devices if name and sel}
    if not selectors:
        return [], []
    devices = obj(spec, "domain", "devices")
    requested = [
        (f"{field}.domain.devices.{member}[{i}].deviceName", text(d, "deviceName"))
        for member in ("gpus", "hostDevices")
        for i, d in enumerate(items(devices, member))
        if text(d, "deviceName")
    ]
    grace, ambiguous = [], []
    for path, name in requested:
        selector = selectors.get(name)
        parsed = _selector(selector) if selector is not None else None
        if parsed is None:
            continue
        vendor, device = parsed
        if vendor == _NVIDIA and device in _GRACE_DEVICES:
            grace.append((path, name))
        elif vendor == _NVIDIA and device == "*":
            ambiguous.append((path, name))
    return grace, ambiguous


def validate_grace_io_virtualization(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateGraceIOVirtualization``."""
    grace, ambiguous = _requests(field, spec, config)
    if not grace and not ambiguous:
        return []
    enabled = config.enabled(fg.GRACE_IO_VIRTUALIZATION)
    causes: Causes = []
    if enabled:
        for path, name in ambiguous:
            causes.append(
                invalid(
                    path,
                    f'GraceIOVirtualization requires an exact pciVendorSelector for NVIDIA PCI host device resource "{name}"',
                )
            )
    if not grace:
        return causes
    if not enabled:
        for path, name in grace:
            causes.append(
                invalid(
                    path,
                    f'GraceIOVirtualization feature gate must be enabled for NVIDIA Grace GPU passthrough resource "{name}"',
                )
            )
        return causes
    arch = text(spec, "architecture") or config.default_architecture
    if arch != "arm64":
        causes.append(invalid(f"{field}.architecture", "GraceIOVirtualization requires arm64 architecture"))
    machine = text(obj(spec, "domain", "machine"), "type") or config.machine_type(arch)
    if not machine.startswith("virt"):
        causes.append(
            invalid(f"{field}.domain.machine.type", 'GraceIOVirtualization requires "virt" machine type')
        )
    if not flag(obj(spec, "domain", "cpu"), "dedicatedCpuPlacement"):
        causes.append(
            required(
                f"{field}.domain.cpu.dedicatedCpuPlacement",
                "GraceIOVirtualization requires dedicated CPU placement",
            )
        )
    for gate in (fg.PCI_NUMA_AWARE_TOPOLOGY, fg.IOMMUFD):
        if not config.enabled(gate):
            causes.append(
                invalid(
                    f"{field}.domain.devices",
                    f"{gate} feature gate must be enabled when GraceIOVirtualization is used",
                )
            )
    return causes


def validate_grace_annotations(
    field: str, spec: Mapping[str, Any], annotations: Mapping[str, Any], config: AdmissionConfig
) -> Causes:
    """``validateGraceIOVirtualizationAnnotations``: ``field`` is the template metadata's path."""
    grace, _ = _requests("spec", spec, config)
    if not grace:
        return []
    causes: Causes = []
    if annotations.get("kubevirt.io/placePCIDevicesOnRootComplex") == "true":
        causes.append(
            invalid(
                f"{field}.annotations[kubevirt.io/placePCIDevicesOnRootComplex]",
                "GraceIOVirtualization is not compatible with placing PCI devices on the root complex",
            )
        )
    if annotations.get("kubevirt.io/disablePCIHole64") == "true":
        causes.append(
            invalid(
                f"{field}.annotations[kubevirt.io/disablePCIHole64]",
                "GraceIOVirtualization requires the 64-bit PCI hole",
            )
        )
    return causes
