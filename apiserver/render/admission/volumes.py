"""Volume rules (``vmi-create-admitter.go``: ``validateVolumes``, ``validateFilesystemsWithVirtIOFSEnabled``,
``validateServiceAccountName``; ``pkg/storage/admitters/storagehotplug.go``:
``ValidateUtilityVolumesNotPresentOnCreation``)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from apiserver.render.admission import featuregates as fg
from apiserver.render.admission._go import (
    Causes,
    has,
    invalid,
    items,
    not_found,
    obj,
    quantity,
    required,
    text,
)
from apiserver.render.admission.clusterconfig import AdmissionConfig
from apiserver.render.admission.k8svalidation import is_dns1123_subdomain
from apiserver.render.golang.gotext import go_quote

_CLOUD_INIT_MAX = 2048
_SOURCES = (
    "persistentVolumeClaim", "sysprep", "cloudInitNoCloud", "cloudInitConfigDrive", "containerDisk", "ephemeral",
    "emptyDisk", "hostDisk", "dataVolume", "configMap", "secret", "downwardAPI", "serviceAccount",
    "downwardMetrics", "memoryDump", "containerPath",
)  # fmt: skip


def _std_b64_decoded_length(data: str) -> int | None:
    """``base64.StdEncoding.DecodeString``: the decoded length, or None when Go refuses the text.

    Go skips CR and LF, requires padding and refuses anything outside the standard alphabet.
    """
    cleaned = data.replace("\r", "").replace("\n", "")
    try:
        return len(base64.b64decode(cleaned.encode("ascii"), validate=True))
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None


def _cloud_init(field: str, idx: int, volume: Mapping[str, Any]) -> Causes:
    kind = "cloudInitNoCloud" if has(volume, "cloudInitNoCloud") else "cloudInitConfigDrive"
    source = volume[kind]
    base = f"{field}[{idx}].{kind}"
    user_count, causes = _cloud_init_data(
        source, base, kind, "userData", "secretRef", "userdatasource", "UserDataSecretRef"
    )
    network_count, network_causes = _cloud_init_data(
        source,
        base,
        kind,
        "networkData",
        "networkDataSecretRef",
        "networkdata source",
        "NetworkDataSecretRef",
    )
    causes += network_causes
    if user_count == 0 and network_count == 0:
        causes.append(
            invalid(base, f"{base} must have at least one userdatasource or one networkdatasource set.")
        )
    return causes


def _cloud_init_data(
    source: Mapping[str, Any], base: str, kind: str, data: str, secret_ref: str, noun: str, ref_type: str
) -> tuple[int, Causes]:
    """One of cloud-init's two data sources (user data, network data), checked alike by KubeVirt:
    how many ways it is given, and the problems, in KubeVirt's order."""
    causes: Causes = []
    count = length = 0
    if text(obj(source, secret_ref), "name"):
        count += 1
    encoded = text(source, f"{data}Base64")
    if encoded:
        count += 1
        decoded = _std_b64_decoded_length(encoded)
        if decoded is None:
            causes.append(
                invalid(
                    f"{base}.{data}Base64",
                    f"{base}.{data}Base64.{kind}.{data}Base64 is not a valid base64 value.",
                )
            )
        length = decoded or 0
    plain = text(source, data)
    if plain:
        count += 1
        length = len(plain.encode("utf-8", "surrogatepass"))
    if count > 1:
        causes.append(invalid(base, f"{base} must have only one {noun} set."))
    if length > _CLOUD_INIT_MAX:
        word = data.lower()
        causes.append(
            invalid(
                base,
                f"{base} {word} exceeds {_CLOUD_INIT_MAX} byte limit. Should use {ref_type} for larger data.",
            )
        )
    return count, causes


