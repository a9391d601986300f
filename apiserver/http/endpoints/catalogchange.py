"""The catalog change preview on a cluster: ``CatalogChangePreview``, a cluster-scoped review-style
resource (create it, read the answer in its ``status``), as SubjectAccessReview is.

``POST /apis/expand.kubevirt-expand.io/v1/catalogchangepreviews`` with::

    apiVersion: expand.kubevirt-expand.io/v1
    kind: CatalogChangePreview
    spec:
      objects: [...]        # instancetypes and preferences as they would be applied (added or edited)
      removed: [{kind: VirtualMachineClusterPreference, name: fedora}]   # refs of objects deleted
      namespaces: [ns-a]    # only these (each reviewed; else every namespace the caller may read)
      limit: 100            # items per page
      continue: ...         # the token of the page before

answers 201 with ``status``: the objects the change touches, counts per verdict, per namespace the change
in requests (and quotas, where the caller may list them), the affected VMs of the page, ``hidden`` (how
many VMs of namespaces the caller may not read name a changed cluster-wide object: one total, never a
namespace) and ``continue``. The live catalog with the proposed change applied in memory is previewed
against the live one (:func:`apiserver.render.catalogchange.preview_catalog_change`); nothing is written.
Every read is the caller's (:meth:`apiserver.sources.reads.ScopedReads.fleet`).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from apiserver.http.endpoints.bodies import field_validation, offload, parse, read_body, review_name
from apiserver.http.endpoints.discovery import CATALOG_KIND, CATALOG_PLURAL
from apiserver.http.endpoints.expand import warning_header
from apiserver.http.errors import StatusError, unavailable
from apiserver.http.keys import scope_of
from apiserver.http.media import encode, negotiate
from apiserver.http.settings import Settings
from apiserver.render.catalogchange import (
    UNAFFECTED,
    FleetChange,
    changed_objects,
    preview_catalog_change,
    used_objects,
)
from apiserver.render.golang.gojson import GoDecodeError, decode
from apiserver.render.kubernetes.errors import (
    CAUSE_DUPLICATE,
    CAUSE_INVALID,
    CAUSE_NOT_FOUND,
    CAUSE_NOT_SUPPORTED,
    CAUSE_REQUIRED,
    Cause,
    ExpandError,
    invalid_status,
    status,
)
from apiserver.render.kubernetes.fieldvalidation import IGNORE, STRICT
from apiserver.render.kubernetes.names import label_errors, subdomain_errors
from apiserver.render.objects import (
    CLUSTER_INSTANCETYPE,
    CLUSTER_PREFERENCE,
    INSTANCETYPE,
    PREFERENCE,
    ObjectRef,
    ref_of,
)
from apiserver.sources.access import AccessRefused
from apiserver.sources.base import Source, SourceUnavailable
from apiserver.sources.reads import LiveFleet, Reads, ScopedReads
from apiserver.sources.rendered import items as evm

KIND = CATALOG_KIND
API_VERSION = f"{evm.GROUP}/{evm.VERSION}"
CATALOG_GROUP = "instancetype.kubevirt.io"
CATALOG_KINDS = (INSTANCETYPE, CLUSTER_INSTANCETYPE, PREFERENCE, CLUSTER_PREFERENCE)
_CLUSTER_KINDS = (CLUSTER_INSTANCETYPE, CLUSTER_PREFERENCE)
# What of a catalog object a VM can see and the cluster source keeps (apiserver.sources.cluster.cache
# slims annotations away): the proposed and live objects are compared in this form.
_META = ("name", "namespace", "labels", "uid", "resourceVersion", "generation")
_TOKEN_VERSION = 1

_KNOWN: dict[str, frozenset[str]] = {
    "": frozenset({"apiVersion", "kind", "metadata", "spec", "status"}),
    "spec": frozenset({"objects", "removed", "namespaces", "limit", "continue"}),
}
_REF_FIELDS = frozenset({"kind", "name", "namespace"})


def _invalid(causes: list[Cause], name: str = "") -> StatusError:
    message = f"{KIND}.{evm.GROUP} is invalid: " + ", ".join(f"{c.field}: {c.message}" for c in causes)
    return StatusError(invalid_status(message, causes, name=name, group=evm.GROUP, kind=KIND))


def unknown_fields(doc: Mapping[str, Any]) -> list[str]:
    """Members of the request this server does not know (the proposed objects are KubeVirt's: Go's
    decoder judges them)."""
    found: list[str] = []
    for where, known in _KNOWN.items():
        node: Any = doc
        for part in where.split(".") if where else ():
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, Mapping):
            found += [f"{where}.{k}" if where else str(k) for k in node if k not in known]
    spec = doc.get("spec")
    removed = spec.get("removed") if isinstance(spec, Mapping) else None
    if isinstance(removed, list):
        for n, ref in enumerate(removed):
            if isinstance(ref, Mapping):
                found += [f"spec.removed[{n}].{k}" for k in ref if k not in _REF_FIELDS]
    return found


def _list(value: Any, field: str, causes: list[Cause]) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        causes.append(Cause(field, "Invalid value: must be a list", CAUSE_INVALID))
        return []
    return value


def _kind(kind: Any, field: str, causes: list[Cause]) -> str | None:
    if kind in CATALOG_KINDS:
        return str(kind)
    if kind is None or kind == "":
        causes.append(Cause(field, "Required value", CAUSE_REQUIRED))
    else:
        supported = ", ".join(f'"{k}"' for k in CATALOG_KINDS)
        causes.append(
            Cause(
                field,
                f"Unsupported value: {json.dumps(kind)}: supported values: {supported} (an instancetype or "
                "preference)",
                CAUSE_NOT_SUPPORTED,
            )
        )
    return None


def _where(kind: str, meta: Mapping[str, Any], field: str, causes: list[Cause]) -> tuple[str, str] | None:
    """The (namespace, name) of an object or ref of ``kind``: a name as Kubernetes names objects, a
    namespace for the namespaced kinds (the cluster kinds have none: a namespace given is dropped, as
    kube-apiserver drops it)."""
    name, namespace = meta.get("name"), meta.get("namespace")
    ok = True
    if not isinstance(name, str) or not name:
        causes.append(Cause(f"{field}.name", "Required value", CAUSE_REQUIRED))
        ok = False
    elif errors := subdomain_errors(name):
        causes.append(
            Cause(f"{field}.name", f"Invalid value: {json.dumps(name)}: {errors[0]}", CAUSE_INVALID)
        )
        ok = False
    if kind in _CLUSTER_KINDS:
        namespace = ""
    elif not isinstance(namespace, str) or not namespace:
        causes.append(Cause(f"{field}.namespace", f"Required value: {kind} is namespaced", CAUSE_REQUIRED))
        ok = False
    elif errors := label_errors(namespace):
        message = f"Invalid value: {json.dumps(namespace)}: {errors[0]}"
        causes.append(Cause(f"{field}.namespace", message, CAUSE_INVALID))
        ok = False
    return (str(namespace), str(name)) if ok else None


def _proposed(value: Any, n: int, causes: list[Cause]) -> Mapping[str, Any] | None:
    field = f"spec.objects[{n}]"
    if not isinstance(value, Mapping):
        causes.append(
            Cause(field, "Invalid value: must be an instancetype or preference object", CAUSE_INVALID)
        )
        return None
    kind = _kind(value.get("kind"), f"{field}.kind", causes)
    api_version = value.get("apiVersion")
    if not isinstance(api_version, str) or api_version.partition("/")[0] != CATALOG_GROUP:
        message = f"Unsupported value: {json.dumps(api_version)}: must be of group {CATALOG_GROUP}"
        causes.append(Cause(f"{field}.apiVersion", message, CAUSE_NOT_SUPPORTED))
        kind = None
    if kind is None:
        return None
    meta = value.get("metadata")
    if not isinstance(meta, Mapping):
        causes.append(Cause(f"{field}.metadata", "Required value", CAUSE_REQUIRED))
        return None
    where = _where(kind, meta, f"{field}.metadata", causes)
    try:
        decode(dict(value), kind, exact_names=True)
    except GoDecodeError as err:
        causes.append(Cause(f"{field}.{err.path}" if err.path else field, str(err), CAUSE_INVALID))
        return None
    if where is None:
        return None
    return held({**value, "metadata": {**meta, "namespace": where[0]} if where[0] else meta})


def held(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj`` as the cluster source holds a catalog object: metadata beyond ``_META`` and ``status``
    dropped, so a proposed object equal to the live one but for its annotations or timestamps is no
    edit. Returned as is when there is nothing to drop (the memos then know it across requests)."""
    meta = obj.get("metadata")
    if isinstance(meta, Mapping) and all(k in _META for k in meta) and "status" not in obj:
        return obj
    kept = {k: meta[k] for k in _META if isinstance(meta, Mapping) and k in meta}
    if not kept.get("namespace"):
        kept.pop("namespace", None)
    return {**{k: v for k, v in obj.items() if k not in ("metadata", "status")}, "metadata": kept}


