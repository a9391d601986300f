"""Every read the cluster source makes, as ClusterRole rules: the deployment grants exactly these.

Derived from :mod:`.kinds` so the two cannot drift; the deployment tests compare the ClusterRole with
:data:`RULES`.
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
    # Read fresh by name (expand-spec), or watched with --vm-cache.
    Rule(kinds.VIRTUAL_MACHINE.group, kinds.VIRTUAL_MACHINE.plural, _WATCH),
    # Immutable, read by name on first use.
    Rule(kinds.CONTROLLER_REVISION.group, kinds.CONTROLLER_REVISION.plural, ("get",)),
    # inferFromVolume: the labels of the volume a VM names; validate=true: a ready VM's running VMI.
    *(Rule(r.group, r.plural, ("get",)) for r in kinds.DIRECT.values()),
)


def as_cluster_role_rules() -> list[dict[str, list[str]]]:
    """The rules in the shape of a ClusterRole's ``rules``."""
    return [{"apiGroups": [r.api_group], "resources": [r.resource], "verbs": list(r.verbs)} for r in RULES]
