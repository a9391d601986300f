"""What a VM will cost: the VMI KubeVirt creates for it and its virt-launcher pod's resources.

Three KubeVirt components in a row, on a VM the renderer has expanded: the VM controller's ``startVMI``
(:mod:`.vmcontroller.startvmi`), virt-api's VMI mutating webhook (:mod:`.vmimutation.mutate`) and
virt-controller's template service (:mod:`.templateservice`: ``CalculateMemoryOverhead`` and
``RenderLaunchManifest``'s resources); then both as the cluster stores them: the pod after kube-apiserver's
defaulting (:func:`.templateservice.pod.as_stored`), the VMI after the VMI controller has created the pod
(:mod:`.vmicontroller.lifecycle`). What the pod depends on outside the VM and the KubeVirt
configuration is given: the architecture virt-controller runs on, the VM's Namespace (its labels), the
ResourceQuotas there (``AutoResourceLimits``), the NetworkAttachmentDefinitions (only read with the
``ExternalNetResourceInjection`` gate disabled) and the PersistentVolumeClaims its volumes name (each must
exist, :mod:`.templateservice.volumes`). :func:`launch_vmi` starts from a VirtualMachineInstance as a user
creates it: virt-api's VMI webhook (:func:`admit_vmi`) and the template service, without the VM controller,
then both as stored, as for a VM's VMI.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apiserver.render.defaults import set_default_network_interface, set_default_volume_disks
from apiserver.render.golang import gojson
from apiserver.render.golang.values import fingerprint
from apiserver.render.kubernetes.errors import CAUSE_TYPE_INVALID, Cause, ExpandError
from apiserver.render.templateservice.config import LauncherConfig, launcher_config
from apiserver.render.templateservice.pod import PodResources, as_stored, qos_class, render_pod_resources
from apiserver.render.templateservice.resources import Cluster, RenderError
from apiserver.render.templateservice.volumes import PVCLookup
from apiserver.render.vmcontroller.startvmi import start_vmi
from apiserver.render.vmicontroller.lifecycle import pod_created
from apiserver.render.vmimutation.mutate import mutate_vmi

JSON = dict[str, Any]

ARCHITECTURES = ("amd64", "arm64", "s390x")
TEMPLATE_TYPE = "kubevirt.io/api/core/v1.VirtualMachineInstanceTemplateSpec"  # a VMI's metadata and spec


@dataclass(frozen=True, slots=True)
class Launch:
    """The VMI and its pod's resources, and what was assumed about the cluster to render them."""

    vmi: JSON
    pod: PodResources
    assumed: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())

    def to_json(self) -> JSON:
        return {"vmi": self.vmi, "pod": self.pod.to_json(), "assumed": list(self.assumed)}


def cluster_inputs(listed: Iterable[Mapping[str, Any]], namespace: str) -> dict[str, Any]:
    """What the template service reads of the cluster, picked from a list of objects, as :func:`launch`'s
    keyword arguments: the Namespace ``namespace``, its ResourceQuotas, the NetworkAttachmentDefinitions
    and the PersistentVolumeClaims (an object without a namespace is taken as ``namespace``'s, as kubectl
    would create it)."""
    ns_obj = None
    quotas = []
    nads: dict[tuple[str, str], Mapping[str, Any]] = {}
    claims: dict[tuple[str, str], Mapping[str, Any]] = {}
    for o in listed:
        kind = o.get("kind")
        meta = o.get("metadata") or {}
        if not isinstance(meta, Mapping):
            continue
        key = (str(meta.get("namespace") or namespace), str(meta.get("name") or ""))
        if kind == "Namespace" and meta.get("name") == namespace and ns_obj is None:
            ns_obj = o
        elif kind == "ResourceQuota" and key[0] == namespace:
            quotas.append(o)
        elif kind == "NetworkAttachmentDefinition":
            nads.setdefault(key, o)
        elif kind == "PersistentVolumeClaim":
            claims.setdefault(key, o)
    return {
        "namespace": ns_obj,
        "quotas": quotas,
        "nads": nads,
        "pvcs": lambda ns, name: claims.get((ns, name)),
    }