class Proposal:
    """A checked request: the proposed objects by ref, the refs removed, the namespaces asked for, the
    page."""

    def __init__(self) -> None:
        self.objects: dict[ObjectRef, Mapping[str, Any]] = {}
        self.removed: dict[ObjectRef, int] = {}  # ref -> its index in spec.removed
        self.namespaces: list[str] | None = None
        self.limit = 0
        self.after: tuple[str, str] | None = None
        self.digest = ""

    def named_namespaces(self) -> list[str]:
        """The namespaces of the namespaced objects the request proposes or removes."""
        return sorted({ref.namespace for ref in (*self.objects, *self.removed) if ref.namespace})


def _digest(spec: Mapping[str, Any]) -> str:
    """What a continue token is bound to: the request but its page."""
    same = {k: v for k, v in spec.items() if k not in ("limit", "continue")}
    text = json.dumps(same, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def continue_token(after: tuple[str, str], digest: str) -> str:
    doc = {"v": _TOKEN_VERSION, "after": list(after), "spec": digest}
    return base64.urlsafe_b64encode(json.dumps(doc, separators=(",", ":")).encode()).decode().rstrip("=")


def _read_token(token: str, digest: str, causes: list[Cause]) -> tuple[str, str] | None:
    try:
        doc = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        after = doc["after"]
        ok = doc["v"] == _TOKEN_VERSION and [type(a) for a in after] == [str, str]
    except (ValueError, TypeError, KeyError):
        ok = False
    if not ok:
        causes.append(
            Cause("spec.continue", "Invalid value: not a continue token of this server", CAUSE_INVALID)
        )
        return None
    if doc.get("spec") != digest:
        message = "Invalid value: the token continues another preview: send the same spec with it"
        causes.append(Cause("spec.continue", message, CAUSE_INVALID))
        return None
    return after[0], after[1]


def check_request(doc: Any, level: str = STRICT) -> tuple[str, Mapping[str, Any], Proposal, list[str]]:
    """The request's name, spec, what it asks and its warnings; 400 for another kind, 422 naming every
    field at fault (``level``: kube-apiserver's fieldValidation for members this server does not know)."""
    name = review_name(doc, KIND, API_VERSION)
    causes: list[Cause] = []
    warnings: list[str] = []
    unknown = unknown_fields(doc) if level != IGNORE else []
    if level == STRICT:
        causes += [Cause(f, f'unknown field "{f}"', "FieldValueInvalid") for f in unknown]
    else:
        warnings += [f'unknown field "{f}"' for f in unknown]
    spec = doc.get("spec")
    if not isinstance(spec, Mapping):
        message = "Required value" if spec is None else "Invalid value: must be an object"
        causes.append(Cause("spec", message, CAUSE_REQUIRED if spec is None else CAUSE_INVALID))
        raise _invalid(causes, name)
    request = Proposal()
    for n, value in enumerate(_list(spec.get("objects"), "spec.objects", causes)):
        obj = _proposed(value, n, causes)
        ref = ref_of(obj) if obj is not None else None
        if obj is None or ref is None:
            continue
        if ref in request.objects:
            causes.append(
                Cause(f"spec.objects[{n}]", f"Duplicate value: {ref.kind} {_named(ref)}", CAUSE_DUPLICATE)
            )
        request.objects[ref] = obj
    for n, value in enumerate(_list(spec.get("removed"), "spec.removed", causes)):
        field = f"spec.removed[{n}]"
        if not isinstance(value, Mapping):
            causes.append(Cause(field, "Invalid value: must be {kind, name, namespace}", CAUSE_INVALID))
            continue
        ref_kind = _kind(value.get("kind"), f"{field}.kind", causes)
        where = _where(ref_kind, value, field, causes) if ref_kind is not None else None
        if ref_kind is None or where is None:
            continue
        ref = ObjectRef(ref_kind, *where)
        if ref in request.objects or ref in request.removed:
            message = f"Duplicate value: {ref.kind} {_named(ref)} is proposed or removed already"
            causes.append(Cause(field, message, CAUSE_DUPLICATE))
        request.removed[ref] = n
    if "namespaces" in spec and spec["namespaces"] is not None:
        request.namespaces = []
        for n, ns in enumerate(_list(spec["namespaces"], "spec.namespaces", causes)):
            field = f"spec.namespaces[{n}]"
            errors = label_errors(ns) if isinstance(ns, str) and ns else ["must be a namespace's name"]
            if errors:
                causes.append(Cause(field, f"Invalid value: {json.dumps(ns)}: {errors[0]}", CAUSE_INVALID))
            elif ns in request.namespaces:
                causes.append(Cause(field, f"Duplicate value: {json.dumps(ns)}", CAUSE_DUPLICATE))
            else:
                request.namespaces.append(ns)
    limit = spec.get("limit")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            causes.append(Cause("spec.limit", "Invalid value: must be 0 (no limit) or more", CAUSE_INVALID))
        else:
            request.limit = limit
    request.digest = _digest(spec)
    token = spec.get("continue")
    if token is not None and token != "":
        if not isinstance(token, str):
            causes.append(Cause("spec.continue", "Invalid value: must be a string", CAUSE_INVALID))
        else:
            request.after = _read_token(token, request.digest, causes)
    if not request.objects and not request.removed and not causes:
        message = "Required value: propose objects (spec.objects) or remove some (spec.removed)"
        causes.append(Cause("spec.objects", message, CAUSE_REQUIRED))
    if causes:
        raise _invalid(causes, name)
    return name, spec, request, warnings


def _named(ref: ObjectRef) -> str:
    return f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name


def after_change(
    live: Sequence[Mapping[str, Any]], request: Proposal
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]], list[Cause]]:
    """The live catalog (in the compared form) and the catalog once the request is applied; a cause for
    each object removed that does not exist."""
    before: dict[ObjectRef, Mapping[str, Any]] = {}
    for obj in live:
        ref = ref_of(obj)
        if ref is not None:
            before[ref] = held(obj)
    after = dict(before)
    causes = []
    for ref, n in request.removed.items():
        if after.pop(ref, None) is None:
            message = f"Not found: {ref.kind} {_named(ref)}"
            causes.append(Cause(f"spec.removed[{n}]", message, CAUSE_NOT_FOUND))
    after.update(request.objects)
    return list(before.values()), list(after.values()), causes


