"""DRA devices: resource claims, GPUs and host devices taken from claims (KubeVirt's pkg/dra/admitter;
``apiserver/render/admission/dra.py``)."""

from __future__ import annotations

from typing import Any

from hack.oracle.admission.base import (
    DUP,
    INV,
    NO_BETA,
    REQ,
    add_iface,
    check,
    devices,
    go_file,
    sweep,
    tspec,
    variant,
)

_CLAIMS: list[Any] = [
    [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
    [{"name": "gpu", "resourceClaimTemplateName": "gpu-tpl"}],
    [{"name": "gpu"}],
    [{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}],
    [{"name": "", "resourceClaimName": "a"}],
    [{"name": "Bad_Name", "resourceClaimName": "a"}],
    [{"name": "gpu", "resourceClaimName": "a"}, {"name": "gpu", "resourceClaimName": "b"}],
    [{"name": "gpu", "resourceClaimName": "Bad_Claim"}],
    [{"name": "gpu", "resourceClaimTemplateName": ""}],
    [{"name": "gpu", "resourceClaimName": "a" * 254}],
    [{"name": "x" * 64, "resourceClaimName": "a"}],
]
_GPU_SETS: list[Any] = [
    [{"name": "g1", "deviceName": "nvidia.com/GP100"}],
    [{"name": "g1", "claimName": "gpu", "requestName": "r"}],
    [
        {"name": "g1", "claimName": "gpu", "requestName": "r"},
        {"name": "g2", "deviceName": "nvidia.com/GP100"},
    ],
    [{"name": "g1"}],
    [{"name": "g1", "deviceName": "x", "claimName": "gpu", "requestName": "r"}],
    [{"name": "g1", "claimName": "", "requestName": ""}],
    [{"name": "g1", "claimName": "gpu"}],
    [
        {"name": "g1", "claimName": "gpu", "requestName": "r"},
        {"name": "g2", "claimName": "gpu", "requestName": "r"},
    ],
    [{"name": "g1", "claimName": "other", "requestName": "r"}],
    [
        {"name": "g1", "claimName": "gpu", "requestName": "r"},
        {"name": "g2", "claimName": "gpu", "requestName": "r2"},
        {"name": "g3", "claimName": "gpu", "requestName": "r"},
    ],
]


def variants() -> None:
    """pkg/dra/admitter."""
    sweep("gpus", "resourceClaims={}", _CLAIMS, lambda vm, v: tspec(vm).__setitem__("resourceClaims", v))
    sweep(
        "gpus",
        "gpus={} with claim gpu",
        _GPU_SETS,
        lambda vm, v: (
            tspec(vm).__setitem__("resourceClaims", [{"name": "gpu", "resourceClaimName": "c"}]),
            devices(vm).__setitem__("gpus", v),
        ),
        gates=("GPUsWithDRA",),
    )
    sweep(
        "gpus",
        "hostDevices={} with claim gpu",
        _GPU_SETS,
        lambda vm, v: (
            tspec(vm).__setitem__("resourceClaims", [{"name": "gpu", "resourceClaimName": "c"}]),
            devices(vm).__setitem__("hostDevices", v),
        ),
        gates=("HostDevicesWithDRA", "HostDevices"),
    )
    variant(
        "gpus",
        "same claim/request in gpus, hostDevices and a network",
        lambda vm: (
            tspec(vm).__setitem__("resourceClaims", [{"name": "gpu", "resourceClaimName": "c"}]),
            devices(vm).__setitem__("gpus", [{"name": "g1", "claimName": "gpu", "requestName": "r"}]),
            devices(vm).__setitem__("hostDevices", [{"name": "h1", "claimName": "gpu", "requestName": "r"}]),
            add_iface(
                vm, {"name": "dn", "sriov": {}}, {"resourceClaim": {"claimName": "gpu", "requestName": "r"}}
            ),
        ),
        gates=("NetworkDevicesWithDRA", "HostDevices"),
    )
    variant(
        "gpus",
        "DRA gpu and host device, Beta gates disabled",
        lambda vm: (
            tspec(vm).__setitem__("resourceClaims", [{"name": "gpu", "resourceClaimName": "c"}]),
            devices(vm).__setitem__("gpus", [{"name": "g1", "claimName": "gpu", "requestName": "r"}]),
            devices(vm).__setitem__(
                "hostDevices",
                [{"name": "h1", "claimName": "gpu", "requestName": "r2"}, {"name": "h2", "deviceName": "x"}],
            ),
        ),
        configs=(
            NO_BETA,
            {
                "developerConfiguration": {
                    "featureGates": ["HostDevices"],
                    "disabledFeatureGates": ["HostDevicesWithDRA"],
                }
            },
        ),
    )
    variant(
        "gpus",
        "gpus without resourceClaims",
        lambda vm: devices(vm).__setitem__("gpus", [{"name": "g1", "claimName": "gpu", "requestName": "r"}]),
        gates=("GPUsWithDRA",),
    )


def checks() -> None:
    go_file("pkg/dra/admitter/dra_admitter.go", "gpus")
    check(
        "dra.claim-name-required",
        "validateResourceClaims",
        REQ,
        "is a required field",
        field="resourceClaims",
    )
    check("dra.claim-name-duplicate", "validateResourceClaims", DUP, "duplicate resourceClaims name")
    check(
        "dra.claim-name-label",
        "validateResourceClaims",
        INV,
        "does not conform to the kubernetes DNS_LABEL rules:",
        field="resourceClaims",
    )
    check(
        "dra.claim-source-both",
        "validateResourceClaims",
        INV,
        "at most one of resourceClaimName or resourceClaimTemplateName",
    )
    check(
        "dra.claim-source-none",
        "validateResourceClaims",
        INV,
        "must specify one of: resourceClaimName, resourceClaimTemplateName",
    )
    check(
        "dra.claim-source-name",
        "validateResourceClaims (NameIsDNSSubdomain)",
        INV,
        "",
        field="resourceClaimName",
    )
    check(
        "dra.claim-template-name",
        "validateResourceClaims (NameIsDNSSubdomain)",
        INV,
        "",
        field="resourceClaimTemplateName",
    )
    check("dra.mixed", "validateDRADevices", INV, "contains both DRA and non-DRA")
    check("dra.no-device", "validateNonDRADevices", REQ, "without deviceName or claimRequest")
    check("dra.both", "validateNonDRADevices", INV, "with both deviceName and claimRequest")
    check(
        "dra.gate",
        "validateDRADevices",
        INV,
        "but feature gate is not enabled",
        field="devices.",
        gate="GPUsWithDRA, HostDevicesWithDRA",
    )
    check("dra.claim-required", "validateDRADevices", REQ, "claimName is required for DRA ", field="devices.")
    check(
        "dra.request-required",
        "validateDRADevices",
        REQ,
        "requestName is required for DRA ",
        field="devices.",
    )
    check("dra.pair-duplicate", "validateDRADevices", DUP, 're:duplicate claimName/requestName pair "[^"]*"$')
    check("dra.pair-across", "pairDuplicateChecker.mergeTupleSource", DUP, '" between ')
    check("dra.claims-declared", "validateCreationDRA", INV, "must specify all claims used in")
