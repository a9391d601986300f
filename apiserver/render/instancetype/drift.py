"""Whether the revision a VM captured of its instancetype or preference is still the latest.

Mirrors ``revision.Compare`` (``pkg/instancetype/revision/compare.go``): two ControllerRevisions hold
the same object when their decoded specs are ``equality.Semantic.DeepEqual`` (quantities by value, an
empty list or map equal to an absent one). KubeVirt compares the revision it captured with a revision
of the live object when it stores one under a name already taken; here the live object's spec is
compared with the captured revision's the same way, so a VM is *stale* exactly when storing a revision
of the live object now would store a different spec.

Which revision a VM captured follows the finders (:func:`.find.named_revision`) and
``syncStatusWithMatcher`` (``pkg/instancetype/revision/store.go``): ``spec.<matcher>.revisionName``, else
``status.<ref>.controllerRevisionRef`` (where virt-controller writes it) unless the revision is of
another object; one named but missing is not comparable, as the finder fails on it. Pure: the
objects come from an :class:`~apiserver.render.objects.ObjectLookup`, which may raise
``LookupPending``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apiserver.render.golang.gotext import go_lower
from apiserver.render.instancetype import revision
from apiserver.render.instancetype.find import (
    INSTANCETYPE_FAMILY,
    PREFERENCE_FAMILY,
    holds_object,
    named_revision,
)
from apiserver.render.kubernetes import names
from apiserver.render.objects import (
    CLUSTER_INSTANCETYPE,
    CLUSTER_PREFERENCE,
    CONTROLLER_REVISION,
    ObjectLookup,
    ObjectRef,
    canonical_kind,
)

# Reasons of a family's answer. Only OUTDATED is stale.
CURRENT = "RevisionCurrent"  # the captured revision holds the live object's spec
OUTDATED = "RevisionOutdated"  # the live object changed since the revision was taken
NO_REVISION = "NoRevision"  # no revision captured yet (KubeVirt's VM controller has not stored one)
OBJECT_NOT_FOUND = "ObjectNotFound"  # the live object is gone: nothing to be behind
NOT_COMPARABLE = "NotComparable"  # the revision or the object cannot be decoded, or is not found
INFERRED = "Inferred"  # inferFromVolume with no name yet: no object to compare with

FAMILIES = (("instancetype", INSTANCETYPE_FAMILY), ("preference", PREFERENCE_FAMILY))


@dataclass(frozen=True, slots=True)
class Drift:
    """One matcher's answer: the object (canonical kind, namespace "" when cluster-scoped, name), the
    revision the VM captured ("" when none), the reason and a message naming them."""

    member: str  # instancetype | preference
    kind: str
    namespace: str
    name: str
    revision: str
    reason: str
    message: str

    @property
    def stale(self) -> bool:
        return self.reason == OUTDATED

    def describe(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


def _semantic(value: Any) -> Any:
    """The value as ``equality.Semantic.DeepEqual`` sees it: empty lists and maps as absent (quantities
    are canonical text already, so equal values compare equal)."""
    if isinstance(value, Mapping):
        out = {k: _semantic(v) for k, v in value.items() if v is not None}
        return {k: v for k, v in out.items() if v not in ({}, [])} or {}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _spec(model: Any) -> Any:
    return _semantic(model.model_dump(by_alias=True, exclude_none=True))


# Comparisons made, by the identity of both objects (sources hand out one instance per object version;
# the pair is kept with its answer so a reused id is never taken for the same object).
_COMPARED: OrderedDict[tuple[int, int], tuple[Any, Any, bool]] = OrderedDict()
_COMPARED_SIZE = 8192


def same_spec(member: str, rev: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """``revision.Compare`` of the revision ``rev`` with a revision of the live ``obj``; raises
    :class:`~apiserver.render.instancetype.revision.RevisionError` when either cannot be decoded."""
    key = (id(rev), id(obj))
    known = _COMPARED.get(key)
    if known is not None and known[0] is rev and known[1] is obj:
        return known[2]
    family = INSTANCETYPE_FAMILY if member == "instancetype" else PREFERENCE_FAMILY
    same = bool(_spec(family.from_revision(rev)) == _spec(family.from_object(obj)))
    _COMPARED[key] = (rev, obj, same)
    if len(_COMPARED) > _COMPARED_SIZE:
        _COMPARED.popitem(last=False)
    return same


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _map(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a VM of any shape is read without error)."""
    return value if isinstance(value, Mapping) else {}


