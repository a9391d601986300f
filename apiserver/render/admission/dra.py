"""Dynamic Resource Allocation rules (``pkg/dra/admitter/dra_admitter.go``: ``ValidateCreation``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.admission import featuregates as fg
from apiserver.render.admission._go import Causes, duplicate, go_member, invalid, items, obj, required, text
from apiserver.render.admission.clusterconfig import AdmissionConfig
from apiserver.render.admission.k8svalidation import is_dns1123_label, is_dns1123_subdomain
from apiserver.render.admission.network import dra_network_tuples
from apiserver.render.golang.gotext import go_quote


def _is_dra(device: Mapping[str, Any]) -> bool:
    return not text(device, "deviceName") and _has_claim(device)


def _has_claim(device: Mapping[str, Any]) -> bool:
    """The inline ``*ClaimRequest`` is non-nil once either of its members was given."""
    return "claimName" in device or "requestName" in device


_CLAIM_MEMBERS = ("claimname", "requestname")


def mark_claim_requests(raw_tspec: Any, tspec: Mapping[str, Any]) -> None:
    """Give ``tspec``'s GPUs and host devices the empty ``claimName`` Go's decoder implies.

    ``GPU`` and ``HostDevice`` embed ``*ClaimRequest`` inline: ``encoding/json`` allocates it as soon as
    the JSON names one of its members, even as ``""`` or null, and the rules above then see a claim
    request (``claimName is required``). Decoding drops such empty members, so they are read back from
    the VM as sent (``raw_tspec``, its ``spec.template.spec``; names matched as Go does, exactly or
    case-insensitively).
    """
    raw_devices = go_member(go_member(raw_tspec, "domain"), "devices")
    devices = obj(tspec, "domain", "devices")
    for member in ("gpus", "hostDevices"):
        raw_list = go_member(raw_devices, member)
        decoded = items(devices, member)
        if type(raw_list) is not list or len(raw_list) != len(decoded):
            continue
        for raw, device in zip(raw_list, decoded, strict=True):
            if type(raw) is dict and any(k.lower() in _CLAIM_MEMBERS for k in raw) and not _has_claim(device):
                device["claimName"] = ""


def validate_creation(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateCreationDRA``."""
    causes: Causes = _resource_claims(f"{field}.resourceClaims", items(spec, "resourceClaims"))
    devices = obj(spec, "domain", "devices")
    gpu_causes, gpu_claims, gpu_pairs = _devices(
        field, items(devices, "gpus"), "gpus", "GPU", config.enabled(fg.GPUS_WITH_DRA), reject_mixed=True
    )
    causes += gpu_causes
    hd_causes, hd_claims, hd_pairs = _devices(
        field,
        items(devices, "hostDevices"),
        "hostDevices",
        "HostDevice",
        config.enabled(fg.HOST_DEVICES_WITH_DRA),
        reject_mixed=False,
    )
    causes += hd_causes
    net_pairs = dra_network_tuples(spec) if config.enabled(fg.NETWORK_DEVICES_WITH_DRA) else {}
    owners: dict[str, tuple[str, int]] = {}
    for kind, pairs, base in (
        ("GPUs", gpu_pairs, f"{field}.domain.devices.gpus"),
        ("HostDevices", hd_pairs, f"{field}.domain.devices.hostDevices"),
        ("Networks", net_pairs, f"{field}.networks"),
    ):
        # KubeVirt walks a Go map here; a pair's first index decides, so index order is used.
        for pair, idx in sorted(pairs.items(), key=lambda kv: kv[1]):
            if pair in owners:
                prev_kind, prev_idx = owners[pair]
                causes.append(
                    duplicate(
                        f"{base}[{idx}]",
                        f"duplicate claimName/requestName pair {go_quote(pair)} between {prev_kind}[{prev_idx}] and {kind}[{idx}]",
                    )
                )
                continue
            owners[pair] = (kind, idx)
    declared = {text(c, "name") for c in items(spec, "resourceClaims")}
    if not (gpu_claims | hd_claims) <= declared:
        causes.append(
            invalid(
                f"{field}.resourceClaims",
                "vmi.spec.resourceClaims must specify all claims used in vmi.spec.domain.devices.gpus and "
                "vmi.spec.domain.devices.hostDevices",
            )
        )
    return causes


