"""CPU rules (``vmi-create-admitter.go``: ``validateCPURequestNotNegative``, ``validateCPULimitNotNegative``,
``validateCpuRequestDoesNotExceedLimit``, ``validateCpuPinning`` and the dedicated-placement checks it
calls, ``validateNUMA``, ``validateCPUIsolatorThread``, ``validateCPUFeaturePolicies``, ``validateCPUHotplug``,
``validateRealtime``; ``pkg/util/hardware``: ``GetNumberOfVCPUs``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.admission import featuregates as fg
from apiserver.render.admission import memory
from apiserver.render.admission._go import (
    Causes,
    flag,
    invalid,
    items,
    not_supported,
    num,
    obj,
    qtext,
    required,
    resource,
    text,
)
from apiserver.render.admission.clusterconfig import AdmissionConfig

_FEATURE_POLICIES = ("", "force", "require", "optional", "disable", "forbid")


def _cpu_text(spec: Mapping[str, Any], group: str) -> str:
    return qtext((obj(spec, "domain", "resources", group) or {}).get("cpu"))


def number_of_vcpus(cpu: Mapping[str, Any] | None) -> int:
    """``hwutil.GetNumberOfVCPUs``: cores x sockets x threads, each counted only when set."""
    vcpus = num(cpu, "cores")
    for key in ("sockets", "threads"):
        value = num(cpu, key)
        if value != 0:
            vcpus = value if vcpus == 0 else (vcpus * value) & 0xFFFFFFFF
    return vcpus


def validate_request_not_negative(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateCPURequestNotNegative``."""
    if resource(spec, "requests", "cpu").milli_value_ceil() < 0:
        path = f"{field}.domain.resources.requests.cpu"
        return [invalid(path, f"{path} '{_cpu_text(spec, 'requests')}': must be greater than or equal to 0.")]
    return []


