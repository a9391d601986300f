"""The API resources the cluster source reads, and the REST paths of their objects."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from apiserver.render import objects as o
from apiserver.render.kubernetes.names import valid_name, valid_namespace


class InvalidName(ValueError):
    """A name or namespace no object can have: no path is built for it, so nothing is read."""


@dataclass(frozen=True, slots=True)
class Resource:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(self, namespace: str = "", name: str = "") -> str:
        """The collection (all namespaces when ``namespace`` is empty) or object path.

        Names and namespaces are checked as Kubernetes validates them (:mod:`apiserver.render.kubernetes.names`)
        and escaped: a name like ``.`` or ``..`` would otherwise make the URL mean a list or a
        discovery document. Raises :class:`InvalidName` for one no object can have (and for an object
        of a namespaced kind without a namespace)."""
        if (namespace and not valid_namespace(namespace)) or (
            name and (not valid_name(name) or (self.namespaced and not namespace))
        ):
            raise InvalidName(f"no {self.plural} can be named {namespace!r}/{name!r}")
        parts = [self.group_version_path]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name:
            parts.append(quote(name, safe=""))
        return "/".join(parts)


_IT = o.INSTANCETYPE_GROUP

INSTANCETYPE = Resource(_IT, "v1beta1", "virtualmachineinstancetypes", o.INSTANCETYPE, True)
CLUSTER_INSTANCETYPE = Resource(
    _IT, "v1beta1", "virtualmachineclusterinstancetypes", o.CLUSTER_INSTANCETYPE, False
)
PREFERENCE = Resource(_IT, "v1beta1", "virtualmachinepreferences", o.PREFERENCE, True)
CLUSTER_PREFERENCE = Resource(_IT, "v1beta1", "virtualmachineclusterpreferences", o.CLUSTER_PREFERENCE, False)
FLAVOR = Resource(o.FLAVOR_GROUP, "v1alpha1", "virtualmachineflavors", o.FLAVOR, True)
CLUSTER_FLAVOR = Resource(o.FLAVOR_GROUP, "v1alpha1", "virtualmachineclusterflavors", o.CLUSTER_FLAVOR, False)
PRESET = Resource("kubevirt.io", "v1", "virtualmachineinstancepresets", o.PRESET, True)
KUBEVIRT = Resource("kubevirt.io", "v1", "kubevirts", o.KUBEVIRT, True)
VIRTUAL_MACHINE = Resource("kubevirt.io", "v1", "virtualmachines", o.VIRTUAL_MACHINE, True)
CONTROLLER_REVISION = Resource("apps", "v1", "controllerrevisions", o.CONTROLLER_REVISION, True)
PVC = Resource("", "v1", "persistentvolumeclaims", o.PERSISTENT_VOLUME_CLAIM, True)
DATA_VOLUME = Resource("cdi.kubevirt.io", "v1beta1", "datavolumes", o.DATA_VOLUME, True)
DATA_SOURCE = Resource("cdi.kubevirt.io", "v1beta1", "datasources", o.DATA_SOURCE, True)
VOLUME_SNAPSHOT = Resource("snapshot.storage.k8s.io", "v1", "volumesnapshots", o.VOLUME_SNAPSHOT, True)
VIRTUAL_MACHINE_INSTANCE = Resource(
    "kubevirt.io", "v1", "virtualmachineinstances", o.VIRTUAL_MACHINE_INSTANCE, True
)
# What a virt-launcher pod's resources depend on beside the VM (launch-spec): the VM's Namespace (its
# labels) and the ResourceQuotas there. Read fresh for each request, through the caller's review.
NAMESPACE = Resource("", "v1", "namespaces", "Namespace", False)
RESOURCE_QUOTA = Resource("", "v1", "resourcequotas", "ResourceQuota", True)

# Watched and cached: what nearly every expand reads.
CACHED = (INSTANCETYPE, CLUSTER_INSTANCETYPE, PREFERENCE, CLUSTER_PREFERENCE, PRESET, KUBEVIRT)
# Watched too when their CRDs exist: the pre-rename kinds, found under the instancetype refs.
FLAVORS = {o.INSTANCETYPE: FLAVOR, o.CLUSTER_INSTANCETYPE: CLUSTER_FLAVOR}
# Read by name on demand, never cached (labels on volumes decide inferFromVolume; they must be fresh; a
# VM's running VMI is read by validate=true for a ready VM with status.volumeRequests).
DIRECT = {r.kind: r for r in (PVC, DATA_VOLUME, DATA_SOURCE, VOLUME_SNAPSHOT, VIRTUAL_MACHINE_INSTANCE)}