def _resource_claims(field: str, claims: list[dict[str, Any]]) -> Causes:
    """``validateResourceClaims``."""
    causes: Causes = []
    names: set[str] = set()
    for i, claim in enumerate(claims):
        at = f"{field}[{i}]"
        name = text(claim, "name")
        if not name:
            causes.append(required(f"{at}.name", f"{at}.name is a required field"))
        elif name in names:
            causes.append(duplicate(f"{at}.name", f"duplicate resourceClaims name {go_quote(name)}"))
        else:
            errors = is_dns1123_label(name)
            if errors:
                causes.append(
                    invalid(
                        f"{at}.name",
                        f"{at}.name does not conform to the kubernetes DNS_LABEL rules: {', '.join(errors)}",
                    )
                )
            names.add(name)
        by_name, by_template = claim.get("resourceClaimName"), claim.get("resourceClaimTemplateName")
        if by_name is not None and by_template is not None:
            causes.append(
                invalid(at, "at most one of resourceClaimName or resourceClaimTemplateName may be specified")
            )
        if by_name is None and by_template is None:
            causes.append(invalid(at, "must specify one of: resourceClaimName, resourceClaimTemplateName"))
        if by_name is not None:
            causes += [invalid(f"{at}.resourceClaimName", m) for m in is_dns1123_subdomain(by_name)]
        if by_template is not None:
            causes += [
                invalid(f"{at}.resourceClaimTemplateName", m) for m in is_dns1123_subdomain(by_template)
            ]
    return causes


def _devices(
    field: str, devices: list[dict[str, Any]], member: str, type_name: str, gate: bool, *, reject_mixed: bool
) -> tuple[Causes, set[str], dict[str, int]]:
    """``validateDRADevices``."""
    path = f"{field}.domain.devices.{member}"
    dra = [(i, d) for i, d in enumerate(devices) if _is_dra(d)]
    plain = [(i, d) for i, d in enumerate(devices) if not _is_dra(d)]
    causes: Causes = []
    if reject_mixed and dra and plain:
        causes.append(
            invalid(
                path,
                f"vmi.spec.domain.devices.{member} contains both DRA and non-DRA {type_name}s; each {type_name} must be "
                "either DRA or non-DRA",
            )
        )
        return causes, set(), {}
    for _, device in plain:
        if not text(device, "deviceName"):
            causes.append(
                required(
                    path,
                    f"vmi.spec.domain.devices.{member} contains {type_name}s without deviceName or claimRequest; "
                    f"each {type_name} must specify either a deviceName or a claimRequest",
                )
            )
            continue
        if _has_claim(device):
            causes.append(
                invalid(
                    path,
                    f"vmi.spec.domain.devices.{member} contains {type_name}s with both deviceName and claimRequest",
                )
            )
    if dra and not gate:
        causes.append(
            invalid(
                path,
                f"vmi.spec.domain.devices.{member} contains DRA enabled {type_name}s but feature gate is not enabled",
            )
        )
        return causes, set(), {}
    claims: set[str] = set()
    seen: set[str] = set()
    first: dict[str, int] = {}
    for idx, device in dra:
        claim, request = text(device, "claimName"), text(device, "requestName")
        if not claim:
            causes.append(required(f"{path}[{idx}].claimName", f"claimName is required for DRA {type_name}"))
        if not request:
            causes.append(
                required(f"{path}[{idx}].requestName", f"requestName is required for DRA {type_name}")
            )
        if not claim or not request:
            continue
        claims.add(claim)
        key = f"{claim}/{request}"
        first.setdefault(key, idx)
        if key in seen:
            causes.append(
                duplicate(f"{path}[{idx}]", f"duplicate claimName/requestName pair {go_quote(key)}")
            )
        seen.add(key)
    return causes, claims, first
