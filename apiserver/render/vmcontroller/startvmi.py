"""The VirtualMachineInstance the VM controller creates when a VM starts.

Mirrors ``(*Controller).startVMI`` (``pkg/virt-controller/watch/vm/vm.go``) on a VM the renderer has
expanded (its instancetype and preference already applied, as ``ApplyToVMI`` would): ``SetupVMIFromVM``
(the template's metadata and spec, the name and namespace, the controller owner reference,
``setupStableFirmwareUUID`` with ``CalculateLegacyUUID``, ``util.SetDefaultVolumeDisk``), the start-paused
request, ``setGenerationAnnotationOnVmi``, the receiver annotation of ``RunStrategyWaitAsReceiver``, the
controller's finalizer, ``AutoAttachInputDevice`` and ``vmispec.SetDefaultNetworkInterface``;
``status.virtualMachineRevisionName`` (``getVMRevisionName`` of the VM's uid and generation: the
ControllerRevision ``createVMRevision`` stores), and, given the VM as written (the
expanded one no longer names them), the instancetype and preference annotations ``ApplyToVMI`` adds;
given the preference, ``ApplyToVMI``'s preferred input bus and type on the input ``AutoAttachInputDevice``
adds (what else it applies, the expansion applied already).

Not modelled: the memory-dump volume removal, changed block tracking.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from typing import Any

from apiserver.render.defaults import set_default_network_interface, set_default_volume_disks
from apiserver.render.golang.tree import child
from apiserver.render.instancetype.annotations import set_annotations
from apiserver.render.instancetype.apply_preference import apply_input_preferences
from apiserver.render.virtconfig import ClusterConfig
from apiserver.render.vmcontroller.revision import revision_name

JSON = dict[str, Any]

FIRMWARE_UUID_NAMESPACE = uuid.UUID("6a1a24a1-4061-4607-8bf4-a3963d0c5895")
CONTROLLER_FINALIZER = "kubevirt.io/virtualMachineControllerFinalize"
GENERATION_ANNOTATION = "kubevirt.io/vm-generation"
CREATE_MIGRATION_TARGET = "kubevirt.io/create-migration-target"


def legacy_uuid(name: str) -> str:
    """``CalculateLegacyUUID``: a name-based (SHA-1) UUID of the VM's name."""
    return str(uuid.uuid5(FIRMWARE_UUID_NAMESPACE, name))


def _start_paused(vm: JSON) -> bool:
    requests = (vm.get("status") or {}).get("stateChangeRequests") or []
    if not requests:
        return False
    first = requests[0]
    return first.get("action") == "Start" and (first.get("data") or {}).get("paused") == "true"


def setup_vmi_from_vm(vm: JSON) -> JSON:
    """``SetupVMIFromVM``."""
    meta = vm.get("metadata") or {}
    template = (vm.get("spec") or {}).get("template") or {}
    vmi_meta: JSON = copy.deepcopy(template.get("metadata") or {})
    vmi_meta.pop("generateName", None)
    vmi_meta["name"] = meta.get("name", "")
    vmi_meta["namespace"] = meta.get("namespace", "")
    spec: JSON = copy.deepcopy(template.get("spec") or {})
    if _start_paused(vm):
        spec["startStrategy"] = "Paused"
    firmware = child(child(spec, "domain"), "firmware")
    if not firmware.get("uuid"):
        firmware["uuid"] = legacy_uuid(vmi_meta["name"])
    labels = (template.get("metadata") or {}).get("labels")
    if labels is None:
        vmi_meta.pop("labels", None)
    else:
        vmi_meta["labels"] = copy.deepcopy(labels)
    vmi_meta["ownerReferences"] = [
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "name": meta.get("name", ""),
            "uid": meta.get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    set_default_volume_disks(spec)
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": vmi_meta,
        "spec": spec,
    }


def auto_attach_input_device(vmi: JSON) -> None:
    """``AutoAttachInputDevice``: a ``default-0`` input when asked for and none is given."""
    devices = child(child(vmi["spec"], "domain"), "devices")
    if devices.get("autoattachInputDevice") is not True or devices.get("inputs"):
        return
    devices["inputs"] = [*(devices.get("inputs") or []), {"name": "default-0"}]


def start_vmi(
    vm: JSON,
    config: ClusterConfig,
    *,
    written: Mapping[str, Any] | None = None,
    preference: JSON | None = None,
) -> JSON:
    """The VMI ``startVMI`` creates for the (expanded) VM ``vm``; ``written``: the VM before expansion,
    for the annotations naming its instancetype and preference; ``preference``: the preference spec the
    expansion applied."""
    vmi = setup_vmi_from_vm(vm)
    meta = vmi["metadata"]
    vm_meta = vm.get("metadata") or {}
    generation = vm_meta.get("generation")
    generation = generation if isinstance(generation, int) and not isinstance(generation, bool) else 0
    # named before the VM is stored too (no uid yet), as KubeVirt's code would name it
    vmi["status"] = {"virtualMachineRevisionName": revision_name(str(vm_meta.get("uid") or ""), generation)}
    annotations = meta.setdefault("annotations", {})
    annotations[GENERATION_ANNOTATION] = str((vm.get("metadata") or {}).get("generation", 0))
    if (vm.get("spec") or {}).get("runStrategy") == "WaitAsReceiver":
        annotations[CREATE_MIGRATION_TARGET] = "true"
    meta["finalizers"] = [*(meta.get("finalizers") or []), CONTROLLER_FINALIZER]
    if written is not None:
        set_annotations(written, annotations)
    auto_attach_input_device(vmi)
    set_default_network_interface(config, vmi["spec"])
    if preference is not None:
        apply_input_preferences(preference, child(child(vmi["spec"], "domain"), "devices"))
    return vmi
