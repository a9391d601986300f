"""The VMI a VM is assumed to run as, where no running VMI can be read (a preview of files, offline).

Follows the parts of KubeVirt that set what the live-update rules read, on the rendered VM's template
(instancetype, preference and ``SetDefaultVirtualMachineInstanceSpec`` already applied by the renderer):
``SetupVMIFromVM``'s ``setupStableFirmwareUUID`` (``pkg/virt-controller/watch/vm/vm.go``), and
``SetDefaultVirtualMachineInstance``'s ``setGuestMemoryStatus``, ``setupCPUHotplug`` and
``setupMemoryHotplug`` with ``SetDefaultVirtualMachineInstanceSpec`` (``pkg/defaults/defaults.go``, run by virt-api's VMI mutating webhook). The rest of
the VMI (the launcher's, virt-handler's) is not modelled; the VMI is taken to be Running, Ready and
LiveMigratable, as a healthy VM on shared storage is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.admission.memory import live_update_memory_error
from apiserver.render.defaults import set_vmi_spec_defaults
from apiserver.render.golang.tree import clone
from apiserver.render.kubernetes.quantity import BINARY_SI, new_quantity, quantity_of, quantity_text
from apiserver.render.virtconfig import cluster_config, decode_configuration
from apiserver.render.vmcontroller._go import JSON
from apiserver.render.vmcontroller.firmware import legacy_uuid

_MAX_VCPUS = 512  # setupCPUHotplug's upper bound
_DEFAULT_HOTPLUG_RATIO = 4


def _live_update_configuration(kubevirt: Mapping[str, Any] | None) -> JSON:
    if not kubevirt:
        return {}
    try:
        conf = decode_configuration(kubevirt)
    except Exception:  # an invalid configuration: KubeVirt keeps its defaults
        return {}
    found: JSON = conf.get("liveUpdateConfiguration") or {}
    return found


def assumed_vmi(
    rendered_vm: Mapping[str, Any], kubevirt: Mapping[str, Any] | None, *, live_update: bool
) -> JSON:
    """A running VMI for ``rendered_vm`` (an expanded VM, as :func:`apiserver.render.expand.expand`
    returns it); ``live_update``: the rollout strategy is LiveUpdate (else no hotplug limits are set)."""
    meta = rendered_vm.get("metadata") or {}
    spec = clone(((rendered_vm.get("spec") or {}).get("template") or {}).get("spec") or {})
    # The renderer defaults only a VM with an instancetype or preference; the VMI webhook defaults every
    # VMI (idempotent on one already defaulted).
    set_vmi_spec_defaults(cluster_config(kubevirt), spec)
    domain = spec.setdefault("domain", {})
    firmware = domain.setdefault("firmware", {})
    if not firmware.get("uuid"):
        firmware["uuid"] = legacy_uuid(str(meta.get("name", "")))
    status: JSON = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}, {"type": "LiveMigratable", "status": "True"}],
    }
    memory = domain.get("memory")
    if isinstance(memory, dict) and memory.get("guest") is not None:
        guest = memory["guest"]
        status["memory"] = {"guestAtBoot": guest, "guestCurrent": guest, "guestRequested": guest}
    if live_update and spec.get("architecture") != "arm64":
        conf = _live_update_configuration(kubevirt)
        ratio = int(conf.get("maxHotplugRatio") or _DEFAULT_HOTPLUG_RATIO)
        cpu = domain.setdefault("cpu", {})
        if not cpu.get("maxSockets"):
            sockets = int(cpu.get("sockets", 0))
            maximum = int(conf.get("maxCpuSockets") or 0)
            if sockets > maximum and maximum != 0:
                maximum = sockets
            if maximum == 0:
                cores, threads = int(cpu.get("cores", 0)), int(cpu.get("threads", 0))
                maximum = sockets * ratio
                if cores * threads and maximum * cores * threads > _MAX_VCPUS:
                    maximum = max(_MAX_VCPUS // (cores * threads), sockets)
            if maximum:
                cpu["maxSockets"] = maximum
        memory = domain.setdefault("memory", {})
        if memory.get("maxGuest") is None:
            max_guest: Any = None
            if conf.get("maxGuest") is not None:
                max_guest = quantity_text(conf["maxGuest"])
            elif memory.get("guest") is not None:
                max_guest = new_quantity(quantity_of(memory["guest"]).value_ceil() * ratio, BINARY_SI)
            if live_update_memory_error(spec, max_guest) is None:
                memory["maxGuest"] = max_guest
        if not memory:
            domain.pop("memory")
    name = str(meta.get("name", ""))
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": name, "namespace": str(meta.get("namespace", ""))},
        "spec": spec,
        "status": status,
    }
