"""What the renderer may look up, and how it asks for it.

Rendering is pure: it never fetches anything. It asks an :class:`ObjectLookup` for the objects a VM
references. A lookup that does not hold an object yet raises :class:`LookupPending`; an asynchronous
caller (the folder or cluster source) then fetches that one object and runs the renderer again. The
finding phase comes first and costs microseconds, so a retry is cheap, and the renderer reads exactly
the objects KubeVirt would read, in the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

JSONDict = dict[str, Any]

INSTANCETYPE = "VirtualMachineInstancetype"
CLUSTER_INSTANCETYPE = "VirtualMachineClusterInstancetype"
PREFERENCE = "VirtualMachinePreference"
CLUSTER_PREFERENCE = "VirtualMachineClusterPreference"
CONTROLLER_REVISION = "ControllerRevision"
PRESET = "VirtualMachineInstancePreset"
VIRTUAL_MACHINE = "VirtualMachine"
KUBEVIRT = "KubeVirt"
# Read only to resolve inferFromVolume matchers (render/infer.py).
PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
DATA_VOLUME = "DataVolume"
DATA_SOURCE = "DataSource"
VOLUME_SNAPSHOT = "VolumeSnapshot"
# Read only by validate=true, for a VM with status.volumeRequests that says it is ready (render/admission).
VIRTUAL_MACHINE_INSTANCE = "VirtualMachineInstance"

INSTANCETYPE_GROUP = "instancetype.kubevirt.io"
FLAVOR_GROUP = "flavor.kubevirt.io"

# Pre-rename names of the instancetype kinds (flavor.kubevirt.io/v1alpha1), accepted as aliases.
FLAVOR = "VirtualMachineFlavor"
CLUSTER_FLAVOR = "VirtualMachineClusterFlavor"
KIND_ALIASES: Mapping[str, str] = {FLAVOR: INSTANCETYPE, CLUSTER_FLAVOR: CLUSTER_INSTANCETYPE}

CLUSTER_SCOPED_KINDS = frozenset({CLUSTER_INSTANCETYPE, CLUSTER_PREFERENCE, KUBEVIRT})

# Resource (plural) names as the API server spells them in NotFound messages.
RESOURCE_NAMES: Mapping[str, str] = {
    INSTANCETYPE: "virtualmachineinstancetypes.instancetype.kubevirt.io",
    CLUSTER_INSTANCETYPE: "virtualmachineclusterinstancetypes.instancetype.kubevirt.io",
    PREFERENCE: "virtualmachinepreferences.instancetype.kubevirt.io",
    CLUSTER_PREFERENCE: "virtualmachineclusterpreferences.instancetype.kubevirt.io",
    CONTROLLER_REVISION: "controllerrevisions.apps",
    PRESET: "virtualmachineinstancepresets.kubevirt.io",
    VIRTUAL_MACHINE: "virtualmachines.kubevirt.io",
    PERSISTENT_VOLUME_CLAIM: "persistentvolumeclaims",
    DATA_VOLUME: "datavolumes.cdi.kubevirt.io",
    DATA_SOURCE: "datasources.cdi.kubevirt.io",
    VOLUME_SNAPSHOT: "volumesnapshots.snapshot.storage.k8s.io",
    VIRTUAL_MACHINE_INSTANCE: "virtualmachineinstances.kubevirt.io",
}


class ObjectRef(NamedTuple):
    """One object by canonical kind, namespace ("" for cluster-scoped kinds) and name.

    A named tuple rather than a frozen dataclass: refs are dictionary keys on every render, and a
    tuple's hash and equality run in C (a dataclass's run Python code, ~0.15 us per lookup).
    """

    kind: str
    namespace: str
    name: str

    def not_found_message(self) -> str:
        """The API server's NotFound text, which KubeVirt passes through verbatim."""
        return f'{RESOURCE_NAMES.get(self.kind, self.kind)} "{self.name}" not found'


class LookupPending(Exception):
    """The lookup does not hold ``ref`` yet: fetch it, then render again."""

    def __init__(self, ref: ObjectRef | None = None, *, presets_namespace: str | None = None) -> None:
        self.ref = ref
        self.presets_namespace = presets_namespace
        super().__init__(ref or presets_namespace)


class ObjectLookup(Protocol):
    """Read access to the objects a VM may reference."""

    def get(self, ref: ObjectRef) -> Mapping[str, Any] | None:
        """The object, or None when it does not exist. May raise :class:`LookupPending`."""

    def presets(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        """Every VirtualMachineInstancePreset of a namespace. May raise :class:`LookupPending`."""


def canonical_kind(kind: str) -> str:
    """Map the legacy flavor kinds onto the instancetype kinds; other kinds are returned as they are."""
    return KIND_ALIASES.get(kind, kind)


def ref_of(obj: Mapping[str, Any]) -> ObjectRef | None:
    """The ref under which an object is found, or None when it is not a kind the renderer reads."""
    # type() first: an ABC isinstance check costs more than the rest of this function.
    if type(obj) is not dict and not isinstance(obj, Mapping):  # the Python API refuses these
        return None
    kind = obj.get("kind")
    meta = obj.get("metadata")
    if type(kind) is not str and not isinstance(kind, str):
        return None
    if type(meta) is not dict and not isinstance(meta, Mapping):
        return None
    name = meta.get("name")
    if not name or (type(name) is not str and not isinstance(name, str)):
        return None
    kind = canonical_kind(kind)
    namespace = meta.get("namespace") or ""
    if type(namespace) is not str and not isinstance(namespace, str):
        return None
    if kind in CLUSTER_SCOPED_KINDS:
        namespace = ""
    return ObjectRef(kind, namespace, name)


class ObjectIndex:
    """An in-memory :class:`ObjectLookup` over a fixed set of objects (CLI, Python API, folder source)."""

    __slots__ = ("_objects", "_presets")

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()) -> None:
        self._objects: dict[ObjectRef, Mapping[str, Any]] = {}
        self._presets: dict[str, list[Mapping[str, Any]]] = {}
        for obj in objects:
            self.add(obj)

    def add(self, obj: Mapping[str, Any]) -> None:
        ref = ref_of(obj)
        if ref is None:
            return
        self._objects[ref] = obj
        if ref.kind == PRESET:
            self._presets.setdefault(ref.namespace, []).append(obj)

    def get(self, ref: ObjectRef) -> Mapping[str, Any] | None:
        return self._objects.get(ref)

    def presets(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        return self._presets.get(namespace, ())

    def of_kind(self, kind: str, namespace: str | None) -> list[Mapping[str, Any]]:
        """Every object of ``kind`` in ``namespace`` ("" for cluster-scoped ones; None: any), in name order."""
        found = [
            (ref.name, obj)
            for ref, obj in self._objects.items()
            if ref.kind == kind and (namespace is None or ref.namespace == namespace)
        ]
        return [obj for _, obj in sorted(found, key=lambda pair: pair[0])]

    def __len__(self) -> int:
        return len(self._objects)
