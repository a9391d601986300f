"""The start revision: the VM spec a running VM was started from.

Mirrors ``getVMRevisionName``, ``patchVMRevision`` and ``getVMSpecForKey``
(``pkg/virt-controller/watch/vm/vm.go``): when virt-controller starts a VM it stores the VM's spec, with
``revisionName`` set from the status refs of its instancetype and preference, in the ControllerRevision
``revision-start-vm-<uid>-<generation>``; the spec read back from it is what later changes are judged
against.
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
