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


# What KubeVirt's own control plane (devcluster/kubevirt.py) needs beyond the kinds the server reads: every
# informer virt-api and virt-controller wait on (KubeVirt's pkg/controller/virtinformers.go), with the status
# subresource where KubeVirt's CRDs have one (virt-operator's components/crds.go): virt-controller writes a VM's
# status, and patches kubevirts/status, through it. (group, version, plural, kind, namespaced, status, short names)
PLANE_KINDS: tuple[tuple[str, str, str, str, bool, bool, tuple[str, ...]], ...] = (
    ("kubevirt.io", "v1", "virtualmachines", "VirtualMachine", True, True, ("vm", "vms")),
    ("kubevirt.io", "v1", "virtualmachineinstances", "VirtualMachineInstance", True, False, ("vmi", "vmis")),
    ("kubevirt.io", "v1", "kubevirts", "KubeVirt", True, True, ("kv", "kvs")),
    (
        "kubevirt.io",
        "v1",
        "virtualmachineinstancepresets",
        "VirtualMachineInstancePreset",
        True,
        False,
        ("vmipreset",),
    ),
    (
        "kubevirt.io",
        "v1",
        "virtualmachineinstancereplicasets",
        "VirtualMachineInstanceReplicaSet",
        True,
        True,
        ("vmirs",),
    ),
    (
        "kubevirt.io",
        "v1",
        "virtualmachineinstancemigrations",
        "VirtualMachineInstanceMigration",
        True,
        True,
        ("vmim",),
    ),
    (
        "instancetype.kubevirt.io",
        "v1beta1",
        "virtualmachineinstancetypes",
        "VirtualMachineInstancetype",
        True,
        False,
        ("vminstancetype", "vmf"),
    ),
    (
        "instancetype.kubevirt.io",
        "v1beta1",
        "virtualmachineclusterinstancetypes",
        "VirtualMachineClusterInstancetype",
        False,
        False,
        ("vmclusterinstancetype", "vmcf"),
    ),
    (
        "instancetype.kubevirt.io",
        "v1beta1",
        "virtualmachinepreferences",
        "VirtualMachinePreference",
        True,
        False,
        ("vmpref", "vmp"),
    ),
    (
        "instancetype.kubevirt.io",
        "v1beta1",
        "virtualmachineclusterpreferences",
        "VirtualMachineClusterPreference",
        False,
        False,
        ("vmcp", "vmcps"),
    ),
    ("pool.kubevirt.io", "v1beta1", "virtualmachinepools", "VirtualMachinePool", True, True, ("vmpool",)),
    (
        "snapshot.kubevirt.io",
        "v1beta1",
        "virtualmachinesnapshots",
        "VirtualMachineSnapshot",
        True,
        True,
        ("vmsnapshot",),
    ),
    (
        "snapshot.kubevirt.io",
        "v1beta1",
        "virtualmachinesnapshotcontents",
        "VirtualMachineSnapshotContent",
        True,
        True,
        ("vmsnapshotcontent",),
    ),
    (
        "snapshot.kubevirt.io",
        "v1beta1",
        "virtualmachinerestores",
        "VirtualMachineRestore",
        True,
        True,
        ("vmrestore",),
    ),
    ("export.kubevirt.io", "v1", "virtualmachineexports", "VirtualMachineExport", True, True, ("vmexport",)),
    (
        "backup.kubevirt.io",
        "v1alpha1",
        "virtualmachinebackups",
        "VirtualMachineBackup",
        True,
        True,
        ("vmbackup",),
    ),
    (
        "backup.kubevirt.io",
        "v1alpha1",
        "virtualmachinebackuptrackers",
        "VirtualMachineBackupTracker",
        True,
        True,
        ("vmbackuptracker",),
    ),
    ("migrations.kubevirt.io", "v1alpha1", "migrationpolicies", "MigrationPolicy", False, True, ()),
    ("clone.kubevirt.io", "v1beta1", "virtualmachineclones", "VirtualMachineClone", True, True, ("vmclone",)),
)


def plane_crds() -> dict[str, Any]:
    """The CRDs KubeVirt's control plane runs on, as one ``List``: open schemas, status subresources as
    KubeVirt declares them. Applied over :func:`kubevirt_crds` (same groups, versions and plurals)."""
    items = []
    for group, version, plural, kind, namespaced, status, short in PLANE_KINDS:
        served: dict[str, Any] = {
            "name": version,
            "served": True,
            "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        }
        if status:
            served["subresources"] = {"status": {}}
        items.append(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{plural}.{group}"},
                "spec": {
                    "group": group,
                    "scope": "Namespaced" if namespaced else "Cluster",
                    "names": {
                        "kind": kind,
                        "listKind": f"{kind}List",
                        "plural": plural,
                        "singular": kind.lower(),
                        "shortNames": list(SHORT_NAMES.get(kind, short)),
                    },
                    "versions": [served],
                },
            }
        )
    return {"apiVersion": "v1", "kind": "List", "items": items}
