"""The start revision: the VM spec a running VM was started from.

Mirrors ``getVMRevisionName``, ``patchVMRevision``, ``getLastVMRevisionSpec`` and ``getVMSpecForKey``
(``pkg/virt-controller/watch/vm/vm.go``): when virt-controller starts a VM it stores the VM's spec, with
``revisionName`` set from the status refs of its instancetype and preference, in the ControllerRevision
``revision-start-vm-<uid>-<generation>`` (owned by the VM); the spec read back from it is what later
changes are judged against.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.golang import gojson
from apiserver.render.golang.tree import clone
from apiserver.render.vmcontroller._go import JSON

SPEC = "kubevirt.io/api/core/v1.VirtualMachineSpec"


def revision_name(uid: str, generation: int) -> str:
    """``getVMRevisionName``."""
    return f"revision-start-vm-{uid}-{generation}"


def is_start_revision_of(vm: Mapping[str, Any], found: Mapping[str, Any]) -> bool:
    """Whether ``found`` is a start revision of ``vm`` as ``getLastVMRevisionSpec`` finds them: indexed
    under the VM's uid by the informer's ``vm`` index (the uid of its first ownerReference of kind
    ``VirtualMachine``), named with ``revision-start-vm-<uid>`` and ending in a generation. Anything
    else (a StatefulSet's revision, another VM's) virt-controller never reads as this VM's start spec:
    for it the VM has no start revision."""
    uid = (vm.get("metadata") or {}).get("uid")
    meta = found.get("metadata")
    if not isinstance(uid, str) or not uid or not isinstance(meta, Mapping):
        return False
    owners = meta.get("ownerReferences")
    owner = next(
        (
            ref
            for ref in (owners if isinstance(owners, list) else [])
            if isinstance(ref, Mapping) and ref.get("kind") == "VirtualMachine"
        ),
        None,
    )
    if owner is None or owner.get("uid") != uid:
        return False
    name = meta.get("name")
    prefix = f"revision-start-vm-{uid}"
    if not isinstance(name, str) or prefix not in name:
        return False
    generation = name.rsplit("-", 1)[-1]
    return generation.isascii() and generation.isdigit()


def _ref_name(status: Mapping[str, Any], ref: str) -> str:
    found = status.get(ref) or {}
    return str((found.get("controllerRevisionRef") or {}).get("name") or "")


def revision_data(vm: JSON) -> JSON:
    """``patchVMRevision``: the revision's ``data`` (``{"spec": ...}``, Go-encoded) for a decoded VM."""
    copy = clone(vm)
    spec = copy.setdefault("spec", {})
    status = copy.get("status") or {}
    for matcher, ref in (("instancetype", "instancetypeRef"), ("preference", "preferenceRef")):
        name = _ref_name(status, ref)
        if spec.get(matcher) is not None and name:
            spec[matcher]["revisionName"] = name
    return {"spec": gojson.encode(spec, SPEC)}


def spec_from_data(data: Any) -> JSON:
    """``getVMSpecForKey``: the spec a revision's ``data`` holds, decoded as ``json.Unmarshal`` does."""
    raw = data.get("spec") if isinstance(data, Mapping) else None
    decoded: JSON = gojson.decode(raw if isinstance(raw, Mapping) else {}, SPEC)
    return decoded


def start_spec(vm: JSON) -> JSON:
    """The spec KubeVirt reads back from the start revision of ``vm`` (decoded)."""
    return spec_from_data(revision_data(vm))
