"""Memory: requests, limits, hugepages, guest memory, reserved overhead, memory hotplug (live update)
(``apiserver/render/admission/memory.py``)."""

from __future__ import annotations

from hack.oracle.admission.base import (
    INV,
    LIVE_UPDATE_OFF,
    LIVE_UPDATE_ON,
    MEMORY,
    VMI_CREATE,
    check,
    cpu,
    domain,
    go_file,
    memory,
    resources,
    sweep,
    tspec,
    variant,
)

_PAGES = ["2Mi", "1Gi", "4Ki", "3Mi", "bogus", "", "1G", "0", "-2Mi", "1.5Mi", "2M", "100Mi"]


def variants() -> None:
    """Requests, limits, hugepages, guest, reserved overhead."""
    sweep(
        "memory",
        "requests.memory={}",
        MEMORY,
        lambda vm, v: resources(vm, "requests").__setitem__("memory", v),
    )
    sweep(
        "memory", "limits.memory={}", MEMORY, lambda vm, v: resources(vm, "limits").__setitem__("memory", v)
    )
    sweep(
        "memory",
        "limits.memory={} < requests 1Gi",
        ["512Mi", "1Gi", "1023Mi", "1025Mi", "1G", "2Gi"],
        lambda vm, v: (
            resources(vm, "requests").__setitem__("memory", "1Gi"),
            resources(vm, "limits").__setitem__("memory", v),
        ),
    )
    sweep(
        "memory",
        "guest={}",
        MEMORY,
        lambda vm, v: memory(vm).__setitem__("guest", v),
        configs=(LIVE_UPDATE_OFF,),
    )
    sweep(
        "memory",
        "guest={} with limits 1Gi",
        ["512Mi", "1Gi", "1G", "1025Mi", "2Gi", "1.5Gi"],
        lambda vm, v: (
            memory(vm).__setitem__("guest", v),
            resources(vm, "limits").__setitem__("memory", "1Gi"),
        ),
        configs=(LIVE_UPDATE_OFF, LIVE_UPDATE_ON),
    )
    sweep(
        "memory",
        "hugepages pageSize={}",
        _PAGES,
        lambda vm, v: memory(vm).__setitem__("hugepages", {"pageSize": v}),
    )
    sweep(
        "memory",
        "hugepages 1Gi, requests={}",
        ["1Gi", "2Gi", "1536Mi", "512Mi", "3Gi", "1G", "0"],
        lambda vm, v: (
            memory(vm).__setitem__("hugepages", {"pageSize": "1Gi"}),
            resources(vm, "requests").__setitem__("memory", v),
        ),
    )
    sweep(
        "memory",
        "hugepages 2Mi, guest={} no requests",
        ["1Gi", "3Mi", "1G", "100Mi", "1Mi", "2Mi"],
        lambda vm, v: (
            domain(vm).pop("resources", None),
            memory(vm).update({"hugepages": {"pageSize": "2Mi"}, "guest": v}),
        ),
    )
    sweep(
        "memory",
        "hugepages 2Mi, limits={} only",
        ["1Gi", "3Mi", "1G", "1Mi"],
        lambda vm, v: (
            domain(vm).pop("resources", None),
            memory(vm).pop("guest", None),
            memory(vm).__setitem__("hugepages", {"pageSize": "2Mi"}),
            resources(vm, "limits").__setitem__("memory", v),
        ),
    )
    variant("memory", "hugepages {} (no pageSize)", lambda vm: memory(vm).__setitem__("hugepages", {}))
    sweep(
        "memory",
        "reservedOverhead={}",
        [{"addedOverhead": "100Mi"}, {}, {"memLock": "Required"}],
        lambda vm, v: memory(vm).__setitem__("reservedOverhead", v),
        gates=("ReservedOverheadMemlock",),
    )


