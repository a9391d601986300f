"""The live-update handlers the VM controller runs under the ``LiveUpdate`` rollout strategy.

Mirrors ``handleCPUChangeRequest`` (with ``VMICPUsPatch``), ``handleAffinityChangeRequest`` (with
``VMIAffinityPatch`` and ``VMNodeSelectorPatch``), ``handleTolerationsChangeRequest`` (with
``vmiTolerationsPatch``) and ``handleMemoryHotplugRequest`` of ``pkg/virt-controller/watch/vm/vm.go``,
with ``pkg/util/migrations``' ``IsMigrating`` and ``pkg/liveupdate/memory``'s ``ValidateLiveUpdateMemory``.
Each handler reads the VM with its instancetype applied (:class:`Applied`, shared by the handlers of a
pass) and the running VMI; it either records the
JSON-patch values KubeVirt writes to the VMI (``{path: value}``, None for a removal), sets
RestartRequired on the VM, or fails (:class:`HandlerError`, which fails the whole sync).
"""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from apiserver.render.admission.cpu import number_of_vcpus
from apiserver.render.admission.memory import live_update_memory_error
from apiserver.render.golang import gojson
from apiserver.render.golang.tree import clone
from apiserver.render.kubernetes.quantity import BINARY_SI, DECIMAL_SI, Quantity, cmp, quantity_of
from apiserver.render.objects import ObjectLookup
from apiserver.render.vmcontroller._go import (
    JSON,
    has_condition_status,
    set_restart_required,
    spec_field_equal,
)
from apiserver.render.vmcontroller.instancetype import ApplyError, apply_to_vm
from apiserver.render.vmcontroller.network import is_migratable

AFFINITY = "k8s.io/api/core/v1.Affinity"
TOLERATION = "k8s.io/api/core/v1.Toleration"
VCPU_CHANGE = "HotVCPUChange"
MEMORY_CHANGE = "HotMemoryChange"

CPU_ABOVE_MAX = "CPU sockets updated in template spec to a value higher than what's available"
CPU_REDUCED = "Reduction of CPU socket count requires a restart"
CPU_ARM = "ARM doesn't support CPU hotplug"
MEMORY_HOTPLUG_FAILED = (
    "memory updated in template spec. Memory-hotplug failed and is not available for this VM configuration"
)
MEMORY_NOT_MIGRATABLE = "memory updated in template spec. Memory-hotplug is only available for migratable VMs"
MEMORY_NO_MAX_GUEST = (
    "memory updated in template spec. Memory-hotplug is not available for this VM configuration"
)
MEMORY_BELOW_BOOT = "memory updated in template spec to a value lower than what the VM started with"
MEMORY_ABOVE_MAX = "memory updated in template spec to a value higher than what's available"

Patch = dict[str, Any]


