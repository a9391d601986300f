"""What kube-apiserver does to a Pod's resources on CREATE before it stores it (Kubernetes 1.28).

Mirrors ``SetDefaults_Pod`` (``k8s.io/kubernetes/pkg/apis/core/v1/defaults.go``): in every container and
init container, a resource with a limit and no request gets the limit as its request (``SetDefaults_Pod``
does this for Pods only, not for templates, which is why virt-controller's pod template does not show it);
and ``GetPodQOS`` (``pkg/apis/core/helper/qos``), which the pod strategy's ``PrepareForCreate`` writes to
``status.qosClass`` from the defaulted containers. Quota admission, the scheduler and virt-controller all
read the pod as stored, so totals and quota checks are computed from the defaulted values.
"""

from __future__ import annotations

from collections.abc import Iterable

from apiserver.render.kubernetes.quantity import cmp
from apiserver.render.kubernetes.quantitymath import ResourceList, add, zero

BEST_EFFORT = "BestEffort"
BURSTABLE = "Burstable"
GUARANTEED = "Guaranteed"
# isSupportedQoSComputeResource
_QOS_RESOURCES = ("cpu", "memory")


def default_requests(requests: ResourceList, limits: ResourceList) -> ResourceList:
    """A container's requests after ``SetDefaults_Pod``: each limit without a request becomes one."""
    if not limits:
        return requests
    out = dict(requests)
    for name, q in limits.items():
        out.setdefault(name, q)
    return out


def get_pod_qos(containers: Iterable[tuple[ResourceList, ResourceList]]) -> str:
    """``GetPodQOS`` over the (requests, limits) of the containers and init containers: BestEffort without
    any positive CPU or memory request or limit, Guaranteed when every container limits both and the
    pod's summed requests equal its summed limits, Burstable otherwise."""
    requests: ResourceList = {}
    limits: ResourceList = {}
    guaranteed = True
    for container_requests, container_limits in containers:
        for name, q in container_requests.items():
            if name in _QOS_RESOURCES and cmp(q, zero()) > 0:
                requests[name] = add(q, requests[name]) if name in requests else q
        found = set()
        for name, q in container_limits.items():
            if name in _QOS_RESOURCES and cmp(q, zero()) > 0:
                found.add(name)
                limits[name] = add(q, limits[name]) if name in limits else q
        if not found.issuperset(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed:
        for name, q in requests.items():
            if name not in limits or cmp(limits[name], q) != 0:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return GUARANTEED
    return BURSTABLE