def _check_arch(arch: str) -> None:
    if arch not in ARCHITECTURES:
        raise ExpandError.invalid(
            f"unsupported architecture {arch!r}: one of {', '.join(ARCHITECTURES)}",
            Cause("arch", f"Unsupported value: {arch!r}", "FieldValueNotSupported"),
        )


def _config(kubevirt: Mapping[str, Any] | None) -> LauncherConfig:
    return launcher_config(kubevirt, fingerprint=fingerprint(kubevirt) if kubevirt else None)


def launch(
    expanded_vm: Mapping[str, Any],
    kubevirt: Mapping[str, Any] | None = None,
    *,
    arch: str = "amd64",
    namespace: Mapping[str, Any] | None = None,
    quotas: Sequence[Mapping[str, Any]] = (),
    nads: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
    pvcs: PVCLookup | None = None,
    assume_pvcs: bool = False,
    written: Mapping[str, Any] | None = None,
    preference: Mapping[str, Any] | None = None,
) -> Launch:
    """Render the VMI and the pod's resources of an expanded VM (not changed), as the cluster stores them.
    ``written``: the VM before expansion (the VMI's annotations name its instancetype and preference);
    ``preference``: the preference spec the expansion applied (:attr:`.expand.ExpandResult.preference`).

    ``pvcs`` finds the claims the volumes name; with ``assume_pvcs`` one it does not find is taken as an
    existing filesystem PVC (said in ``assumed``). Raises :class:`ExpandError` (422) where KubeVirt
    would not create the pod."""
    _check_arch(arch)
    config = _config(kubevirt)
    vm = dict(expanded_vm)
    meta = dict(vm.get("metadata") or {})
    meta.setdefault("namespace", "default")
    vm["metadata"] = meta
    vmi = start_vmi(
        vm, config.admission.render, written=written, preference=dict(preference) if preference else None
    )
    mutate_vmi(config, vmi)
    return _render(config, vmi, "spec.template.spec", arch, namespace, quotas, nads, pvcs, assume_pvcs)


def decode_vmi(vmi: Mapping[str, Any]) -> JSON:
    """A VirtualMachineInstance as virt-api decodes the body of its CREATE (metadata and spec through Go's
    types, member names matched as ``encoding/json`` does; ``status`` kept as given); a value of the
    wrong type is a 422 naming the field."""
    if not isinstance(vmi, Mapping):
        raise ExpandError.bad_request("the VirtualMachineInstance must be a JSON object")
    if not isinstance(vmi.get("spec"), Mapping):
        raise ExpandError.invalid(
            "the VirtualMachineInstance has no spec", Cause("spec", "Required value", "FieldValueRequired")
        )
    body = {"metadata": vmi.get("metadata") or {}, "spec": vmi["spec"]}
    try:
        decoded = gojson.decode(body, TEMPLATE_TYPE)
    except gojson.GoDecodeError as err:
        message = f"Can not unmarshal Request body to struct, error: {err}"
        raise ExpandError.invalid(message, Cause(err.path, str(err), CAUSE_TYPE_INVALID)) from None
    out: JSON = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": dict(decoded.get("metadata") or {}),
        "spec": decoded.get("spec") or {},
    }
    status = vmi.get("status")
    out["status"] = dict(status) if isinstance(status, Mapping) else {}
    return out


def launch_vmi(
    vmi: Mapping[str, Any],
    kubevirt: Mapping[str, Any] | None = None,
    *,
    arch: str = "amd64",
    namespace: Mapping[str, Any] | None = None,
    quotas: Sequence[Mapping[str, Any]] = (),
    nads: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
    pvcs: PVCLookup | None = None,
    assume_pvcs: bool = False,
    presets: Sequence[Mapping[str, Any]] | None = None,
) -> Launch:
    """Render a VirtualMachineInstance a user creates (not changed), as the cluster stores it and its pod:
    virt-api's VMI mutating webhook (:func:`admit_vmi`), the template service, then kube-apiserver's pod
    defaulting and the VMI controller's writes, as for a VM's VMI. No VM controller: a VMI no VM owns has
    no revision name, no instancetype annotations and no VM controller finalizer. The other arguments are
    :func:`launch`'s."""
    _check_arch(arch)
    config = _config(kubevirt)
    admitted, warnings = admit_vmi(config, vmi, presets)
    launched = _render(config, admitted, "spec", arch, namespace, quotas, nads, pvcs, assume_pvcs)
    return Launch(launched.vmi, launched.pod, launched.assumed, warnings)


