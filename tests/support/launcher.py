"""The launcher corpus's answers (``tests/render/launcher/cases``: the pod as virt-controller's template
service renders it, from KubeVirt's own code) as kube-apiserver stores the pod, which is what the
launch-spec endpoints, ``launch_vm`` and ``resources`` give."""

from __future__ import annotations

import json
from typing import Any


def stored_pod(answer: dict[str, Any]) -> dict[str, Any]:
    """The corpus's pod (the template service's, as expand-launcher gives it) after kube-apiserver's
    SetDefaults_Pod: a limit without a request is the request too. The resources so defaulted (the compute
    container's devices) are requested by no container before, so the pod's total request of each is its
    total limit."""
    out = json.loads(json.dumps(answer))
    requested = {
        k
        for key in ("containers", "initContainers")
        for c in out[key]
        for k in c["resources"].get("requests", {})
    }
    added: set[str] = set()
    for key in ("containers", "initContainers"):
        for c in out[key]:
            resources = c["resources"]
            for name, limit in resources.get("limits", {}).items():
                if name not in resources.get("requests", {}):
                    assert name not in requested, f"{name} is requested elsewhere: work the total out"
                    resources.setdefault("requests", {})[name] = limit
                    added.add(name)
    for name in added:
        out["total"]["requests"][name] = out["total"]["limits"][name]
    return out
