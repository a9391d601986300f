"""The annotations naming a VM's instancetype and preference on the VMI it starts.

Mirrors ``annotations.Set`` of ``pkg/instancetype/annotations`` and ``pkg/preference/annotations``, which
``ApplyToVMI`` (``pkg/instancetype/controller/vm/controller.go``) calls when the VM has either: a
namespaced kind gives ``kubevirt.io/instancetype-name`` (``preference-name``), an empty or cluster kind
``kubevirt.io/cluster-instancetype-name`` (``cluster-preference-name``), any other kind none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

INSTANCETYPE = "kubevirt.io/instancetype-name"
CLUSTER_INSTANCETYPE = "kubevirt.io/cluster-instancetype-name"
PREFERENCE = "kubevirt.io/preference-name"
CLUSTER_PREFERENCE = "kubevirt.io/cluster-preference-name"

_KINDS = {
    "instancetype": (
        ("virtualmachineinstancetypes", "virtualmachineinstancetype"),
        ("", "virtualmachineclusterinstancetypes", "virtualmachineclusterinstancetype"),
        INSTANCETYPE,
        CLUSTER_INSTANCETYPE,
    ),
    "preference": (
        ("virtualmachinepreferences", "virtualmachinepreference"),
        ("", "virtualmachineclusterpreferences", "virtualmachineclusterpreference"),
        PREFERENCE,
        CLUSTER_PREFERENCE,
    ),
}


def set_annotations(vm: Mapping[str, Any], annotations: dict[str, str]) -> None:
    """Both ``Set`` functions, on ``annotations`` (the VMI's), from the VM's ``spec.instancetype`` and
    ``spec.preference``."""
    spec = vm.get("spec")
    if not isinstance(spec, Mapping):
        return
    for field, (namespaced, cluster, key, cluster_key) in _KINDS.items():
        ref = spec.get(field)
        if not isinstance(ref, Mapping):
            continue
        kind = str(ref.get("kind") or "").lower()
        name = str(ref.get("name") or "")
        if kind in namespaced:
            annotations[key] = name
        elif kind in cluster:
            annotations[cluster_key] = name