def validate_volumes(field: str, volumes: list[dict[str, Any]], config: AdmissionConfig) -> Causes:
    """``validateVolumes``: ``field`` is ``...spec.volumes``."""
    causes: Causes = []
    first_index: dict[str, int] = {}
    service_accounts = downward_metrics = memory_dumps = 0
    for idx, volume in enumerate(volumes):
        name = text(volume, "name")
        if name in first_index:
            causes.append(
                invalid(
                    f"{field}[{idx}].name",
                    f"{field}[{idx}] and {field}[{first_index[name]}] must not have the same Name.",
                )
            )
        else:
            first_index[name] = idx
        count = 0
        for source in _SOURCES:
            if not has(volume, source):
                continue
            count += 1
            if source == "dataVolume" and not text(volume["dataVolume"], "name"):
                causes.append(required(f"{field}[{idx}].name", "DataVolume 'name' must be set"))
            elif source == "serviceAccount":
                service_accounts += 1
            elif source == "downwardMetrics":
                downward_metrics += 1
            elif source == "memoryDump":
                memory_dumps += 1
        if count != 1:
            causes.append(invalid(f"{field}[{idx}]", f"{field}[{idx}] must have exactly one source type set"))
        if has(volume, "cloudInitNoCloud") or has(volume, "cloudInitConfigDrive"):
            causes += _cloud_init(field, idx, volume)
        if has(volume, "downwardMetrics") and not config.enabled(fg.DOWNWARD_METRICS):
            causes.append(
                invalid(
                    f"{field}[{idx}]",
                    "downwardMetrics disks are not allowed: DownwardMetrics feature gate is not enabled.",
                )
            )
        host_disk = obj(volume, "hostDisk")
        if host_disk is not None:
            causes += _host_disk(field, idx, host_disk, config)
        if has(volume, "configMap") and not text(volume["configMap"], "name"):
            path = f"{field}[{idx}].configMap.name"
            causes.append(invalid(path, f"{path} is a required field"))
        if has(volume, "secret") and not text(volume["secret"], "secretName"):
            path = f"{field}[{idx}].secret.secretName"
            causes.append(invalid(path, f"{path} is a required field"))
        if has(volume, "serviceAccount") and not text(volume["serviceAccount"], "serviceAccountName"):
            path = f"{field}[{idx}].serviceAccount.serviceAccountName"
            causes.append(invalid(path, f"{path} is a required field"))
    if service_accounts > 1:
        causes.append(invalid(field, f"{field} must have max one serviceAccount volume set"))
    if downward_metrics > 1:
        causes.append(invalid(field, f"{field} must have max one downwardMetric volume set"))
    if memory_dumps > 1:
        causes.append(invalid(field, f"{field} must have max one memory dump volume set"))
    return causes


def _host_disk(field: str, idx: int, host_disk: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    causes: Causes = []
    base = f"{field}[{idx}].hostDisk"
    if not config.enabled(fg.HOST_DISK):
        causes.append(invalid(f"{field}[{idx}]", "HostDisk feature gate is not enabled"))
    if not text(host_disk, "path"):
        causes.append(not_found(f"{base}.path", f"{base}.path is required for hostDisk volume"))
    kind = text(host_disk, "type")
    if kind not in ("Disk", "DiskOrCreate"):
        causes.append(
            invalid(
                f"{base}.type",
                f"{base}.type has invalid value '{kind}', allowed are 'Disk' or 'DiskOrCreate'",
            )
        )
    if kind == "Disk" and not quantity(host_disk.get("capacity")).is_zero():
        causes.append(
            invalid(
                f"{base}.capacity",
                f"{base}.capacity is allowed to pass only with {base}.type equal to 'DiskOrCreate'",
            )
        )
    return causes


def validate_utility_volumes_absent(field: str, spec: Mapping[str, Any]) -> Causes:
    """``ValidateUtilityVolumesNotPresentOnCreation``."""
    if spec.get("utilityVolumes") is not None:
        return [
            invalid(
                f"{field}.utilityVolumes",
                "cannot create VMI with utility volumes in spec, utility volumes can only be added via hotplug",
            )
        ]
    return []


def validate_virtiofs_filesystems(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateFilesystemsWithVirtIOFSEnabled``: a PVC or DataVolume shared over virtiofs needs its gate."""
    devices = obj(spec, "domain", "devices")
    if not has(devices, "filesystems"):
        return []
    volumes: dict[str, Mapping[str, Any]] = {text(v, "name"): v for v in items(spec, "volumes")}
    causes: Causes = []
    for fs in items(devices, "filesystems"):
        volume = volumes.get(text(fs, "name"))
        if volume is None:
            continue
        storage = has(volume, "persistentVolumeClaim") or has(volume, "dataVolume")
        if storage and not config.enabled(fg.VIRTIOFS_STORAGE):
            causes.append(
                invalid(
                    f"{field}.domain.devices.filesystems",
                    "virtiofs is not allowed: virtiofs feature gate is not enabled for PVC",
                )
            )
    return causes


def validate_service_account_name(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateServiceAccountName``."""
    name = text(spec, "serviceAccountName")
    if not name:
        return []
    causes: Causes = []
    path = f"{field}.serviceAccountName"
    errors = is_dns1123_subdomain(name)
    if errors:
        causes.append(invalid(path, f"{path} is not a valid service account name: {'; '.join(errors)}"))
    for volume in items(spec, "volumes"):
        account = obj(volume, "serviceAccount")
        if account is not None and text(account, "serviceAccountName") != name:
            other = text(account, "serviceAccountName")
            causes.append(
                invalid(
                    path,
                    f"spec.serviceAccountName {go_quote(name)} and serviceAccount volume {go_quote(other)} "
                    "must reference the same service account",
                )
            )
            break
    return causes
