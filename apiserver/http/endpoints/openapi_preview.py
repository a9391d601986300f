"""OpenAPI for ``virtualmachinechangepreviews``: the ``VirtualMachineChangePreview`` schema (so
``kubectl explain`` and generated clients get its types) and its create operation, in the neutral form
:mod:`apiserver.http.endpoints.openapi` turns into v2 and v3."""

from __future__ import annotations

from typing import Any

from apiserver.http.endpoints.discovery import PREVIEW_KIND, PREVIEW_PLURAL
from apiserver.sources.rendered import items as evm

PREFIX = "io.kubevirt-expand.expand.v1."
PREVIEW = PREFIX + PREVIEW_KIND
SPEC = PREVIEW + "Spec"
STATUS = PREVIEW + "Status"
MATCHER = PREFIX + "ChangePreviewMatcher"
RUNNING = PREFIX + "ChangePreviewRunning"
OBJECT_META = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"
VM = "v1.VirtualMachine"
GVK = {"group": evm.GROUP, "version": evm.VERSION, "kind": PREVIEW_KIND}
ERRORS = ("400", "401", "403", "404", "406", "413", "415", "422", "500", "503", "504")


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/definitions/{name}"}


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _object(description: str) -> dict[str, Any]:
    return {"type": "object", "description": description, "x-kubernetes-preserve-unknown-fields": True}


def _path_values(description: str) -> dict[str, Any]:
    return {
        "type": "array",
        "description": description,
        "items": {
            "type": "object",
            "properties": {
                "path": _string("JSON Pointer (RFC 6901)."),
                "value": _object("The value written (null: removed)."),
            },
        },
    }


def definitions() -> dict[str, Any]:
    """The preview's types, in the v2 spelling (``#/definitions/``)."""
    return {
        PREVIEW: {
            "description": (
                "What a change does to a VirtualMachine before anyone makes it: both VMs rendered with their "
                "instancetype and preference, the difference, and whether KubeVirt's VM controller applies it "
                "live or needs a restart. Created, never stored (a review, as SubjectAccessReview)."
            ),
            "type": "object",
            "required": ["spec"],
            "properties": {
                "apiVersion": _string("expand.kubevirt-expand.io/v1."),
                "kind": _string(PREVIEW_KIND + "."),
                "metadata": _ref(OBJECT_META),
                "spec": _ref(SPEC),
                "status": _ref(STATUS),
            },
            "x-kubernetes-group-version-kind": [dict(GVK)],
        },
        MATCHER: {
            "description": "An instancetype or preference to switch to.",
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": _string("Its name."),
                "kind": _string("Its kind (default: the cluster kind)."),
            },
        },
        RUNNING: {
            "description": "How a VM given in the body runs (omit for a stopped VM).",
            "type": "object",
            "properties": {
                "virtualMachine": {"allOf": [_ref(VM)], "description": "The VM as it was started."},
                "virtualMachineInstance": _object("Its running VirtualMachineInstance (kubevirt.io/v1)."),
            },
        },
        SPEC: {
            "description": "The VM and the change: a stored VM (vmName) and a switch, an upgrade or an edited VM; "
            "or a VM in the body.",
            "type": "object",
            "properties": {
                "vmName": _string("A VirtualMachine of the namespace: read with its VMI and start revision."),
                "instancetype": _ref(MATCHER),
                "preference": _ref(MATCHER),
                "upgrade": {
                    "type": "boolean",
                    "description": "Take the latest instancetype and preference (drop the captured revisions).",
                },
                "virtualMachine": {"allOf": [_ref(VM)], "description": "The VM as proposed."},
                "running": _ref(RUNNING),
            },
        },
        STATUS: {
            "description": "The answer.",
            "type": "object",
            "properties": {
                "verdict": {
                    "type": "string",
                    "enum": ["live", "restart", "refused", "error", "stopped"],
                    "description": "live: applied to the running VM; restart: KubeVirt sets RestartRequired; "
                    "refused: the VM webhook refuses it; error: KubeVirt's reconcile fails; stopped: no VMI.",
                },
                "message": _string("KubeVirt's RestartRequired message."),
                "rolloutStrategy": _string("The KubeVirt CR's vmRolloutStrategy (LiveUpdate or Stage)."),
                "patch": {
                    "type": "array",
                    "description": "RFC 6902 JSON Patch from the rendered running VM to the rendered proposed one.",
                    "items": _object("One operation (op, path, value)."),
                },
                "changes": {
                    "type": "array",
                    "description": "Every changed field (path, old, new; a side without the field has no member).",
                    "items": _object("One change."),
                },
                "liveUpdates": _path_values("The JSON-patch values KubeVirt writes to the running VMI."),
                "vmPatches": _path_values("The JSON-patch values KubeVirt writes to the VM (firmware UUID)."),
                "volumeUpdateState": _object(
                    "The VM's status.volumeUpdateState KubeVirt writes under updateVolumesStrategy Migration "
                    "(volumeMigrationState.migratedVolumes: each volume's source and destination claim)."
                ),
                "syncError": _object("KubeVirt's sync error (reason, message) when its reconcile fails."),
                "refusal": _object("The Status the VM webhook, or the renderer, answers."),
                "warnings": {"type": "array", "items": {"type": "string"}, "description": "Warnings."},
                "notModelled": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Parts of KubeVirt's reconcile this answer does not model for the VM.",
                },
            },
        },
    }


NAMESPACE = {
    "name": "namespace",
    "in": "path",
    "required": True,
    "type": "string",
    "uniqueItems": True,
    "description": "object name and auth scope, such as for teams and projects",
}


FIELD_VALIDATION = {
    "name": "fieldValidation",
    "in": "query",
    "type": "string",
    "uniqueItems": True,
    "description": (
        "How to treat members of the VirtualMachineChangePreview this server does not know: Strict (what "
        "kubectl sends) refuses them with 422, Warn (the default when none is named, as kube-apiserver's) "
        "answers with a Warning header each, Ignore drops them."
    ),
}


def operation() -> dict[str, Any]:
    """create, as (path, operationId, action, parameters, request and response definition)."""
    return {
        "path": f"/apis/{evm.GROUP}/{evm.VERSION}/namespaces/{{namespace}}/{PREVIEW_PLURAL}",
        "operationId": "createNamespacedVirtualMachineChangePreview",
        "action": "post",
        "description": "create a VirtualMachineChangePreview: preview a change to a VirtualMachine",
        "parameters": [NAMESPACE, FIELD_VALIDATION],
        "request": PREVIEW,
        "response": PREVIEW,
    }
