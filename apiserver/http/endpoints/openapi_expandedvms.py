"""OpenAPI for ``expandedvirtualmachines``: the schemas (so ``kubectl explain`` works) and the get/list
operations, in the neutral form :mod:`apiserver.http.endpoints.openapi` turns into v2 and v3."""

from __future__ import annotations

from typing import Any

from apiserver.http.endpoints import openapi_launcher as launcher_api
from apiserver.sources.rendered import items as evm
from apiserver.sources.rendered.selectors import ITEM_FIELDS, ITEM_PATHS

PREFIX = "io.kubevirt-expand.expand.v1."
ITEM = PREFIX + evm.KIND
LIST = PREFIX + evm.LIST_KIND
OBJECT_META = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"
LIST_META = "k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta"
VM = "v1.VirtualMachine"
GVK = {"group": evm.GROUP, "version": evm.VERSION, "kind": evm.KIND}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/definitions/{name}"}


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _int(description: str) -> dict[str, Any]:
    return {"type": "integer", "format": "int64", "description": description}


def definitions() -> dict[str, Any]:
    """The collection's types, in the v2 spelling (``#/definitions/``)."""
    matcher = {
        "description": "The instancetype or preference the VM references, and where it was read from.",
        "type": "object",
        "properties": {
            "kind": _string("Kind of the object, canonical (VirtualMachineClusterInstancetype, ...)."),
            "name": _string("Name of the object (absent when it is inferred from a volume)."),
            "inferFromVolume": _string("The volume the VM infers the object from, when it names none."),
            "revisionName": _string("The ControllerRevision the rendering read it from (the VM is pinned)."),
            "source": _string("ControllerRevision (pinned revision) or Object (the live object)."),
            "stale": {
                "type": "boolean",
                "description": (
                    "Whether the live object changed since the revision the VM captured was taken (its "
                    "spec differs, compared as KubeVirt's revision.Compare does); false when the VM has "
                    "no revision yet, or the object is gone (the Stale condition's reason says which)."
                ),
            },
        },
    }
    return {
        ITEM: {
            "description": (
                "A VirtualMachine with its instancetype and preference applied, exactly as GET "
                "expand-spec returns it, and a summary a list page can show without walking the spec. "
                "One per VirtualMachine, named after it; read-only."
            ),
            "type": "object",
            "properties": {
                "apiVersion": _string("APIVersion of this representation: expand.kubevirt-expand.io/v1."),
                "kind": _string("ExpandedVirtualMachine."),
                "metadata": {
                    "allOf": [_ref(OBJECT_META)],
                    "description": (
                        "Name, namespace, labels and creationTimestamp of the VirtualMachine; "
                        "resourceVersion of this rendering (opaque; see the server's docs)."
                    ),
                },
                "summary": _ref(PREFIX + "Summary"),
                "status": _ref(PREFIX + "ExpandedVirtualMachineStatus"),
                "virtualMachine": {
                    "allOf": [_ref(VM)],
                    "description": "The rendered VirtualMachine (GET expand-spec); absent when rendering failed.",
                },
            },
            "x-kubernetes-group-version-kind": [GVK],
            # The field selectors beyond metadata's, each with the path of the item that holds its value
            # (as a CRD's spec.selectableFields lists them; kube-apiserver publishes no such extension).
            "x-kubevirt-expand-selectable-fields": [
                {"fieldSelector": f, "jsonPath": "." + ITEM_PATHS[f]} for f in ITEM_FIELDS
            ],
        },
        LIST: {
            "description": "A list of ExpandedVirtualMachines.",
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": _string("expand.kubevirt-expand.io/v1."),
                "kind": _string("ExpandedVirtualMachineList."),
                "metadata": _ref(LIST_META),
                "items": {"type": "array", "items": _ref(ITEM), "description": "The items."},
            },
            "x-kubernetes-group-version-kind": [{**GVK, "kind": evm.LIST_KIND}],
        },
        PREFIX + "Summary": {
            "description": (
                "What the rendering amounts to. Unlike KubeVirt's VEP 280 resources, it counts the "
                "preference, tells a pinned revision from the live object, and is there for VMs whose "
                "rendering failed (without cpu and memory)."
            ),
            "type": "object",
            "properties": {
                "instancetype": _ref(PREFIX + "Matcher"),
                "preference": _ref(PREFIX + "Matcher"),
                "cpu": _ref(PREFIX + "CPU"),
                "memory": _ref(PREFIX + "Memory"),
                "stale": {
                    "type": "boolean",
                    "description": (
                        "Whether the instancetype's or the preference's revision is stale (absent for a "
                        "VM with neither)."
                    ),
                },
                "upgrade": _ref(PREFIX + "Upgrade"),
                "launcherPod": {
                    **_ref(launcher_api.POD),
                    "description": (
                        "The resources of the virt-launcher pod KubeVirt would create for the rendered VM "
                        "(as launch-spec's pod; no namespace labels or quotas assumed, the claims its "
                        "volumes name taken as existing); absent where the VM does not render or "
                        "KubeVirt would create no pod."
                    ),
                },
            },
        },
        PREFIX + "Matcher": matcher,
        PREFIX + "Upgrade": {
            "description": (
                "For a stale VM: what taking the latest revisions would do, as KubeVirt's VM controller "
                "judges it (the change preview), assuming the VM runs as its current revisions render it."
            ),
            "type": "object",
            "properties": {
                "verdict": _string("live, restart, refused or error."),
                "message": _string("KubeVirt's RestartRequired message, the refusal's, or the sync error's."),
                "requests": {
                    "description": (
                        "What the upgrade changes in the virt-launcher pod's requests (absent when nothing, "
                        "or when the upgrade is refused or fails): the pod's total requests now and once "
                        "upgraded."
                    ),
                    "type": "object",
                    "properties": {
                        "before": {
                            "description": "The pod's total requests now (resource name to quantity).",
                            "type": "object",
                            "additionalProperties": {"type": "string"},
                        },
                        "after": {
                            "description": "The pod's total requests once upgraded.",
                            "type": "object",
                            "additionalProperties": {"type": "string"},
                        },
                    },
                },
            },
        },
        PREFIX + "CPU": {
            "description": "The rendered vCPU topology (members the rendering leaves unset count as 1).",
            "type": "object",
            "properties": {
                "sockets": _int("Sockets."),
                "cores": _int("Cores per socket."),
                "threads": _int("Threads per core."),
                "vcpus": _int("sockets x cores x threads."),
            },
        },
        PREFIX + "Memory": {
            "description": "The rendered guest memory.",
            "type": "object",
            "properties": {
                "guest": _string("domain.memory.guest, else domain.resources.requests.memory (a quantity).")
            },
        },
        PREFIX + "ExpandedVirtualMachineStatus": {
            "description": "The rendering's outcome.",
            "type": "object",
            "properties": {
                "conditions": {
                    "type": "array",
                    "items": _ref(PREFIX + "Condition"),
                    "description": (
                        "Rendered; Deprecated where an object read is deprecated; Stale for a VM with an "
                        "instancetype or preference."
                    ),
                }
            },
        },
        PREFIX + "Condition": {
            "description": (
                "Rendered: True, or False with the reason and message of the Status GET expand-spec "
                "would answer, or Unknown (reason Forbidden) when the rendering read objects the caller "
                "may not get. Stale: True (RevisionOutdated) when a live object changed since the "
                "revision the VM captured was taken, the message naming it and the upgrade's verdict; "
                "else False with the reason: RevisionCurrent, NoRevision (none captured yet), "
                "ObjectNotFound (the live object is gone), NotComparable or Inferred."
            ),
            "type": "object",
            "required": ["type", "status"],
            "properties": {
                "type": _string("Rendered, Deprecated or Stale."),
                "status": _string("True, False or Unknown."),
                "reason": _string("Rendered, the failure Status' reason, Forbidden; for Stale see above."),
                "message": _string("The failure Status' message; for Stale, what is behind and why."),
            },
        },
    }


