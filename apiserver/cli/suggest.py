"""Typos as findings: "did you mean" for names a VM references and kinds of KubeVirt's API groups.

A VM that names ``u1.mediun`` is as unrunnable as a refused one, yet KubeVirt's webhook admits it (the
VM waits for an instancetype that never comes), so the gate must say which name was meant. The closest
names come from :mod:`difflib` (the standard library's similarity ratio, as Python's own "did you
mean" uses), among what the run holds (inputs and ``--catalog``) of the same kind and scope, then of
the other scope (a namespaced ``small`` for a cluster-scoped one); a name the bundled
common-instancetypes holds though no catalog was given is said so.

A kind of one of KubeVirt's own API groups that KubeVirt does not serve (``kind: VirtualMachne`` in
``kubevirt.io/v1``) is a typo too: kube-apiserver would answer "no matches for kind", so it is an
error with the closest kind, not an object to pass over.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from apiserver.cli import bundled
from apiserver.render import ObjectIndex, ObjectRef
from apiserver.render.objects import (
    CLUSTER_FLAVOR,
    CLUSTER_INSTANCETYPE,
    CLUSTER_PREFERENCE,
    CONTROLLER_REVISION,
    FLAVOR,
    INSTANCETYPE,
    KUBEVIRT,
    PREFERENCE,
    PRESET,
    VIRTUAL_MACHINE,
    VIRTUAL_MACHINE_INSTANCE,
)

# The kinds KubeVirt serves in its own API groups (its OpenAPI document at the commit the output
# matches; flavor.kubevirt.io as the releases that served it). Other *.kubevirt.io groups belong to other
# projects (CDI, SSP, AAQ, ...) and are left alone.
KUBEVIRT_KINDS: Mapping[str, frozenset[str]] = {
    "kubevirt.io": frozenset(
        {
            KUBEVIRT,
            VIRTUAL_MACHINE,
            VIRTUAL_MACHINE_INSTANCE,
            "VirtualMachineInstanceMigration",
            PRESET,
            "VirtualMachineInstanceReplicaSet",
        }
    ),
    "instancetype.kubevirt.io": frozenset(
        {INSTANCETYPE, CLUSTER_INSTANCETYPE, PREFERENCE, CLUSTER_PREFERENCE}
    ),
    "flavor.kubevirt.io": frozenset({FLAVOR, CLUSTER_FLAVOR, PREFERENCE, CLUSTER_PREFERENCE}),
    "snapshot.kubevirt.io": frozenset(
        {"VirtualMachineSnapshot", "VirtualMachineSnapshotContent", "VirtualMachineRestore"}
    ),
    "export.kubevirt.io": frozenset({"VirtualMachineExport"}),
    "clone.kubevirt.io": frozenset({"VirtualMachineClone"}),
    "pool.kubevirt.io": frozenset({"VirtualMachinePool"}),
    "migrations.kubevirt.io": frozenset({"MigrationPolicy"}),
}

# The same family in the other scope, for "did you mean the namespaced one?".
_OTHER_SCOPE = {
    INSTANCETYPE: CLUSTER_INSTANCETYPE,
    CLUSTER_INSTANCETYPE: INSTANCETYPE,
    PREFERENCE: CLUSTER_PREFERENCE,
    CLUSTER_PREFERENCE: PREFERENCE,
}
# What the VM's matcher says for each kind (spec.instancetype.kind, spec.preference.kind).
_MATCHER = {
    INSTANCETYPE: "spec.instancetype",
    CLUSTER_INSTANCETYPE: "spec.instancetype",
    PREFERENCE: "spec.preference",
    CLUSTER_PREFERENCE: "spec.preference",
}
NAMED_KINDS = frozenset(_MATCHER)  # what --catalog-complete holds whole
CUTOFF = 0.6  # difflib's own default: "u1.mediun" finds "u1.medium", "fedoraa" "fedora"


def _quoted(names: Sequence[str]) -> str:
    shown = [f'"{n}"' for n in names]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" or {shown[-1]}"


def closest(word: str, candidates: Iterable[str], n: int = 1) -> list[str]:
    """The candidates closest to ``word``, best first; case is ignored in the comparison."""
    import difflib  # only when something is not found (bundled's docstring: start-up)

    by_lower: dict[str, str] = {}
    for candidate in candidates:
        by_lower.setdefault(candidate.lower(), candidate)
    return [by_lower[m] for m in difflib.get_close_matches(word.lower(), by_lower, n=n, cutoff=CUTOFF)]


class Names:
    """The names a run holds by kind and namespace, gathered once per kind and namespace asked about."""

    __slots__ = ("_index", "_names")

    def __init__(self, index: ObjectIndex) -> None:
        self._index = index
        self._names: dict[tuple[str, str], list[str]] = {}

    def of(self, kind: str, namespace: str) -> list[str]:
        key = (kind, namespace)
        if key not in self._names:
            found = []
            for obj in self._index.of_kind(kind, namespace):
                meta = obj.get("metadata")
                name = meta.get("name") if isinstance(meta, Mapping) else None
                if isinstance(name, str):
                    found.append(name)
            self._names[key] = found
        return self._names[key]

    def hint(self, ref: ObjectRef, vm_namespace: str, catalog_given: bool) -> str:
        """`` (did you mean "u1.medium"?)``, or ``""`` when nothing is close."""
        if ref.kind == CONTROLLER_REVISION:
            return ""
        other = _OTHER_SCOPE.get(ref.kind)
        others: list[str] = []
        if other is not None:
            namespace = "" if other in (CLUSTER_INSTANCETYPE, CLUSTER_PREFERENCE) else vm_namespace
            others = self.of(other, namespace)
        # The same name in the other scope first: the kind, not the name, is what is wrong.
        close = [ref.name] if ref.name in others else []
        if not close:
            same = closest(ref.name, self.of(ref.kind, ref.namespace))
            if same:
                return f" (did you mean {_quoted(same)}?)"
            close = closest(ref.name, others)
        if close and other is not None:
            return f" (did you mean {other} {_quoted(close)}? set {_MATCHER[ref.kind]}.kind: {other})"
        if not catalog_given and ref.kind in (CLUSTER_INSTANCETYPE, CLUSTER_PREFERENCE):
            return _bundled_hint(ref)
        return ""


def _bundled_hint(ref: ObjectRef) -> str:
    """Where the bundled common-instancetypes holds the name (or one close to it), newest first."""
    releases = bundled.releases()
    for release in releases:
        names = release.instancetype_names if ref.kind == CLUSTER_INSTANCETYPE else release.preference_names
        if ref.name in names:
            flag = bundled.NAME if release is releases[0] else release.label
            return f" (the bundled {release.label} has it: --catalog {flag})"
    newest = releases[0]
    names = newest.instancetype_names if ref.kind == CLUSTER_INSTANCETYPE else newest.preference_names
    close = closest(ref.name, names)
    if close:
        return (
            f" (did you mean {_quoted(close)}? the bundled {newest.label} has it: --catalog {bundled.NAME})"
        )
    return ""


def unknown_kind(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """For an object of a KubeVirt API group whose kind KubeVirt does not serve there: kube-apiserver's
    "no matches" message with the closest kinds, and the group; ``None`` for any other object."""
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    group = api_version.rpartition("/")[0]
    kinds = KUBEVIRT_KINDS.get(group)
    if kinds is None or kind in kinds or (kind.endswith("List") and kind[: -len("List")] in kinds):
        return None
    elsewhere = sorted(g for g, ks in KUBEVIRT_KINDS.items() if kind in ks)
    close = closest(kind, kinds) or closest(kind, {k for ks in KUBEVIRT_KINDS.values() for k in ks})
    if elsewhere:
        hint = f"KubeVirt serves it in {' and '.join(elsewhere)}"
    elif close:
        hint = f"did you mean {_quoted(close)}?"
    else:
        hint = f"KubeVirt serves {', '.join(sorted(kinds))} there"
    message = (
        f'no matches for kind "{kind}" in version "{api_version}"; {hint} (a kind of a newer KubeVirt '
        f"passes with --skip-kind {kind})"
    )
    return message, group
