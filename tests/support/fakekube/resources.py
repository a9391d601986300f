"""The resource types the fake API server serves, as kube-apiserver would with KubeVirt and CDI installed."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    # ``subresources: {status: {}}`` in the CRD: writes of the object keep its status, and only
    # :meth:`FakeKube.update_status` (kube-apiserver's ``/status``) writes it.
    status_subresource: bool = False

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """``<plural>.<group>``, the spelling of NotFound messages (``<plural>`` alone for core)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def singular(self) -> str:
        return self.kind.lower()


IT = "instancetype.kubevirt.io"

DEFAULT_RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "namespaces", "Namespace", False, ("ns",)),
    ResourceType("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    ResourceType("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",)),
    # kube-apiserver keeps a quota's status apart (its quota controller writes it through /status).
    ResourceType("", "v1", "resourcequotas", "ResourceQuota", True, ("quota",), status_subresource=True),
    ResourceType("apps", "v1", "controllerrevisions", "ControllerRevision", True),
    # KubeVirt's VM CRD has the status subresource (virt-operator's components/crds.go): virt-controller
    # writes a VM's status, its captured revisions included, only through /status.
    ResourceType(
        "kubevirt.io", "v1", "virtualmachines", "VirtualMachine", True, ("vm", "vms"), status_subresource=True
    ),
    ResourceType(
        "kubevirt.io", "v1", "virtualmachineinstances", "VirtualMachineInstance", True, ("vmi", "vmis")
    ),
    ResourceType(
        "kubevirt.io",
        "v1",
        "virtualmachineinstancepresets",
        "VirtualMachineInstancePreset",
        True,
        ("vmipreset",),
    ),
    ResourceType("kubevirt.io", "v1", "kubevirts", "KubeVirt", True, ("kv",)),
    ResourceType(IT, "v1beta1", "virtualmachineinstancetypes", "VirtualMachineInstancetype", True, ("vmf",)),
    ResourceType(
        IT,
        "v1beta1",
        "virtualmachineclusterinstancetypes",
        "VirtualMachineClusterInstancetype",
        False,
        ("vmcf",),
    ),
    ResourceType(IT, "v1beta1", "virtualmachinepreferences", "VirtualMachinePreference", True, ("vmpref",)),
    ResourceType(
        IT, "v1beta1", "virtualmachineclusterpreferences", "VirtualMachineClusterPreference", False, ("vmcp",)
    ),
    ResourceType("cdi.kubevirt.io", "v1beta1", "datavolumes", "DataVolume", True, ("dv",)),
    ResourceType("cdi.kubevirt.io", "v1beta1", "datasources", "DataSource", True, ("das",)),
    ResourceType("snapshot.storage.k8s.io", "v1", "volumesnapshots", "VolumeSnapshot", True, ("vs",)),
)

# The pre-rename kinds; served only when a test passes them in
# (``FakeKube(resources=[..., *FLAVOR_RESOURCES])``).
FLAVOR_RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("flavor.kubevirt.io", "v1alpha1", "virtualmachineflavors", "VirtualMachineFlavor", True),
    ResourceType(
        "flavor.kubevirt.io", "v1alpha1", "virtualmachineclusterflavors", "VirtualMachineClusterFlavor", False
    ),
)
