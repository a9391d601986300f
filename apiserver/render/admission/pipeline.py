"""``VMsAdmitter.Admit`` for a CREATE (``vms-admitter.go``): the webhook's stages, in order.

Each stage returns on its first non-empty list of causes, as KubeVirt's does:

1. ``schema``: the OpenAPI schema check of the VM as sent (:mod:`.schema`), then ``decode``: Go's
   ``json.Unmarshal`` of it (a failure is a bare 400, :func:`decode_verdict`; the caller decodes);
2. a VM being deleted is admitted;
3. ``instancetype``: find the instancetype and preference (a missing one is ignored, as KubeVirt logs and
   ignores it), the spread-topology check, then apply both to a copy of the template (conflicts refuse);
4. ``defaults``: virt-api's defaults on that copy (``SetDefaultVirtualMachineInstanceSpec``);
5. ``requirements``: the preference's requirements against the defaulted copy;
6. ``featuregates``: discontinued feature gates the VM uses (read from the VM as sent), then
   ``bindings``: discontinued network bindings (on the copy);
7. ``spec``: ``ValidateVirtualMachineSpec`` on the copy (:mod:`.vm_spec`, :mod:`.vmi_spec`);
8. ``storage``: dataVolumeTemplate namespaces;
9. ``volumerequests``: ``status.volumeRequests`` (:mod:`.volumerequests`).

An admitted VM carries the webhook's warnings. The request is taken as made by a user that is not one of
KubeVirt's service accounts (they alone may set the reserved ``kubevirt.io/`` labels).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apiserver.render.admission import dra, featuregates, instancetype, network, schema, volumerequests
from apiserver.render.admission._go import KubeVirtPanic, go_member, obj, text
from apiserver.render.admission.clusterconfig import AdmissionConfig
from apiserver.render.admission.vm_spec import validate_data_volume_template_namespaces, validate_vm_spec
from apiserver.render.admission.vmi_spec import validate_vmi_spec
from apiserver.render.defaults import (
    set_default_network_interface,
    set_default_volume_disks,
    set_vmi_spec_defaults,
)
from apiserver.render.golang.tree import clone
from apiserver.render.instancetype.apply_instancetype import apply_instancetype
from apiserver.render.instancetype.apply_preference import apply_preference
from apiserver.render.instancetype.find import find_instancetype, find_preference
from apiserver.render.kubernetes.errors import CAUSE_INVALID, Cause, ExpandError
from apiserver.render.objects import VIRTUAL_MACHINE_INSTANCE, ObjectLookup, ObjectRef

JSON = dict[str, Any]
CONFLICT_FMT = "VM field(s) {} conflicts with selected instance type"
RUNNING_DEPRECATED = "spec.running is deprecated, please use spec.runStrategy instead."


@dataclass(slots=True)
class Verdict:
    """The webhook's answer: admitted (with warnings), or refused at ``stage`` with every cause it found."""

    allowed: bool
    causes: list[Cause] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    stage: str = ""
    # KubeVirt's code panicked (virt-api drops the call): refused without causes.
    panic: str = ""
    # KubeVirt answered with a bare error (``ToAdmissionResponseError``): 400, this message, no causes.
    error: str = ""


def _refused(stage: str, causes: list[Cause]) -> Verdict:
    return Verdict(False, causes, stage=stage)


def admit(
    raw_vm: Mapping[str, Any],
    vm: JSON,
    lookup: ObjectLookup,
    config: AdmissionConfig,
    *,
    namespace: str = "",
    schema_checked: bool = False,
) -> Verdict:
    """Run the webhook on ``vm`` (decoded as Go decodes it; never modified) sent as ``raw_vm``.

    ``namespace`` is the request's namespace (used where the VM names none); ``schema_checked``: stage 1
    already passed (:func:`schema_verdict`). Lookups may raise
    :class:`~apiserver.render.objects.LookupPending`; rendering errors other than a missing
    instancetype or preference propagate as :class:`ExpandError`.
    """
    try:
        return _admit(raw_vm, vm, lookup, config, namespace, schema_checked)
    except KubeVirtPanic as panic:
        return Verdict(False, stage="panic", panic=str(panic))


def decode_verdict(unmarshal_error: str) -> Verdict:
    """The refusal when ``json.Unmarshal(raw, &vm)`` fails: ``ToAdmissionResponseError(err)``, the error's
    text with no causes (the text as :attr:`~apiserver.render.golang.gojson.GoDecodeError.unmarshal_message`
    words it)."""
    return Verdict(False, stage="decode", error=unmarshal_error)


