"""ControllerRevisions as KubeVirt's instancetype controller stores them for a VM
(``CreateControllerRevision``, pkg/instancetype/revision/store.go at d923fdb): named
``<vm>-<object>-<version>-<object uid>-<object generation>``, the labels naming the object, the whole
object as data with its labels, annotations, finalizers, owner references and managed fields removed;
and the VM status refs that point at them."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

LABEL = "instancetype.kubevirt.io/object-"


def captured(vm_name: str, namespace: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """The revision KubeVirt stores of ``obj`` (as read from the API server, or as written) for the VM."""
    data = copy.deepcopy(dict(obj))
    meta = data.setdefault("metadata", {})
    for member in ("labels", "annotations", "finalizers", "ownerReferences", "managedFields"):
        meta.pop(member, None)
    version = str(data.get("apiVersion", "")).rpartition("/")[2]
    uid, generation = str(meta.get("uid", "")), int(meta.get("generation", 1))
    name = f"{vm_name}-{meta['name']}-{version}-{uid}-{generation}".replace("--", "-")
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                LABEL + "generation": str(generation),
                LABEL + "kind": str(data.get("kind", "")),
                LABEL + "name": str(meta["name"]),
                LABEL + "uid": uid,
                LABEL + "version": version,
            },
        },
        "data": data,
        "revision": 0,
    }


def status_ref(matcher: Mapping[str, Any], revision: Mapping[str, Any]) -> dict[str, Any]:
    """``status.instancetypeRef``/``preferenceRef`` as the controller writes it for ``revision``."""
    return {
        "name": matcher["name"],
        "kind": matcher.get("kind", ""),
        "controllerRevisionRef": {"name": revision["metadata"]["name"]},
    }
