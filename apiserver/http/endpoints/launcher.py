"""What a VM will cost: the VMI KubeVirt creates for it and its virt-launcher pod's resources.

Beside the expand endpoints, for every configured version of the configured group:

- GET ``.../namespaces/{namespace}/virtualmachines/{name}/launch-spec``: the stored VM;
- PUT ``.../namespaces/{namespace}/launch-vm-spec``: the VM in the body (as PUT expand-vm-spec reads it).

The VM is rendered as expand-spec renders it (through the request's scope), then
:func:`apiserver.render.launcher.launch` runs KubeVirt's VM controller, VMI webhook and template service
over it. The namespace's labels and ResourceQuotas (``AutoResourceLimits``) are read through the scope
too (``get namespaces``, ``list resourcequotas`` reviewed for the caller) where the source holds them;
the answer's ``assumed`` says what was taken instead. The answer is a ``VirtualMachineLaunch``::

    {"apiVersion": "expand.kubevirt-expand.io/v1", "kind": "VirtualMachineLaunch",
     "metadata": {"name", "namespace"}, "vmi": {...}, "pod": {...}, "assumed": [...],
     "quota": {"fits": bool, "refusedBy": [...]}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from apiserver.http.endpoints.bodies import check_vm, field_validation, parse, read_body
from apiserver.http.endpoints.expand import query_flag
from apiserver.http.errors import StatusError, unavailable
from apiserver.http.keys import scope_of
from apiserver.http.media import encode, negotiate
from apiserver.http.settings import Settings
from apiserver.render import ExpandError
from apiserver.render.kubernetes.errors import VM_GROUP, status
from apiserver.render.kubernetes.quota import Pod, admit
from apiserver.render.launcher import ARCHITECTURES, launch
from apiserver.render.virtconfig import cluster_config
from apiserver.sources.access import AccessRefused
from apiserver.sources.base import Source, SourceUnavailable
from apiserver.sources.reads import Reads, ScopedReads

API_VERSION = "expand.kubevirt-expand.io/v1"
KIND = "VirtualMachineLaunch"
LAUNCH_SPEC = "launch-spec"
LAUNCH_VM_SPEC = "launch-vm-spec"


def _refused(err: AccessRefused) -> StatusError:
    return StatusError(err.status)


def _arch(request: web.Request, kubevirt: Mapping[str, Any] | None) -> str:
    """``?arch=``: the architecture virt-controller runs on; else the cluster's default architecture."""
    arch = request.query.get("arch") if request.query_string else None
    if arch is None:
        return cluster_config(kubevirt).default_architecture or "amd64"
    if arch not in ARCHITECTURES:
        raise StatusError(
            status(
                400,
                "BadRequest",
                f'query parameter "arch" must be one of {", ".join(ARCHITECTURES)}, not {arch!r}',
            )
        )
    return arch


class LauncherHandlers:
    def __init__(self, settings: Settings, source: Source) -> None:
        self.settings = settings
        self.reads = Reads(source)

    async def _answer(
        self, request: web.Request, reads: ScopedReads, vm: Mapping[str, Any], *, get: bool
    ) -> web.Response:
        media_type = negotiate(request)
        presets = query_flag(request, "presets")
        try:
            rendered = await reads.render(vm, presets=presets, exact_names=get)
            namespace_obj, quotas, known = await reads.launch_objects()
        except SourceUnavailable as err:
            raise unavailable(str(err), timeout=err.timeout, retry_after=err.retry_after) from None
        except AccessRefused as err:
            raise _refused(err) from None
        if rendered.error is not None:
            raise StatusError(rendered.error.status)
        assert rendered.result is not None
        try:
            launched = launch(
                rendered.result.vm,
                rendered.kubevirt,
                arch=_arch(request, rendered.kubevirt),
                namespace=namespace_obj,
                quotas=quotas,
                written=vm,
                preference=rendered.result.preference,
            )
        except ExpandError as err:
            raise StatusError(err.status) from None
        assumed = list(launched.assumed)
        if not known:
            assumed.append("the source does not hold Namespaces and ResourceQuotas: none were read")
        meta = rendered.result.vm.get("metadata") or {}
        pod = launched.pod
        containers = [(c.name, c.requests, c.limits) for c in (*pod.containers, *pod.init_containers)]
        label = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        (verdict,), _ = admit([Pod(label, pod.requests, pod.limits, containers)], quotas)
        doc = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": meta.get("name", ""), "namespace": meta.get("namespace", "")},
            "vmi": launched.vmi,
            "pod": launched.pod.to_json(),
            "assumed": assumed,
            # kube-apiserver's quota admission of this pod against the namespace's ResourceQuotas, their
            # status.used counting what already runs
            "quota": {"fits": verdict.fits, "refusedBy": verdict.reasons},
        }
        return web.Response(body=encode(doc, media_type), headers={"Content-Type": media_type})

    async def get(self, request: web.Request) -> web.Response:
        scope = scope_of(request)
        reads = self.reads.within(scope)
        try:
            vm = await reads.get_vm()
        except SourceUnavailable as err:
            raise unavailable(str(err), timeout=err.timeout, retry_after=err.retry_after) from None
        if vm is None:
            name = scope.name or ""
            details = {"name": name, "group": VM_GROUP, "kind": "virtualmachines"}
            raise StatusError(
                status(404, "NotFound", f'virtualmachines.kubevirt.io "{name}" not found', details=details)
            )
        if "apiVersion" not in vm or "kind" not in vm:
            vm = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", **vm}
        return await self._answer(request, reads, vm, get=True)

    async def put(self, request: web.Request) -> web.Response:
        scope = scope_of(request)
        data = await read_body(request, self.settings.max_body_bytes)
        body = parse(data)
        vm, _warnings = check_vm(body, scope.namespace or "", field_validation(request))
        return await self._answer(request, self.reads.within(scope), vm, get=False)


def add_routes(app: web.Application, settings: Settings, source: Source) -> None:
    handlers = LauncherHandlers(settings, source)
    for version in settings.api_versions:
        base = f"/apis/{settings.api_group}/{version}/namespaces/{{namespace}}"
        app.router.add_get(f"{base}/virtualmachines/{{name}}/{LAUNCH_SPEC}", handlers.get, allow_head=False)
        app.router.add_put(f"{base}/{LAUNCH_VM_SPEC}", handlers.put)
