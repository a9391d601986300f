"""CustomResourceDefinitions for the KubeVirt kinds the server reads, for a control plane without KubeVirt.

``../shared/k8s/kubevirt-crds.yaml`` declares them where ../shared is there (the tests use it); elsewhere
(a clone with only ``KUBEBUILDER_ASSETS``) ``hack/dev-cluster.sh`` makes these from the cluster source's own
list of resources (apiserver/sources/cluster/kinds.py), so both always agree on group, version and plural.
Open schemas: kube-apiserver stores whatever is applied, as an installation without KubeVirt's validating
webhooks would; the server is what judges the VMs.
"""

from __future__ import annotations

from typing import Any

from apiserver.sources.cluster import kinds

# kubectl's short names for them (``kubectl get vm``), as KubeVirt's CRDs declare.
SHORT_NAMES = {
    "VirtualMachine": ["vm", "vms"],
    "KubeVirt": ["kv", "kvs"],
    "VirtualMachineInstancePreset": ["vmipreset", "vmipresets"],
    "VirtualMachineInstancetype": ["vminstancetype", "vminstancetypes", "vmf", "vmfs"],
    "VirtualMachineClusterInstancetype": ["vmclusterinstancetype", "vmclusterinstancetypes", "vmcf", "vmcfs"],
    "VirtualMachinePreference": ["vmpref", "vmprefs", "vmp", "vmps"],
    "VirtualMachineClusterPreference": ["vmcp", "vmcps"],
}

RESOURCES = (kinds.VIRTUAL_MACHINE, *kinds.CACHED)


def crd(resource: kinds.Resource) -> dict[str, Any]:
    """One CRD: the resource's group, version, plural and scope, any object accepted."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{resource.plural}.{resource.group}"},
        "spec": {
            "group": resource.group,
            "scope": "Namespaced" if resource.namespaced else "Cluster",
            "names": {
                "kind": resource.kind,
                "plural": resource.plural,
                "singular": resource.kind.lower(),
                "shortNames": SHORT_NAMES.get(resource.kind, []),
            },
            "versions": [
                {
                    "name": resource.version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }


def kubevirt_crds() -> dict[str, Any]:
    """All of them as one ``List`` (what ``kubectl apply -f -`` takes)."""
    return {"apiVersion": "v1", "kind": "List", "items": [crd(r) for r in RESOURCES]}
