"""Memory rules (``vmi-create-admitter.go``: ``validateMemoryRequestsNegativeOrNull``,
``validateMemoryLimitsNegativeOrNull``, ``validateHugepagesMemoryRequests``, ``validateGuestMemoryLimit``,
``validateMemoryIsProvided``, ``validateMemoryRequestsAndLimits``, ``validateReservedOverheadMemlock``;
``pkg/liveupdate/memory``: ``ValidateLiveUpdateMemory``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.admission import featuregates as fg
from apiserver.render.admission._go import Causes, KubeVirtPanic, invalid, obj, qtext, quantity, resource
from apiserver.render.admission.clusterconfig import AdmissionConfig
from apiserver.render.kubernetes.quantity import (
    Quantity,
    QuantityError,
    cmp,
    cmp_and_promote,
    format_int,
    parse_quantity,
)

_ONE_M = parse_quantity("1M")
_BLOCK_ALIGNMENT = 0x200000
_BLOCK_ALIGNMENT_1G_HUGEPAGES = 0x40000000
_MIN_HOTPLUG_GUEST = 0x40000000


def _requests(spec: Mapping[str, Any]) -> Any:
    return (obj(spec, "domain", "resources", "requests") or {}).get("memory")


def _limits(spec: Mapping[str, Any]) -> Any:
    return (obj(spec, "domain", "resources", "limits") or {}).get("memory")


def validate_requests_negative_or_null(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateMemoryRequestsNegativeOrNull``."""
    request = resource(spec, "requests", "memory")
    path = f"{field}.domain.resources.requests.memory"
    if request.value_ceil() < 0:
        return [invalid(path, f"{path} '{qtext(_requests(spec))}': must be greater than or equal to 0.")]
    if request.value_ceil() > 0 and cmp(request, _ONE_M) < 0:
        return [invalid(path, f"{path} '{qtext(_requests(spec))}': must be greater than or equal to 1M.")]
    return []


