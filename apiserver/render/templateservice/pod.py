"""The virt-launcher pod's resources for a VMI: ``TemplateService.RenderLaunchManifest``'s resource part.

Mirrors ``RenderLaunchManifest`` / ``renderLaunchManifest`` (``pkg/virt-controller/services/template.go``):
the memory overhead (``CalculateMemoryOverhead``), the network resources (``multus.NetworkToResource``,
unless the ``ExternalNetResourceInjection`` gate leaves them to a webhook), the compute container's
requirements (``newResourceRenderer``), the other containers', and the claims the volumes need
(``withVMIVolumes``: a missing one fails the render, :mod:`.volumes`). The pod's total is what Kubernetes
schedules and charges quota by (``k8s.io/component-helpers/resource.PodRequests`` and ``PodLimits``): the
containers and the init containers that keep running summed, each other init container taken when it
asks for more (with the running ones started before it), plus ``spec.overhead`` (none is set here). The
limits the JSON gives are the pod's effective ones (:meth:`PodResources.effective_limits`): a CPU or
memory limit only where every container and init container declares one, as kubelet bounds the pod
(``ResourceConfigForPod``); :attr:`PodResources.limits` keeps ``PodLimits``' sum, which quota charges.
:func:`as_stored` is that pod as kube-apiserver stores it (``SetDefaults_Pod``'s requests from limits), which
is what the totals, quota and QoS class are computed from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from apiserver.render.kubernetes.poddefaults import default_requests, get_pod_qos
from apiserver.render.kubernetes.quantity import Quantity, cmp
from apiserver.render.kubernetes.quantitymath import ResourceList, add, resource_text
from apiserver.render.templateservice.config import EXTERNAL_NET_RESOURCE_INJECTION, LauncherConfig
from apiserver.render.templateservice.containers import Container, init_containers, other_containers
from apiserver.render.templateservice.overhead import Overhead, calculate_memory_overhead
from apiserver.render.templateservice.resources import Cluster, RenderError, render_compute_resources
from apiserver.render.templateservice.volumes import Claim, PVCLookup, volume_claims

JSON = dict[str, Any]

NAD_RESOURCE_ANNOTATION = "k8s.v1.cni.cncf.io/resourceName"
# A container without a limit of these may take what the node has: the pod is then not bounded by them.
UNBOUNDED_WITHOUT_LIMIT = ("cpu", "memory")


@dataclass(frozen=True, slots=True)
class PodResources:
    """The pod's containers and init containers with their resources, its totals, and the memory
    overhead with its parts; the PVCs its volumes need (not part of the JSON: they change no
    resource)."""

    containers: tuple[Container, ...]
    init_containers: tuple[Container, ...]
    requests: ResourceList
    limits: ResourceList
    overhead: Overhead
    pvcs: tuple[Claim, ...] = ()

    def effective_limits(self) -> ResourceList:
        """The pod's limits as Kubernetes bounds the pod: ``PodLimits``' figures, but no CPU or memory
        limit where some container or init container declares none (nonzero), since that container may
        use what the node has (kubelet's ``ResourceConfigForPod`` then sets no pod cgroup limit). Other
        resources keep the sum: hugepages and extended resources are bounded by what is requested."""
        out = dict(self.limits)
        everyone = (*self.containers, *self.init_containers)
        for name in UNBOUNDED_WITHOUT_LIMIT:
            if not all(name in c.limits and not c.limits[name].is_zero() for c in everyone):
                out.pop(name, None)
        return out

    def to_json(self) -> JSON:
        """As the HTTP API gives it (the oracle's totals under :meth:`effective_limits`' rule)."""
        return {
            "containers": [_container_json(c) for c in self.containers],
            "initContainers": [_container_json(c) for c in self.init_containers],
            "total": {
                "requests": resource_text(self.requests),
                "limits": resource_text(self.effective_limits()),
            },
            "memoryOverhead": self.overhead.total.canonical(),
            "memoryOverheadParts": [{"name": n, "memory": q.canonical()} for n, q in self.overhead.parts],
        }


def _container_json(c: Container) -> JSON:
    resources: JSON = {}
    if c.limits:
        resources["limits"] = resource_text(c.limits)
    if c.requests:
        resources["requests"] = resource_text(c.requests)
    if c.claims:
        resources["claims"] = [dict(claim) for claim in c.claims]
    return {"name": c.name, "resources": resources}


def network_to_resource(
    config: LauncherConfig, vmi: JSON, nads: Mapping[tuple[str, str], JSON]
) -> dict[str, str]:
    """``multus.NetworkToResource``: each Multus network's NetworkAttachmentDefinition's
    ``k8s.v1.cni.cncf.io/resourceName``; a missing one fails the render. Skipped under
    ``ExternalNetResourceInjection`` (Beta, on unless disabled)."""
    if config.enabled(EXTERNAL_NET_RESOURCE_INJECTION):
        return {}
    namespace = (vmi.get("metadata") or {}).get("namespace", "")
    out: dict[str, str] = {}
    for network in (vmi.get("spec") or {}).get("networks") or ():
        multus = network.get("multus")
        if multus is None:
            continue
        ref = multus.get("networkName", "")
        ns, _, name = ref.partition("/") if "/" in ref else (namespace, "", ref)
        nad = nads.get((ns, name))
        if nad is None:
            raise RenderError(f"failed to locate network attachment definition {ns}/{name}")
        annotations = (nad.get("metadata") or {}).get("annotations") or {}
        out[network.get("name", "")] = annotations.get(NAD_RESOURCE_ANNOTATION, "")
    return out


def _add_into(dst: ResourceList, src: ResourceList) -> None:
    for name, q in src.items():
        dst[name] = add(dst[name], q) if name in dst else q


def _max_into(dst: ResourceList, src: ResourceList) -> None:
    for name, q in src.items():
        if name not in dst or cmp(q, dst[name]) > 0:
            dst[name] = q


def pod_total(containers: Sequence[Container], inits: Sequence[Container], *, limits: bool) -> ResourceList:
    """The pod's effective requests (or limits), as Kubernetes computes them."""

    def of(c: Container) -> ResourceList:
        return c.limits if limits else c.requests

    total: ResourceList = {}
    for c in containers:
        _add_into(total, of(c))
    running: ResourceList = {}
    init_max: ResourceList = {}
    for c in inits:
        if c.restartable:
            _add_into(total, of(c))
            _add_into(running, of(c))
            continue
        step: ResourceList = {}
        _add_into(step, of(c))
        _add_into(step, running)
        _max_into(init_max, step)
    _max_into(total, init_max)
    return total


def render_pod_resources(
    config: LauncherConfig,
    vmi: JSON,
    cluster: Cluster,
    nads: Mapping[tuple[str, str], JSON] | None = None,
    pvcs: PVCLookup | None = None,
    *,
    assume_pvcs: bool = False,
) -> PodResources:
    """The resources of the pod virt-controller would create for ``vmi`` (a VMI as virt-api's webhook
    leaves it). Raises :class:`RenderError` where ``RenderLaunchManifest`` fails, in its order: the
    NetworkAttachmentDefinitions, the compute container, the sidecars, then the volumes' claims
    (``pvcs``; with ``assume_pvcs`` a missing claim is taken as an existing filesystem PVC)."""
    overhead = calculate_memory_overhead(config, vmi, cluster.arch)
    network_resources = network_to_resource(config, vmi, nads or {})
    compute = render_compute_resources(config, vmi, cluster, overhead.total, network_resources)
    containers = (
        Container("compute", compute.requests(), compute.limits(), tuple(compute.claims)),
        *other_containers(config, vmi),
    )
    claims = tuple(volume_claims(vmi, pvcs, assume_missing=assume_pvcs))
    inits = tuple(init_containers(config, vmi))
    return PodResources(
        containers=containers,
        init_containers=inits,
        requests=pod_total(containers, inits, limits=False),
        limits=pod_total(containers, inits, limits=True),
        overhead=overhead,
        pvcs=claims,
    )


def as_stored(pod: PodResources) -> PodResources:
    """The pod as kube-apiserver stores it: each container's and init container's requests defaulted from
    its limits (``SetDefaults_Pod``), and the totals recomputed from them, as quota admission and the
    scheduler see the pod (the compute container's device requests count)."""

    def defaulted(c: Container) -> Container:
        return replace(c, requests=default_requests(c.requests, c.limits))

    containers = tuple(defaulted(c) for c in pod.containers)
    inits = tuple(defaulted(c) for c in pod.init_containers)
    return replace(
        pod,
        containers=containers,
        init_containers=inits,
        requests=pod_total(containers, inits, limits=False),
        limits=pod_total(containers, inits, limits=True),
    )


def qos_class(pod: PodResources) -> str:
    """The ``status.qosClass`` kube-apiserver gives the pod (``GetPodQOS``, on the stored pod)."""
    return get_pod_qos((c.requests, c.limits) for c in (*pod.containers, *pod.init_containers))


def quantity_texts(resources: Mapping[str, Quantity]) -> dict[str, str]:
    return resource_text(dict(resources))
