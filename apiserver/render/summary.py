"""The compact summary of one rendered VM that a list page shows without walking the spec.

KubeVirt's VEP 280 proposes ``status.instancetypeRef.resources`` (CPU topology and memory of the
instancetype, of the pinned revision only). This summary is taken from the rendering itself, so it
also counts the preference (its preferred topology spreads the vCPUs), says whether each object came
from the ControllerRevision the VM is pinned to or the live object, and a VM whose rendering fails gets
the reason and message instead of figures. An instancetype or preference that carries
common-instancetypes' deprecation label is marked ``deprecated: true`` and named in a ``Deprecated``
condition (:mod:`apiserver.render.instancetype.deprecation`). Pure: it reads what the rendering returned
and read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.instancetype.deprecation import deprecation_warning, is_deprecated, revision_deprecated
from apiserver.render.instancetype.find import INSTANCETYPE_FAMILY, PREFERENCE_FAMILY, named_revision
from apiserver.render.kubernetes.errors import ExpandError
from apiserver.render.objects import (
    CLUSTER_SCOPED_KINDS,
    CONTROLLER_REVISION,
    ObjectRef,
    canonical_kind,
)

JSON = dict[str, Any]

SOURCE_REVISION = "ControllerRevision"
SOURCE_OBJECT = "Object"
CONDITION_RENDERED = "Rendered"
CONDITION_DEPRECATED = "Deprecated"


def _dig(doc: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(doc, Mapping):
            return None
        doc = doc.get(key)
    return doc


def _matcher(
    vm: Mapping[str, Any], family: Any, objects: Mapping[ObjectRef, Any], namespace: str
) -> JSON | None:
    """kind, name and where the object came from (revision pinned, or live)."""
    matcher = _dig(vm, "spec", family.matcher)
    if not isinstance(matcher, Mapping):
        return None
    name = matcher.get("name")
    raw_kind = matcher.get("kind") or ""
    kind = family.kinds.get(raw_kind) or family.kinds.get(str(raw_kind).lower()) or str(raw_kind)
    kind = canonical_kind(kind)
    out: JSON = {"kind": kind}
    if isinstance(name, str) and name:
        out["name"] = name
    elif matcher.get("inferFromVolume"):
        out["inferFromVolume"] = matcher["inferFromVolume"]
    revision, _ = named_revision(family, vm)
    rev = objects.get(ObjectRef(CONTROLLER_REVISION, namespace, revision)) if revision else None
    # Read from the revision unless the finder passed it over for the live object (another object's).
    if rev is not None and not any(r.kind == kind and r.name == out.get("name") for r in objects):
        out["revisionName"] = revision
        out["source"] = SOURCE_REVISION
        if revision_deprecated(rev):
            out["deprecated"] = True
        return out
    out["source"] = SOURCE_OBJECT
    if isinstance(name, str) and name:
        scoped = "" if kind in CLUSTER_SCOPED_KINDS else namespace
        obj = objects.get(ObjectRef(kind, scoped, name))
        if obj is not None and is_deprecated(obj):
            out["deprecated"] = True
    return out


def _deprecated_condition(summary: Mapping[str, Any], namespace: str) -> JSON | None:
    """``Deprecated``: which of the objects read carry the deprecation label."""
    named = []
    for key in ("instancetype", "preference"):
        found = summary.get(key)
        if isinstance(found, Mapping) and found.get("deprecated"):
            kind = str(found.get("kind") or key)
            scoped = "" if kind in CLUSTER_SCOPED_KINDS else namespace
            named.append(
                deprecation_warning(kind, scoped, str(found.get("name") or found.get("revisionName")))
            )
    if not named:
        return None
    return {
        "type": CONDITION_DEPRECATED,
        "status": "True",
        "reason": "DeprecatedObject",
        "message": "; ".join(named),
    }


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def summarize(
    vm: Mapping[str, Any],
    rendered: Mapping[str, Any] | None,
    error: ExpandError | None,
    objects: Mapping[ObjectRef, Any],
) -> JSON:
    """``summary`` and ``conditions`` of one item, from the VM as stored, its rendering (None when it
    failed) and the objects the rendering read (which tell a pinned revision from the live object)."""
    namespace = str(_dig(vm, "metadata", "namespace") or "")
    summary: JSON = {}
    for key, family in (("instancetype", INSTANCETYPE_FAMILY), ("preference", PREFERENCE_FAMILY)):
        found = _matcher(vm, family, objects, namespace)
        if found is not None:
            summary[key] = found
    if rendered is not None:
        domain = _dig(rendered, "spec", "template", "spec", "domain")
        cpu = _dig(domain, "cpu") or {}
        sockets, cores, threads = (_count(cpu.get(k)) for k in ("sockets", "cores", "threads"))
        summary["cpu"] = {
            "sockets": sockets,
            "cores": cores,
            "threads": threads,
            "vcpus": sockets * cores * threads,
        }
        guest = _dig(domain, "memory", "guest") or _dig(domain, "resources", "requests", "memory")
        if isinstance(guest, str | int) and not isinstance(guest, bool):
            summary["memory"] = {"guest": str(guest)}
        condition: JSON = {"type": CONDITION_RENDERED, "status": "True", "reason": "Rendered", "message": ""}
    else:
        assert error is not None
        condition = {
            "type": CONDITION_RENDERED,
            "status": "False",
            "reason": error.reason or "Failure",
            "message": error.message,
        }
    conditions = [condition]
    deprecated = _deprecated_condition(summary, namespace)
    if deprecated is not None:
        conditions.append(deprecated)
    return {"summary": summary, "conditions": conditions}