class HandlerError(Exception):
    """A handler's error: the sync fails with it (KubeVirt retries later)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _deleting(vmi: JSON | None) -> bool:
    return vmi is None or (vmi.get("metadata") or {}).get("deletionTimestamp") is not None


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def is_migrating(vmi: JSON, now: datetime | None = None) -> bool:
    """``migrations.IsMigrating``: a migration started (at or before now) and not ended."""
    state = (vmi.get("status") or {}).get("migrationState")
    if not isinstance(state, dict):
        return False
    now = now or datetime.now(UTC)
    start, end = _parse_time(state.get("startTimestamp")), _parse_time(state.get("endTimestamp"))
    running = start is not None and now >= start
    if end is not None and now >= end:
        running = False
    return running


class Applied:
    """``vm`` with its instancetype and preference applied (``ApplyToVM`` on a copy), made once for the
    handlers of a pass: KubeVirt's handlers each apply them to a copy of the same VM, whose spec none of
    them changes (they set conditions only), so every copy is the same. Failing, each call raises the
    :class:`HandlerError` the handler returns."""

    __slots__ = ("_applied", "_error", "lookup", "vm")

    def __init__(self, vm: JSON, lookup: ObjectLookup) -> None:
        self.vm, self.lookup = vm, lookup
        self._applied: JSON | None = None
        self._error: str | None = None

    def get(self) -> JSON:
        if self._error is not None:
            raise HandlerError(self._error)
        if self._applied is None:
            copy: JSON = clone(self.vm)
            try:
                apply_to_vm(copy, self.lookup)
            except ApplyError as err:
                self._error = err.message
                raise HandlerError(err.message) from None
            self._applied = copy
        return self._applied


def _with_instancetype(vm: JSON, lookup: ObjectLookup, applied: Applied | None) -> JSON:
    return (applied or Applied(vm, lookup)).get()


def _tspec(vm: JSON) -> JSON:
    return ((vm.get("spec") or {}).get("template") or {}).get("spec") or {}


def _resource(spec: JSON, group: str, name: str) -> Quantity:
    value = (((spec.get("domain") or {}).get("resources") or {}).get(group) or {}).get(name)
    return quantity_of(value) if value is not None else Quantity.from_int(0, DECIMAL_SI)


def _text(value: Fraction, fmt: str) -> str:
    """The canonical text of an exact value in ``fmt`` (``Quantity.String()`` after ``Add``)."""
    exponent = 0
    while value.denominator != 1 and exponent > -9:
        value *= 10
        exponent -= 1
    mantissa = int(value)
    if mantissa == 0:
        return "0"
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    return Quantity(mantissa, exponent, fmt).canonical()


def _add(q: Quantity, delta: Fraction, delta_format: str) -> str:
    """``q.Add(delta)`` then ``String()``: the receiver keeps its format unless it is zero."""
    fmt = delta_format if q.is_zero() else q.format
    return _text(q.value + delta, fmt)


def handle_cpu_change(
    vm: JSON,
    vmi: JSON | None,
    lookup: ObjectLookup,
    cpu_allocation_ratio: int,
    applied: Applied | None = None,
) -> Patch:
    """``handleCPUChangeRequest``: more sockets within the VMI's ``maxSockets`` are hot-plugged."""
    if vmi is None or _deleting(vmi):
        return {}
    with_types = _with_instancetype(vm, lookup, applied)
    cpu = (_tspec(with_types).get("domain") or {}).get("cpu")
    vmi_spec = vmi.get("spec") or {}
    vmi_cpu = (vmi_spec.get("domain") or {}).get("cpu")
    if cpu is None or vmi_cpu is None:
        return {}
    sockets, running = int(cpu.get("sockets", 0)), int(vmi_cpu.get("sockets", 0))
    if sockets == running:
        return {}
    if has_condition_status(vmi, VCPU_CHANGE, "True"):
        raise HandlerError("another CPU hotplug is in progress")
    if is_migrating(vmi):
        raise HandlerError("CPU hotplug is not allowed while VMI is migrating")
    if sockets > int(vmi_cpu.get("maxSockets", 0)):
        set_restart_required(vm, CPU_ABOVE_MAX)
        return {}
    if sockets < running:
        set_restart_required(vm, CPU_REDUCED)
        return {}
    if _tspec(vm).get("architecture", "") == "arm64":
        set_restart_required(vm, CPU_ARM)
        return {}
    patch: Patch = {"/spec/domain/cpu/sockets": sockets}
    vcpus_delta = number_of_vcpus(cpu) - number_of_vcpus(vmi_cpu)
    delta = Fraction(vcpus_delta * (1000 // cpu_allocation_ratio), 1000)
    tspec = _tspec(with_types)
    for group in ("requests", "limits"):
        if not _resource(tspec, group, "cpu").is_zero():
            patch[f"/spec/domain/resources/{group}/cpu"] = _add(
                _resource(vmi_spec, group, "cpu"), delta, DECIMAL_SI
            )
    return patch


def handle_affinity_change(
    vm: JSON, vmi: JSON | None, lookup: ObjectLookup, applied: Applied | None = None
) -> Patch:
    """``handleAffinityChangeRequest``: node selector and affinity follow the VM live."""
    if vmi is None or _deleting(vmi):
        return {}
    tspec = _tspec(_with_instancetype(vm, lookup, applied))
    vmi_spec = vmi.get("spec") or {}
    selector_changed = not spec_field_equal(tspec, vmi_spec, "nodeSelector")
    affinity_changed = not spec_field_equal(tspec, vmi_spec, "affinity")
    if is_migrating(vmi) and (selector_changed or affinity_changed):
        raise HandlerError("Node affinity should not be changed during VMI migration")
    patch: Patch = {}
    if affinity_changed:
        affinity = tspec.get("affinity")
        patch["/spec/affinity"] = gojson.encode(affinity, AFFINITY) if affinity is not None else None
    if selector_changed:
        selector = tspec.get("nodeSelector")
        patch["/spec/nodeSelector"] = dict(selector) if selector is not None else None
    return patch


def handle_tolerations_change(
    vm: JSON, vmi: JSON | None, lookup: ObjectLookup, applied: Applied | None = None
) -> Patch:
    """``handleTolerationsChangeRequest``: tolerations follow the VM live."""
    if vmi is None or _deleting(vmi):
        return {}
    tspec = _tspec(_with_instancetype(vm, lookup, applied))
    if spec_field_equal(tspec, vmi.get("spec") or {}, "tolerations"):
        return {}
    if is_migrating(vmi):
        raise HandlerError("tolerations should not be changed during VMI migration")
    tolerations = tspec.get("tolerations")
    value = [gojson.encode(t, TOLERATION) for t in tolerations] if tolerations is not None else None
    return {"/spec/tolerations": value}


def handle_memory_hotplug(
    vm: JSON, vmi: JSON | None, lookup: ObjectLookup, applied: Applied | None = None
) -> Patch:
    """``handleMemoryHotplugRequest``: more guest memory within the VMI's ``maxGuest`` is hot-plugged."""
    if vmi is None or _deleting(vmi):
        return {}
    tspec = _tspec(_with_instancetype(vm, lookup, applied))
    vmi_spec = vmi.get("spec") or {}
    memory = (tspec.get("domain") or {}).get("memory")
    vmi_memory = (vmi_spec.get("domain") or {}).get("memory")
    vmi_status_memory = (vmi.get("status") or {}).get("memory")
    if (
        memory is None
        or memory.get("guest") is None
        or vmi_memory is None
        or vmi_memory.get("guest") is None
        or not isinstance(vmi_status_memory, dict)
        or vmi_status_memory.get("guestCurrent") is None
    ):
        return {}
    if has_condition_status(vmi, MEMORY_CHANGE, "False"):
        set_restart_required(vm, MEMORY_HOTPLUG_FAILED)
        return {}
    guest = quantity_of(memory["guest"])
    if cmp(guest, quantity_of(vmi_memory["guest"])) == 0:
        return {}
    if not is_migratable(vmi):
        set_restart_required(vm, MEMORY_NOT_MIGRATABLE)
        return {}
    max_guest = vmi_memory.get("maxGuest")
    if max_guest is None:
        set_restart_required(vm, MEMORY_NO_MAX_GUEST)
        return {}
    if has_condition_status(vmi, MEMORY_CHANGE, "True"):
        raise HandlerError("another memory hotplug is in progress")
    if is_migrating(vmi):
        raise HandlerError("memory hotplug is not allowed while VMI is migrating")
    problem = live_update_memory_error(tspec, max_guest)
    if problem is not None:
        set_restart_required(vm, f"memory hotplug not supported, {problem}")
        return {}
    at_boot = vmi_status_memory.get("guestAtBoot")
    if at_boot is not None and cmp(guest, quantity_of(at_boot)) < 0:
        set_restart_required(vm, MEMORY_BELOW_BOOT)
        return {}
    if cmp(guest, quantity_of(max_guest)) > 0:
        set_restart_required(vm, MEMORY_ABOVE_MAX)
        return {}
    guest_value = guest.value_ceil()
    delta = Fraction(guest_value - quantity_of(vmi_status_memory["guestCurrent"]).value_ceil())
    patch: Patch = {"/spec/domain/memory/guest": guest.canonical()}
    request = _resource(vmi_spec, "requests", "memory")
    if not request.is_zero():
        new_value = request.value + delta
        new_text = _text(new_value, request.format)
        if new_value < guest.value:
            new_text = guest.canonical()
            delta = Fraction(0)
        patch["/spec/domain/resources/requests/memory"] = new_text
    if not _resource(tspec, "limits", "memory").is_zero():
        patch["/spec/domain/resources/limits/memory"] = _add(
            _resource(vmi_spec, "limits", "memory"), delta, BINARY_SI
        )
    return patch
