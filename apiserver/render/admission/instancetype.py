"""The instancetype/preference checks of KubeVirt's VM webhook (stages 3 and 5 of ``VMsAdmitter.Admit``).

Expand itself checks neither preference requirements nor spread divisibility, so a VM can expand and
still be refused at creation. Mirrors ``pkg/instancetype/preference/validation``
(``CheckSpreadCPUTopology``) and ``pkg/instancetype/preference/requirements`` (``Check``); the stage that
calls them is :func:`apiserver.render.admission.pipeline.admit` (``ApplyToVM``).
"""

from __future__ import annotations

from typing import Any

from apiserver.render.admission._go import KubeVirtPanic, obj, quantity
from apiserver.render.instancetype.topology import (
    ACROSS_CORES_THREADS,
    ACROSS_SOCKETS_CORES,
    ACROSS_SOCKETS_CORES_THREADS,
    SPREAD,
    THREADS_PER_CORE,
    preferred_topology,
    spread_options,
)
from apiserver.render.kubernetes.errors import CAUSE_INVALID, CAUSE_NOT_FOUND, Cause
from apiserver.render.kubernetes.quantity import QuantityText, cmp_and_promote, parse_quantity

JSON = dict[str, Any]

_GUEST_PATH = "instancetype.spec.cpu.guest"
_RATIO_TEXT = "Spec.PreferSpreadSocketToCoreRatio or Spec.CPU.PreferSpreadOptions.Ratio"
_CPU = "spec.template.spec.domain.cpu"
_ZERO_MI = parse_quantity("0Mi")