def validate_limits_negative_or_null(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateMemoryLimitsNegativeOrNull``."""
    causes: Causes = []
    limit = resource(spec, "limits", "memory")
    request = resource(spec, "requests", "memory")
    limit_path = f"{field}.domain.resources.limits.memory"
    request_path = f"{field}.domain.resources.requests.memory"
    if limit.value_ceil() < 0:
        causes.append(
            invalid(limit_path, f"{limit_path} '{qtext(_limits(spec))}': must be greater than or equal to 0.")
        )
    if limit.value_ceil() > 0 and request.value_ceil() > limit.value_ceil():
        causes.append(
            invalid(
                request_path,
                f"{request_path} '{qtext(_requests(spec))}' is greater than {limit_path} '{qtext(_limits(spec))}'",
            )
        )
    return causes


def validate_hugepages(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateHugepagesMemoryRequests``."""
    memory = obj(spec, "domain", "memory")
    hugepages = obj(memory, "hugepages")
    if hugepages is None:
        return []
    page_size_text = hugepages.get("pageSize") or ""
    page_path = f"{field}.domain.memory.hugepages.pageSize"
    request_path = f"{field}.domain.resources.requests.memory"
    try:
        page_size = parse_quantity(page_size_text)
    except QuantityError:
        return [
            invalid(
                page_path,
                f"{page_path} '{page_size_text}': quantities must match the regular expression "
                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            )
        ]
    vm_memory = resource(spec, "requests", "memory").value_ceil()
    if vm_memory == 0 and memory is not None:
        if memory.get("guest") is None:
            raise KubeVirtPanic("invalid memory address or nil pointer dereference")
        vm_memory = quantity(memory["guest"]).value_ceil()
    if vm_memory == 0:
        vm_memory = resource(spec, "limits", "memory").value_ceil()
    size = page_size.value_ceil()
    if vm_memory != 0 and vm_memory < size:
        return [
            invalid(
                request_path,
                f"{request_path} '{qtext(_requests(spec))}' must be equal to or larger than page size "
                f"{page_path} '{page_size_text}'",
            )
        ]
    if size == 0:
        raise KubeVirtPanic("integer divide by zero")
    if _go_mod(vm_memory, size) != 0:
        return [
            invalid(
                request_path,
                f"{request_path} '{qtext(_requests(spec))}' is not a multiple of the page size "
                f"{page_path} '{page_size_text}'",
            )
        ]
    return []


def _go_mod(a: int, b: int) -> int:
    """Go's ``%``: the remainder takes the sign of the dividend."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def validate_guest_memory_limit(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateGuestMemoryLimit`` (skipped under the LiveUpdate rollout strategy, the default)."""
    if config.live_update_rollout():
        return []
    memory = obj(spec, "domain", "memory")
    if memory is None or memory.get("guest") is None:
        return []
    limits = resource(spec, "limits", "memory").value_ceil()
    guest = quantity(memory["guest"]).value_ceil()
    if limits < guest and limits != 0:
        guest_path = f"{field}.domain.memory.guest"
        limit_path = f"{field}.domain.resources.limits.memory"
        return [
            invalid(
                guest_path,
                f"{guest_path} '{qtext(memory['guest'])}' must be equal to or less than the memory limit "
                f"{limit_path} '{qtext(_limits(spec))}'",
            )
        ]
    return []


def validate_memory_is_provided(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateMemoryIsProvided`` (dedicated CPU placement)."""
    cause = invalid(
        f"{field}.domain.resources.limits.memory",
        f"{field}.domain.resources.requests.memory, {field}.domain.resources.limits.memory, "
        f"{field}.domain.memory.hugepages or {field}.domain.memory.guest should be provided",
    )
    if not resource(spec, "limits", "memory").is_zero():
        return []
    if not resource(spec, "requests", "memory").is_zero():
        return []
    memory = obj(spec, "domain", "memory")
    if memory is None:
        return [cause]
    if memory.get("hugepages") is not None:
        return []
    if memory.get("guest") is None or quantity(memory["guest"]).is_zero():
        return [cause]
    return []


def validate_requests_equal_limits(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateMemoryRequestsAndLimits`` (dedicated CPU placement)."""
    request = resource(spec, "requests", "memory").value_ceil()
    limit = resource(spec, "limits", "memory").value_ceil()
    if request > 0 and limit > 0 and request != limit:
        path = f"{field}.domain.resources.requests.memory"
        return [invalid(path, f"{path} must be equal to {field}.domain.resources.limits.memory")]
    return []


def validate_reserved_overhead_memlock(
    field: str, spec: Mapping[str, Any], config: AdmissionConfig
) -> Causes:
    """``validateReservedOverheadMemlock``."""
    memory = obj(spec, "domain", "memory")
    if memory is None:
        return []
    if memory.get("reservedOverhead") is not None and not config.enabled(fg.RESERVED_OVERHEAD_MEMLOCK):
        return [
            invalid(
                f"{field}.domain.memory.reservedOverhead",
                "Reserved overhead memlock feature gate is not enabled in kubevirt-config",
            )
        ]
    return []


def live_update_memory_error(spec: Mapping[str, Any], max_guest: Any) -> str | None:
    """``memory.ValidateLiveUpdateMemory``: the error text, or None.

    ``Guest.Cmp(*maxGuest)`` promotes the guest to an ``inf.Dec`` when either is one (a maxGuest beyond
    int64, say), and the ``Guest.Value()`` calls after it read that form: ``10E`` is then the wrapped
    ``10**19 - 2**64``, not aligned, where its int64 form gave 0. The guest changed is the webhook's copy of
    the VM, and no rule reads it after this one."""
    domain = obj(spec, "domain") or {}
    cpu = obj(domain, "cpu")
    if cpu is not None and cpu.get("realtime") is not None:
        return "Memory hotplug is not compatible with realtime VMs"
    if obj(cpu, "numa", "guestMappingPassthrough") is not None:
        return "Memory hotplug is not compatible with guest mapping passthrough"
    if domain.get("launchSecurity") is not None:
        return "Memory hotplug is not compatible with encrypted VMs"
    memory = obj(domain, "memory")
    alignment = _BLOCK_ALIGNMENT
    if obj(memory, "hugepages") is not None and (memory or {})["hugepages"].get("pageSize") == "1Gi":
        alignment = _BLOCK_ALIGNMENT_1G_HUGEPAGES
    if memory is None or memory.get("guest") is None:
        return "Guest memory must be configured when memory hotplug is enabled"
    if max_guest is None:
        return "Max guest memory must be configured when memory hotplug is enabled"
    maximum: Quantity = quantity(max_guest)
    order, guest = cmp_and_promote(quantity(memory["guest"]), maximum)
    if order > 0:
        return "Guest memory is greater than the configured maxGuest memory"
    if _go_mod(guest.value_ceil(), alignment) != 0:
        return f"Guest memory must be {format_int(alignment, 'BinarySI')} aligned"
    if _go_mod(maximum.value_ceil(), alignment) != 0:
        return f"MaxGuest must be {format_int(alignment, 'BinarySI')} aligned"
    if spec.get("architecture", "") != "amd64":
        return "Memory hotplug is only available for x86_64 VMs"
    if guest.value_ceil() < _MIN_HOTPLUG_GUEST:
        return "Memory hotplug is only available for VMs with at least 1Gi of guest memory"
    return None
