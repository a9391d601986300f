"""The kinds KubeVirt v1.6's client-go scheme knows, and the Go type each decodes into.

``compatibility.Decode`` in v0.58 to v1.6 hands revision data to that scheme's universal deserializer.
It needs ``kind`` and a registered ``apiVersion``; any registered kind decodes, and the callers then
reject the wrong ones with ``unexpected type in ControllerRevision: %T``. So the table below decides
between "no kind ... is registered" and "unexpected type *pkg.Kind". It mirrors
``kubevirt.io/client-go/kubevirt/scheme`` at v1.6.6 plus what ``metav1.AddToGroupVersion`` adds to
every group version.
"""

from __future__ import annotations

from collections.abc import Mapping

from apiserver.render.golang.gotext import go_quote

# runtime.NewScheme() names a scheme after the file and line that created it.
SCHEME_NAME = "kubevirt.io/client-go/kubevirt/scheme/register.go:43"

INTERNAL_VERSION = "__internal"

_META_KINDS = (
    "WatchEvent",
    "ListOptions",
    "GetOptions",
    "DeleteOptions",
    "CreateOptions",
    "UpdateOptions",
    "PatchOptions",
)
# metav1.AddUnversionedTypes: found by kind alone, whatever the apiVersion says.
UNVERSIONED_KINDS = frozenset({"Status", "APIVersions", "APIGroupList", "APIGroup", "APIResourceList"})


def _with_lists(*kinds: str) -> tuple[str, ...]:
    return tuple(k for kind in kinds for k in (kind, kind + "List"))


_INSTANCETYPE_KINDS = _with_lists(
    "VirtualMachineInstancetype",
    "VirtualMachineClusterInstancetype",
    "VirtualMachinePreference",
    "VirtualMachineClusterPreference",
)
_SNAPSHOT_KINDS = _with_lists(
    "VirtualMachineSnapshot", "VirtualMachineSnapshotContent", "VirtualMachineRestore"
)

# (group, version) -> kinds registered by KubeVirt's own packages (Go package name = version).
_GROUP_VERSIONS: Mapping[tuple[str, str], tuple[str, ...]] = {
    ("", "v1"): (),
    ("clone.kubevirt.io", "v1alpha1"): _with_lists("VirtualMachineClone"),
    ("clone.kubevirt.io", "v1beta1"): _with_lists("VirtualMachineClone"),
    ("kubevirt.io", "v1"): _with_lists(
        "VirtualMachineInstance",
        "VirtualMachineInstanceReplicaSet",
        "VirtualMachineInstancePreset",
        "VirtualMachineInstanceMigration",
        "VirtualMachine",
        "KubeVirt",
    ),
    ("export.kubevirt.io", "v1alpha1"): _with_lists("VirtualMachineExport"),
    ("export.kubevirt.io", "v1beta1"): _with_lists("VirtualMachineExport"),
    ("instancetype.kubevirt.io", "v1alpha1"): _INSTANCETYPE_KINDS,
    ("instancetype.kubevirt.io", "v1alpha2"): _INSTANCETYPE_KINDS,
    ("instancetype.kubevirt.io", "v1beta1"): _INSTANCETYPE_KINDS,
    ("migrations.kubevirt.io", "v1alpha1"): _with_lists("MigrationPolicy"),
    ("pool.kubevirt.io", "v1alpha1"): _with_lists("VirtualMachinePool"),
    ("snapshot.kubevirt.io", "v1alpha1"): _SNAPSHOT_KINDS,
    ("snapshot.kubevirt.io", "v1beta1"): _SNAPSHOT_KINDS,
}
_GROUPS = frozenset(group for group, _ in _GROUP_VERSIONS)


class NotRegistered(Exception):
    """``runtime.notRegisteredErr`` for a kind: its text is apimachinery's."""


def go_type(group: str, version: str, kind: str) -> str:
    """The ``%T`` of what the scheme creates for this GroupVersionKind, or raise :class:`NotRegistered`."""
    kinds = _GROUP_VERSIONS.get((group, version))
    if kinds is not None:
        if kind in kinds:
            # core/v1 is package "v1"; every other KubeVirt API package is named after its version.
            return f"*{version}.{kind}"
        if kind in _META_KINDS:
            return f"*v1.{kind}"
    if version == INTERNAL_VERSION and group in _GROUPS and kind == "WatchEvent":
        return "*v1.InternalEvent"
    if kind in UNVERSIONED_KINDS:
        return f"*v1.{kind}"
    if version == INTERNAL_VERSION:
        raise NotRegistered(
            f"no kind {go_quote(kind)} is registered for the internal version of group {go_quote(group)} "
            f"in scheme {go_quote(SCHEME_NAME)}"
        )
    group_version = f"{group}/{version}" if group else version
    raise NotRegistered(
        f"no kind {go_quote(kind)} is registered for version {go_quote(group_version)} "
        f"in scheme {go_quote(SCHEME_NAME)}"
    )