LIST_PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "labelSelector",
        "in": "query",
        "type": "string",
        "uniqueItems": True,
        "description": "A selector to restrict the list of returned objects by the VMs' labels.",
    },
    {
        "name": "fieldSelector",
        "in": "query",
        "type": "string",
        "uniqueItems": True,
        "description": (
            "metadata.name, metadata.namespace, status.stale (true or false), spec.instancetype.name, "
            "spec.instancetype.kind, spec.preference.name and spec.preference.kind (a kind in any "
            "spelling a matcher accepts), with =, == or !=; the last five also by the path of the item "
            "that shows them (summary.stale, summary.instancetype.name, ...)."
        ),
    },
    {
        "name": "limit",
        "in": "query",
        "type": "integer",
        "uniqueItems": True,
        "description": "Most items to return; the list's metadata.continue then fetches the rest.",
    },
    {
        "name": "continue",
        "in": "query",
        "type": "string",
        "uniqueItems": True,
        "description": "The continue token of the previous page.",
    },
    {
        "name": "resourceVersion",
        "in": "query",
        "type": "string",
        "uniqueItems": True,
        "description": "List: at least this version. Watch: the changes after it (410 when too old).",
    },
    {
        "name": "resourceVersionMatch",
        "in": "query",
        "type": "string",
        "uniqueItems": True,
        "description": "NotOlderThan (the default) or Exact.",
    },
    {
        "name": "watch",
        "in": "query",
        "type": "boolean",
        "uniqueItems": True,
        "description": "Watch for changes instead of listing.",
    },
    {
        "name": "allowWatchBookmarks",
        "in": "query",
        "type": "boolean",
        "uniqueItems": True,
        "description": "Send BOOKMARK events now and then with the current resourceVersion.",
    },
    {
        "name": "timeoutSeconds",
        "in": "query",
        "type": "integer",
        "uniqueItems": True,
        "description": "End a watch after this long.",
    },
    {
        "name": "pretty",
        "in": "query",
        "type": "string",
        "uniqueItems": True,
        "description": "If 'true', then the output is pretty printed.",
    },
]
NAMESPACE = {
    "name": "namespace",
    "in": "path",
    "required": True,
    "type": "string",
    "uniqueItems": True,
    "description": "object name and auth scope, such as for teams and projects",
}
NAME = {
    "name": "name",
    "in": "path",
    "required": True,
    "type": "string",
    "uniqueItems": True,
    "description": "name of the ExpandedVirtualMachine (the VirtualMachine's name)",
}
ERRORS = ("400", "401", "403", "404", "406", "410", "500", "503", "504")


def operations() -> list[dict[str, Any]]:
    """get and list, as (path, operationId, action, parameters, response definition)."""
    base = f"/apis/{evm.GROUP}/{evm.VERSION}"
    return [
        {
            "path": f"{base}/{evm.PLURAL}",
            "operationId": "listExpandedVirtualMachineForAllNamespaces",
            "action": "list",
            "description": "list or watch ExpandedVirtualMachines of every namespace",
            "parameters": LIST_PARAMETERS,
            "response": LIST,
        },
        {
            "path": f"{base}/namespaces/{{namespace}}/{evm.PLURAL}",
            "operationId": "listNamespacedExpandedVirtualMachine",
            "action": "list",
            "description": "list or watch ExpandedVirtualMachines of a namespace",
            "parameters": [NAMESPACE, *LIST_PARAMETERS],
            "response": LIST,
        },
        {
            "path": f"{base}/namespaces/{{namespace}}/{evm.PLURAL}/{{name}}",
            "operationId": "readNamespacedExpandedVirtualMachine",
            "action": "get",
            "description": "read the specified ExpandedVirtualMachine",
            "parameters": [NAME, NAMESPACE, LIST_PARAMETERS[-1]],
            "response": ITEM,
        },
    ]
