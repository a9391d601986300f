"""Launch security rules (``vmi-create-admitter.go``: ``validateLaunchSecurity``; ``pkg/virt-api/webhooks/amd64.go``:
``ValidateLaunchSecurityAmd64``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.admission import featuregates as fg
from apiserver.render.admission._go import Causes, forbidden, invalid, items, obj, text
from apiserver.render.admission.clusterconfig import AdmissionConfig
from apiserver.render.admission.firmware import smm_enabled


def validate_launch_security(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateLaunchSecurity``: amd64's rules, nothing for s390x, refused elsewhere."""
    if obj(spec, "domain", "launchSecurity") is None:
        return []
    arch = text(spec, "architecture")
    if arch == "amd64":
        return _amd64(field, spec, config)
    if arch == "s390x":
        return []
    return [invalid(f"{field}.architecture", f"No launchSecurity support for architecture: {arch}")]


def _amd64(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``ValidateLaunchSecurityAmd64`` (its causes name ``<spec>.launchSecurity``, as KubeVirt's do)."""
    domain = obj(spec, "domain") or {}
    security = obj(domain, "launchSecurity") or {}
    path = f"{field}.launchSecurity"
    selected: list[str] = []
    gate = ""
    sev, snp, tdx = (security.get(k) is not None for k in ("sev", "snp", "tdx"))
    if sev:
        selected.append("SEV")
        gate = fg.WORKLOAD_ENCRYPTION_SEV
    if snp:
        selected.append("SNP")
        gate = fg.WORKLOAD_ENCRYPTION_SEV
    if tdx:
        selected.append("TDX")
        gate = fg.WORKLOAD_ENCRYPTION_TDX
    if len(selected) != 1:
        return [forbidden(path, "One and only one launchSecurity type can be set")]
    if ((sev or snp) and not config.enabled(fg.WORKLOAD_ENCRYPTION_SEV)) or (
        tdx and not config.enabled(fg.WORKLOAD_ENCRYPTION_TDX)
    ):
        return [invalid(path, f"{gate} feature gate is not enabled in kubevirt-config")]
    kind = selected[0]
    causes: Causes = []
    if tdx and smm_enabled(obj(domain, "features")):
        causes.append(invalid(path, "TDX does not work along with SMM"))
    efi = obj(domain, "firmware", "bootloader", "efi")
    if efi is None:
        causes.append(invalid(path, f"{kind} requires OVMF (UEFI)"))
    else:
        if (sev or snp) and (efi.get("secureBoot") is None or efi["secureBoot"]):
            causes.append(invalid(path, f"{kind} does not work along with SecureBoot"))
        if (snp or tdx) and efi.get("persistent"):
            causes.append(invalid(path, f"{kind} does not work along with Persistent EFI variables"))
    if sev and spec.get("startStrategy") != "Paused" and obj(security, "sev", "attestation") is not None:
        causes.append(invalid(path, "SEV attestation requires VMI StartStrategy 'Paused'"))
    for iface in items(obj(domain, "devices"), "interfaces"):
        if iface.get("bootOrder") is not None:
            causes.append(invalid(path, f"{kind} does not work with bootable NICs: {text(iface, 'name')}"))
    return causes