def schema_verdict(raw_vm: Mapping[str, Any]) -> Verdict | None:
    """Stage 1 alone: the refusal of the OpenAPI schema check, or None when the VM passes it."""
    messages = schema.validate_schema(raw_vm)
    if messages:
        return _refused("schema", [Cause("", m, "") for m in messages])
    return None


def _admit(
    raw_vm: Mapping[str, Any],
    vm: JSON,
    lookup: ObjectLookup,
    config: AdmissionConfig,
    namespace: str,
    schema_checked: bool,
) -> Verdict:
    refused = None if schema_checked else schema_verdict(raw_vm)
    if refused is not None:
        return refused
    if obj(vm, "metadata") is not None and vm["metadata"].get("deletionTimestamp") is not None:
        return Verdict(True)

    vm_copy = clone(vm)
    spec = vm_copy.setdefault("spec", {})
    template = spec.get("template")
    if template is None:  # the schema requires a template; kept for a VM that bypassed it
        return _refused(
            "spec", [Cause("spec.template", "missing virtual machine template.", "FieldValueRequired")]
        )
    tspec: JSON = template.setdefault("spec", {})
    tmeta: JSON = template.setdefault("metadata", {})
    raw_tspec = _raw_template_spec(raw_vm)
    dra.mark_claim_requests(raw_tspec, tspec)

    it_spec = _find(find_instancetype, vm_copy, lookup)
    pref_spec = _find(find_preference, vm_copy, lookup)
    if it_spec is not None or pref_spec is not None:
        causes = instancetype.spread_causes(it_spec, pref_spec)
        if causes:
            return _refused("instancetype", causes)
        if it_spec is not None:
            conflicts = apply_instancetype(it_spec, pref_spec, tspec, tmeta)
            if conflicts:
                return _refused(
                    "instancetype", [Cause(p, CONFLICT_FMT.format(p), CAUSE_INVALID) for p in conflicts]
                )
        if pref_spec is not None:
            apply_preference(pref_spec, tspec, tmeta)

    set_vmi_spec_defaults(config.render, tspec)
    set_default_network_interface(config.render, tspec)  # its error is the rendering error, as today
    set_default_volume_disks(tspec)

    causes = instancetype.requirement_causes(it_spec, pref_spec, tspec)
    if causes:
        return _refused("requirements", causes)

    original_tspec = obj(vm, "spec", "template", "spec") or {}
    # virt-api's configuration always has a developerConfiguration (its defaults give one).
    causes = featuregates.validate_feature_gates(config.feature_gates, original_tspec)
    if causes:
        return _refused("featuregates", causes)
    causes = network.validate_creation("spec", tspec)
    if causes:
        return _refused("bindings", causes)

    causes = validate_vm_spec("spec", spec, config, kubevirt_service_account=False)
    if causes:
        return _refused("spec", causes)

    causes = validate_data_volume_template_namespaces(vm, namespace)
    if causes:
        return _refused("storage", causes)

    if (obj(vm, "status") or {}).get("volumeRequests"):
        vm = clone(vm)
        dra.mark_claim_requests(raw_tspec, obj(vm, "spec", "template", "spec") or {})
    causes = volumerequests.validate_volume_requests(
        vm, _running_vmi(vm, lookup), lambda path, s: validate_vmi_spec(path, s, config)
    )
    if causes:
        return _refused("volumerequests", causes)

    warnings = featuregates.deprecated_api_warnings(config.feature_gates, original_tspec)
    if obj(vm, "spec") is not None and vm["spec"].get("running") is not None:
        warnings.append(RUNNING_DEPRECATED)
    return Verdict(True, warnings=warnings)


def _raw_template_spec(raw_vm: Mapping[str, Any]) -> Any:
    """``spec.template.spec`` of the VM as sent (members found as Go's decoder finds them)."""
    return go_member(go_member(go_member(raw_vm, "spec"), "template"), "spec")


def _find(finder: Any, vm: JSON, lookup: ObjectLookup) -> JSON | None:
    """A finder's spec, or None where KubeVirt's webhook logs the failure and carries on."""
    try:
        found: JSON | None = finder(vm, lookup, head=True)
    except ExpandError:
        return None
    return found


def _running_vmi(vm: Mapping[str, Any], lookup: ObjectLookup) -> Mapping[str, Any] | None:
    """The VM's VMI, read only when the VM has volume requests and says it is ready (as KubeVirt does)."""
    status = obj(vm, "status")
    if not (status or {}).get("volumeRequests") or not (status or {}).get("ready"):
        return None
    name = text(obj(vm, "metadata"), "name")
    return lookup.get(ObjectRef(VIRTUAL_MACHINE_INSTANCE, text(obj(vm, "metadata"), "namespace"), name))