def live_update_variants() -> None:
    """validateLiveUpdateFeatures, ValidateLiveUpdateMemory."""
    sweep(
        "memory",
        "live update guest={} maxGuest=4Gi",
        ["1Gi", "4Gi", "5Gi", "1000Mi", "1G", "129Mi", "128Mi", "1Gi+1"],
        lambda vm, v: memory(vm).update({"guest": v if v != "1Gi+1" else "1073741825", "maxGuest": "4Gi"}),
        configs=(LIVE_UPDATE_ON, LIVE_UPDATE_OFF),
    )
    sweep(
        "memory",
        "live update maxGuest={} guest=1Gi",
        ["1Gi", "4Gi", "4000Mi", "3G", "129Mi", "0"],
        lambda vm, v: memory(vm).update({"guest": "1Gi", "maxGuest": v}),
        configs=(LIVE_UPDATE_ON,),
    )
    variant(
        "memory",
        "live update maxGuest without guest",
        lambda vm: (memory(vm).pop("guest", None), memory(vm).__setitem__("maxGuest", "4Gi")),
        configs=(LIVE_UPDATE_ON,),
    )
    sweep(
        "memory",
        "live update maxGuest on architecture={}",
        ["arm64", "s390x", "amd64"],
        lambda vm, v: (
            memory(vm).update({"guest": "2Gi", "maxGuest": "4Gi"}),
            tspec(vm).__setitem__("architecture", v),
        ),
        configs=(LIVE_UPDATE_ON,),
    )
    variant(
        "memory",
        "live update maxGuest with realtime",
        lambda vm: (
            memory(vm).update({"guest": "1Gi", "maxGuest": "4Gi"}),
            cpu(vm).__setitem__("realtime", {}),
        ),
        configs=(LIVE_UPDATE_ON,),
    )
    variant(
        "memory",
        "live update maxGuest with numa passthrough",
        lambda vm: (
            memory(vm).update({"guest": "1Gi", "maxGuest": "4Gi"}),
            cpu(vm).__setitem__("numa", {"guestMappingPassthrough": {}}),
        ),
        configs=(LIVE_UPDATE_ON,),
    )
    variant(
        "memory",
        "live update maxGuest with SEV",
        lambda vm: (
            memory(vm).update({"guest": "1Gi", "maxGuest": "4Gi"}),
            domain(vm).__setitem__("launchSecurity", {"sev": {}}),
        ),
        configs=(LIVE_UPDATE_ON,),
    )
    sweep(
        "memory",
        "live update 1Gi hugepages guest={} maxGuest=4Gi",
        ["1Gi", "1536Mi", "3Gi"],
        lambda vm, v: memory(vm).update({"guest": v, "maxGuest": "4Gi", "hugepages": {"pageSize": "1Gi"}}),
        configs=(LIVE_UPDATE_ON,),
    )


def checks() -> None:
    go_file(VMI_CREATE, "memory")
    check(
        "memory.requests-negative",
        "validateMemoryRequestsNegativeOrNull",
        INV,
        "must be greater than or equal to 0.",
        field="requests.memory",
    )
    check(
        "memory.requests-below-1M",
        "validateMemoryRequestsNegativeOrNull",
        INV,
        "must be greater than or equal to 1M.",
    )
    check(
        "memory.limits-negative",
        "validateMemoryLimitsNegativeOrNull",
        INV,
        "must be greater than or equal to 0.",
        field="limits.memory",
    )
    check(
        "memory.requests-over-limits",
        "validateMemoryLimitsNegativeOrNull",
        INV,
        "is greater than",
        field="requests.memory",
    )
    check(
        "memory.hugepages-pagesize",
        "validateHugepagesMemoryRequests",
        INV,
        "quantities must match the regular expression",
        field="hugepages.pageSize",
    )
    check(
        "memory.hugepages-too-small",
        "validateHugepagesMemoryRequests",
        INV,
        "must be equal to or larger than page size",
    )
    check(
        "memory.hugepages-multiple",
        "validateHugepagesMemoryRequests",
        INV,
        "is not a multiple of the page size",
    )
    check(
        "memory.guest-over-limit",
        "validateGuestMemoryLimit",
        INV,
        "must be equal to or less than the memory limit",
        gate="vmRolloutStrategy",
    )


def reserved_overhead_check() -> None:
    go_file(VMI_CREATE, "devices")
    check(
        "memory.reserved-overhead",
        "validateReservedOverheadMemlock",
        INV,
        "Reserved overhead memlock feature gate is not enabled",
        gate="ReservedOverheadMemlock",
    )


def live_update_checks() -> None:
    go_file("pkg/liveupdate/memory/memory.go", "memory")
    check(
        "live.memory-realtime",
        "ValidateLiveUpdateMemory",
        INV,
        "Memory hotplug is not compatible with realtime VMs",
        gate="vmRolloutStrategy",
    )
    check(
        "live.memory-numa",
        "ValidateLiveUpdateMemory",
        INV,
        "Memory hotplug is not compatible with guest mapping passthrough",
    )
    check(
        "live.memory-encrypted",
        "ValidateLiveUpdateMemory",
        INV,
        "Memory hotplug is not compatible with encrypted VMs",
    )
    check(
        "live.memory-guest",
        "ValidateLiveUpdateMemory",
        INV,
        "Guest memory must be configured when memory hotplug is enabled",
    )
    check(
        "live.memory-over-max",
        "ValidateLiveUpdateMemory",
        INV,
        "Guest memory is greater than the configured maxGuest memory",
    )
    check("live.memory-guest-aligned", "ValidateLiveUpdateMemory", INV, "Guest memory must be ")
    check("live.memory-max-aligned", "ValidateLiveUpdateMemory", INV, "MaxGuest must be ")
    check(
        "live.memory-arch", "ValidateLiveUpdateMemory", INV, "Memory hotplug is only available for x86_64 VMs"
    )
    check(
        "live.memory-min",
        "ValidateLiveUpdateMemory",
        INV,
        "Memory hotplug is only available for VMs with at least 1Gi of guest memory",
    )
