"""Launch security: SEV, SNP, TDX (``apiserver/render/admission/launchsecurity.py``)."""

from __future__ import annotations

from typing import Any

from hack.oracle.admission.base import (
    FORB,
    INV,
    add_iface,
    check,
    domain,
    features,
    firmware,
    go_file,
    sweep,
    tspec,
    variant,
)

_LS: list[Any] = [
    {},
    {"sev": {}},
    {"snp": {}},
    {"tdx": {}},
    {"sev": {}, "snp": {}},
    {"sev": {}, "tdx": {}},
    {"sev": {"attestation": {}}},
    {"sev": {"policy": {"encryptedState": True}}},
]
_LS_FW: list[Any] = [
    None,
    {"efi": {"secureBoot": False}},
    {"efi": {}},
    {"efi": {"secureBoot": False, "persistent": True}},
    {"bios": {}},
]


def variants() -> None:
    """validateLaunchSecurity, ValidateLaunchSecurityAmd64."""
    for ls in _LS:
        for fw in _LS_FW:
            variant(
                "launchsecurity",
                f"launchSecurity={ls} bootloader={fw}",
                lambda vm, ls=ls, fw=fw: (
                    domain(vm).__setitem__("launchSecurity", ls),
                    firmware(vm).__setitem__("bootloader", fw)
                    if fw is not None
                    else firmware(vm).pop("bootloader", None),
                ),
                gates=("WorkloadEncryptionSEV", "WorkloadEncryptionTDX"),
            )
    variant(
        "launchsecurity",
        "TDX with SMM",
        lambda vm: (
            domain(vm).__setitem__("launchSecurity", {"tdx": {}}),
            features(vm).__setitem__("smm", {}),
            firmware(vm).__setitem__("bootloader", {"efi": {"secureBoot": False}}),
        ),
        gates=("WorkloadEncryptionTDX",),
    )
    sweep(
        "launchsecurity",
        "SEV attestation startStrategy={}",
        ["Paused", None],
        lambda vm, v: (
            domain(vm).__setitem__("launchSecurity", {"sev": {"attestation": {}}}),
            firmware(vm).__setitem__("bootloader", {"efi": {"secureBoot": False}}),
            tspec(vm).__setitem__("startStrategy", v) if v else None,
        ),
    )
    variant(
        "launchsecurity",
        "SEV with bootable NICs",
        lambda vm: (
            domain(vm).__setitem__("launchSecurity", {"sev": {}}),
            firmware(vm).__setitem__("bootloader", {"efi": {"secureBoot": False}}),
            add_iface(vm, {"name": "n1", "bridge": {}, "bootOrder": 3}),
            add_iface(vm, {"name": "n2", "bridge": {}, "bootOrder": 4}),
        ),
    )
    sweep(
        "launchsecurity",
        "launchSecurity sev on arch={}",
        ["s390x", "arm64", "bogus", ""],
        lambda vm, v: (
            domain(vm).__setitem__("launchSecurity", {"sev": {}}),
            tspec(vm).__setitem__("architecture", v),
        ),
    )


def checks() -> None:
    go_file("pkg/virt-api/webhooks/amd64.go", "launchsecurity")
    check(
        "ls.arch",
        "vmi-create-admitter validateLaunchSecurity",
        INV,
        "No launchSecurity support for architecture",
    )
    check(
        "ls.one-type", "ValidateLaunchSecurityAmd64", FORB, "One and only one launchSecurity type can be set"
    )
    check(
        "ls.gate",
        "ValidateLaunchSecurityAmd64",
        INV,
        "feature gate is not enabled in kubevirt-config",
        field="launchSecurity",
        gate="WorkloadEncryptionSEV, WorkloadEncryptionTDX",
    )
    check("ls.tdx-smm", "ValidateLaunchSecurityAmd64", INV, "TDX does not work along with SMM")
    check("ls.efi", "ValidateLaunchSecurityAmd64", INV, "requires OVMF (UEFI)")
    check("ls.secure-boot", "ValidateLaunchSecurityAmd64", INV, "does not work along with SecureBoot")
    check(
        "ls.persistent",
        "ValidateLaunchSecurityAmd64",
        INV,
        "does not work along with Persistent EFI variables",
    )
    check(
        "ls.attestation",
        "ValidateLaunchSecurityAmd64",
        INV,
        "SEV attestation requires VMI StartStrategy 'Paused'",
    )
    check("ls.bootable-nics", "ValidateLaunchSecurityAmd64", INV, "does not work with bootable NICs")
