"""The instancetype controller as the VM controller calls it.

Mirrors ``pkg/instancetype/apply/vm.go`` (``vmApplier.ApplyToVM``: find the instancetype and preference,
apply them to the VM's template, no defaults) and ``pkg/instancetype/controller/vm/controller.go``
(``controller.Sync``'s ``checkResourcesExist``). ``Sync``'s ``Store`` under the default ``Reference``
policy records ControllerRevisions of the live objects and points the VM's status at them; the finder
(:mod:`apiserver.render.instancetype.find`) already reads what KubeVirt then reads: ``revisionName``, else
a status ref naming the matcher's object, else the live object.
"""

from __future__ import annotations

from apiserver.render.golang.tree import clone
from apiserver.render.instancetype.apply_instancetype import BASE, apply_instancetype
from apiserver.render.instancetype.apply_preference import apply_preference
from apiserver.render.instancetype.find import find_instancetype, find_preference
from apiserver.render.kubernetes.errors import ExpandError
from apiserver.render.objects import ObjectLookup
from apiserver.render.vmcontroller._go import JSON, template_spec

FAILED_FIND_INSTANCETYPE = "FailedFindInstancetype"
FAILED_FIND_PREFERENCE = "FailedFindPreference"


class ApplyError(Exception):
    """``ApplyToVM`` failed; ``message`` is Go's error text."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason


def has_matchers(vm: JSON) -> bool:
    spec = vm.get("spec") or {}
    return spec.get("instancetype") is not None or spec.get("preference") is not None


def check_resources_exist(vm: JSON, lookup: ObjectLookup) -> None:
    """``checkResourcesExist``: raises :class:`ApplyError` with the SyncError reason KubeVirt records."""
    try:
        find_instancetype(vm, lookup)
    except ExpandError as err:
        raise ApplyError(err.message, FAILED_FIND_INSTANCETYPE) from None
    try:
        find_preference(vm, lookup)
    except ExpandError as err:
        raise ApplyError(err.message, FAILED_FIND_PREFERENCE) from None


def apply_to_vm(vm: JSON, lookup: ObjectLookup) -> None:
    """``ApplyToVM`` on ``vm`` in place (its template spec is replaced by a private copy)."""
    if not has_matchers(vm):
        return
    try:
        instancetype = find_instancetype(vm, lookup)
        preference = find_preference(vm, lookup)
    except ExpandError as err:
        raise ApplyError(err.message) from None
    if instancetype is None and preference is None:
        return
    tspec = template_spec(vm)
    template = vm["spec"]["template"]
    tmeta = template.get("metadata")
    if tmeta is None:
        tmeta = template["metadata"] = {}
    if instancetype is not None:
        conflicts = apply_instancetype(instancetype, preference, tspec, tmeta)
        if conflicts:
            paths = ", ".join("spec" + p[len(BASE) :] if p.startswith(BASE) else p for p in conflicts)
            raise ApplyError(f"VM conflicts with instancetype spec in fields: [{paths}]")
    if preference is not None:
        apply_preference(preference, tspec, tmeta)
    # The appliers place values from the (cached, shared) specs without copying.
    template["spec"] = clone(tspec)
    template["metadata"] = clone(tmeta)
