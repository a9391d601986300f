"""OpenAPI for GET launch-spec, PUT launch-vm-spec and PUT launch-vmi-spec
(:mod:`apiserver.http.endpoints.launcher`): the ``VirtualMachineLaunch`` schema and the three operations per
version, in the neutral form :mod:`apiserver.http.endpoints.openapi` turns into v2 and v3 (``body``: the
definition the request body is, or None)."""

from __future__ import annotations

from typing import Any

from apiserver.http.endpoints import launcher

PREFIX = "io.kubevirt-expand.expand.v1."
LAUNCH = PREFIX + launcher.KIND
POD = PREFIX + "LauncherPod"
CONTAINER = PREFIX + "LauncherContainer"
REQUIREMENTS = PREFIX + "ContainerResources"
TOTALS = PREFIX + "PodTotals"
PART = PREFIX + "MemoryOverheadPart"
VMI = PREFIX + "VirtualMachineInstance"
QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
VMI_SPEC = "v1.VirtualMachineInstanceSpec"
OBJECT_META = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"
GVK = {"group": "expand.kubevirt-expand.io", "version": "v1", "kind": launcher.KIND}
ERRORS = ("400", "401", "403", "404", "406", "422", "429", "503", "504")


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/definitions/{name}"}


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _resource_list(description: str) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": _ref(QUANTITY), "description": description}


def definitions() -> dict[str, Any]:
    return {
        LAUNCH: {
            "description": (
                "What a VM will cost: the VirtualMachineInstance KubeVirt's VM controller creates for it "
                "(as virt-api's VMI webhook defaults it) and the resources of its virt-launcher pod "
                "(virt-controller's template service)."
            ),
            "type": "object",
            "required": ["vmi", "pod"],
            "properties": {
                "apiVersion": _string("expand.kubevirt-expand.io/v1"),
                "kind": _string(launcher.KIND),
                "metadata": _ref(OBJECT_META),
                "vmi": _ref(VMI),
                "pod": _ref(POD),
                "quota": {
                    "type": "object",
                    "description": (
                        "Whether kube-apiserver's quota admission would admit the pod in the namespace "
                        "(its ResourceQuotas, status.used counted): fits, and refusedBy (its reasons)."
                    ),
                    "properties": {
                        "fits": {"type": "boolean"},
                        "refusedBy": {"type": "array", "items": {"type": "string"}},
                    },
                },
                "assumed": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": (
                        "What was assumed of the cluster (architecture, namespace labels, quotas, "
                        "claims taken as existing under assumePVCs)."
                    ),
                },
            },
        },
        VMI: {
            "description": "The VirtualMachineInstance KubeVirt would create (kubevirt.io/v1), as stored once "
            "virt-controller has created its pod.",
            "type": "object",
            "properties": {
                "apiVersion": _string("kubevirt.io/v1"),
                "kind": _string("VirtualMachineInstance"),
                "metadata": _ref(OBJECT_META),
                "spec": _ref(VMI_SPEC),
                "status": {
                    "type": "object",
                    "description": "What virt-api's webhook and virt-controller set: phase (Scheduling), memory (with "
                    "memoryOverhead), CPU topology, qosClass, runtimeUser; virtualMachineRevisionName for a VM's VMI.",
                },
            },
        },
        POD: {
            "description": "The virt-launcher pod's resources, as kube-apiserver stores them (a limit without a "
            "request is the request too).",
            "type": "object",
            "properties": {
                "containers": {"type": "array", "items": _ref(CONTAINER), "description": "compute first."},
                "initContainers": {"type": "array", "items": _ref(CONTAINER)},
                "total": _ref(TOTALS),
                "memoryOverhead": _ref(QUANTITY),
                "memoryOverheadParts": {
                    "type": "array",
                    "items": _ref(PART),
                    "description": "The overhead's addends, in KubeVirt's order (they add up to memoryOverhead).",
                },
            },
        },
        CONTAINER: {
            "type": "object",
            "properties": {"name": _string("The container's name."), "resources": _ref(REQUIREMENTS)},
        },
        REQUIREMENTS: {
            "type": "object",
            "properties": {
                "requests": _resource_list("Requests."),
                "limits": _resource_list("Limits."),
                "claims": {
                    "type": "array",
                    "items": {"type": "object"},
                    "description": "Resource claims (DRA).",
                },
            },
        },
        TOTALS: {
            "description": (
                "The pod's effective requests and limits (containers and running init containers summed, "
                "each other init container where it asks for more). A limit a container leaves unset is "
                "not counted: where a container has none the pod has none."
            ),
            "type": "object",
            "properties": {"requests": _resource_list("Requests."), "limits": _resource_list("Limits.")},
        },
        PART: {
            "type": "object",
            "properties": {"name": _string("What the memory is for."), "memory": _ref(QUANTITY)},
        },
    }


def operations(api_group: str, version: str) -> list[dict[str, Any]]:
    prefix = f"/apis/{api_group}/{version}/namespaces/{{namespace}}"
    namespace = {
        "name": "namespace",
        "in": "path",
        "required": True,
        "type": "string",
        "description": "Namespace",
    }
    name = {"name": "name", "in": "path", "required": True, "type": "string", "description": "Name of the VM"}
    arch = {
        "name": "arch",
        "in": "query",
        "type": "string",
        "description": "The architecture virt-controller runs on (amd64, arm64, s390x); default: the "
        "KubeVirt CR's default architecture.",
    }
    presets = {"name": "presets", "in": "query", "type": "boolean", "description": "Apply the presets too."}
    assume = {
        "name": "assumePVCs",
        "in": "query",
        "type": "boolean",
        "description": "Take a PersistentVolumeClaim a volume names but the cluster does not hold as an "
        "existing filesystem claim (listed in assumed); without it KubeVirt creates no pod (422).",
    }
    return [
        {
            "path": f"{prefix}/virtualmachines/{{name}}/{launcher.LAUNCH_SPEC}",
            "method": "get",
            "operationId": f"{version}vm-LaunchSpec",
            "description": "The VMI and the virt-launcher pod's resources of the stored VirtualMachine.",
            "parameters": [name, namespace, arch, presets, assume],
            "body": None,
        },
        {
            "path": f"{prefix}/{launcher.LAUNCH_VM_SPEC}",
            "method": "put",
            "operationId": f"{version}LaunchSpec",
            "description": "The VMI and the virt-launcher pod's resources of the VirtualMachine in the body.",
            "parameters": [namespace, arch, presets, assume],
            "body": "v1.VirtualMachine",
        },
        {
            "path": f"{prefix}/{launcher.LAUNCH_VMI_SPEC}",
            "method": "put",
            "operationId": f"{version}LaunchVMISpec",
            "description": "The VirtualMachineInstance in the body and its virt-launcher pod's resources, as the "
            "cluster stores them when a user creates it (virt-api's VMI webhook, no VM controller).",
            "parameters": [namespace, arch, presets, assume],
            "body": VMI,
        },
    ]
