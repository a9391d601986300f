"""CPU: requests, limits, dedicated placement, NUMA, emulator thread, features, hotplug, realtime
(``apiserver/render/admission/cpu.py``)."""

from __future__ import annotations

from typing import Any

from hack.oracle.admission.base import (
    CPU,
    INV,
    JSON,
    LIVE_UPDATE_OFF,
    LIVE_UPDATE_ON,
    NS,
    REQ,
    VMI_CREATE,
    VMS_ADMITTER,
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

_DEDICATED = {"dedicatedCpuPlacement": True}


def _dedicated(vm: JSON, **cpu_members: Any) -> None:
    cpu(vm).update({**_DEDICATED, **cpu_members})


def live_update_variants() -> None:
    """CPU hotplug under live update (validateLiveUpdateCPU)."""
    sweep(
        "cpu",
        "live update sockets={} maxSockets=2",
        [1, 2, 3, 0],
        lambda vm, v: cpu(vm).update({"sockets": v, "maxSockets": 2}),
        configs=(LIVE_UPDATE_ON, LIVE_UPDATE_OFF),
    )


def variants() -> None:
    """Requests and limits, dedicated placement (validateCpuPinning and its helpers), NUMA,
    isolateEmulatorThread, features, hotplug, realtime."""
    sweep("cpu", "requests.cpu={}", CPU, lambda vm, v: resources(vm, "requests").__setitem__("cpu", v))
    sweep("cpu", "limits.cpu={}", CPU, lambda vm, v: resources(vm, "limits").__setitem__("cpu", v))
    sweep(
        "cpu",
        "requests.cpu={} limits 1",
        ["1", "1001m", "2", "999m", "1.5"],
        lambda vm, v: (
            resources(vm, "requests").__setitem__("cpu", v),
            resources(vm, "limits").__setitem__("cpu", "1"),
        ),
    )
    sweep(
        "cpu",
        "dedicated, requests.cpu={} limits.cpu=2",
        ["2", "1", "1.5", "2000m", "0", "3"],
        lambda vm, v: (
            _dedicated(vm),
            resources(vm, "requests").__setitem__("cpu", v),
            resources(vm, "limits").__setitem__("cpu", "2"),
        ),
    )
    sweep(
        "cpu",
        "dedicated, limits.cpu={} only",
        ["2", "1.5", "500m", "0"],
        lambda vm, v: (
            _dedicated(vm),
            resources(vm, "limits").__setitem__("cpu", v),
            resources(vm, "requests").pop("cpu", None),
        ),
    )
    sweep(
        "cpu",
        "dedicated, cores={} requests.cpu=2",
        [0, 1, 2, 4],
        lambda vm, v: (
            _dedicated(vm, cores=v, sockets=1, threads=1),
            resources(vm, "requests").__setitem__("cpu", "2"),
        ),
    )
    sweep(
        "cpu",
        "dedicated, threads={}",
        [1, 2, 3],
        lambda vm, v: _dedicated(vm, threads=v),
        configs=({"architectureConfiguration": {"defaultArchitecture": "arm64"}},),
    )
    sweep(
        "cpu",
        "dedicated, arch={} threads 2",
        ["arm64", "amd64", "s390x", ""],
        lambda vm, v: (_dedicated(vm, threads=2), tspec(vm).__setitem__("architecture", v)),
    )
    variant(
        "cpu",
        "dedicated, no cpu, no memory at all",
        lambda vm: (
            _dedicated(vm),
            domain(vm).pop("resources", None),
            memory(vm).clear(),
            cpu(vm).update({"cores": 0, "sockets": 0, "threads": 0}),
        ),
    )
    sweep(
        "cpu",
        "dedicated, memory requests={} limits=1Gi",
        ["1Gi", "2Gi", "1024Mi", "1G"],
        lambda vm, v: (
            _dedicated(vm),
            resources(vm, "requests").__setitem__("memory", v),
            resources(vm, "limits").__setitem__("memory", "1Gi"),
        ),
    )
    sweep(
        "cpu",
        "dedicated, only memory.guest={}",
        ["1Gi", "0"],
        lambda vm, v: (
            _dedicated(vm),
            domain(vm).pop("resources", None),
            memory(vm).clear(),
            memory(vm).__setitem__("guest", v),
        ),
    )
    variant(
        "cpu",
        "dedicated, only hugepages",
        lambda vm: (
            _dedicated(vm),
            domain(vm).pop("resources", None),
            memory(vm).clear(),
            memory(vm).__setitem__("hugepages", {"pageSize": "2Mi"}),
        ),
    )
    sweep(
        "cpu",
        "numa guestMappingPassthrough, dedicated={} hugepages={}",
        [(True, True), (True, False), (False, True), (False, False)],
        lambda vm, v: (
            cpu(vm).update({"numa": {"guestMappingPassthrough": {}}, "dedicatedCpuPlacement": v[0]})
            or (memory(vm).__setitem__("hugepages", {"pageSize": "2Mi"}) if v[1] else None)
        ),
        gates=("NUMA",),
    )
    variant("cpu", "numa {} (no passthrough)", lambda vm: cpu(vm).__setitem__("numa", {}))
    sweep(
        "cpu",
        "isolateEmulatorThread, dedicated={}",
        [True, False],
        lambda vm, v: cpu(vm).update({"isolateEmulatorThread": True, "dedicatedCpuPlacement": v}),
    )
    sweep(
        "cpu",
        "cpu feature policy={}",
        ["", "force", "require", "optional", "disable", "forbid", "Force", "bogus", "allow"],
        lambda vm, v: cpu(vm).__setitem__("features", [{"name": "vmx", "policy": v}, {"name": "pcid"}]),
    )
    sweep(
        "cpu",
        "sockets={} maxSockets=4",
        [1, 4, 5, 0],
        lambda vm, v: cpu(vm).update({"sockets": v, "maxSockets": 4}),
    )
    sweep(
        "cpu",
        "realtime, dedicated={} numa={}",
        [(True, True), (True, False), (False, True), (False, False)],
        lambda vm, v: cpu(vm).update(
            {
                "realtime": {"mask": "0"},
                "dedicatedCpuPlacement": v[0],
                **({"numa": {"guestMappingPassthrough": {}}} if v[1] else {}),
            }
        ),
    )


def checks() -> None:
    go_file(VMI_CREATE, "cpu")
    check(
        "cpu.requests-negative",
        "validateCPURequestNotNegative",
        INV,
        "must be greater than or equal to 0.",
        field="requests.cpu",
    )
    check(
        "cpu.limits-negative",
        "validateCPULimitNotNegative",
        INV,
        "must be greater than or equal to 0.",
        field="limits.cpu",
    )
    check(
        "cpu.requests-over-limits",
        "validateCpuRequestDoesNotExceedLimit",
        INV,
        "is greater than",
        field="requests.cpu",
    )
    check(
        "cpu.dedicated-memory", "validateMemoryIsProvided", INV, "should be provided", field="limits.memory"
    )
    check(
        "cpu.dedicated-request-integer",
        "validateCPURequestIsInteger",
        INV,
        "provided resources CPU requests must be an interger",
    )
    check(
        "cpu.dedicated-limit-integer",
        "validateCPULimitIsInteger",
        INV,
        "provided resources CPU limits must be an interger",
    )
    check(
        "cpu.dedicated-memory-equal",
        "validateMemoryRequestsAndLimits",
        INV,
        "must be equal to spec.template.spec.domain.resources.limits.memory",
    )
    check(
        "cpu.dedicated-something",
        "validateRequestLimitOrCoresProvidedOnDedicatedCPUPlacement",
        INV,
        "must be provided when DedicatedCPUPlacement is true",
    )
    check(
        "cpu.dedicated-equal",
        "validateRequestEqualsLimitOnDedicatedCPUPlacement",
        INV,
        "must be equal when DedicatedCPUPlacement is true",
    )
    check(
        "cpu.dedicated-cores",
        "validateRequestOrLimitWithCoresProvidedOnDedicatedCPUPlacement",
        INV,
        "must not be provided at the same time with",
    )
    check(
        "cpu.dedicated-arm64-threads",
        "validateThreadCountOnArchitecture",
        INV,
        "threads must not be greater than 1",
    )
    check(
        "cpu.dedicated-threads",
        "validateThreadCountOnDedicatedCPUPlacement",
        INV,
        "Not more than two threads must be provided",
    )
    check("cpu.numa-gate", "validateNUMA", INV, "NUMA feature gate is not enabled", gate="NUMA (GA)")
    check("cpu.numa-dedicated", "validateNUMA", INV, "must be set to true when NUMA topology strategy is set")
    check("cpu.numa-hugepages", "validateNUMA", INV, "must be requested when NUMA topology strategy is set")
    check(
        "cpu.isolate-emulator-thread",
        "validateCPUIsolatorThread",
        INV,
        "IsolateEmulatorThread should be only set in combination with DedicatedCPUPlacement",
    )
    check("cpu.feature-policy", "validateCPUFeaturePolicies", NS, "that is not supported.", field="features")
    check(
        "cpu.max-sockets",
        "validateCPUHotplug",
        INV,
        "Number of sockets in CPU topology is greater than the maximum sockets allowed",
    )


def realtime_checks() -> None:
    go_file(VMI_CREATE, "cpu")
    check(
        "cpu.realtime-dedicated",
        "validateCPURealtime",
        REQ,
        "must be set to true when spec.template.spec.domain.cpu.realtime is used",
    )
    check(
        "cpu.realtime-numa",
        "validateMemoryRealtime",
        REQ,
        "must be defined when spec.template.spec.domain.cpu.realtime is used",
    )


def live_update_check() -> None:
    """Grouped with the run strategy, beside which ValidateVirtualMachineSpec calls it."""
    go_file(VMS_ADMITTER, "runstrategy")
    check(
        "live.sockets",
        "validateLiveUpdateCPU",
        INV,
        "Number of sockets in CPU topology is greater than the maximum sockets allowed",
        gate="vmRolloutStrategy",
    )
