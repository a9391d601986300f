"""apiserver/sources/cluster/cache.py: what the watch caches keep, and which KubeVirt CR is in charge."""

from __future__ import annotations

from typing import Any

from apiserver.sources.cluster.cache import deployed


def cr(name: str, phase: str | None = None, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "kubevirt"}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-28T00:00:00Z"
    out: dict[str, Any] = {"apiVersion": "kubevirt.io/v1", "kind": "KubeVirt", "metadata": meta}
    if phase is not None:
        out["status"] = {"phase": phase}
    return out


def test_virt_api_reads_only_a_cr_with_a_phase() -> None:
    # GetConfigFromKubeVirtCR: a CR virt-operator has not seen (no phase) configures nothing
    assert deployed([cr("a"), cr("b", "")]) is None
    assert deployed([cr("a"), cr("b", "Deploying")]) == cr("b", "Deploying")


def test_a_cr_being_deleted_is_not_read() -> None:
    assert deployed([cr("a", "Deployed", deleting=True)]) is None
    assert deployed([cr("a", "Deployed", deleting=True), cr("b", "Deploying")]) == cr("b", "Deploying")


def test_the_deployed_cr_before_others_then_by_name() -> None:
    assert deployed([cr("b", "Deploying"), cr("c", "Deployed"), cr("a", "Deleting")]) == cr("c", "Deployed")
    assert deployed([cr("b", "Deploying"), cr("a", "Deleting")]) == cr("a", "Deleting")
    assert deployed([]) is None