def captured_revision(member: str, vm: Mapping[str, Any], lookup: ObjectLookup) -> str:
    """The name of the revision the VM's matcher uses ("" when none), as ``revisionFinder.Find`` chooses
    it (:func:`~apiserver.render.instancetype.find.named_revision`): a named revision that does not exist
    is still the one the VM uses (the finder fails on it; it is not the live object)."""
    family = INSTANCETYPE_FAMILY if member == "instancetype" else PREFERENCE_FAMILY
    name, field = named_revision(family, vm)
    if not name or field == family.revision_field:
        return name
    namespace = _str(_map(vm.get("metadata")).get("namespace"))
    if not names.valid_name(name) or not names.valid_namespace(namespace):
        return name
    rev = lookup.get(ObjectRef(CONTROLLER_REVISION, namespace, name))
    matcher = _map(_map(vm.get("spec")).get(family.matcher))
    if rev is None or holds_object(rev, _str(matcher.get("name"))):
        return name
    return ""


def matcher_drift(member: str, vm: Mapping[str, Any], lookup: ObjectLookup) -> Drift | None:
    """The drift of the VM's ``member`` matcher (instancetype or preference); None without one."""
    family = INSTANCETYPE_FAMILY if member == "instancetype" else PREFERENCE_FAMILY
    matcher = _map(vm.get("spec")).get(family.matcher)
    if not isinstance(matcher, Mapping):
        return None
    namespace = _str(_map(vm.get("metadata")).get("namespace"))
    raw_kind = _str(matcher.get("kind"))
    kind = canonical_kind(family.kinds.get(raw_kind) or family.kinds.get(go_lower(raw_kind)) or raw_kind)
    name = _str(matcher.get("name"))
    scoped = "" if kind in (CLUSTER_INSTANCETYPE, CLUSTER_PREFERENCE) else namespace

    def answer(reason: str, message: str, rev: str = "") -> Drift:
        return Drift(member, kind, scoped, name, rev, reason, message)

    if not name:
        return answer(INFERRED, f"the {member} is inferred from a volume; no object to compare with")
    if (
        kind not in family.kinds.values()
        or not names.valid_name(name)
        or (scoped and not names.valid_namespace(scoped))
    ):
        return answer(NOT_COMPARABLE, f"the {member} matcher names no object that can exist")
    rev_name = captured_revision(member, vm, lookup)
    shown = answer("", "").describe()
    if not rev_name:
        return answer(
            NO_REVISION, f"no ControllerRevision of {shown} captured yet: the VM uses the live object"
        )
    if not names.valid_name(rev_name) or not names.valid_namespace(namespace):
        return answer(NOT_COMPARABLE, f"ControllerRevision {rev_name!r} cannot exist", rev_name)
    rev = lookup.get(ObjectRef(CONTROLLER_REVISION, namespace, rev_name))
    if rev is None:
        return answer(NOT_COMPARABLE, f"ControllerRevision {rev_name} not found", rev_name)
    obj = lookup.get(ObjectRef(kind, scoped, name))
    if obj is None:
        return answer(
            OBJECT_NOT_FOUND,
            f"{shown} no longer exists; the VM keeps ControllerRevision {rev_name}",
            rev_name,
        )
    try:
        same = same_spec(member, rev, obj)
    except revision.RevisionError as err:
        return answer(NOT_COMPARABLE, f"{shown} and ControllerRevision {rev_name}: {err.message}", rev_name)
    if same:
        return answer(CURRENT, f"ControllerRevision {rev_name} holds the spec of {shown}", rev_name)
    return answer(OUTDATED, f"{shown} changed since ControllerRevision {rev_name} was taken", rev_name)


def vm_drift(vm: Mapping[str, Any], lookup: ObjectLookup) -> tuple[Drift | None, Drift | None]:
    """The drift of the VM's instancetype and of its preference."""
    return matcher_drift("instancetype", vm, lookup), matcher_drift("preference", vm, lookup)
