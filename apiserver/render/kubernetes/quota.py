"""Whether pods fit a namespace's ResourceQuotas, as kube-apiserver's quota admission decides a pod CREATE.

Follows ``k8s.io/kubernetes/pkg/quota/v1/evaluator/core/pods.go`` (``podComputeUsageHelper``: a pod's
``requests.X``/``X`` are its effective requests, ``limits.X`` its effective limits, ``pods`` counts one;
``enforcePodContainerConstraints``: a quota that limits ``requests.cpu``/``limits.memory``/... refuses a
pod with a container that does not set it) and the quota admission controller's check (every quota of the
namespace, the usage so far plus the pod's, against ``spec.hard``). Pods are admitted in the order given;
each admitted one adds to the usage the next is checked against, starting from the quota's
``status.used`` when it has one (what already runs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apiserver.render.kubernetes.quantity import Quantity, cmp
from apiserver.render.kubernetes.quantitymath import ResourceList, add, new_quantity, resource_list, zero

# The compute resources a pod's usage names (requests.* and the bare names are the requests).
_STANDARD = ("cpu", "memory", "ephemeral-storage")
_REQUIRED = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"})


@dataclass(frozen=True, slots=True)
class Pod:
    """What quota admission reads of a pod: its effective requests and limits and each container's."""

    label: str
    requests: ResourceList
    limits: ResourceList
    containers: Sequence[tuple[str, ResourceList, ResourceList]] = ()


@dataclass(slots=True)
class Verdict:
    """One pod against the namespace's quotas: admitted, or refused with kube-apiserver's reasons."""

    label: str
    fits: bool = True
    reasons: list[str] = field(default_factory=list)


@dataclass(slots=True)
class QuotaUse:
    """One ResourceQuota: its hard limits and the usage after every admitted pod."""

    name: str
    hard: ResourceList
    used: ResourceList


def pod_usage(pod: Pod) -> ResourceList:
    """``PodUsageFunc``: ``podComputeUsageHelper`` plus the pod counts (``pods``, ``count/pods``)."""
    usage: ResourceList = {"pods": new_quantity(1, "DecimalSI"), "count/pods": new_quantity(1, "DecimalSI")}
    for name, q in pod.requests.items():
        usage[f"requests.{name}"] = q
        if name in _STANDARD:
            usage[name] = q
        elif name.startswith("hugepages-"):
            usage[f"requests.{name}"] = q
    for name, q in pod.limits.items():
        if name in _STANDARD:
            usage[f"limits.{name}"] = q
    return usage


def _missing(pod: Pod, hard: Mapping[str, Any]) -> list[str]:
    """``enforcePodContainerConstraints``: per required resource, the containers that do not set it."""
    required = sorted(_REQUIRED.intersection(hard))
    out = []
    for key in required:
        kind, _, name = key.rpartition(".")
        lacking = [
            c
            for c, requests, limits in pod.containers
            if name not in (limits if kind == "limits" else requests)
        ]
        if lacking:
            out.append(f"{key} for: {','.join(lacking)}")
    return out


def _text(q: Quantity) -> str:
    return q.canonical()


def admit(
    pods: Sequence[Pod],
    quotas: Sequence[Mapping[str, Any]],
    *,
    usage_of: Callable[[Pod], ResourceList] = pod_usage,
    constraints: bool = True,
) -> tuple[list[Verdict], list[QuotaUse]]:
    """Each pod's verdict, in order, and each quota's usage after the admitted ones. ``usage_of``: the
    evaluator's usage of a pod (kube-apiserver's pod evaluator by default; AAQ's calculators charge
    otherwise); ``constraints``: whether the evaluator's ``Constraints`` ask for ``must specify``."""
    uses = []
    for quota in quotas:
        name = str((quota.get("metadata") or {}).get("name") or "")
        hard = resource_list((quota.get("spec") or {}).get("hard"))
        used = {k: v for k, v in resource_list((quota.get("status") or {}).get("used")).items() if k in hard}
        uses.append(QuotaUse(name, hard, used))
    verdicts = []
    for pod in pods:
        verdict = Verdict(pod.label)
        usage = usage_of(pod)
        for use in uses:
            missing = _missing(pod, use.hard) if constraints else []
            if missing:
                verdict.fits = False
                verdict.reasons.append(f"failed quota: {use.name}: must specify {'; '.join(missing)}")
                continue
            over = []
            for key in sorted(use.hard):
                if key not in usage:
                    continue
                now = use.used.get(key, zero())
                after = add(now, usage[key])
                if cmp(after, use.hard[key]) > 0:
                    over.append((key, usage[key], now, use.hard[key]))
            if over:
                verdict.fits = False
                requested = ",".join(f"{k}={_text(r)}" for k, r, _, _ in over)
                so_far = ",".join(f"{k}={_text(u)}" for k, _, u, _ in over)
                limited = ",".join(f"{k}={_text(h)}" for k, _, _, h in over)
                verdict.reasons.append(
                    f"exceeded quota: {use.name}, requested: {requested}, used: {so_far}, limited: {limited}"
                )
        if verdict.fits:
            for use in uses:
                for key, q in usage.items():
                    if key in use.hard:
                        use.used[key] = add(use.used.get(key, zero()), q)
        verdicts.append(verdict)
    return verdicts, uses
