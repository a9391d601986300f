"""Machine and firmware rules (``vmi-create-admitter.go``: ``validateEmulatedMachine``,
``validateFirmwareACPI``/``validateACPIRef``, ``validateDomainSpec``, ``validateFirmware``,
``validateBootloader``, ``validateKernelBoot``, ``secureBootEnabled``/``smmFeatureEnabled``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from apiserver.render.admission import disks
from apiserver.render.admission._go import Causes, golist, has, invalid, items, obj, required, text
from apiserver.render.admission.clusterconfig import AdmissionConfig


def _translate(pattern: str) -> str:
    """Go's ``filepath.Match`` pattern as a regular expression (``*`` and ``?`` do not cross ``/``)."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                return "(?!)"  # a malformed pattern never matches (Go returns ErrBadPattern)
            body = pattern[i + 1 : end]
            if body.startswith("^"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def validate_emulated_machine(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateEmulatedMachine``: the machine type must match one of the configured patterns."""
    machine_type = text(obj(spec, "domain", "machine"), "type")
    if not machine_type:
        return []
    supported = config.emulated_machines_for(text(spec, "architecture"))
    if any(re.fullmatch(_translate(p), machine_type) for p in supported):
        return []
    path = f"{field}.domain.machine.type"
    return [invalid(path, f"{path} is not supported: {machine_type} (allowed values: {golist(supported)})")]


def validate_acpi(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateFirmwareACPI``: ``field`` is ``<spec>.acpi``, as KubeVirt passes it."""
    acpi = obj(spec, "domain", "firmware", "acpi")
    if acpi is None:
        return []
    slic, msdm = text(acpi, "slicNameRef"), text(acpi, "msdmNameRef")
    if not slic and not msdm:
        return [invalid(field, "ACPI was set but no SLIC nor MSDM volume reference was set")]
    volumes = items(spec, "volumes")
    return _acpi_ref(field, slic, volumes, "slicNameRef") + _acpi_ref(field, msdm, volumes, "msdmNameRef")


def _acpi_ref(field: str, ref: str, volumes: list[dict[str, Any]], name: str) -> Causes:
    if not ref:
        return []
    for volume in volumes:
        if text(volume, "name") != ref:
            continue
        if has(volume, "secret"):
            return []
        return [invalid(f"{field}.{name}", f"{field} refers to Volume of unsupported type.")]
    return [invalid(f"{field}.{name}", f"{field} does not have a matching Volume.")]


def secure_boot_enabled(firmware: Mapping[str, Any] | None) -> bool:
    efi = obj(firmware, "bootloader", "efi")
    return efi is not None and (efi.get("secureBoot") is None or bool(efi["secureBoot"]))


def smm_enabled(features: Mapping[str, Any] | None) -> bool:
    smm = obj(features, "smm")
    return smm is not None and (smm.get("enabled") is None or bool(smm["enabled"]))


def validate_domain_spec(field: str, domain: Mapping[str, Any]) -> Causes:
    """``validateDomainSpec``: disks, firmware, then SecureBoot needs SMM (but not under TDX)."""
    causes: Causes = []
    causes += disks.validate_disks(f"{field}.devices.disks", items(obj(domain, "devices"), "disks"))
    firmware = obj(domain, "firmware")
    if firmware is not None:
        causes += _bootloader(f"{field}.firmware.bootloader", obj(firmware, "bootloader"))
        causes += _kernel_boot(f"{field}.firmware.kernelBoot", obj(firmware, "kernelBoot"))
    tdx = obj(domain, "launchSecurity", "tdx") is not None
    if secure_boot_enabled(firmware) and not smm_enabled(obj(domain, "features")) and not tdx:
        causes.append(
            invalid(
                field,
                f"{field} has EFI SecureBoot enabled. SecureBoot requires SMM, which is currently disabled.",
            )
        )
    return causes


def _bootloader(field: str, bootloader: Mapping[str, Any] | None) -> Causes:
    """``validateBootloader``."""
    if bootloader is not None and has(bootloader, "efi") and has(bootloader, "bios"):
        return [invalid(field, f"{field} has both EFI and BIOS configured, but they are mutually exclusive.")]
    return []


def _kernel_boot(field: str, kernel_boot: Mapping[str, Any] | None) -> Causes:
    """``validateKernelBoot``."""
    if kernel_boot is None:
        return []
    container = obj(kernel_boot, "container")
    if container is None:
        if text(kernel_boot, "kernelArgs"):
            return [
                invalid(
                    f"{field}.kernelArgs", "kernel arguments cannot be provided without an external kernel"
                )
            ]
        return []
    path = f"{field}.container"
    causes: Causes = []
    if not text(container, "image"):
        causes.append(required(f"{path}.image", f"{path} must be defined with an image"))
    kernel, initrd = text(container, "kernelPath"), text(container, "initrdPath")
    if not kernel and not initrd:
        causes.append(
            required(
                path, f"{path} must be defined with at least one of the following: kernelPath, initrdPath"
            )
        )
    if kernel:
        causes += disks.validate_path(f"{path}.kernelPath", kernel)
    if initrd:
        causes += disks.validate_path(f"{path}.initrdPath", initrd)
    return causes
