"""Scheduling: affinity and topology spread constraints, checked by KubeVirt's copies of the k8s helpers
(``apiserver/render/admission/scheduling.py``, ``k8svalidation.py``)."""

from __future__ import annotations

from typing import Any

from hack.oracle.admission.base import ADMITTERS, INV, JSON, check, go_file, sweep, tspec, variant

_OPS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "bogus", ""]
_KEYS = [
    "zone",
    "topology.kubernetes.io/zone",
    "",
    "a/b/c",
    "-bad",
    "x" * 64,
    "example.com/" + "x" * 63,
    "UPPER.example/key",
    "/k",
    "k/",
]


def node_term(expressions: list[JSON] | None = None, fields: list[JSON] | None = None) -> JSON:
    """A node selector term (members left out when not given)."""
    term: JSON = {}
    if expressions is not None:
        term["matchExpressions"] = expressions
    if fields is not None:
        term["matchFields"] = fields
    return term


def node_affinity(vm: JSON, **na: Any) -> None:
    """Replace the template's affinity with a node affinity of these members."""
    tspec(vm)["affinity"] = {"nodeAffinity": na}


def pod_term(**over: Any) -> JSON:
    """A valid pod affinity term with ``over`` replacing members (``None``: leave it out)."""
    term: JSON = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
    term.update(over)
    return {k: v for k, v in term.items() if v is not None}


_SELECTORS: list[Any] = [
    {"matchLabels": {"app": "x"}},
    {"matchLabels": {"bad key": "x"}},
    {"matchLabels": {"app": "bad value!"}},
    {"matchLabels": {"app": "x" * 64}},
    {"matchLabels": {"": "x"}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a"]}]},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]},
    {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["a"]}]},
    {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]},
    {"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]},
    {"matchExpressions": [{"key": "app", "operator": "", "values": ["1"]}]},
    {"matchExpressions": [{"key": "bad key", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["bad value!"]}]},
    {},
    None,
]


def spread_constraint(**over: Any) -> JSON:
    """A valid topology spread constraint with ``over`` replacing members (``None``: leave it out)."""
    c: JSON = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    c.update(over)
    return {k: v for k, v in c.items() if v is not None}


