"""Finding the instancetype and preference a VM references (KubeVirt's spec finders).

Order, as in ``pkg/instancetype/find`` and ``pkg/instancetype/preference/find``:
``spec.<matcher>.revisionName`` (no fallback), then the status ref's ControllerRevision (used only when
its ``instancetype.kubevirt.io/object-name`` label equals the matcher name; a missing one is an error),
then the live object by kind. At the KubeVirt we match, virt-controller writes only the status ref
(``spec.revisionName`` is left unset unless a user sets it); :func:`named_revision` and
:func:`holds_object` are that choice, shared by every reader of a stored VM's captured revisions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from apiserver.render.golang.gotext import go_lower
from apiserver.render.instancetype import revision
from apiserver.render.instancetype.deprecation import deprecation_warning, is_deprecated, revision_deprecated
from apiserver.render.kubernetes import names
from apiserver.render.kubernetes.errors import (
    CAUSE_INVALID,
    CAUSE_NOT_FOUND,
    CAUSE_NOT_SUPPORTED,
    CAUSE_REQUIRED,
    Cause,
    ExpandError,
)
from apiserver.render.memo import Memo
from apiserver.render.objects import (
    CLUSTER_INSTANCETYPE,
    CLUSTER_PREFERENCE,
    CONTROLLER_REVISION,
    INSTANCETYPE,
    PREFERENCE,
    ObjectLookup,
    ObjectRef,
)

OBJECT_NAME_LABEL = "instancetype.kubevirt.io/object-name"
OBJECT_KIND_LABEL = "instancetype.kubevirt.io/object-kind"

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Family:
    matcher: str  # spec member: instancetype | preference
    status_ref: str  # status member: instancetypeRef | preferenceRef
    go_matcher: str  # Go type name in the unknown-kind message
    kinds: Mapping[str, str]  # lower-cased kind -> canonical kind
    from_revision: Callable[[Mapping[str, Any]], Any]
    from_object: Callable[[Mapping[str, Any]], Any]
    # from_object's spec as the dict the appliers read, made without the models for a current object.
    object_dict: Callable[[Mapping[str, Any]], JSON]
    # Field paths named in errors, spelled once.
    name_field: str = field(init=False)
    kind_field: str = field(init=False)
    revision_field: str = field(init=False)
    status_field: str = field(init=False)

    def __post_init__(self) -> None:
        base = f"spec.{self.matcher}"
        object.__setattr__(self, "name_field", f"{base}.name")
        object.__setattr__(self, "kind_field", f"{base}.kind")
        object.__setattr__(self, "revision_field", f"{base}.revisionName")
        object.__setattr__(self, "status_field", f"status.{self.status_ref}.controllerRevisionRef.name")


def _kind_table(namespaced: str, cluster: str, aliases: tuple[str, ...] = ()) -> dict[str, str]:
    table = {"": cluster}
    for kind, canonical_kind in ((namespaced, namespaced), (cluster, cluster)):
        table[kind] = canonical_kind  # the usual spelling, found without lower-casing
        table[kind.lower()] = canonical_kind
        table[kind.lower() + "s"] = canonical_kind
    for alias in aliases:
        target = cluster if "cluster" in alias else namespaced
        table[alias] = target
        table[alias + "s"] = target
    return table


INSTANCETYPE_FAMILY = _Family(
    matcher="instancetype",
    status_ref="instancetypeRef",
    go_matcher="InstancetypeMatcher",
    # The pre-rename flavor kinds are accepted as aliases (a deliberate extension).
    kinds=_kind_table(
        INSTANCETYPE, CLUSTER_INSTANCETYPE, ("virtualmachineflavor", "virtualmachineclusterflavor")
    ),
    from_revision=revision.instancetype_spec_from_revision,
    from_object=revision.instancetype_spec_from_object,
    object_dict=revision.instancetype_spec_dict_from_object,
)
PREFERENCE_FAMILY = _Family(
    matcher="preference",
    status_ref="preferenceRef",
    go_matcher="PreferenceMatcher",
    kinds=_kind_table(PREFERENCE, CLUSTER_PREFERENCE),
    from_revision=revision.preference_spec_from_revision,
    from_object=revision.preference_spec_from_object,
    object_dict=revision.preference_spec_dict_from_object,
)


# Decoded specs, so each instancetype, preference and revision is decoded once per version (see
# apiserver.render.memo): the very same object with the same uid and resourceVersion (sources never
# modify an object, they replace it when it changes, so an edited manifest that kept an old
# resourceVersion is decoded afresh), or an object with the same JSON text (the Python API's dicts).
# Without it and _REFS a warm GET on the folder source costs 1.11x the server CPU, PUT 1.10x
# (hack/benchmarks/switches.py, spec-memo; the cluster source's GETs come from the rendered store).
_SPECS: Memo[JSON] = Memo(8192)
_NO_FINGERPRINTS: Mapping[int, bytes] = {}


def clear_spec_cache() -> None:
    _SPECS.clear()


def _cached_spec(
    family: _Family,
    obj: Mapping[str, Any],
    how: str,
    decode: Callable[[Mapping[str, Any]], JSON],
    fingerprints: Mapping[int, bytes],
) -> JSON:
    return _SPECS.get(
        obj,
        lambda: decode(obj),
        what=(family.matcher, how),
        fingerprint=fingerprints.get(id(obj)),
    )


_NO_META: Mapping[str, Any] = {}

# The refs find asks for, reused: building a frozen dataclass costs more than the lookup itself.
_REFS: dict[tuple[str, str, str], ObjectRef] = {}
_REFS_SIZE = 8192


def _ref(kind: str, namespace: str, name: str, field: str) -> ObjectRef:
    """The ref, once its name and namespace are known to be valid (a 422 naming ``field`` or the VM's
    ``metadata.namespace`` if not): only valid refs are kept, so a known one costs no validation."""
    key = (kind, namespace, name)
    ref = _REFS.get(key)
    if ref is None:
        names.check_namespace(namespace, "metadata.namespace")
        names.check_name(name, field)
        if len(_REFS) >= _REFS_SIZE:
            _REFS.clear()
        ref = _REFS[key] = ObjectRef(kind, namespace, name)
    return ref


def _spec_dict(model: Any) -> JSON:
    """The spec as JSON-named dicts (absent = None dropped); the appliers read it and never change it."""
    dumped: JSON = model.model_dump(by_alias=True, exclude_none=True)
    return dumped


def named_revision(family: _Family, vm: Mapping[str, Any]) -> tuple[str, str]:
    """The ControllerRevision ``revisionFinder.Find`` reads for the VM's matcher, and the field naming it:
    ``spec.<matcher>.revisionName`` when set (read whatever it holds: "avoid a race with Store()"), else
    ``status.<ref>.controllerRevisionRef.name``, the one virt-controller writes (``syncStatusWithMatcher``),
    read only when it :func:`holds_object` the matcher names. ("", "") when the VM names neither; a named
    revision that does not exist is an error there, never a fallback to the live object."""
    # ``type(x) is dict`` first: this runs for every matcher of every rendering (the decoded VMs are
    # dicts), and an isinstance against the Mapping ABC costs more than the rest.
    spec = vm.get("spec")
    matcher = spec.get(family.matcher) if type(spec) is dict or isinstance(spec, Mapping) else None
    if not (type(matcher) is dict or isinstance(matcher, Mapping)):
        return "", ""
    pinned = matcher.get("revisionName")
    if pinned and type(pinned) is str:
        return pinned, family.revision_field
    status = vm.get("status")
    if not status:
        return "", ""
    ref = status.get(family.status_ref) if type(status) is dict or isinstance(status, Mapping) else None
    held = ref.get("controllerRevisionRef") if type(ref) is dict or isinstance(ref, Mapping) else None
    name = held.get("name") if type(held) is dict or isinstance(held, Mapping) else None
    if name and type(name) is str:
        return name, family.status_field
    return "", ""


def holds_object(rev: Mapping[str, Any], name: str) -> bool:
    """Whether a status ref's revision is of the object the matcher names (``revisionFinder.Find``: its
    ``instancetype.kubevirt.io/object-name`` label equals ``spec.<matcher>.name``); when not, the VM was
    switched to another object and the finder reads the live one."""
    meta = rev.get("metadata")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    return isinstance(labels, Mapping) and labels.get(OBJECT_NAME_LABEL) == name


def find_spec(
    family: _Family,
    vm: JSON,
    lookup: ObjectLookup,
    fingerprints: Mapping[int, bytes] = _NO_FINGERPRINTS,
    *,
    head: bool = False,
    deprecations: list[str] | None = None,
) -> JSON | None:
    """The v1beta1 spec (JSON names) the VM's matcher selects, or None when the VM has no such matcher.

    ``head``: decode ControllerRevisions as KubeVirt at the matched commit does (whole v1beta1 objects
    only), not as v1.6 did; the VM webhook's view (:mod:`apiserver.render.admission`).
    ``deprecations``: where to add a warning when the object read is deprecated
    (:mod:`apiserver.render.instancetype.deprecation`).
    """
    spec = vm.get("spec") or _NO_META
    matcher = spec.get(family.matcher)
    if matcher is None:
        return None
    # Inline type checks: this runs twice per request, and a call per string costs more than the rest.
    namespace = (vm.get("metadata") or _NO_META).get("namespace")
    if type(namespace) is not str:
        namespace = ""

    revision_name, field = named_revision(family, vm)
    if field == family.revision_field:
        rev = _get(lookup, _ref(CONTROLLER_REVISION, namespace, revision_name, field), field)
        found = _decode_revision(family, rev, field, fingerprints, head)
        if deprecations is not None and revision_deprecated(rev):
            deprecations.append(_revision_warning(family, rev, namespace))
        return found

    name = matcher.get("name")
    if type(name) is not str:
        name = ""
    if revision_name:
        rev = _get(lookup, _ref(CONTROLLER_REVISION, namespace, revision_name, field), field)
        if holds_object(rev, name):
            found = _decode_revision(family, rev, field, fingerprints, head)
            if deprecations is not None and revision_deprecated(rev):
                deprecations.append(_revision_warning(family, rev, namespace))
            return found
        # Not this VM's matcher; but client-go decoded the whole revision before KubeVirt read its label,
        # so one it cannot decode is an error there, not a revision to pass over.
        try:
            revision.check_revision_object(rev)
        except revision.RevisionError as err:
            raise ExpandError.invalid(err.message, Cause(field, err.message, CAUSE_INVALID)) from None

    kind = matcher.get("kind")
    if type(kind) is not str:
        kind = ""
    canonical_kind = family.kinds.get(kind) or family.kinds.get(go_lower(kind))
    if canonical_kind is None:
        message = f"got unexpected kind in {family.go_matcher}: {kind}"
        raise ExpandError.invalid(message, Cause(family.kind_field, message, CAUSE_NOT_SUPPORTED))
    if not name:
        message = "resource name may not be empty"
        raise ExpandError.invalid(message, Cause(family.name_field, message, CAUSE_REQUIRED))
    ref_namespace = "" if canonical_kind in (CLUSTER_INSTANCETYPE, CLUSTER_PREFERENCE) else namespace
    field = family.name_field
    obj = _get(lookup, _ref(canonical_kind, ref_namespace, name, field), field)
    try:
        found = _cached_spec(family, obj, "object", family.object_dict, fingerprints)
    except revision.RevisionError as err:
        message = err.message
        raise ExpandError.invalid(message, Cause(family.name_field, message, CAUSE_INVALID)) from None
    if deprecations is not None and is_deprecated(obj):
        deprecations.append(deprecation_warning(canonical_kind, ref_namespace, name))
    return found


def _revision_warning(family: _Family, rev: Mapping[str, Any], namespace: str) -> str:
    """The deprecation warning for the object a revision holds, named as the revision's labels name it."""
    meta = rev.get("metadata")
    meta = meta if isinstance(meta, Mapping) else _NO_META
    labels = meta.get("labels")
    kind = labels.get(OBJECT_KIND_LABEL) if isinstance(labels, Mapping) else None
    name = labels.get(OBJECT_NAME_LABEL) if isinstance(labels, Mapping) else None
    rev_name = meta.get("name")
    kind = kind if isinstance(kind, str) and kind else family.matcher
    scoped = namespace if kind in (INSTANCETYPE, PREFERENCE) else ""
    shown = name if isinstance(name, str) and name else str(rev_name)
    return deprecation_warning(kind, scoped, shown) + f" (as pinned by ControllerRevision {rev_name})"


