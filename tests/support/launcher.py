"""The launcher corpus's answers (``tests/render/launcher/cases``: the pod as virt-controller's template
service renders it, from KubeVirt's own code) as kube-apiserver stores the pod, which is what the
launch-spec endpoints, ``launch_vm``, ``launch_vmi`` and ``resources`` give."""

from __future__ import annotations

import json
from typing import Any

from apiserver.render.kubernetes.quantity import BINARY_SI, Quantity, parse_quantity


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


def stored_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """A corpus answer (the pod and the VMI's parts, ``hack/oracle/launcher_corpus.py``'s ``answer_of``) as
    the public answers give it: the pod as :func:`stored_pod`, and the VMI's ``status.memory`` with the
    ``memoryOverhead`` virt-controller's VMI controller copies from the stored pod
    (``updateMemoryOverheadStatusFromPod``: the template service's ``kubevirt.io/memory-overhead-bytes``,
    the overhead's ``Value()``, as a BinarySI quantity). A refusal is unchanged."""
    if "memoryOverhead" not in answer:
        return answer
    out = stored_pod(answer)
    overhead = parse_quantity(answer["memoryOverhead"]).value_ceil()
    memory = dict(out["vmi"].get("status.memory") or {})
    memory["memoryOverhead"] = Quantity.from_int(overhead, BINARY_SI).canonical()
    out["vmi"]["status.memory"] = memory
    return out