def admit_vmi(
    config: LauncherConfig, vmi: Mapping[str, Any], presets: Sequence[Mapping[str, Any]] | None = None
) -> tuple[JSON, tuple[str, ...]]:
    """A user's VirtualMachineInstance as virt-api's VMI mutating webhook leaves it on CREATE
    (``VMIsMutator.Mutate``: ``presets``, the namespace's VirtualMachineInstancePresets, when given, then
    ``ApplyNewVMIMutations``), with the presets' warnings: the stage ``expand-launcher`` answers for a VMI,
    before any pod exists. A body virt-api could not decode, or without a name, is an :class:`ExpandError`."""
    decoded = decode_vmi(vmi)
    meta = decoded["metadata"]
    if not meta.get("name"):
        raise ExpandError.invalid(
            "the VirtualMachineInstance has no metadata.name",
            Cause("metadata.name", "Required value", "FieldValueRequired"),
        )
    if not meta.get("namespace"):
        meta["namespace"] = "default"
    warnings: tuple[str, ...] = ()
    if presets is not None:
        decoded, warnings = _with_presets(decoded, presets)
    # SetDefaultVirtualMachineInstanceSpec's parts that the VM controller did for a VM's VMI already
    set_default_network_interface(config.admission.render, decoded["spec"])
    set_default_volume_disks(decoded["spec"])
    return mutate_vmi(config, decoded), warnings


def _with_presets(vmi: JSON, presets: Sequence[Mapping[str, Any]]) -> tuple[JSON, tuple[str, ...]]:
    """``applyPresets``: the presets step the expand path runs on a VM's template, run on the VMI's
    metadata and spec (the same Go type)."""
    from apiserver.render.presets import apply_presets

    meta = vmi["metadata"]
    holder: JSON = {
        "metadata": {"name": meta.get("name", ""), "namespace": meta["namespace"]},
        "spec": {"template": {"metadata": meta, "spec": vmi["spec"]}},
    }
    report = apply_presets(holder, presets)
    template = holder["spec"]["template"]
    out = {**vmi, "metadata": dict(template.get("metadata") or {}), "spec": template.get("spec") or {}}
    out["metadata"].setdefault("namespace", meta["namespace"])
    return out, tuple(report.warning_texts())


def _render(
    config: LauncherConfig,
    vmi: JSON,
    where: str,
    arch: str,
    namespace: Mapping[str, Any] | None,
    quotas: Sequence[Mapping[str, Any]],
    nads: Mapping[tuple[str, str], Mapping[str, Any]] | None,
    pvcs: PVCLookup | None,
    assume_pvcs: bool,
) -> Launch:
    ns_name = vmi["metadata"]["namespace"]
    in_namespace = [
        dict(q) for q in quotas if ((q.get("metadata") or {}).get("namespace") or ns_name) == ns_name
    ]
    for quota in in_namespace:
        quota["metadata"] = {**(quota.get("metadata") or {}), "namespace": ns_name}
    cluster = Cluster(
        arch=arch, namespace=dict(namespace) if namespace is not None else None, quotas=in_namespace
    )
    try:
        pod = render_pod_resources(
            config,
            vmi,
            cluster,
            {k: dict(v) for k, v in (nads or {}).items()},
            pvcs,
            assume_pvcs=assume_pvcs,
        )
    except RenderError as err:
        raise ExpandError.invalid(
            f"virt-controller would not create the virt-launcher pod: {err}", Cause(where, str(err))
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
    assumed.extend(
        f"PVC {ns_name}/{claim.name} (volume {claim.volume}) is not among the inputs: taken as an "
        "existing claim of volumeMode Filesystem"
        for claim in pod.pvcs
        if claim.assumed
    )
    return Launch(vmi, pod, tuple(assumed))
