"""Resolve ``inferFromVolume`` matchers as KubeVirt's VM mutating webhook does (pkg/instancetype/infer).

KubeVirt's expand does not do this (a VM whose matcher only says ``inferFromVolume`` fails there with
"resource name may not be empty"); the webhook does it when the VM is created. We do it before finding,
so that a VM can be expanded before it exists. The volume named by the matcher leads to the labels
``instancetype.kubevirt.io/default-instancetype(-kind)`` / ``default-preference(-kind)``:

    volume -> PersistentVolumeClaim
    volume -> DataVolume (labels first) -> source.pvc | source.snapshot | sourceRef DataSource
    volume -> dataVolumeTemplate in the VM -> source.pvc | source.snapshot | sourceRef DataSource
    DataSource (labels first) -> source.pvc | source.snapshot
    a DataVolume that is gone (garbage-collected) -> the PVC of the same name

Errors carry KubeVirt's texts. With ``inferFromVolumeFailurePolicy: Ignore`` the "ignorable" ones (a
volume type or source that cannot carry labels, a missing label) drop the matcher instead; a lookup that
fails (an object not found) is never ignored. An instance type inferred under Ignore also clears
``domain.memory``, as the webhook does.

Inference only runs where KubeVirt's expand could not succeed on its own: a matcher with an empty
``name`` and no ``revisionName``. A matcher that also has a name is left alone, so that such VMs
render exactly as KubeVirt renders them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apiserver.render.kubernetes import names
from apiserver.render.kubernetes.errors import (
    CAUSE_INVALID,
    CAUSE_NOT_FOUND,
    CAUSE_NOT_SUPPORTED,
    Cause,
    ExpandError,
)
from apiserver.render.objects import (
    DATA_SOURCE,
    DATA_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    VOLUME_SNAPSHOT,
    ObjectLookup,
    ObjectRef,
)

IGNORE = "IgnoreInferFromVolumeFailure"
REJECT = "RejectInferFromVolumeFailure"

DEFAULT_INSTANCETYPE_LABEL = "instancetype.kubevirt.io/default-instancetype"
DEFAULT_INSTANCETYPE_KIND_LABEL = "instancetype.kubevirt.io/default-instancetype-kind"
DEFAULT_PREFERENCE_LABEL = "instancetype.kubevirt.io/default-preference"
DEFAULT_PREFERENCE_KIND_LABEL = "instancetype.kubevirt.io/default-preference-kind"

_UNSUPPORTED_VOLUME = "unable to infer defaults from volume {} as type is not supported"
_MISSING_LABEL = "unable to find required {} label on the volume"
_UNSUPPORTED_DV_SOURCE = "unable to infer defaults from DataVolumeSpec as DataVolumeSource is not supported"
_UNSUPPORTED_SOURCE_REF = "unable to infer defaults from DataVolumeSourceRef as Kind {} is not supported"
_MISSING_DS_SOURCE = (
    "unable to infer defaults from DataSource that doesn't provide "  # split as in volume.go
    "DataVolumeSourcePVC or DataVolumeSourceSnapshot"
)
_NO_VOLUME = "unable to find volume {} to infer defaults"


class _InferenceFailed(Exception):
    def __init__(self, message: str, *, ignorable: bool = False, not_found: bool = False) -> None:
        super().__init__(message)
        self.ignorable = ignorable
        self.not_found = not_found


@dataclass(frozen=True, slots=True)
class _Labels:
    name: str
    kind: str


_INSTANCETYPE = _Labels(DEFAULT_INSTANCETYPE_LABEL, DEFAULT_INSTANCETYPE_KIND_LABEL)
_PREFERENCE = _Labels(DEFAULT_PREFERENCE_LABEL, DEFAULT_PREFERENCE_KIND_LABEL)


def infer_matchers(vm: dict[str, Any], lookup: ObjectLookup) -> None:
    """Replace inferable matchers of ``vm`` (decoded, modified in place) with ``{name, kind}``.

    Raises ExpandError (422, cause on the matcher's ``inferFromVolume``) when inference fails and may not
    be ignored, and LookupPending when ``lookup`` must fetch a volume object first (running this again
    afterwards is safe: a resolved matcher has a name and is not looked at again).
    """
    spec = vm.get("spec")
    if not isinstance(spec, dict):
        return
    instancetype, preference = spec.get("instancetype"), spec.get("preference")
    if not (_inferable(instancetype) or _inferable(preference)):
        return  # nearly every VM: nothing to build or validate
    todo = [field for field in ("instancetype", "preference") if _inferable(spec.get(field))]
    causes = [c for field in todo for c in _validate(field, spec[field])]
    if causes:
        raise ExpandError.invalid(", ".join(c.message for c in causes), *causes, name=_vm_name(vm))
    for field in todo:
        _infer(vm, spec, field, lookup)


def _inferable(matcher: Any) -> bool:
    return (
        isinstance(matcher, dict)
        and bool(matcher.get("inferFromVolume"))
        and not matcher.get("name")
        and not matcher.get("revisionName")
    )


def _validate(field: str, matcher: Mapping[str, Any]) -> list[Cause]:
    """The webhook's matcher checks that apply to an inferable matcher (a name was ruled out already)."""
    causes = []
    if matcher.get("kind"):
        causes.append(
            Cause(
                f"spec.{field}.kind",
                "Kind already set, should be cleared before setting inferFromVolume",
                CAUSE_NOT_SUPPORTED,
            )
        )
    policy = matcher.get("inferFromVolumeFailurePolicy")
    if policy is not None and policy not in (IGNORE, REJECT):
        causes.append(
            Cause(
                f"spec.{field}.inferFromVolumeFailurePolicy",
                f"Invalid value '{policy}' for InferFromVolumeFailurePolicy",
                CAUSE_INVALID,
            )
        )
    return causes


def _infer(vm: dict[str, Any], spec: dict[str, Any], field: str, lookup: ObjectLookup) -> None:
    matcher = spec[field]
    ignore = matcher.get("inferFromVolumeFailurePolicy") == IGNORE
    labels = _INSTANCETYPE if field == "instancetype" else _PREFERENCE
    try:
        name, kind = _Resolver(vm, labels, lookup, field).from_volumes(str(matcher["inferFromVolume"]))
    except _InferenceFailed as err:
        if err.ignorable and ignore:
            del spec[field]
            return
        reason = CAUSE_NOT_FOUND if err.not_found else CAUSE_INVALID
        cause = Cause(f"spec.{field}.inferFromVolume", str(err), reason)
        raise ExpandError.invalid(str(err), cause, name=_vm_name(vm)) from None
    if ignore and field == "instancetype":
        domain = ((spec.get("template") or {}).get("spec") or {}).get("domain")
        if isinstance(domain, dict):
            domain.pop("memory", None)
    resolved: dict[str, Any] = {"name": name} if name else {}
    if kind:
        resolved["kind"] = kind
    spec[field] = resolved


def _vm_name(vm: Mapping[str, Any]) -> str:
    meta = vm.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class _Named:
    """Where a name (and its namespace) to look up came from: a field of the VM, or ``origin``, a
    fetched object (DataVolume, DataSource) whose content is not repeated in errors."""

    name: str
    namespace: str
    name_field: str
    namespace_field: str = "metadata.namespace"
    origin: str = ""


class _Resolver:
    """One inference: the lookups of volume.go, in its order, with its errors."""

    def __init__(self, vm: Mapping[str, Any], labels: _Labels, lookup: ObjectLookup, matcher: str) -> None:
        self.vm = vm
        self.namespace = str(_dict(vm.get("metadata")).get("namespace") or "")
        self.labels = labels
        self.lookup = lookup
        self.matcher_field = f"spec.{matcher}.inferFromVolume"

    def from_volumes(self, volume_name: str) -> tuple[str, str]:
        template_spec = _dict(_dict(_dict(self.vm.get("spec")).get("template")).get("spec"))
        for index, volume in enumerate(template_spec.get("volumes") or ()):
            if not isinstance(volume, dict) or volume.get("name") != volume_name:
                continue
            field = f"spec.template.spec.volumes[{index}]"
            pvc = volume.get("persistentVolumeClaim")
            if isinstance(pvc, dict):
                name = str(pvc.get("claimName") or "")
                return self.from_pvc(_Named(name, self.namespace, f"{field}.persistentVolumeClaim.claimName"))
            dv = volume.get("dataVolume")
            if isinstance(dv, dict):
                return self.from_data_volume(str(dv.get("name") or ""), f"{field}.dataVolume.name")
            raise _InferenceFailed(_UNSUPPORTED_VOLUME.format(volume_name), ignorable=True)
        raise _InferenceFailed(_NO_VOLUME.format(volume_name), not_found=True)

    def _ref(self, kind: str, named: _Named) -> ObjectRef:
        """The ref to look up, once its name and namespace are valid (else the 422 naming the field, or
        for a name read from an object, the matcher, without repeating the object's content)."""
        if named.origin:
            namespace_ok = not named.namespace or names.valid_namespace(named.namespace)
            if not (names.valid_name(named.name) and namespace_ok):
                message = (
                    f"{named.origin} names a {kind} by an invalid name or namespace in {named.name_field}"
                )
                raise ExpandError.invalid(message, Cause(self.matcher_field, message, CAUSE_INVALID))
        else:
            names.check_name(named.name, named.name_field)
            names.check_namespace(named.namespace, named.namespace_field)
        return ObjectRef(kind, named.namespace, named.name)

    def _get(self, kind: str, named: _Named) -> Mapping[str, Any]:
        ref = self._ref(kind, named)
        obj = self.lookup.get(ref)
        if obj is None:
            raise _InferenceFailed(ref.not_found_message(), not_found=True)
        return obj

    def from_labels(self, obj: Mapping[str, Any]) -> tuple[str, str]:
        labels = _dict(_dict(obj.get("metadata")).get("labels"))
        if self.labels.name not in labels:
            raise _InferenceFailed(_MISSING_LABEL.format(self.labels.name), ignorable=True)
        return str(labels[self.labels.name] or ""), str(labels.get(self.labels.kind) or "")

    def from_pvc(self, named: _Named) -> tuple[str, str]:
        return self.from_labels(self._get(PERSISTENT_VOLUME_CLAIM, named))

    def from_snapshot(self, named: _Named) -> tuple[str, str]:
        return self.from_labels(self._get(VOLUME_SNAPSHOT, named))

    def from_data_volume(self, dv_name: str, field: str) -> tuple[str, str]:
        for index, template in enumerate(_dict(self.vm.get("spec")).get("dataVolumeTemplates") or ()):
            if isinstance(template, dict) and _dict(template.get("metadata")).get("name") == dv_name:
                return self.from_data_volume_spec(
                    _dict(template.get("spec")), f"spec.dataVolumeTemplates[{index}].spec"
                )
        named = _Named(dv_name, self.namespace, field)
        dv = self.lookup.get(self._ref(DATA_VOLUME, named))
        if dv is None:  # garbage-collected DataVolume: its PVC has the same name
            return self.from_pvc(named)
        try:
            return self.from_labels(dv)
        except _InferenceFailed:
            origin = f"DataVolume {self.namespace}/{dv_name}"
            return self.from_data_volume_spec(_dict(dv.get("spec")), "spec", origin)

    def from_data_volume_spec(self, spec: Mapping[str, Any], field: str, origin: str = "") -> tuple[str, str]:
        source = spec.get("source")
        if isinstance(source, dict):
            pvc = source.get("pvc")
            if isinstance(pvc, dict):
                return self.from_pvc(_source_named(pvc, f"{field}.source.pvc", origin))
            snapshot = source.get("snapshot")
            if isinstance(snapshot, dict):
                return self.from_snapshot(_source_named(snapshot, f"{field}.source.snapshot", origin))
        source_ref = spec.get("sourceRef")
        if isinstance(source_ref, dict):
            return self.from_source_ref(source_ref, f"{field}.sourceRef", origin)
        raise _InferenceFailed(_UNSUPPORTED_DV_SOURCE, ignorable=True)

    def from_source_ref(self, source_ref: Mapping[str, Any], field: str, origin: str) -> tuple[str, str]:
        kind = source_ref.get("kind")
        if kind != "DataSource":
            raise _InferenceFailed(_UNSUPPORTED_SOURCE_REF.format(kind or ""), ignorable=True)
        # An absent namespace means the VM's; a present one is used even when empty, as in Go.
        namespace = source_ref["namespace"] if source_ref.get("namespace") is not None else self.namespace
        named = _Named(
            str(source_ref.get("name") or ""),
            str(namespace),
            f"{field}.name",
            f"{field}.namespace",
            origin,
        )
        return self.from_data_source(named)

    def from_data_source(self, named: _Named) -> tuple[str, str]:
        ds = self._get(DATA_SOURCE, named)
        try:
            return self.from_labels(ds)
        except _InferenceFailed:
            pass
        origin = f"DataSource {named.namespace}/{named.name}"
        source = _dict(_dict(ds.get("spec")).get("source"))
        pvc = source.get("pvc")
        if isinstance(pvc, dict):
            return self.from_pvc(_source_named(pvc, "spec.source.pvc", origin))
        snapshot = source.get("snapshot")
        if isinstance(snapshot, dict):
            return self.from_snapshot(_source_named(snapshot, "spec.source.snapshot", origin))
        raise _InferenceFailed(_MISSING_DS_SOURCE, ignorable=True)


def _source_named(source: Mapping[str, Any], field: str, origin: str) -> _Named:
    """The ``{name, namespace}`` of a PVC or snapshot source (an empty namespace stays empty, as in Go)."""
    return _Named(
        str(source.get("name") or ""),
        str(source.get("namespace") or ""),
        f"{field}.name",
        f"{field}.namespace",
        origin,
    )
