"""Applying an instancetype to a VM template (KubeVirt ``pkg/instancetype/apply``).

Every applier runs and all their conflicts are collected, in KubeVirt's order; the caller fails the
expansion when there is any. CPU reports all its conflicts, memory only the first.

Values taken from the instancetype are placed into the template without copying (see
``apply_preference``: specs may be cached and shared, and encode copies the result).
"""

from __future__ import annotations

import struct
from typing import Any

from apiserver.render.golang.tree import child
from apiserver.render.instancetype.topology import guest_topology
from apiserver.render.kubernetes.quantity import new_quantity, quantity_of

JSON = dict[str, Any]
BASE = "spec.template.spec"

_F32 = struct.Struct("<f")


def _f32(value: float) -> float:
    """Round to IEEE float32, as every Go float32 operation does."""
    return float(_F32.unpack(_F32.pack(value))[0])


def _int_f32(value: int) -> float:
    """Go's ``float32(n)`` of an int64: one rounding to nearest-even (via float64 would round twice)."""
    magnitude = abs(value)
    shift = magnitude.bit_length() - 24
    if shift > 0:
        q, r = divmod(magnitude, 1 << shift)
        half = 1 << (shift - 1)
        if r > half or (r == half and q & 1):
            q += 1
        magnitude = q << shift
    return float(-magnitude if value < 0 else magnitude)


def _f32_int64(value: float) -> int:
    """Go's ``int64(f)`` on amd64: truncation; out of range gives the "integer indefinite" MinInt64."""
    if -(2.0**63) <= value < 2.0**63:
        return int(value)
    return -(1 << 63)


def overcommitted_request(guest_bytes: int, percent: int) -> int:
    """``int64(float32(guest) * (1 - float32(pct)/100))`` with Go's float32 rounding at each step
    (one float32 operation on float32 operands rounds the same through a float64)."""
    factor = _f32(1 - _f32(_int_f32(percent) / 100))
    return _f32_int64(_f32(_int_f32(guest_bytes) * factor))


def apply_instancetype(instancetype: JSON, preference: JSON | None, tspec: JSON, tmeta: JSON) -> list[str]:
    """Apply ``instancetype`` to the template spec and metadata; return the conflict paths."""
    conflicts: list[str] = []
    _node_selector(instancetype, tspec, conflicts)
    _scheduler_name(instancetype, tspec, conflicts)
    domain = child(tspec, "domain")
    _cpu(instancetype, preference, domain, conflicts)
    _memory(instancetype, domain, conflicts)
    _io_threads(instancetype, domain, conflicts)
    _replace_if_absent(
        instancetype, "ioThreadsPolicy", domain, "ioThreadsPolicy", "domain.ioThreadsPolicy", conflicts
    )
    _replace_if_absent(
        instancetype, "launchSecurity", domain, "launchSecurity", "domain.launchSecurity", conflicts
    )
    _device_list(instancetype, "gpus", domain, conflicts)
    _device_list(instancetype, "hostDevices", domain, conflicts)
    _annotations(instancetype.get("annotations"), tmeta, conflicts)
    return conflicts


def _node_selector(it: JSON, tspec: JSON, conflicts: list[str]) -> None:
    selector = it.get("nodeSelector")
    if selector is None:
        return
    if tspec.get("nodeSelector") is not None:
        conflicts.append(f"{BASE}.nodeSelector")
        return
    tspec["nodeSelector"] = dict(selector)


def _scheduler_name(it: JSON, tspec: JSON, conflicts: list[str]) -> None:
    name = it.get("schedulerName")
    if not name:
        return
    if tspec.get("schedulerName"):
        conflicts.append(f"{BASE}.schedulerName")
        return
    tspec["schedulerName"] = name