def affinity_variants() -> None:
    """validateAffinity and the k8s helpers."""
    for op in _OPS:
        for vals in ([], ["a"], ["1", "2"]):
            variant(
                "scheduling",
                f"nodeAffinity required {op} values={vals}",
                lambda vm, o=op, v=vals: node_affinity(
                    vm,
                    requiredDuringSchedulingIgnoredDuringExecution={
                        "nodeSelectorTerms": [node_term([{"key": "zone", "operator": o, "values": v}])]
                    },
                ),
            )
    sweep(
        "scheduling",
        "nodeAffinity required key={}",
        _KEYS,
        lambda vm, v: node_affinity(
            vm,
            requiredDuringSchedulingIgnoredDuringExecution={
                "nodeSelectorTerms": [node_term([{"key": v, "operator": "Exists"}])]
            },
        ),
    )
    variant(
        "scheduling",
        "nodeAffinity required no terms",
        lambda vm: node_affinity(
            vm, requiredDuringSchedulingIgnoredDuringExecution={"nodeSelectorTerms": []}
        ),
    )
    variant(
        "scheduling",
        "nodeAffinity required empty term",
        lambda vm: node_affinity(
            vm, requiredDuringSchedulingIgnoredDuringExecution={"nodeSelectorTerms": [{}]}
        ),
    )
    for op in ("In", "NotIn", "Exists", "Gt"):
        for key, vals in (
            ("metadata.name", ["node-1"]),
            ("metadata.name", ["a", "b"]),
            ("metadata.name", ["Bad_Node"]),
            ("spec.nodeName", ["n"]),
            ("metadata.name", []),
        ):
            variant(
                "scheduling",
                f"nodeAffinity matchFields {key} {op} {vals}",
                lambda vm, o=op, k=key, v=vals: node_affinity(
                    vm,
                    requiredDuringSchedulingIgnoredDuringExecution={
                        "nodeSelectorTerms": [node_term(fields=[{"key": k, "operator": o, "values": v}])]
                    },
                ),
            )
    sweep(
        "scheduling",
        "nodeAffinity preferred weight={}",
        [0, 1, 100, 101, -1],
        lambda vm, v: node_affinity(
            vm,
            preferredDuringSchedulingIgnoredDuringExecution=[
                {"weight": v, "preference": node_term([{"key": "zone", "operator": "In", "values": ["a"]}])}
            ],
        ),
    )
    variant(
        "scheduling",
        "nodeAffinity preferred bad weight and bad term",
        lambda vm: node_affinity(
            vm,
            preferredDuringSchedulingIgnoredDuringExecution=[
                {"weight": 0, "preference": node_term([{"key": "", "operator": "In"}])}
            ],
        ),
    )
    for kind in ("podAffinity", "podAntiAffinity"):
        sweep(
            "scheduling",
            f"{kind} required labelSelector={{}}",
            _SELECTORS,
            lambda vm, v, k=kind: tspec(vm).__setitem__(
                "affinity",
                {k: {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term(labelSelector=v)]}},
            ),
        )
        sweep(
            "scheduling",
            f"{kind} required topologyKey={{}}",
            ["", "zone", "bad key", "a/b/c", "x" * 64],
            lambda vm, v, k=kind: tspec(vm).__setitem__(
                "affinity", {k: {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term(topologyKey=v)]}}
            ),
        )
        sweep(
            "scheduling",
            f"{kind} namespaces={{}}",
            [["default"], ["Bad_NS"], [""], ["a" * 64], ["ok", "-bad"]],
            lambda vm, v, k=kind: tspec(vm).__setitem__(
                "affinity", {k: {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term(namespaces=v)]}}
            ),
        )
        sweep(
            "scheduling",
            f"{kind} namespaceSelector={{}}",
            _SELECTORS[:8],
            lambda vm, v, k=kind: tspec(vm).__setitem__(
                "affinity",
                {k: {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term(namespaceSelector=v)]}},
            ),
        )
        sweep(
            "scheduling",
            f"{kind} preferred weight={{}}",
            [0, 1, 100, 101],
            lambda vm, v, k=kind: tspec(vm).__setitem__(
                "affinity",
                {
                    k: {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": v, "podAffinityTerm": pod_term()}
                        ]
                    }
                },
            ),
        )
        variant(
            "scheduling",
            f"{kind} preferred weight 0 and empty topologyKey",
            lambda vm, k=kind: tspec(vm).__setitem__(
                "affinity",
                {
                    k: {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 0, "podAffinityTerm": pod_term(topologyKey="")}
                        ]
                    }
                },
            ),
        )


def topology_spread_variants() -> None:
    """Topology spread constraints."""
    sweep(
        "scheduling",
        "topologySpread maxSkew={}",
        [0, 1, -1, 2],
        lambda vm, v: tspec(vm).__setitem__("topologySpreadConstraints", [spread_constraint(maxSkew=v)]),
    )
    sweep(
        "scheduling",
        "topologySpread topologyKey={}",
        ["", "zone", "bad key", "a/b/c"],
        lambda vm, v: tspec(vm).__setitem__("topologySpreadConstraints", [spread_constraint(topologyKey=v)]),
    )
    sweep(
        "scheduling",
        "topologySpread whenUnsatisfiable={}",
        ["DoNotSchedule", "ScheduleAnyway", "", "bogus"],
        lambda vm, v: tspec(vm).__setitem__(
            "topologySpreadConstraints", [spread_constraint(whenUnsatisfiable=v)]
        ),
    )
    sweep(
        "scheduling",
        "topologySpread labelSelector={}",
        _SELECTORS[:13],
        lambda vm, v: tspec(vm).__setitem__(
            "topologySpreadConstraints", [spread_constraint(labelSelector=v)]
        ),
    )
    variant(
        "scheduling",
        "topologySpread duplicate pair",
        lambda vm: tspec(vm).__setitem__(
            "topologySpreadConstraints",
            [
                spread_constraint(),
                spread_constraint(maxSkew=2),
                spread_constraint(whenUnsatisfiable="ScheduleAnyway"),
            ],
        ),
    )
    variant(
        "scheduling",
        "topologySpread three duplicates and bad members",
        lambda vm: tspec(vm).__setitem__(
            "topologySpreadConstraints",
            [
                spread_constraint(maxSkew=0, topologyKey=""),
                spread_constraint(topologyKey=""),
                spread_constraint(topologyKey=""),
            ],
        ),
    )