def spread_causes(instancetype: JSON | None, preference: JSON | None) -> list[Cause]:
    """``CheckSpreadCPUTopology``: the instancetype's vCPUs must divide over the preferred spread.

    Go computes with ``uint32`` and ``%``, in the order written: a ratio of 0 divides by zero (KubeVirt
    panics) only where a ``%`` by it runs, so across ``SocketsCoresThreads`` an odd vCPU count fails on
    the threads first and is refused with the ratio of 0 in the message.
    """
    if instancetype is None or preference is None or preferred_topology(preference) not in SPREAD:
        return []
    guest = int((instancetype.get("cpu") or {}).get("guest") or 0)
    ratio, across = spread_options(preference)
    message = None
    if across == ACROSS_SOCKETS_CORES and _go_rem(guest, ratio):
        message = (
            f"{guest} vCPUs provided by the instance type are not divisible by the {_RATIO_TEXT} of {ratio} "
            "provided by the preference"
        )
    elif across == ACROSS_CORES_THREADS and _go_rem(guest, ratio):
        message = f"{guest} vCPUs provided by the instance type are not divisible by the number of threads per core {ratio}"
    elif across == ACROSS_SOCKETS_CORES_THREADS and (
        guest % THREADS_PER_CORE or _go_rem(guest // THREADS_PER_CORE, ratio)
    ):
        message = (
            f"{guest} vCPUs provided by the instance type are not divisible by the number of threads per core "
            f"{THREADS_PER_CORE} and {_RATIO_TEXT} of {ratio}"
        )
    return [Cause(_GUEST_PATH, message, CAUSE_INVALID)] if message else []


def _go_rem(count: int, ratio: int) -> int:
    """Go's ``count % ratio`` on ``uint32``: a ratio of 0 is KubeVirt's panic."""
    if ratio == 0:
        raise KubeVirtPanic("a spread ratio of 0: integer divide by zero")
    return count % ratio


def requirement_causes(instancetype: JSON | None, preference: JSON | None, tspec: JSON) -> list[Cause]:
    """The preference's requirements against the applied and defaulted template: first failure wins."""
    if preference is None or preference.get("requirements") is None:
        return []
    requirements = preference["requirements"]
    failure = None
    if requirements.get("cpu") is not None:
        failure = _check_cpu(instancetype, preference, tspec)
    if failure is None and requirements.get("memory") is not None:
        failure = _check_memory(instancetype, preference, tspec)
    if failure is None and requirements.get("architecture") is not None:
        required = requirements["architecture"]
        actual = tspec.get("architecture", "")
        if actual != required:
            failure = (
                ["spec.template.spec.architecture"],
                f"preference requires architecture {required} but {actual} is being requested",
            )
    if failure is None:
        return []
    paths, error = failure
    return [Cause(", ".join(paths), f"failure checking preference requirements: {error}", CAUSE_NOT_FOUND)]


def _check_cpu(instancetype: JSON | None, preference: JSON, tspec: JSON) -> tuple[list[str], str] | None:
    required = int(preference["requirements"]["cpu"].get("guest") or 0)
    if instancetype is not None:
        guest = int((instancetype.get("cpu") or {}).get("guest") or 0)
        if guest < required:
            return ["spec.instancetype"], (
                f"insufficient CPU resources of {guest} vCPU provided by instance type, "
                f"preference requires {required} vCPU"
            )
        return None
    cpu = (tspec.get("domain") or {}).get("cpu")
    if cpu is None:
        return [_CPU], f"no CPU resources provided by VirtualMachine, preference requires {required} vCPU"
    sockets, cores, threads = (int(cpu.get(k) or 0) for k in ("sockets", "cores", "threads"))

    def short(count: int, members: list[str], provided_as: str) -> tuple[list[str], str] | None:
        if count >= required:
            return None
        return [f"{_CPU}.{m}" for m in members], (
            f"insufficient CPU resources of {count} vCPU provided by VirtualMachine, "
            f"preference requires {required} vCPU provided as {provided_as}"
        )

    topology = preferred_topology(preference)
    if topology in ("threads", "preferThreads"):
        return short(threads, ["threads"], "threads")
    if topology in ("cores", "preferCores"):
        return short(cores, ["cores"], "cores")
    if topology in ("sockets", "preferSockets"):
        return short(sockets, ["sockets"], "sockets")
    if topology in SPREAD:
        _, across = spread_options(preference)
        if across == ACROSS_SOCKETS_CORES:
            return short(sockets * cores, ["sockets", "cores"], across)
        if across == ACROSS_CORES_THREADS:
            return short(cores * threads, ["cores", "threads"], across)
        if across == ACROSS_SOCKETS_CORES_THREADS:
            return short(sockets * cores * threads, ["sockets", "cores", "threads"], across)
        # KubeVirt leaves the count at 0 for an unknown across value and compares that.
        return short(0, [], across)
    if topology in ("any", "preferAny"):
        return short(cores * sockets * threads, ["cores", "sockets", "threads"], "cores, sockets and threads")
    return None


def _check_memory(instancetype: JSON | None, preference: JSON, tspec: JSON) -> tuple[list[str], str] | None:
    """``checkMemory``. Its ``providedMemory.Cmp(requirement)`` runs on a pointer to the template's guest
    (or the instancetype's), so a requirement held as an ``inf.Dec`` promotes that guest for good
    (:func:`~apiserver.render.kubernetes.quantity.cmp_and_promote`), and the webhook's later rules read the
    promoted guest: it is stored back into ``tspec``, the webhook's copy of the VM."""
    required = quantity(preference["requirements"]["memory"].get("guest"))
    path, source, provided = "spec.template.spec.domain.memory", "VirtualMachine", _ZERO_MI
    if instancetype is not None:
        path, source = "spec.instancetype", "instance type"
        provided = quantity((instancetype.get("memory") or {}).get("guest"))
    memory = obj(tspec, "domain", "memory")
    vm_guest = memory.get("guest") if memory is not None else None
    if vm_guest is not None:
        provided = quantity(vm_guest)
    order, promoted = cmp_and_promote(provided, required)
    if memory is not None and vm_guest is not None and promoted is not provided:
        memory["guest"] = QuantityText(promoted)
    if order < 0:
        return [path], (
            f"insufficient Memory resources of {provided.canonical()} provided by {source}, "
            f"preference requires {required.canonical()}"
        )
    return None