def _cpu(it: JSON, preference: JSON | None, domain: JSON, conflicts: list[str]) -> None:
    cpu = child(domain, "cpu")
    it_cpu = it.get("cpu") or {}
    resources = domain.get("resources")
    found: list[str] = []
    if resources:  # an empty or absent one has nothing to conflict with (the usual case)
        if "cpu" in (resources.get("requests") or {}):
            found.append(f"{BASE}.domain.resources.requests.cpu")
        if "cpu" in (resources.get("limits") or {}):
            found.append(f"{BASE}.domain.resources.limits.cpu")
    if cpu:
        for member in ("sockets", "cores", "threads"):
            if cpu.get(member):
                found.append(f"{BASE}.domain.cpu.{member}")
        if cpu.get("model") and it_cpu.get("model") is not None:
            found.append(f"{BASE}.domain.cpu.model")
        if cpu.get("dedicatedCpuPlacement") and it_cpu.get("dedicatedCPUPlacement") is not None:
            found.append(f"{BASE}.domain.cpu.dedicatedCPUPlacement")
        if cpu.get("isolateEmulatorThread") and it_cpu.get("isolateEmulatorThread") is not None:
            found.append(f"{BASE}.domain.cpu.isolateEmulatorThread")
        for member in ("numa", "realtime"):
            if cpu.get(member) is not None and it_cpu.get(member) is not None:
                found.append(f"{BASE}.domain.cpu.{member}")
    if found:
        conflicts.extend(found)
        return

    if it_cpu.get("model") is not None:
        cpu["model"] = it_cpu["model"]
    if it_cpu.get("dedicatedCPUPlacement") is not None:
        cpu["dedicatedCpuPlacement"] = it_cpu["dedicatedCPUPlacement"]
    if it_cpu.get("isolateEmulatorThread") is not None:
        cpu["isolateEmulatorThread"] = it_cpu["isolateEmulatorThread"]
    for member in ("numa", "realtime"):
        if it_cpu.get(member) is not None:
            cpu[member] = it_cpu[member]
    if it_cpu.get("maxSockets") is not None:
        cpu["maxSockets"] = it_cpu["maxSockets"]
    sockets, cores, threads = guest_topology(int(it_cpu.get("guest") or 0), preference)
    cpu["cores"], cpu["sockets"], cpu["threads"] = cores, sockets, threads


def _memory(it: JSON, domain: JSON, conflicts: list[str]) -> None:
    memory = child(domain, "memory")
    it_memory = it.get("memory") or {}
    resources = domain.get("resources") or {}
    conflict = None
    if not memory and not resources:
        pass  # the usual case: nothing in the VM to conflict with
    elif memory.get("guest") is not None:
        conflict = "domain.memory.guest"
    elif memory.get("hugepages") is not None and it_memory.get("hugepages") is not None:
        conflict = "domain.memory.hugepages"
    elif memory.get("maxGuest") is not None and it_memory.get("maxGuest") is not None:
        conflict = "domain.memory.maxGuest"
    elif "memory" in (resources.get("requests") or {}):
        conflict = "domain.resources.requests.memory"
    elif "memory" in (resources.get("limits") or {}):
        conflict = "domain.resources.limits.memory"
    if conflict:
        conflicts.append(f"{BASE}.{conflict}")
        return

    guest = it_memory.get("guest") or "0"
    memory["guest"] = guest
    percent = it_memory.get("overcommitPercent") or 0
    if percent > 0:
        quantity = quantity_of(guest)  # as Go parsed the guest: its Value() and its Format
        request = overcommitted_request(quantity.value_ceil(), percent)
        requests = child(child(domain, "resources"), "requests")
        requests["memory"] = new_quantity(request, quantity.format)
    if it_memory.get("hugepages") is not None:
        memory["hugepages"] = it_memory["hugepages"]
    if it_memory.get("maxGuest") is not None:
        memory["maxGuest"] = it_memory["maxGuest"]


def _io_threads(it: JSON, domain: JSON, conflicts: list[str]) -> None:
    count = (it.get("ioThreads") or {}).get("supplementalPoolThreadCount")
    if count is None:
        return
    if (domain.get("ioThreads") or {}).get("supplementalPoolThreadCount") is not None:
        conflicts.append(f"{BASE}.domain.ioThreads.supplementalPoolThreadCount")
        return
    child(domain, "ioThreads")["supplementalPoolThreadCount"] = count


def _replace_if_absent(
    it: JSON, key: str, target: JSON, member: str, path: str, conflicts: list[str]
) -> None:
    value = it.get(key)
    if value is None:
        return
    if target.get(member) is not None:
        conflicts.append(f"{BASE}.{path}")
        return
    target[member] = value


def _device_list(it: JSON, key: str, domain: JSON, conflicts: list[str]) -> None:
    items = it.get(key)
    if not items:
        return
    devices = child(domain, "devices")
    if devices.get(key):
        conflicts.append(f"{BASE}.domain.devices.{key}")
        return
    devices[key] = items


def _annotations(annotations: JSON | None, tmeta: JSON, conflicts: list[str]) -> None:
    if not annotations:
        return  # an empty map is not written, so none is created for nothing
    target = child(tmeta, "annotations")
    # Go ranges over the map in random order; with one conflicting key (all KubeVirt can pin) the
    # order does not matter, and with several we report them sorted so the answer is stable.
    for key, value in sorted(annotations.items()):
        if key in target:
            if target[key] != value:
                conflicts.append(f"annotations.{key}")
            continue
        target[key] = value
