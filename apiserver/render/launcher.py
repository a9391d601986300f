"""What a VM will cost: the VMI KubeVirt creates for it and its virt-launcher pod's resources.

Three KubeVirt components in a row, on a VM the renderer has expanded: the VM controller's ``startVMI``
(:mod:`.vmcontroller.startvmi`), virt-api's VMI mutating webhook (:mod:`.vmimutation.mutate`) and
virt-controller's template service (:mod:`.templateservice`: ``CalculateMemoryOverhead`` and
``RenderLaunchManifest``'s resources); then both as the cluster stores them: the pod after kube-apiserver's
defaulting (:func:`.templateservice.pod.as_stored`), the VMI after the VMI controller has created the pod
(:mod:`.vmicontroller.lifecycle`). What the pod depends on outside the VM and the KubeVirt
configuration is given: the architecture virt-controller runs on, the VM's Namespace (its labels), the
ResourceQuotas there (``AutoResourceLimits``) and the NetworkAttachmentDefinitions (only read with the
``ExternalNetResourceInjection`` gate disabled).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apiserver.render.golang.values import fingerprint
from apiserver.render.kubernetes.errors import Cause, ExpandError
from apiserver.render.templateservice.config import launcher_config
from apiserver.render.templateservice.pod import PodResources, as_stored, qos_class, render_pod_resources
from apiserver.render.templateservice.resources import Cluster, RenderError
from apiserver.render.vmcontroller.startvmi import start_vmi
from apiserver.render.vmicontroller.lifecycle import pod_created
from apiserver.render.vmimutation.mutate import mutate_vmi

JSON = dict[str, Any]

ARCHITECTURES = ("amd64", "arm64", "s390x")


@dataclass(frozen=True, slots=True)
class Launch:
    """The VMI and its pod's resources, and what was assumed about the cluster to render them."""

    vmi: JSON
    pod: PodResources
    assumed: tuple[str, ...] = field(default=())

    def to_json(self) -> JSON:
        return {"vmi": self.vmi, "pod": self.pod.to_json(), "assumed": list(self.assumed)}


def launch(
    expanded_vm: Mapping[str, Any],
    kubevirt: Mapping[str, Any] | None = None,
    *,
    arch: str = "amd64",
    namespace: Mapping[str, Any] | None = None,
    quotas: Sequence[Mapping[str, Any]] = (),
    nads: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
    written: Mapping[str, Any] | None = None,
    preference: Mapping[str, Any] | None = None,
) -> Launch:
    """Render the VMI and the pod's resources of an expanded VM (not changed), as the cluster stores them.
    ``written``: the VM before expansion (the VMI's annotations name its instancetype and preference);
    ``preference``: the preference spec the expansion applied (:attr:`.expand.ExpandResult.preference`).

    Raises :class:`ExpandError` (422) where KubeVirt would not create the pod."""
    if arch not in ARCHITECTURES:
        raise ExpandError.invalid(
            f"unsupported architecture {arch!r}: one of {', '.join(ARCHITECTURES)}",
            Cause("arch", f"Unsupported value: {arch!r}", "FieldValueNotSupported"),
        )
    config = launcher_config(kubevirt, fingerprint=fingerprint(kubevirt) if kubevirt else None)
    vm = dict(expanded_vm)
    meta = dict(vm.get("metadata") or {})
    meta.setdefault("namespace", "default")
    vm["metadata"] = meta
    vmi = start_vmi(
        vm, config.admission.render, written=written, preference=dict(preference) if preference else None
    )
    mutate_vmi(config, vmi)
    ns_name = meta["namespace"]
    in_namespace = [
        dict(q) for q in quotas if ((q.get("metadata") or {}).get("namespace") or ns_name) == ns_name
    ]
    for quota in in_namespace:
        quota["metadata"] = {**(quota.get("metadata") or {}), "namespace": ns_name}
    cluster = Cluster(
        arch=arch, namespace=dict(namespace) if namespace is not None else None, quotas=in_namespace
    )
    try:
        pod = render_pod_resources(config, vmi, cluster, {k: dict(v) for k, v in (nads or {}).items()})
    except RenderError as err:
        raise ExpandError.invalid(
            f"virt-controller would not create the virt-launcher pod: {err}",
            Cause("spec.template.spec", str(err)),
        ) from None
    pod = as_stored(pod)
    pod_created(vmi, qos_class=qos_class(pod), memory_overhead=pod.overhead.total)
    assumed = [f"virt-controller runs on {arch}"]
    if namespace is None:
        assumed.append(
            f"namespace {ns_name} has no labels (memory limits ratio 2, no CPU limit selector match)"
        )
    if not in_namespace:
        assumed.append(f"namespace {ns_name} has no ResourceQuota")
    return Launch(vmi, pod, tuple(assumed))
