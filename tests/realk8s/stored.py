"""Conformance cases stored in the real cluster: the case's VM and objects moved into a test's namespace
(cluster-scoped objects renamed with a suffix so tests never share them), applied, and read back as
the API server stores them, which is what the engine's own output is computed from. A case's VM status
(``status.instancetypeRef.controllerRevisionRef``) is written through ``/status``, as virt-controller
writes it: the control plane has KubeVirt's VM CRD, whose status subresource ignores it in an apply."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from tests.realk8s.controlplane import ControlPlane
from tests.support.clusters import apply_as_kubevirt
from tests.support.conformance import CASES_DIR, Case, load

CLUSTER_KINDS = {"VirtualMachineClusterInstancetype", "VirtualMachineClusterPreference"}
# Set by the API server; a create that carries them is refused or has them replaced.
SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")


def case(case_id: str) -> Case:
    return load(CASES_DIR / f"{case_id}.json")


def _refers_to_cluster_kind(matcher: dict[str, Any]) -> bool:
    """Whether a VM's instancetype/preference matcher names a cluster kind (empty kind = the cluster kind,
    any spelling the lookup accepts)."""
    kind = str(matcher.get("kind") or "VirtualMachineCluster").lower()
    return kind.startswith("virtualmachinecluster")


def _placed(obj: dict[str, Any], namespace: str, suffix: str) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    for name in SERVER_FIELDS:
        meta.pop(name, None)
    if obj["kind"] in CLUSTER_KINDS:
        meta["name"] = f"{meta['name']}-{suffix}"
        meta.pop("namespace", None)
    else:
        assert meta.get("namespace") in (None, "default"), f"{meta} is in a namespace of its own"
        meta["namespace"] = namespace
    return obj


@dataclass
class StoredCase:
    vm: dict[str, Any]  # as read back from the API server
    objects: list[dict[str, Any]]  # likewise, in the case's order
    kubevirt: dict[str, Any] | None  # the cluster's KubeVirt CR, if any test stored one

    @property
    def name(self) -> str:
        return str(self.vm["metadata"]["name"])


def store(cluster: ControlPlane, source: Case, namespace: str, suffix: str) -> StoredCase:
    """Apply ``source``'s VM and objects into ``namespace``; return them as the API server stores them."""
    data = source.input
    assert not data.get("kubevirt"), "a case with a cluster configuration would change every other test's"
    cluster_names = {o["metadata"]["name"] for o in data.get("objects", []) if o["kind"] in CLUSTER_KINDS}
    objects = [_placed(o, namespace, suffix) for o in data.get("objects", [])]
    vm = _placed(data["vm"], namespace, suffix)
    for key in ("instancetype", "preference"):
        matcher = vm.get("spec", {}).get(key)
        if matcher and _refers_to_cluster_kind(matcher) and matcher.get("name") in cluster_names:
            matcher["name"] = f"{matcher['name']}-{suffix}"
    items = [*objects, vm]
    listing = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    # The VM's status (the revisions virt-controller captured) through /status, as KubeVirt writes it.
    apply_as_kubevirt(cluster, *items)
    # Whole, as virt-api reads a VM: kubectl hides managedFields unless asked.
    read = ("get", "-f", "-", "-o", "json", "--show-managed-fields")
    got = json.loads(cluster.kubectl(*read, stdin=listing).stdout)
    stored = got["items"] if got["kind"] == "List" else [got]
    kubevirts = cluster.get_json("kubevirts.kubevirt.io", "--all-namespaces")["items"]
    return StoredCase(stored[-1], stored[:-1], kubevirts[0] if kubevirts else None)
