"""OpenAPI for ``catalogchangepreviews``: the ``CatalogChangePreview`` schema (``kubectl explain``,
generated clients) and its create operation, in the neutral form :mod:`apiserver.http.endpoints.openapi`
turns into v2 and v3. Cluster-scoped: the path has no namespace."""

from __future__ import annotations

from typing import Any

from apiserver.http.endpoints.discovery import CATALOG_KIND, CATALOG_PLURAL
from apiserver.sources.rendered import items as evm

PREFIX = "io.kubevirt-expand.expand.v1."
CATALOG = PREFIX + CATALOG_KIND
SPEC = CATALOG + "Spec"
STATUS = CATALOG + "Status"
REF = PREFIX + "CatalogObjectRef"
OBJECT_META = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"
GVK = {"group": evm.GROUP, "version": evm.VERSION, "kind": CATALOG_KIND}
ERRORS = ("400", "401", "403", "406", "413", "415", "422", "500", "503", "504")
# Where the shared descriptions speak of one VM.
DESCRIPTIONS = {
    "403": "Forbidden: the caller may not create previews, or may not list the VirtualMachines of a namespace "
    "the request names",
    "422": "Invalid: the request (causes name the fields, spec.objects[N]... for a proposed object)",
}
VERDICTS = ["unaffected", "unchanged", "live", "restart", "stopped", "refused", "error"]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/definitions/{name}"}


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _object(description: str) -> dict[str, Any]:
    return {"type": "object", "description": description, "x-kubernetes-preserve-unknown-fields": True}


def _strings(description: str) -> dict[str, Any]:
    return {"type": "array", "description": description, "items": {"type": "string"}}


def _resources(description: str) -> dict[str, Any]:
    return {"type": "object", "description": description, "additionalProperties": {"type": "string"}}


def definitions() -> dict[str, Any]:
    """The preview's types, in the v2 spelling (``#/definitions/``)."""
    return {
        CATALOG: {
            "description": (
                "What a catalog change (instancetypes and preferences added, edited or removed) does to the "
                "fleet before it is applied: every VM the caller may read upgraded to the proposed catalog, "
                "with KubeVirt's verdict, its pod's requests and each namespace's quotas. Created, never "
                "stored (a review, as SubjectAccessReview); nothing is written."
            ),
            "type": "object",
            "required": ["spec"],
            "properties": {
                "apiVersion": _string("expand.kubevirt-expand.io/v1."),
                "kind": _string(CATALOG_KIND + "."),
                "metadata": _ref(OBJECT_META),
                "spec": _ref(SPEC),
                "status": _ref(STATUS),
            },
            "x-kubernetes-group-version-kind": [dict(GVK)],
        },
        REF: {
            "description": "An instancetype or preference of the live catalog.",
            "type": "object",
            "required": ["kind", "name"],
            "properties": {
                "kind": _string(
                    "VirtualMachineInstancetype, VirtualMachineClusterInstancetype, VirtualMachinePreference "
                    "or VirtualMachineClusterPreference."
                ),
                "name": _string("Its name."),
                "namespace": _string("Its namespace (the namespaced kinds)."),
            },
        },
        SPEC: {
            "description": "The proposed change and the page of the answer.",
            "type": "object",
            "properties": {
                "objects": {
                    "type": "array",
                    "description": "Instancetypes and preferences as they would be applied (added or edited).",
                    "items": _object("One object of group instancetype.kubevirt.io."),
                },
                "removed": {
                    "type": "array",
                    "description": "Objects of the live catalog the change deletes.",
                    "items": _ref(REF),
                },
                "namespaces": _strings(
                    "Only these namespaces (the caller must be allowed to list their VirtualMachines); "
                    "default: every namespace the caller may read."
                ),
                "limit": {"type": "integer", "description": "Items per page (0: all)."},
                "continue": _string("The continue token of the page before (with the same spec)."),
            },
        },
        STATUS: {
            "description": "The answer.",
            "type": "object",
            "properties": {
                "changedObjects": {
                    "type": "array",
                    "description": "Each object the change touches (kind, namespace, name, change: added, "
                    "removed or edited).",
                    "items": _object("One object."),
                },
                "vms": {"type": "integer", "description": "The VMs previewed (the namespaces read)."},
                "counts": {
                    "type": "object",
                    "description": "VMs per verdict (" + ", ".join(VERDICTS) + ").",
                    "additionalProperties": {"type": "integer"},
                },
                "hidden": {
                    "type": "integer",
                    "description": "VMs of the namespaces the caller may not list VMs in that name a changed "
                    "cluster-wide instancetype or preference: one total, never a namespace or a name.",
                },
                "namespaces": {
                    "type": "array",
                    "description": "Per affected namespace: VMs, affected, costChanges, requestsChange and, "
                    "where the caller may list ResourceQuotas, quotas (hard, used, usedAfter, fits).",
                    "items": _object("One namespace."),
                },
                "items": {
                    "type": "array",
                    "description": "The affected VMs of this page, by namespace and name: verdict, message, "
                    "changes, patch, requests (before, after), refusal.",
                    "items": _object("One VM."),
                },
                "continue": _string("Send it as spec.continue for the next page (absent on the last)."),
                "remainingItemCount": {"type": "integer", "description": "Affected VMs after this page."},
            },
        },
    }


FIELD_VALIDATION = {
    "name": "fieldValidation",
    "in": "query",
    "type": "string",
    "uniqueItems": True,
    "description": (
        "How to treat members of the CatalogChangePreview this server does not know: Strict (the default) "
        "refuses them with 422, Warn answers with a Warning header each, Ignore drops them."
    ),
}


def operation() -> dict[str, Any]:
    """create, as (path, operationId, action, parameters, request and response definition)."""
    return {
        "path": f"/apis/{evm.GROUP}/{evm.VERSION}/{CATALOG_PLURAL}",
        "operationId": "createCatalogChangePreview",
        "action": "post",
        "description": "create a CatalogChangePreview: preview a catalog change across the fleet",
        "parameters": [FIELD_VALIDATION],
        "request": CATALOG,
        "response": CATALOG,
    }
