"""One pass of the VM controller's ``sync`` over a running VM: the part that decides live or restart.

Mirrors ``(*Controller).sync`` of ``pkg/virt-controller/watch/vm/vm.go`` in its order, restricted to what
can set or clear ``RestartRequired`` or patch the running VMI in the same pass: ``getLastVMRevisionSpec``
(the start spec, read only while a VMI runs), the run strategy check, the instancetype controller's
``Sync`` (``checkResourcesExist``), ``syncRestartRequired``, the network and firmware synchronizers,
``handleVolumeRequests``, ``handleDeclarativeVolumeHotplug``, then, under the ``LiveUpdate`` rollout strategy and only when no
RestartRequired condition is present, the CPU, affinity, tolerations and memory handlers and the volume
update handler (:mod:`.volumemigration`: ``updateVolumesStrategy: Migration``, or a ``WaitAsReceiver`` VM's
volume info).

Not modelled (the rest of ``sync`` cannot change the verdict of this pass): finalizers, the run strategy's
start and stop, DataVolumes, memory dumps, label and annotation sync, the status write (whose
``status.volumeUpdateState`` the VM the pass returns carries); the ``Expand``/``ExpandAll`` instancetype
reference policies (the VM is judged as under ``Reference``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from apiserver.render.admission import admission_config
from apiserver.render.golang import gojson
from apiserver.render.golang.tree import clone
from apiserver.render.kubernetes.errors import CAUSE_INVALID, Cause, ExpandError
from apiserver.render.kubernetes.quantity import QuantityError, quantity_text
from apiserver.render.objects import ObjectLookup
from apiserver.render.virtconfig import decode_configuration
from apiserver.render.vmcontroller import firmware, hotplug, network, volumehotplug, volumemigration
from apiserver.render.vmcontroller._go import (
    JSON,
    RESTART_REQUIRED,
    VMI_SPEC,
    devices,
    get_condition,
    restart_required,
    template_spec,
)
from apiserver.render.vmcontroller.instancetype import ApplyError, check_resources_exist, has_matchers
from apiserver.render.vmcontroller.restartrequired import sync_restart_required

META = "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta"
FAILED_CREATE = "FailedCreate"
_STATUS_LISTS = ("conditions", "interfaces", "volumeStatus", "migratedVolumes")
VOLUMES_UPDATE_ERROR = "VolumesUpdateError"
_VOLUMES_ERROR = "error encountered while handling volumes update requests: %s"
_RECEIVER_ERROR = "error encountered while handling wait as receiver volume migration requests: %s"
_HANDLERS = (
    ("handleCPUChangeRequest", "Error encountered while handling CPU change request: %s", "HotPlugCPUError"),
    (
        "handleAffinityChangeRequest",
        "Error encountered while handling node affinity change request: %s",
        "AffinityChangeError",
    ),
    (
        "handleTolerationsChangeRequest",
        "Error encountered while handling tolerations change request: %s",
        "TolerationsChangeError",
    ),
    (
        "handleMemoryHotplugRequest",
        "error encountered while handling memory hotplug requests: %s",
        "HotPlugMemoryError",
    ),
)


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """What the VM controller asks ``virtconfig.ClusterConfig`` for here."""

    live_update: bool = True  # IsVMRolloutStrategyLiveUpdate
    cpu_allocation_ratio: int = 10  # GetCPUAllocationRatio
    rollout_strategy: str = "LiveUpdate"
    declarative_hotplug: bool = True  # !HotplugVolumesEnabled && DeclarativeHotplugVolumesEnabled


def controller_config(kubevirt: Mapping[str, Any] | None) -> ControllerConfig:
    """The configuration from a KubeVirt CR or a bare KubeVirtConfiguration (invalid ones: the defaults,
    as KubeVirt keeps its defaults for a configuration that fails validation)."""
    admission = admission_config(kubevirt)
    if not kubevirt or admission.render.invalid:
        return ControllerConfig()
    conf = decode_configuration(kubevirt)
    ratio = (conf.get("developerConfiguration") or {}).get("cpuAllocationRatio") or 10
    return ControllerConfig(
        live_update=admission.live_update_rollout(),
        cpu_allocation_ratio=int(ratio),
        rollout_strategy=admission.vm_rollout_strategy or "LiveUpdate",
        declarative_hotplug=not admission.enabled("HotplugVolumes")
        and admission.enabled("DeclarativeHotplugVolumes"),
    )


def _json_kind(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "an object"


def decode_vmi(vmi: Mapping[str, Any]) -> JSON:
    """A VirtualMachineInstance as the controller reads it: metadata and spec decoded as Go does, the
    status members it reads kept as they are."""
    out: JSON = {}
    meta = vmi.get("metadata")
    out["metadata"] = gojson.decode(meta if isinstance(meta, Mapping) else {}, META)
    spec = vmi.get("spec")
    out["spec"] = gojson.decode(spec if isinstance(spec, Mapping) else {}, VMI_SPEC)
    status = vmi.get("status")
    out["status"] = dict(status) if isinstance(status, Mapping) else {}
    for key in _STATUS_LISTS:
        found = out["status"].get(key)
        if found is not None and not isinstance(found, list):
            # Go's decoder refuses such a VMI: it could never have been stored or read
            field, message = f"status.{key}", f"must be a list, not {_json_kind(found)}"
            raise ExpandError.invalid(f"{field}: {message}", Cause(field, message, CAUSE_INVALID))
    memory = out["status"].get("memory")
    if isinstance(memory, Mapping):
        memory = out["status"]["memory"] = dict(memory)
        for key in ("guestAtBoot", "guestCurrent", "guestRequested"):
            if memory.get(key) is not None:
                try:
                    memory[key] = quantity_text(memory[key])
                except QuantityError as err:
                    field = f"status.memory.{key}"
                    raise ExpandError.invalid(
                        f"{field}: {err}", Cause(field, str(err), CAUSE_INVALID)
                    ) from None
    elif memory is not None:
        out["status"].pop("memory")
    return out


@dataclass(slots=True)
class SyncResult:
    """What one pass decided. ``restart_required``/``message``: the RestartRequired condition on the VM
    the pass returns; ``live_updates``: the VMI patches written (JSON-patch path -> value, None for a
    removal); ``vm_patches``: the VM patches written (the firmware UUID); ``vm``: the VM the pass returns
    (what the controller writes back: its spec, and its status with the conditions set); ``passes``,
    ``settled``: how many passes :func:`.reconcile.settle` ran, and whether the last one changed nothing."""

    outcome: str = "evaluated"
    restart_required: bool = False
    message: str = ""
    template_restart_required: bool = False
    had_start_revision: bool = False
    live_handlers_ran: bool = False
    sync_error_reason: str = ""
    sync_error: str = ""
    live_updates: dict[str, Any] = field(default_factory=dict)
    vm_patches: dict[str, Any] = field(default_factory=dict)
    volume_requests: list[str] = field(default_factory=list)
    not_modelled: list[str] = field(default_factory=list)
    vm: JSON | None = None
    passes: int = 1
    settled: bool = False


def _finish(result: SyncResult, vm: JSON) -> SyncResult:
    result.restart_required, result.message = restart_required(vm)
    result.vm = vm
    return result


def _fail(result: SyncResult, vm: JSON, reason: str, message: str) -> SyncResult:
    result.sync_error_reason = reason
    result.sync_error = message
    return _finish(result, vm)


def handle_volume_requests(vm: JSON, vmi: JSON | None) -> list[str]:
    """``handleVolumeRequests``: ``status.volumeRequests`` applied to the template
    (``ApplyVolumeRequestOnVMISpec``); the add/remove requests sent to the running VMI, by name."""
    requests = (vm.get("status") or {}).get("volumeRequests") or ()
    sent: list[str] = []
    vmi_volumes = {str(v.get("name", "")) for v in ((vmi or {}).get("spec") or {}).get("volumes") or ()}
    tspec = template_spec(vm)
    for request in requests:
        if not isinstance(request, dict):
            continue
        add, remove = request.get("addVolumeOptions"), request.get("removeVolumeOptions")
        if isinstance(add, dict):
            name = str(add.get("name", ""))
            volumes = tspec.setdefault("volumes", [])
            if all(v.get("name") != name for v in volumes):
                volume: JSON = {"name": name}
                source = add.get("volumeSource") or {}
                for kind in ("persistentVolumeClaim", "dataVolume"):
                    if isinstance(source.get(kind), dict):
                        volume[kind] = {**clone(source[kind]), "hotpluggable": True}
                        break
                volumes.append(volume)
                if isinstance(add.get("disk"), dict):
                    devices(tspec).setdefault("disks", []).append({**clone(add["disk"]), "name": name})
        elif isinstance(remove, dict):
            name = str(remove.get("name", ""))
            tspec["volumes"] = [v for v in tspec.get("volumes") or () if v.get("name") != name]
            disks = [d for d in devices(tspec).get("disks") or () if d.get("name") != name]
            devices(tspec)["disks"] = disks
        if vmi is None or (vmi.get("metadata") or {}).get("deletionTimestamp") is not None:
            continue
        if isinstance(add, dict) and str(add.get("name", "")) not in vmi_volumes:
            sent.append(f"addvolume {add.get('name', '')}")
        elif isinstance(remove, dict) and str(remove.get("name", "")) in vmi_volumes:
            sent.append(f"removevolume {remove.get('name', '')}")
    return sent


def sync_pass(
    vm: JSON,
    vmi: JSON | None,
    start_spec: JSON | None,
    lookup: ObjectLookup,
    config: ControllerConfig,
) -> SyncResult:
    """One reconcile of ``vm`` (decoded; changed in place as sync changes it) with its running ``vmi``
    (:func:`decode_vmi`, or None when stopped) and the spec of its start revision (or None)."""
    result = SyncResult()
    if vmi is None:
        start_spec = None  # sync reads the start revision only while a VMI exists
    result.had_start_revision = start_spec is not None
    spec = vm.setdefault("spec", {})
    if (vm.get("metadata") or {}).get("deletionTimestamp") is not None:
        result.outcome = "vmDeleting"
        return _finish(result, vm)
    if spec.get("running") is not None and spec.get("runStrategy") is not None:
        result.outcome = "runStrategyError"
        return _fail(
            result,
            vm,
            FAILED_CREATE,
            "Error fetching RunStrategy: running and runstrategy are mutually exclusive",
        )
    if has_matchers(vm):
        try:
            check_resources_exist(vm, lookup)
        except ApplyError as err:
            result.outcome = "instancetypeSyncError"
            return _fail(result, vm, err.reason, err.message)

    needs_restart = sync_restart_required(start_spec, vm, vmi, lookup, live_update=config.live_update)
    result.template_restart_required = needs_restart
    vm_copy = clone(vm)

    result.live_updates.update(network.sync_interfaces(vm_copy, vmi))
    stored_spec = clone(vm.get("spec") or {})
    patch = firmware.sync_firmware(vm_copy)
    if patch is not None:
        # The patched VM comes back from the API server: its spec is the stored one plus the firmware.
        result.vm_patches.update(patch)
        stored_spec.setdefault("template", {}).setdefault("spec", {}).setdefault("domain", {})["firmware"] = (
            clone(next(iter(patch.values())))
        )
        vm_copy["spec"] = stored_spec
    result.volume_requests = handle_volume_requests(vm_copy, vmi)
    if config.declarative_hotplug:
        result.live_updates.update(volumehotplug.patch_hotplug_volumes(vm_copy, vmi))

    if config.live_update and not needs_restart and get_condition(vm, RESTART_REQUIRED) is None:
        result.live_handlers_ran = True
        applied = hotplug.Applied(vm_copy, lookup)
        handlers: tuple[Callable[[], dict[str, Any]], ...] = (
            lambda: hotplug.handle_cpu_change(vm_copy, vmi, lookup, config.cpu_allocation_ratio, applied),
            lambda: hotplug.handle_affinity_change(vm_copy, vmi, lookup, applied),
            lambda: hotplug.handle_tolerations_change(vm_copy, vmi, lookup, applied),
            lambda: hotplug.handle_memory_hotplug(vm_copy, vmi, lookup, applied),
        )
        for (_, fmt, reason), handler in zip(_HANDLERS, handlers, strict=True):
            try:
                result.live_updates.update(handler())
            except hotplug.HandlerError as err:
                return _fail(result, vm, reason, fmt % err.message)
        receiver = spec.get("runStrategy") == "WaitAsReceiver"
        try:
            if receiver:
                result.live_updates.update(
                    volumemigration.handle_wait_as_receiver_volume_info(vm_copy, vmi, lookup)
                )
            else:
                result.live_updates.update(volumemigration.handle_volume_update_request(vm_copy, vmi, lookup))
        except hotplug.HandlerError as err:
            fmt = _RECEIVER_ERROR if receiver else _VOLUMES_ERROR
            return _fail(result, vm, VOLUMES_UPDATE_ERROR, fmt % err.message)
    return _finish(result, vm_copy)
