"""Every read the cluster source makes, as ClusterRole rules: the deployment grants exactly these.

Derived from :mod:`.kinds` so the two cannot drift; the deployment tests compare the ClusterRoles with
:func:`rules_for` of the flags each Deployment passes. ``RULES`` is what the server needs with the
default flags; ``VM_CACHE_RULES`` is added by ``--vm-cache``, which the manifests' base Deployment
passes (the collection of rendered VMs is served only with the VM cache), so the base reader role
grants it.

The reads of PersistentVolumeClaims, DataVolumes, DataSources, VolumeSnapshots and ControllerRevisions
are cluster-wide ``get``: a VM may live in any namespace and ``inferFromVolume`` may name a volume in
another one. The server makes them only for a caller the tenancy gate allows (the caller's own
SubjectAccessReview for that very object, see :mod:`apiserver.sources.access`), or for a revision, to
see whether it holds an instancetype or preference; ``get`` alone lists nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from apiserver.sources.cluster import kinds


@dataclass(frozen=True, slots=True)
class Rule:
    api_group: str
    resource: str
    verbs: tuple[str, ...]


_WATCH = ("get", "list", "watch")

RULES: tuple[Rule, ...] = (
    # Watch caches (namespaced kinds in every namespace); a miss is read with get.
    *(Rule(r.group, r.plural, _WATCH) for r in kinds.CACHED),
    *(Rule(r.group, r.plural, _WATCH) for r in kinds.FLAVORS.values()),
    # Read fresh by name for each GET expand-spec.
    Rule(kinds.VIRTUAL_MACHINE.group, kinds.VIRTUAL_MACHINE.plural, ("get",)),
    # Immutable, read by name on first use.
    Rule(kinds.CONTROLLER_REVISION.group, kinds.CONTROLLER_REVISION.plural, ("get",)),
    # inferFromVolume: the labels of the volume a VM names; validate=true: a ready VM's running VMI.
    *(Rule(r.group, r.plural, ("get",)) for r in kinds.DIRECT.values()),
    # launch-spec: the VM's Namespace (its labels) and the ResourceQuotas of that namespace.
    Rule(kinds.NAMESPACE.group, kinds.NAMESPACE.plural, ("get",)),
    Rule(kinds.RESOURCE_QUOTA.group, kinds.RESOURCE_QUOTA.plural, ("list",)),
)

# --vm-cache: VMs listed and watched in every namespace.
VM_CACHE_RULES: tuple[Rule, ...] = (
    Rule(kinds.VIRTUAL_MACHINE.group, kinds.VIRTUAL_MACHINE.plural, ("list", "watch")),
)


def rules_for(*, vm_cache: bool = False) -> tuple[Rule, ...]:
    """The rules the server needs with these flags."""
    return RULES + (VM_CACHE_RULES if vm_cache else ())


def as_cluster_role_rules(rules: tuple[Rule, ...] = RULES) -> list[dict[str, list[str]]]:
    """The rules in the shape of a ClusterRole's ``rules``."""
    return [{"apiGroups": [r.api_group], "resources": [r.resource], "verbs": list(r.verbs)} for r in rules]
