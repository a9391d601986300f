"""What a VM will cost: the VMI KubeVirt creates for it and its virt-launcher pod's resources.

Beside the expand endpoints, for every configured version of the configured group:

- GET ``.../namespaces/{namespace}/virtualmachines/{name}/launch-spec``: the stored VM;
- PUT ``.../namespaces/{namespace}/launch-vm-spec``: the VM in the body (as PUT expand-vm-spec reads it);
- PUT ``.../namespaces/{namespace}/launch-vmi-spec``: the VirtualMachineInstance in the body, as a user
  creates one (:func:`apiserver.render.launcher.launch_vmi`: the VMI webhook, then the template service;
  both as stored, as a VM's are).

The VM is rendered as expand-spec renders it (through the request's scope), then
:func:`apiserver.render.launcher.launch` runs KubeVirt's VM controller, VMI webhook and template service
over it. The namespace's labels and ResourceQuotas (``AutoResourceLimits``) are read through the scope
too (``get namespaces``, ``list resourcequotas`` reviewed for the caller) where the source holds them;
the answer's ``assumed`` says what was taken instead. The PersistentVolumeClaims the volumes name are
read through the scope as references are (a missing one: KubeVirt's ``didn't find PVC``, 422;
``?assumePVCs=true`` takes it as an existing filesystem claim, in ``assumed``). NetworkAttachmentDefinitions
are not read by the sources: under a configuration that disables ``ExternalNetResourceInjection`` a
Multus network is refused as virt-controller refuses a missing one. The answer is a
``VirtualMachineLaunch``::

    {"apiVersion": "expand.kubevirt-expand.io/v1", "kind": "VirtualMachineLaunch",
     "metadata": {"name", "namespace"}, "vmi": {...}, "pod": {...}, "assumed": [...],
     "quota": {"fits": bool, "refusedBy": [...]}}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from apiserver.http.endpoints.bodies import check_vm, check_vmi, field_validation, parse, read_body
from apiserver.http.endpoints.expand import query_flag, warning_headers
from apiserver.http.errors import StatusError, unavailable
from apiserver.http.keys import scope_of
from apiserver.http.media import encode, negotiate
from apiserver.http.settings import Settings
from apiserver.http.transport.budget import person_of
from apiserver.http.transport.seats import Seats, Ticket
from apiserver.render import ExpandError
from apiserver.render.kubernetes.errors import VM_GROUP, status
from apiserver.render.kubernetes.quota import Pod, admit
from apiserver.render.launcher import ARCHITECTURES, Launch, launch, launch_vmi
from apiserver.render.objects import PERSISTENT_VOLUME_CLAIM, ObjectLookup, ObjectRef
from apiserver.render.templateservice.volumes import PVCLookup
from apiserver.render.virtconfig import cluster_config
from apiserver.sources.access import AccessRefused
from apiserver.sources.base import Source, SourceUnavailable
from apiserver.sources.reads import Reads, ScopedReads

API_VERSION = "expand.kubevirt-expand.io/v1"
KIND = "VirtualMachineLaunch"
LAUNCH_SPEC = "launch-spec"
LAUNCH_VM_SPEC = "launch-vm-spec"
LAUNCH_VMI_SPEC = "launch-vmi-spec"


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
    def __init__(self, settings: Settings, source: Source, seats: Seats | None = None) -> None:
        self.settings = settings
        self.reads = Reads(source)
        # Parsing, rendering, the launch and encoding take CPU seats, shared fairly among people.
        self.seats = seats or Seats(settings.cpu_seats, settings.cpu_queue_per_user)

    async def _answer(
        self,
        request: web.Request,
        reads: ScopedReads,
        vm: Mapping[str, Any],
        *,
        get: bool,
        ticket: Ticket | None = None,
        warnings: Sequence[str] = (),
    ) -> web.Response:
        """The launch of ``vm``; ``warnings`` (the body's field-validation findings) go out first."""
        media_type = negotiate(request)
        presets = query_flag(request, "presets")
        assume_pvcs = query_flag(request, "assumePVCs")
        ticket = ticket or self.seats.ticket(person_of(request))
        try:
            rendered = await reads.render(vm, presets=presets, exact_names=get, run=ticket.run)
            namespace_obj, quotas, known = await reads.launch_objects()
        except SourceUnavailable as err:
            raise unavailable(str(err), timeout=err.timeout, retry_after=err.retry_after) from None
        except AccessRefused as err:
            raise _refused(err) from None
        if rendered.error is not None:
            raise StatusError(rendered.error.status)
        assert rendered.result is not None
        expanded = rendered.result.vm
        applied = rendered.result.preference
        arch = _arch(request, rendered.kubevirt)

        def work(lookup: ObjectLookup, _cr: Mapping[str, Any] | None) -> Launch:
            return launch(
                expanded,
                rendered.kubevirt,
                arch=arch,
                namespace=namespace_obj,
                quotas=quotas,
                pvcs=_pvcs(lookup),
                assume_pvcs=assume_pvcs,
                written=vm,
                preference=applied,
            )

        launched = await self._evaluate(reads, work, ticket)
        return await ticket.run(partial(self._respond, media_type, launched, quotas, known, warnings))

    async def _evaluate(self, reads: ScopedReads, work: Any, ticket: Ticket) -> Launch:
        """Run the launch over the source: the claims it looks up are read through the caller's gate."""
        try:
            launched: Launch = await reads.evaluate(work, run=ticket.run)
        except ExpandError as err:
            raise StatusError(err.status) from None
        except SourceUnavailable as err:
            raise unavailable(str(err), timeout=err.timeout, retry_after=err.retry_after) from None
        except AccessRefused as err:
            raise _refused(err) from None
        return launched

    def _respond(
        self,
        media_type: str,
        launched: Launch,
        quotas: list[Mapping[str, Any]],
        known: bool,
        warnings: Sequence[str] = (),
    ) -> web.Response:
        assumed = list(launched.assumed)
        if not known:
            assumed.append("the source does not hold Namespaces and ResourceQuotas: none were read")
        meta = launched.vmi.get("metadata") or {}
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
        headers = CIMultiDict(
            [("Content-Type", media_type), *warning_headers([*warnings, *launched.warnings])]
        )
        return web.Response(body=encode(doc, media_type), headers=headers)

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
        level = field_validation(request)
        ticket = self.seats.ticket(person_of(request))
        vm, warnings = await ticket.run(lambda: check_vm(parse(data), scope.namespace or "", level))
        return await self._answer(
            request, self.reads.within(scope), vm, get=False, ticket=ticket, warnings=warnings
        )

    async def put_vmi(self, request: web.Request) -> web.Response:
        """PUT launch-vmi-spec: the VirtualMachineInstance in the body, as virt-api's VMI webhook would
        admit it on CREATE (presets with ``?presets=true``) and virt-controller would render its pod."""
        scope = scope_of(request)
        data = await read_body(request, self.settings.max_body_bytes)
        ticket = self.seats.ticket(person_of(request))
        vmi = await ticket.run(lambda: check_vmi(parse(data), scope.namespace or ""))
        media_type = negotiate(request)
        presets = query_flag(request, "presets")
        assume_pvcs = query_flag(request, "assumePVCs")
        reads = self.reads.within(scope)
        try:
            namespace_obj, quotas, known = await reads.launch_objects()
        except SourceUnavailable as err:
            raise unavailable(str(err), timeout=err.timeout, retry_after=err.retry_after) from None
        except AccessRefused as err:
            raise _refused(err) from None
        namespace = str(vmi["metadata"]["namespace"])

        def work(lookup: ObjectLookup, kubevirt: Mapping[str, Any] | None) -> Launch:
            return launch_vmi(
                vmi,
                kubevirt,
                arch=_arch(request, kubevirt),
                namespace=namespace_obj,
                quotas=quotas,
                pvcs=_pvcs(lookup),
                assume_pvcs=assume_pvcs,
                presets=lookup.presets(namespace) if presets else None,
            )

        launched = await self._evaluate(reads, work, ticket)
        return await ticket.run(partial(self._respond, media_type, launched, quotas, known))


def _pvcs(lookup: ObjectLookup) -> PVCLookup:
    """The claims a launch looks up, through the lookup (the source, read within the request's scope)."""

    def find(namespace: str, name: str) -> Mapping[str, Any] | None:
        return lookup.get(ObjectRef(PERSISTENT_VOLUME_CLAIM, namespace, name))

    return find


def add_routes(app: web.Application, settings: Settings, source: Source, seats: Seats | None = None) -> None:
    handlers = LauncherHandlers(settings, source, seats)
    for version in settings.api_versions:
        base = f"/apis/{settings.api_group}/{version}/namespaces/{{namespace}}"
        app.router.add_get(f"{base}/virtualmachines/{{name}}/{LAUNCH_SPEC}", handlers.get, allow_head=False)
        app.router.add_put(f"{base}/{LAUNCH_VM_SPEC}", handlers.put)
        app.router.add_put(f"{base}/{LAUNCH_VMI_SPEC}", handlers.put_vmi)