def validate_limit_not_negative(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateCPULimitNotNegative``."""
    if resource(spec, "limits", "cpu").milli_value_ceil() < 0:
        path = f"{field}.domain.resources.limits.cpu"
        return [invalid(path, f"{path} '{_cpu_text(spec, 'limits')}': must be greater than or equal to 0.")]
    return []


def validate_request_within_limit(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateCpuRequestDoesNotExceedLimit``."""
    limit = resource(spec, "limits", "cpu").milli_value_ceil()
    if limit > 0 and resource(spec, "requests", "cpu").milli_value_ceil() > limit:
        request_path = f"{field}.domain.resources.requests.cpu"
        limit_path = f"{field}.domain.resources.limits.cpu"
        return [
            invalid(
                request_path,
                f"{request_path} '{_cpu_text(spec, 'requests')}' is greater than "
                f"{limit_path} '{_cpu_text(spec, 'limits')}'",
            )
        ]
    return []


def validate_cpu_pinning(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateCpuPinning``: the checks of dedicated CPU placement, in KubeVirt's order."""
    cpu = obj(spec, "domain", "cpu")
    if not flag(cpu, "dedicatedCpuPlacement"):
        return []
    causes: Causes = []
    causes += memory.validate_memory_is_provided(field, spec)
    causes += _integer(field, spec, "requests")
    causes += _integer(field, spec, "limits")
    causes += memory.validate_requests_equal_limits(field, spec)
    causes += _request_limit_or_cores(field, spec)
    causes += _request_equals_limit(field, spec)
    causes += _request_or_limit_with_cores(field, spec)
    causes += _thread_count_on_architecture(field, spec, config)
    causes += _thread_count_on_dedicated(field, spec)
    return causes


def _integer(field: str, spec: Mapping[str, Any], group: str) -> Causes:
    """``validateCPURequestIsInteger`` / ``validateCPULimitIsInteger`` (KubeVirt's spelling kept)."""
    quantity = resource(spec, group, "cpu")
    value = quantity.value_ceil()
    if value > 0 and value * 1000 != quantity.milli_value_ceil():
        word = "requests" if group == "requests" else "limits"
        return [
            invalid(
                f"{field}.domain.resources.{group}.cpu", f"provided resources CPU {word} must be an interger"
            )
        ]
    return []


def _dedicated(field: str) -> str:
    return f"{field}.domain.cpu.dedicatedCpuPlacement"


def _request_limit_or_cores(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateRequestLimitOrCoresProvidedOnDedicatedCPUPlacement``."""
    if (
        resource(spec, "requests", "cpu").value_ceil() == 0
        and resource(spec, "limits", "cpu").value_ceil() == 0
        and number_of_vcpus(obj(spec, "domain", "cpu")) == 0
    ):
        return [
            invalid(
                _dedicated(field),
                f"either {field}.domain.resources.requests.cpu or {field}.domain.resources.limits.cpu or "
                f"{field}.domain.cpu.cores must be provided when DedicatedCPUPlacement is true ",
            )
        ]
    return []


def _request_equals_limit(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateRequestEqualsLimitOnDedicatedCPUPlacement``."""
    request = resource(spec, "requests", "cpu").value_ceil()
    limit = resource(spec, "limits", "cpu").value_ceil()
    if request > 0 and limit > 0 and request != limit:
        return [
            invalid(
                _dedicated(field),
                f"{field}.domain.resources.requests.cpu or {field}.domain.resources.limits.cpu must be equal "
                "when DedicatedCPUPlacement is true ",
            )
        ]
    return []


def _request_or_limit_with_cores(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateRequestOrLimitWithCoresProvidedOnDedicatedCPUPlacement``."""
    request = resource(spec, "requests", "cpu").value_ceil()
    limit = resource(spec, "limits", "cpu").value_ceil()
    vcpus = number_of_vcpus(obj(spec, "domain", "cpu"))
    if (request > 0 or limit > 0) and vcpus > 0 and request != vcpus and limit != vcpus:
        return [
            invalid(
                _dedicated(field),
                f"{field}.domain.resources.requests.cpu or {field}.domain.resources.limits.cpu must not be "
                f"provided at the same time with {field}.domain.cpu.cores when DedicatedCPUPlacement is true ",
            )
        ]
    return []


def _thread_count_on_architecture(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateThreadCountOnArchitecture``."""
    arch = text(spec, "architecture") or config.default_architecture
    threads = num(obj(spec, "domain", "cpu"), "threads")
    if threads > 1 and arch == "arm64":
        return [
            invalid(
                f"{field}.architecture",
                f"threads must not be greater than 1 at {field}.domain.cpu.threads (got {threads}) when "
                f"{field}.architecture is arm64",
            )
        ]
    return []


def _thread_count_on_dedicated(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateThreadCountOnDedicatedCPUPlacement``."""
    threads = num(obj(spec, "domain", "cpu"), "threads")
    if threads > 2:
        return [
            invalid(
                _dedicated(field),
                f"Not more than two threads must be provided at {field}.domain.cpu.threads (got {threads}) when "
                "DedicatedCPUPlacement is true",
            )
        ]
    return []


def validate_numa(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateNUMA``."""
    cpu = obj(spec, "domain", "cpu")
    if obj(cpu, "numa", "guestMappingPassthrough") is None:
        return []
    path = f"{field}.domain.cpu.numa.guestMappingPassthrough"
    causes: Causes = []
    if not config.enabled(fg.NUMA):
        causes.append(
            invalid(path, f"NUMA feature gate is not enabled in kubevirt-config, invalid entry {path}")
        )
    if not flag(cpu, "dedicatedCpuPlacement"):
        causes.append(
            invalid(
                path,
                f"{field}.domain.cpu.dedicatedCpuPlacement must be set to true when NUMA topology strategy is set in {path}",
            )
        )
    if obj(spec, "domain", "memory", "hugepages") is None:
        causes.append(
            invalid(
                path,
                f"{field}.domain.memory.hugepages must be requested when NUMA topology strategy is set in {path}",
            )
        )
    return causes


def validate_isolate_emulator_thread(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateCPUIsolatorThread``."""
    cpu = obj(spec, "domain", "cpu")
    if flag(cpu, "isolateEmulatorThread") and not flag(cpu, "dedicatedCpuPlacement"):
        return [
            invalid(
                f"{field}.domain.cpu.isolateEmulatorThread",
                "IsolateEmulatorThread should be only set in combination with DedicatedCPUPlacement",
            )
        ]
    return []


def validate_feature_policies(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateCPUFeaturePolicies``."""
    causes: Causes = []
    for idx, feature in enumerate(items(obj(spec, "domain", "cpu"), "features")):
        policy = text(feature, "policy")
        if policy not in _FEATURE_POLICIES:
            causes.append(
                not_supported(
                    f"{field}.domain.cpu.features[{idx}].policy",
                    f"CPU feature {text(feature, 'name')} uses policy {policy} that is not supported.",
                )
            )
    return causes


def validate_hotplug(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateCPUHotplug``."""
    cpu = obj(spec, "domain", "cpu")
    if num(cpu, "maxSockets") != 0 and num(cpu, "sockets") > num(cpu, "maxSockets"):
        return [
            invalid(
                f"{field}.domain.cpu.sockets",
                "Number of sockets in CPU topology is greater than the maximum sockets allowed",
            )
        ]
    return []


def validate_realtime(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateRealtime``: ``validateCPURealtime`` then ``validateMemoryRealtime``."""
    cpu = obj(spec, "domain", "cpu")
    if cpu is None or cpu.get("realtime") is None:
        return []
    causes: Causes = []
    if not flag(cpu, "dedicatedCpuPlacement"):
        causes.append(
            required(
                _dedicated(field),
                f"{field}.domain.cpu.dedicatedCpuPlacement must be set to true when {field}.domain.cpu.realtime is used",
            )
        )
    if obj(cpu, "numa", "guestMappingPassthrough") is None:
        path = f"{field}.domain.cpu.numa.guestMappingPassthrough"
        causes.append(required(path, f"{path} must be defined when {field}.domain.cpu.realtime is used"))
    return causes
