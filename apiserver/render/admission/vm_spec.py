"""``ValidateVirtualMachineSpec`` and the VM-level rules (``vms-admitter.go``: ``ValidateVirtualMachineSpec``,
``validateRunStrategy``, ``validateLiveUpdateFeatures``, ``validateLiveUpdateCPU``;
``pkg/storage/admitters/data-volume-template.go``: ``ValidateDataVolumeTemplate``, ``validateDataVolume``,
``validateNumberOfSources``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.admission import featuregates as fg
from apiserver.render.admission import hostdevices, memory, metadata
from apiserver.render.admission._go import Causes, has, invalid, items, num, obj, required, text
from apiserver.render.admission.clusterconfig import AdmissionConfig
from apiserver.render.admission.vmi_spec import validate_vmi_spec

RUN_STRATEGIES = ("Halted", "Manual", "Always", "RerunOnFailure", "Once")
_DV_SOURCES = ("http", "s3", "gcs", "registry", "pvc", "upload", "blank", "imageio", "vddk", "snapshot")


def validate_vm_spec(
    field: str, spec: Mapping[str, Any], config: AdmissionConfig, kubevirt_service_account: bool
) -> Causes:
    """``ValidateVirtualMachineSpec``."""
    template = obj(spec, "template")
    if template is None:
        return [required(f"{field}.template", "missing virtual machine template.")]
    tmeta = obj(template, "metadata") or {}
    tspec = obj(template, "spec") or {}
    causes: Causes = []
    causes += metadata.validate_metadata(
        f"{field}.template.metadata", tmeta, config, kubevirt_service_account
    )
    causes += hostdevices.validate_grace_annotations(
        f"{field}.template.metadata", tspec, tmeta.get("annotations") or {}, config
    )
    causes += validate_vmi_spec(f"{field}.template.spec", tspec, config)
    causes += validate_data_volume_templates(field, spec)
    causes += validate_run_strategy(field, spec, config)
    causes += validate_live_update(field, spec, config)
    return causes


def validate_run_strategy(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateRunStrategy``."""
    causes: Causes = []
    running, strategy = spec.get("running"), spec.get("runStrategy")
    if running is not None and strategy is not None:
        causes.append(
            invalid(
                f"{field}.running",
                "Running and RunStrategy are mutually exclusive. Note that Running is deprecated, please use "
                "RunStrategy instead",
            )
        )
    if running is None and strategy is None:
        causes.append(invalid(f"{field}.running", "RunStrategy must be specified"))
    if strategy is not None:
        if strategy == "WaitAsReceiver":
            if config.enabled(fg.DECENTRALIZED_LIVE_MIGRATION):
                return causes
            causes.append(
                invalid(
                    f"{field}.runStrategy",
                    f"Invalid RunStrategy ({strategy}), DecentralizedLiveMigration feature gate is not enabled in "
                    "kubevirt resource",
                )
            )
        elif strategy not in RUN_STRATEGIES:
            causes.append(invalid(f"{field}.runStrategy", f"Invalid RunStrategy ({strategy})"))
    return causes


def validate_live_update(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateLiveUpdateFeatures``: CPU sockets within maxSockets, memory hotplug preconditions."""
    if not config.live_update_rollout():
        return []
    tspec = obj(spec, "template", "spec") or {}
    domain = obj(tspec, "domain") or {}
    causes: Causes = []
    cpu = obj(domain, "cpu")
    if cpu is not None:
        sockets, max_sockets = num(cpu, "sockets"), num(cpu, "maxSockets")
        if sockets != 0 and max_sockets != 0 and sockets > max_sockets:
            causes.append(
                invalid(
                    f"{field}.template.spec.domain.cpu.sockets",
                    "Number of sockets in CPU topology is greater than the maximum sockets allowed",
                )
            )
    mem = obj(domain, "memory")
    if mem is not None and mem.get("maxGuest") is not None:
        error = memory.live_update_memory_error(tspec, mem["maxGuest"])
        if error is not None:
            causes.append(invalid(f"{field}.template.spec.domain.memory.guest", error))
    return causes


def validate_data_volume_templates(field: str, spec: Mapping[str, Any]) -> Causes:
    """``ValidateDataVolumeTemplate``: each template valid and referenced by a volume."""
    causes: Causes = []
    volumes = items(obj(spec, "template", "spec"), "volumes")
    for idx, template in enumerate(items(spec, "dataVolumeTemplates")):
        path = f"{field}.dataVolumeTemplate[{idx}]"
        problem = _data_volume(path, template)
        if problem:
            causes += problem
            continue
        name = text(obj(template, "metadata"), "name")
        referenced = any(
            (has(v, "persistentVolumeClaim") and text(v["persistentVolumeClaim"], "claimName") == name)
            or (has(v, "dataVolume") and text(v["dataVolume"], "name") == name)
            for v in volumes
        )
        if not referenced:
            causes.append(
                required(
                    path,
                    f"DataVolumeTemplate entry {path} must be referenced in the VMI template's 'volumes' list",
                )
            )
    return causes


def _data_volume(path: str, template: Mapping[str, Any]) -> Causes:
    """``validateDataVolume``: the first problem only."""
    if not text(obj(template, "metadata"), "name"):
        return [
            required(
                f"{path}.name", f"'name' field must not be empty for DataVolumeTemplate entry {path}.name."
            )
        ]
    dv = obj(template, "spec") or {}
    pvc, storage = obj(dv, "pvc"), obj(dv, "storage")
    if pvc is None and storage is None:
        return [invalid(f"{path}.PVC.Storage", "Missing Data volume PVC or Storage")]
    if pvc is not None and storage is not None:
        return [
            invalid(
                f"{path}.PVC.Storage",
                "Duplicate storage definition, both target storage and target pvc defined",
            )
        ]
    target = pvc if pvc is not None else storage
    external = has(target, "dataSourceRef") or has(target, "dataSource")
    sourced = has(dv, "source") or has(dv, "sourceRef")
    if external and sourced:
        return [invalid(f"{path}.source", "External population is incompatible with Source and SourceRef")]
    if not external and not sourced:
        return [
            invalid(
                f"{path}.source.sourceRef",
                "Data volume should have either Source, SourceRef, or be externally populated",
            )
        ]
    source = obj(dv, "source")
    if source is not None:
        count = sum(has(source, k) for k in _DV_SOURCES)
        if count == 0:
            return [invalid(f"{path}.source", "Missing dataVolume valid source")]
        if count > 1:
            return [invalid(f"{path}.source", "Multiple dataVolume sources")]
    return []


def validate_data_volume_template_namespaces(vm: Mapping[str, Any], request_namespace: str) -> Causes:
    """Storage admission (``vm-storage-admitter.go`` ``Admit``): ``validateVirtualMachineDataVolumeTemplateNamespace``
    for a CREATE (the snapshot and restore checks apply to updates only)."""
    target = text(obj(vm, "metadata"), "namespace") or request_namespace
    causes: Causes = []
    for idx, template in enumerate(items(obj(vm, "spec"), "dataVolumeTemplates")):
        namespace = text(obj(template, "metadata"), "namespace")
        if namespace and namespace != target:
            causes.append(
                invalid(
                    f"spec.dataVolumeTemplates[{idx}]",
                    f"Embedded DataVolume namespace {namespace} differs from VM namespace {target}",
                )
            )
    return causes
