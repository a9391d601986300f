"""What virt-api's VMI mutating webhook does to a VMI on CREATE.

Mirrors ``VMIsMutator.Mutate`` and ``ApplyNewVMIMutations``
(``pkg/virt-api/webhooks/mutating-webhook/mutators/vmi-mutator.go``) over ``defaults.SetDefaultVirtualMachineInstance``
(``pkg/defaults/defaults.go``): ``SetDefaultVirtualMachineInstanceSpec``, ``setDefaultFeatures`` (s390x),
the generated ``SetObjectDefaults_VirtualMachineInstance`` and ``setDefaultHypervFeatureDependencies``
(:mod:`.defaults`), the architecture's defaults (``SetAmd64Defaults``, ``SetArm64Defaults``, ``SetS390xDefaults``: disk buses,
watchdog, arm64's CPU model and EFI), ``setDefaultCPUModel``, ``setGuestMemoryStatus``,
``setCurrentCPUTopologyStatus``, ``setupHotplug`` (``setupCPUHotplug``, ``setupMemoryHotplug``), the PCI
topology annotation, the emulator-thread parity annotation, ``markAsNonroot``, the finalizer and the
Pending phase.

The webhook replaces ``/status`` with Go's encoding of the status, in which ``guestOSInfo`` (a struct, not
a pointer) is always ``{}``.

Not modelled: presets (the expanded VM has its own applied already), the phase transition timestamp.
"""

from __future__ import annotations

from typing import Any

from apiserver.render.admission.memory import live_update_memory_error
from apiserver.render.defaults import set_vmi_spec_defaults
from apiserver.render.golang.tree import child
from apiserver.render.kubernetes.quantity import BINARY_SI, quantity_of
from apiserver.render.kubernetes.quantitymath import new_quantity
from apiserver.render.templateservice.config import ALIGN_CPUS, ROOT, LauncherConfig
from apiserver.render.templateservice.resources import EMULATOR_THREAD_EVEN_PARITY
from apiserver.render.vmimutation.defaults import set_hyperv_feature_dependencies, set_object_defaults

JSON = dict[str, Any]

PCI_TOPOLOGY_ANNOTATION = "kubevirt.io/pci-topology-version"
PCI_TOPOLOGY_V3 = "v3"
VMI_FINALIZER = "kubevirt.io/foregroundDeleteVirtualMachine"  # v1.VirtualMachineInstanceFinalizer
NON_ROOT_UID = 107
DEFAULT_CPU_MODEL = "host-model"
MAX_VCPUS = 512


def _set_disk_buses(spec: JSON, bus: str) -> None:
    for disk in child(child(spec, "domain"), "devices").get("disks") or ():
        for kind in ("disk", "cdrom", "lun"):
            device = disk.get(kind)
            if device is not None and not device.get("bus"):
                device["bus"] = bus


def _watchdog(spec: JSON, model: str) -> None:
    watchdog = child(child(spec, "domain"), "devices").get("watchdog")
    if watchdog is None:
        return
    inner = watchdog.get(model)
    if inner is None:
        inner = watchdog[model] = {}
    if not inner.get("action"):
        inner["action"] = "reset"


def set_arch_defaults(spec: JSON) -> None:
    """``setDefaultCPUArch``'s per-architecture part."""
    arch = spec.get("architecture", "")
    domain = child(spec, "domain")
    if arch == "arm64":
        cpu = child(domain, "cpu")
        if not cpu.get("model"):
            cpu["model"] = "host-passthrough"
        firmware = domain.get("firmware")
        if firmware is None or firmware.get("bootloader") is None:
            child(child(domain, "firmware"), "bootloader")["efi"] = {}
        efi = domain["firmware"]["bootloader"].get("efi")
        if efi is not None and efi.get("secureBoot") is None:
            efi["secureBoot"] = False
        _set_disk_buses(spec, "virtio")
    elif arch == "s390x":
        _set_disk_buses(spec, "virtio")
        _watchdog(spec, "diag288")
    else:
        _set_disk_buses(spec, "sata")
        _watchdog(spec, "i6300esb")