def _get(lookup: ObjectLookup, ref: ObjectRef, field: str) -> Mapping[str, Any]:
    obj = lookup.get(ref)
    if obj is None:
        message = ref.not_found_message()
        raise ExpandError.invalid(message, Cause(field, message, CAUSE_NOT_FOUND))
    return obj


def _decode_revision(
    family: _Family, rev: Mapping[str, Any], field: str, fingerprints: Mapping[int, bytes], head: bool = False
) -> JSON:
    if head and not revision.is_v1beta1_object(rev):
        message = "failed to decode object in ControllerRevision: not a whole v1beta1 object"
        raise ExpandError.invalid(message, Cause(field, message, CAUSE_INVALID))
    try:
        return _cached_spec(
            family, rev, "revision", lambda r: _spec_dict(family.from_revision(r)), fingerprints
        )
    except revision.RevisionError as err:
        raise ExpandError.invalid(err.message, Cause(field, err.message, CAUSE_INVALID)) from None


def find_instancetype(
    vm: JSON,
    lookup: ObjectLookup,
    fingerprints: Mapping[int, bytes] = _NO_FINGERPRINTS,
    *,
    head: bool = False,
    deprecations: list[str] | None = None,
) -> JSON | None:
    return find_spec(INSTANCETYPE_FAMILY, vm, lookup, fingerprints, head=head, deprecations=deprecations)


def find_preference(
    vm: JSON,
    lookup: ObjectLookup,
    fingerprints: Mapping[int, bytes] = _NO_FINGERPRINTS,
    *,
    head: bool = False,
    deprecations: list[str] | None = None,
) -> JSON | None:
    return find_spec(PREFERENCE_FAMILY, vm, lookup, fingerprints, head=head, deprecations=deprecations)
