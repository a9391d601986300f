"""The expand pipeline: find, default, apply the instancetype and preference, default again, strip.

Mirrors KubeVirt's ``pkg/instancetype/expand`` step for step. The VM is decoded into Go's semantics
first (unknown members dropped, canonical quantities, absent vs empty kept apart) and encoded the way
Go's ``encoding/json`` writes it at the end, so the result equals KubeVirt's byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apiserver.render import admission
from apiserver.render.defaults import (
    set_default_network_interface,
    set_default_volume_disks,
    set_vmi_spec_defaults,
)
from apiserver.render.golang import gojson
from apiserver.render.instancetype.apply_instancetype import apply_instancetype
from apiserver.render.instancetype.apply_preference import apply_preference
from apiserver.render.instancetype.find import find_instancetype, find_preference
from apiserver.render.instancetype.infer import infer_matchers
from apiserver.render.kubernetes.errors import (
    CAUSE_INVALID,
    CAUSE_REQUIRED,
    CAUSE_TYPE_INVALID,
    Cause,
    ExpandError,
)
from apiserver.render.kubernetes.fieldvalidation import IGNORE, admit
from apiserver.render.objects import ObjectLookup
from apiserver.render.virtconfig import ClusterConfig, cluster_config

JSON = dict[str, Any]
_NONE: Mapping[int, bytes] = {}
CONFLICT_FMT = "VM field(s) {} conflicts with selected instance type"


@dataclass(slots=True)
class ExpandResult:
    """The expanded VM (Go-encoded member order) and what the caller should surface beside it."""

    vm: dict[str, Any]
    # Human-readable warnings (preset conflicts, deprecations), sent as HTTP ``Warning`` headers.
    warnings: list[str] = field(default_factory=list)
    # The presets step's report (apiserver.render.presets.PresetReport) when presets were applied.
    presets: Any = None
    # The preference spec applied, if any: the VM controller applies it again to the VMI it starts.
    preference: dict[str, Any] | None = None


def decode_vm(vm: Mapping[str, Any], *, exact_names: bool = False, webhook: str | None = None) -> JSON:
    """Decode a VirtualMachine as Go's json.Unmarshal would; a wrong type is a 422 naming the field.

    ``webhook`` (the VM's name as sent) decodes for ``validate``: KubeVirt's webhook decodes the VM
    before anything else looks at it, and its failure is the webhook's bare 400 with Go's error text
    (:func:`apiserver.render.admission.refuse_undecodable`)."""
    if type(vm) is not dict and not isinstance(vm, Mapping):  # the ABC check costs ~0.1 us
        raise ExpandError.bad_request("the VirtualMachine must be a JSON object")
    try:
        decoded: JSON = gojson.decode(vm, "VirtualMachine", exact_names=exact_names)
    except gojson.GoDecodeError as err:
        if webhook is not None:
            raise admission.refuse_undecodable(err.unmarshal_message, webhook) from None
        message = f"Can not unmarshal Request body to struct, error: {err}"
        raise ExpandError.invalid(message, Cause(err.path, str(err), CAUSE_TYPE_INVALID)) from None
    return decoded


def _conflict_error(paths: list[str], name: str) -> ExpandError:
    causes = [Cause(p, CONFLICT_FMT.format(p), CAUSE_INVALID) for p in paths]
    return ExpandError.invalid(CONFLICT_FMT.format(", ".join(paths)), *causes, name=name)


def expand(
    vm: Mapping[str, Any],
    lookup: ObjectLookup,
    *,
    kubevirt: Mapping[str, Any] | None = None,
    presets: bool = False,
    validate: bool = False,
    exact_names: bool = False,
    field_validation: str = IGNORE,
    duplicates: Sequence[str] = (),
    fingerprints: Mapping[int, bytes] = _NONE,
) -> ExpandResult:
    """Expand ``vm`` as KubeVirt does.

    ``kubevirt`` is a KubeVirt CR or its ``spec.configuration``. ``exact_names`` decodes member names
    case-sensitively, as client-go does for objects read from the API server; request bodies and files
    are decoded like ``encoding/json`` (a case-insensitive match when no exact one exists).
    ``field_validation`` (``Strict``, ``Warn`` or ``Ignore``) and ``duplicates`` (paths of fields the
    input gave twice) are judged first, see :mod:`apiserver.render.kubernetes.fieldvalidation`; warnings come
    back in the result. ``fingerprints`` maps ``id()`` of inputs known to be JSON (the VM, objects,
    the CR) to their JSON text, under which results computed from them are reused
    (:mod:`apiserver.render.memo`).
    Raises :class:`~apiserver.render.kubernetes.errors.ExpandError` with the Status to send, or
    :class:`~apiserver.render.objects.LookupPending` when ``lookup`` must fetch an object first.
    """
    webhook: str | None = None  # under validate: the VM's name as sent, for the webhook's refusals
    if validate and isinstance(vm, Mapping):
        # The webhook's first stage reads the VM as sent, before anything decodes it.
        raw_meta = vm.get("metadata")
        raw_name = raw_meta.get("name") if isinstance(raw_meta, Mapping) else None
        webhook = raw_name if isinstance(raw_name, str) else ""
        admission.check_schema(vm, webhook)
    warnings = admit(vm, field_validation, duplicates, fingerprint=fingerprints.get(id(vm)))
    decoded = decode_vm(vm, exact_names=exact_names, webhook=webhook)
    meta = decoded.get("metadata") or {}
    name = meta.get("name", "")
    namespace = meta.get("namespace", "")
    spec = decoded.get("spec") or {}

    matched = spec.get("instancetype") is not None or spec.get("preference") is not None
    config: ClusterConfig | None = None
    preference: JSON | None = None
    kv_print = fingerprints.get(id(kubevirt)) if kubevirt else None
    try:
        if matched or validate:
            # One validated configuration for rendering and the webhook (GetConfig serves both).
            config = cluster_config(kubevirt, fingerprint=kv_print)
        if matched:
            # KubeVirt's mutating webhook resolves inferFromVolume before a VM is stored; a VM sent to
            # expand-vm-spec has not been through it, so we resolve it here (KubeVirt's expand fails).
            infer_matchers(decoded, lookup)
        if validate:
            # The webhook runs on the VM as sent; where it refuses, its verdict is the answer. Where it
            # admits a VM that cannot be rendered (a missing instancetype), the rendering error is.
            verdict = admission.admit(
                vm,
                decoded,
                lookup,
                admission.admission_config(kubevirt, fingerprint=kv_print),
                namespace=namespace or "default",
                schema_checked=True,
            )
            if not verdict.allowed:
                raise admission.AdmissionDenied(verdict, name)
            warnings.extend(verdict.warnings)
        if matched and config is not None:
            preference = _expand_in_place(
                decoded, lookup, config, name=name, fingerprints=fingerprints, warnings=warnings
            )
    except ExpandError as err:
        _name_the_vm(err, name)
        raise

    if config is not None and config.invalid:
        warnings.append(
            f"the KubeVirt configuration is invalid ({config.invalid}): KubeVirt ignores it and "
            "expands with its default configuration, as here"
        )

    out: JSON = gojson.encode(decoded, "VirtualMachine")
    result = ExpandResult(out, warnings, preference=preference)
    if presets:
        from apiserver.render.presets import apply_presets

        report = apply_presets(out, lookup.presets(namespace))
        result.presets = report
        result.warnings.extend(report.warning_texts())
    return result


def _name_the_vm(err: ExpandError, name: str) -> None:
    """Kubernetes names the object an Invalid Status is about in ``details.name``."""
    details = err.status.get("details")
    if name and isinstance(details, dict) and "name" not in details:
        err.status["details"] = {"name": name, **details}


def _expand_in_place(
    vm: JSON,
    lookup: ObjectLookup,
    config: ClusterConfig,
    *,
    name: str,
    fingerprints: Mapping[int, bytes],
    warnings: list[str],
) -> JSON | None:
    """Expand ``vm`` in place; the preference spec applied, if any."""
    spec: JSON = vm["spec"]
    # A deprecated object (common-instancetypes' label) is named in a warning; KubeVirt does not warn.
    instancetype = find_instancetype(vm, lookup, fingerprints, deprecations=warnings)
    preference = find_preference(vm, lookup, fingerprints, deprecations=warnings)

    template = spec.get("template")
    if template is None:
        # KubeVirt dereferences the nil template and panics; we name the missing field instead.
        message = "spec.template is required to expand a VirtualMachine"
        raise ExpandError.invalid(message, Cause("spec.template", message, CAUSE_REQUIRED), name=name)
    tspec: JSON | None = template.get("spec")
    if tspec is None:
        tspec = template["spec"] = {}
    tmeta: JSON | None = template.get("metadata")
    if tmeta is None:
        tmeta = template["metadata"] = {}

    set_default_volume_disks(tspec)
    set_default_network_interface(config, tspec)
    if instancetype is not None:
        conflicts = apply_instancetype(instancetype, preference, tspec, tmeta)
        if conflicts:
            raise _conflict_error(conflicts, name)
    if preference is not None:
        apply_preference(preference, tspec, tmeta)
    set_vmi_spec_defaults(config, tspec)

    spec.pop("instancetype", None)
    spec.pop("preference", None)
    status = vm.get("status")
    if status is not None:
        status.pop("instancetypeRef", None)
        status.pop("preferenceRef", None)
    return preference