def _s390x_features(spec: JSON) -> None:
    if spec.get("architecture") != "s390x":
        return
    domain = child(spec, "domain")
    features = domain.get("features")
    if features is None:
        domain["features"] = {"acpi": {"enabled": False}}
    elif (features.get("acpi") or {}).get("enabled") is None:
        child(features, "acpi")["enabled"] = False


def setup_cpu_hotplug(config: LauncherConfig, spec: JSON) -> None:
    cpu = child(child(spec, "domain"), "cpu")
    sockets, cores, threads = (
        int(cpu.get("sockets") or 0),
        int(cpu.get("cores") or 0),
        int(cpu.get("threads") or 0),
    )
    max_sockets = int(cpu.get("maxSockets") or 0)
    if max_sockets == 0:
        max_sockets = config.max_cpu_sockets
        if sockets > max_sockets and max_sockets != 0:
            max_sockets = sockets
    if max_sockets == 0:
        max_sockets = (sockets * config.max_hotplug_ratio) & 0xFFFFFFFF
        total = (max_sockets * cores * threads) & 0xFFFFFFFF
        if total > MAX_VCPUS:
            adjusted = MAX_VCPUS // ((cores * threads) & 0xFFFFFFFF) if cores * threads else 0
            max_sockets = max(adjusted, sockets)
    if max_sockets:
        cpu["maxSockets"] = max_sockets


def setup_memory_hotplug(config: LauncherConfig, spec: JSON) -> None:
    memory = child(child(spec, "domain"), "memory")
    if memory.get("maxGuest") is not None:
        return
    max_guest: Any = None
    if config.max_guest is not None:
        max_guest = config.max_guest.canonical()
    elif memory.get("guest") is not None:
        guest = quantity_of(memory["guest"]).value_ceil()
        max_guest = new_quantity(guest * config.max_hotplug_ratio, BINARY_SI).canonical()
    if live_update_memory_error(spec, max_guest) is not None:
        return
    memory["maxGuest"] = max_guest


def mutate_vmi(config: LauncherConfig, vmi: JSON) -> JSON:
    """The VMI as the webhook's JSON patch leaves it (changed in place and returned)."""
    spec = vmi["spec"]
    meta = vmi.setdefault("metadata", {})
    set_vmi_spec_defaults(config.admission.render, spec)
    _s390x_features(spec)
    set_object_defaults(vmi)
    set_hyperv_feature_dependencies(spec)
    set_arch_defaults(spec)
    cpu = child(child(spec, "domain"), "cpu")
    if not cpu.get("model"):
        cpu["model"] = config.cpu_model or DEFAULT_CPU_MODEL
    status = vmi.setdefault("status", {})
    status.setdefault("guestOSInfo", {})
    memory = (spec.get("domain") or {}).get("memory") or {}
    if memory.get("guest") is not None:
        status["memory"] = {
            "guestAtBoot": memory["guest"],
            "guestCurrent": memory["guest"],
            "guestRequested": memory["guest"],
        }
    status["currentCPUTopology"] = {key: cpu[key] for key in ("sockets", "cores", "threads") if cpu.get(key)}
    if spec.get("architecture") != "arm64" and config.admission.live_update_rollout():
        setup_cpu_hotplug(config, spec)
        setup_memory_hotplug(config, spec)
    if spec.get("architecture", "") in ("amd64", "arm64", ""):
        machine = ((spec.get("domain") or {}).get("machine") or {}).get("type", "")
        if "q35" in machine or machine.startswith("virt"):
            meta.setdefault("annotations", {}).setdefault(PCI_TOPOLOGY_ANNOTATION, PCI_TOPOLOGY_V3)
    if (
        cpu.get("isolateEmulatorThread")
        and EMULATOR_THREAD_EVEN_PARITY in config.kubevirt_annotations
        and config.enabled(ALIGN_CPUS)
    ):
        meta.setdefault("annotations", {})[EMULATOR_THREAD_EVEN_PARITY] = ""
    if not config.enabled(ROOT):
        status["runtimeUser"] = NON_ROOT_UID
    meta["finalizers"] = [*(meta.get("finalizers") or []), VMI_FINALIZER]
    status["phase"] = "Pending"
    return vmi