def answer_status(change: FleetChange, fleet: LiveFleet, request: Proposal) -> dict[str, Any]:
    """The status of one page: everything but ``items`` is the whole answer's."""
    counts = change.counts()
    affected = [e for e in change.entries if e["verdict"] != UNAFFECTED]
    if request.after is not None:
        affected = [e for e in affected if (e["namespace"], e["name"]) > request.after]
    page = affected[: request.limit] if request.limit else affected
    out: dict[str, Any] = {
        "changedObjects": [
            {
                "kind": ref.kind,
                **({"namespace": ref.namespace} if ref.namespace else {}),
                "name": ref.name,
                "change": how,
            }
            for ref, how in change.changed.items()
        ],
        "vms": len(change.entries),
        "counts": dict(sorted(counts.items())),
        "hidden": fleet.hidden(change.changed),
        "namespaces": change.namespaces,
        "items": page,
    }
    if len(page) < len(affected):
        last = page[-1]
        out["continue"] = continue_token((last["namespace"], last["name"]), request.digest)
        out["remainingItemCount"] = len(affected) - len(page)
    return out


class CatalogChangeHandler:
    def __init__(self, settings: Settings, source: Source) -> None:
        self.settings = settings
        self.reads = Reads(source)

    async def create(self, request: web.Request) -> web.Response:
        media_type = negotiate(request)
        scope = scope_of(request)
        if scope.namespace is not None:
            raise StatusError(status(403, "Forbidden", "a catalog change preview is of the cluster scope"))
        level = field_validation(request)
        data = await read_body(request, self.settings.max_body_bytes)
        doc = parse(data).value
        name, spec, asked, warnings = check_request(doc, level)
        reads = self.reads.within(scope)
        try:
            result = await self._preview(reads, asked)
        except AccessRefused as err:
            raise StatusError(err.status) from None
        except SourceUnavailable as err:
            raise unavailable(str(err), timeout=False, retry_after=1) from None
        except ExpandError as err:
            raise StatusError(err.status) from None
        answer: dict[str, Any] = {"kind": KIND, "apiVersion": API_VERSION}
        answer["metadata"] = {"name": name} if name else {}
        answer["spec"] = spec
        answer["status"] = result
        headers = CIMultiDict(("Warning", warning_header(w)) for w in warnings)
        return web.Response(
            status=201, body=encode(answer, media_type), content_type=media_type, headers=headers
        )

    async def _preview(self, reads: ScopedReads, asked: Proposal) -> dict[str, Any]:
        fleet = await reads.fleet(asked.namespaces, named=asked.named_namespaces())
        before, after, causes = after_change(fleet.catalog, asked)
        if causes:
            raise _invalid(causes)
        touched = set(changed_objects(before, after))
        kubevirt = await reads.kubevirt()
        objects: list[Mapping[str, Any]] = []
        changing: set[str] = set()
        for (namespace, _), vm in fleet.vms.items():
            used = used_objects(vm, namespace)
            if used is None:  # inferred from a volume: read it (the caller's review) to know
                objects += await reads.inferred_from(vm, kubevirt)
            if used is None or used & touched:
                changing.add(namespace)
        for namespace in sorted(changing):
            objects += await reads.quotas(namespace) or ()

        def work() -> dict[str, Any]:
            change = preview_catalog_change(fleet.vms, objects, before, after, kubevirt)
            return answer_status(change, fleet, asked)

        return await offload(work)


def add_routes(app: web.Application, settings: Settings, source: Source) -> None:
    handler = CatalogChangeHandler(settings, source)
    app.router.add_post(f"/apis/{evm.GROUP}/{evm.VERSION}/{CATALOG_PLURAL}", handler.create)


__all__ = ["API_VERSION", "KIND", "add_routes", "check_request"]