def checks() -> None:
    go_file(f"{ADMITTERS}/validate-k8s-utils.go", "scheduling")
    check("affinity.node-terms", "ValidateNodeSelector", INV, "must have at least one node selector term")
    check(
        "affinity.node-op-values",
        "ValidateNodeSelectorRequirement",
        INV,
        "must be specified when `operator` is 'In' or 'NotIn'",
        field="nodeAffinity",
    )
    check(
        "affinity.node-exists-values",
        "ValidateNodeSelectorRequirement",
        INV,
        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        field="nodeAffinity",
    )
    check(
        "affinity.node-gt-values",
        "ValidateNodeSelectorRequirement",
        INV,
        "must be specified single value when `operator` is 'Lt' or 'Gt'",
        field="nodeAffinity",
    )
    check(
        "affinity.node-operator",
        "ValidateNodeSelectorRequirement / ValidateNodeFieldSelectorRequirement",
        INV,
        "not a valid selector operator",
        field="nodeAffinity",
    )
    check(
        "affinity.label-key",
        "unversionedvalidation.ValidateLabelName",
        INV,
        "Invalid value",
        field=r"re:nodeAffinity.*matchExpressions\[\d+\]\.key$",
    )
    check(
        "affinity.field-values",
        "ValidateNodeFieldSelectorRequirement",
        INV,
        "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
    )
    check("affinity.field-key", "ValidateNodeFieldSelectorRequirement", INV, "not a valid field selector key")
    check(
        "affinity.field-value",
        "ValidateNodeFieldSelectorRequirement (NameIsDNSSubdomain)",
        INV,
        "RFC 1123 subdomain",
        field="matchFields",
    )
    check(
        "affinity.weight",
        "ValidatePreferredSchedulingTerms / validateWeightedPodAffinityTerms",
        INV,
        "must be in the range 1-100",
    )
    check(
        "affinity.label-selector",
        "unversionedvalidation.ValidateLabelSelector",
        INV,
        "",
        field=r"re:ffinity\..*\.labelSelector\.",
    )
    check(
        "affinity.namespace-selector",
        "unversionedvalidation.ValidateLabelSelector",
        INV,
        "",
        field="namespaceSelector.",
    )
    check(
        "affinity.namespaces",
        "validatePodAffinityTerm (ValidateNamespaceName)",
        INV,
        "Invalid value",
        field=r"re:\.namespace$",
    )
    check("affinity.topology-key-empty", "validatePodAffinityTerm", INV, "can not be empty", field="ffinity.")
    check(
        "affinity.topology-key",
        "validatePodAffinityTerm (ValidateLabelName)",
        INV,
        "Invalid value",
        field=r"re:ffinity\..*topologyKey$",
    )
    check("spread.max-skew", "ValidateMaxSkew", INV, "must be greater than zero")
    check(
        "spread.topology-key",
        "ValidateTopologyKey",
        INV,
        "",
        field=r"re:topologySpreadConstraints\[\d+\]\.topologyKey$",
    )
    check(
        "spread.label-selector",
        "unversionedvalidation.ValidateLabelSelector",
        INV,
        "",
        field="topologySpreadConstraints.labelSelector",
    )
    check(
        "spread.when-unsatisfiable",
        "ValidateWhenUnsatisfiable",
        INV,
        'supported values: "DoNotSchedule", "ScheduleAnyway"',
    )
    check("spread.duplicate", "ValidateSpreadConstraintNotRepeat", INV, "Duplicate value")
