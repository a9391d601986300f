"""The change preview: ``VirtualMachineChangePreview``, a review-style resource (create it, read the answer
in its ``status``), as TokenReview and SubjectAccessReview are.

``POST /apis/expand.kubevirt-expand.io/v1/namespaces/{namespace}/virtualmachinechangepreviews`` with::

    apiVersion: expand.kubevirt-expand.io/v1
    kind: VirtualMachineChangePreview
    spec:
      vmName: fedora                 # a stored VM: read with its running VMI and start revision
      instancetype: {name: u1.large, kind: VirtualMachineClusterInstancetype}   # and/or
      preference: {name: fedora, kind: VirtualMachineClusterPreference}         # and/or
      upgrade: true                  # the latest revisions of its instancetype and preference
      virtualMachine: {...}          # or an edited VM (with vmName), or a VM alone (without)
      running:                       # without vmName: how the VM runs, when it does
        virtualMachine: {...}        #   the VM as started (its start revision holds its spec)
        virtualMachineInstance: {...}

answers 201 with the object and its ``status``: ``verdict`` (``live``, ``restart``, ``refused``,
``error``, ``stopped``), KubeVirt's ``message``, the RFC 6902 ``patch`` and the ``changes`` between the
rendered VMs, and the patches KubeVirt would write (``liveUpdates`` to the VMI, ``vmPatches``). Nothing
is stored; every read is the caller's (:meth:`apiserver.sources.reads.ScopedReads.running_vm`).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from apiserver.http.endpoints.bodies import field_validation, parse, read_body, review_name
from apiserver.http.endpoints.discovery import PREVIEW_KIND, PREVIEW_PLURAL, PREVIEW_SINGULAR
from apiserver.http.endpoints.expand import warning_header
from apiserver.http.errors import StatusError, unavailable
from apiserver.http.keys import scope_of
from apiserver.http.media import encode, negotiate
from apiserver.http.settings import Settings
from apiserver.http.transport.budget import person_of
from apiserver.http.transport.seats import Seats, Ticket
from apiserver.render import ExpandError
from apiserver.render.golang.gojson import GoDecodeError
from apiserver.render.kubernetes.errors import CAUSE_INVALID, CAUSE_REQUIRED, Cause, invalid_status, status
from apiserver.render.kubernetes.fieldvalidation import IGNORE, STRICT
from apiserver.render.objects import ObjectLookup
from apiserver.render.vmcontroller.preview import Preview, preview, propose
from apiserver.sources.access import AccessRefused
from apiserver.sources.base import Source, SourceUnavailable
from apiserver.sources.reads import Reads
from apiserver.sources.rendered import items as evm

KIND = PREVIEW_KIND
PLURAL = PREVIEW_PLURAL
SINGULAR = PREVIEW_SINGULAR
API_VERSION = f"{evm.GROUP}/{evm.VERSION}"
_MATCHER_KINDS = {
    "instancetype": ("VirtualMachineInstancetype", "VirtualMachineClusterInstancetype"),
    "preference": ("VirtualMachinePreference", "VirtualMachineClusterPreference"),
}


def _invalid(causes: list[Cause], name: str = "") -> StatusError:
    message = f"{KIND}.{evm.GROUP} is invalid: " + ", ".join(f"{c.field}: {c.message}" for c in causes)
    return StatusError(invalid_status(message, causes, name=name, group=evm.GROUP, kind=KIND))


def _object(
    value: Any, field: str, causes: list[Cause], *, required: bool = False
) -> Mapping[str, Any] | None:
    if value is None:
        if required:
            causes.append(Cause(field, "Required value", CAUSE_REQUIRED))
        return None
    if not isinstance(value, Mapping):
        causes.append(Cause(field, "Invalid value: must be an object", CAUSE_INVALID))
        return None
    return value


_KNOWN: dict[str, frozenset[str]] = {
    "": frozenset({"apiVersion", "kind", "metadata", "spec", "status"}),
    "spec": frozenset({"vmName", "instancetype", "preference", "upgrade", "virtualMachine", "running"}),
    "spec.instancetype": frozenset({"name", "kind"}),
    "spec.preference": frozenset({"name", "kind"}),
    "spec.running": frozenset({"virtualMachine", "virtualMachineInstance"}),
}


def unknown_fields(doc: Mapping[str, Any]) -> list[str]:
    """Members of the request this server does not know (the VMs inside are KubeVirt's, judged there)."""
    found: list[str] = []
    for where, known in _KNOWN.items():
        node: Any = doc
        for part in where.split(".") if where else ():
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, Mapping):
            found += [f"{where}.{k}" if where else str(k) for k in node if k not in known]
    return found


def check_request(doc: Any, level: str = STRICT) -> tuple[str, Mapping[str, Any], list[str]]:
    """The request's name, spec and warnings; 400 for another kind, 422 naming every field at fault
    (``level``: kube-apiserver's fieldValidation for members this server does not know)."""
    name = review_name(doc, KIND, API_VERSION)
    causes: list[Cause] = []
    warnings: list[str] = []
    unknown = unknown_fields(doc) if level != IGNORE else []
    if level == STRICT:
        causes += [Cause(f, f'unknown field "{f}"', "FieldValueInvalid") for f in unknown]
    else:
        warnings += [f'unknown field "{f}"' for f in unknown]
    spec = _object(doc.get("spec"), "spec", causes, required=True)
    if spec is None:
        raise _invalid(causes, str(name))
    vm_name = spec.get("vmName")
    if vm_name is not None and (not isinstance(vm_name, str) or not vm_name):
        causes.append(Cause("spec.vmName", "Invalid value: must be a VirtualMachine's name", CAUSE_INVALID))
    edited = _object(spec.get("virtualMachine"), "spec.virtualMachine", causes)
    if vm_name is None and edited is None:
        causes.append(
            Cause(
                "spec.vmName", "Required value: name a stored VM, or give spec.virtualMachine", CAUSE_REQUIRED
            )
        )
    for member, kinds in _MATCHER_KINDS.items():
        matcher = _object(spec.get(member), f"spec.{member}", causes)
        if matcher is None:
            continue
        if vm_name is None:
            causes.append(
                Cause(
                    f"spec.{member}",
                    "Forbidden: a switch applies to the stored VM named by spec.vmName",
                    "FieldValueForbidden",
                )
            )
        if not isinstance(matcher.get("name"), str) or not matcher["name"]:
            causes.append(Cause(f"spec.{member}.name", "Required value", CAUSE_REQUIRED))
        if "kind" in matcher and matcher["kind"] not in kinds:
            causes.append(
                Cause(
                    f"spec.{member}.kind",
                    f"Unsupported value: {matcher['kind']!r}: supported values: {', '.join(repr(k) for k in kinds)}",
                    "FieldValueNotSupported",
                )
            )
    upgrade = spec.get("upgrade")
    if upgrade is not None and not isinstance(upgrade, bool):
        causes.append(Cause("spec.upgrade", "Invalid value: must be true or false", CAUSE_INVALID))
    if upgrade and vm_name is None:
        causes.append(
            Cause(
                "spec.upgrade",
                "Forbidden: an upgrade applies to the stored VM named by spec.vmName",
                "FieldValueForbidden",
            )
        )
    running = _object(spec.get("running"), "spec.running", causes)
    if running is not None:
        if vm_name is not None:
            causes.append(
                Cause(
                    "spec.running", "Forbidden: a stored VM runs as the cluster says", "FieldValueForbidden"
                )
            )
        _object(running.get("virtualMachine"), "spec.running.virtualMachine", causes)
        _object(running.get("virtualMachineInstance"), "spec.running.virtualMachineInstance", causes)
    if causes:
        raise _invalid(causes, str(name))
    return str(name), spec, warnings


def _in_namespace(vm: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    out = dict(vm)
    meta = dict(out.get("metadata") or {})
    meta["namespace"] = namespace
    out["metadata"] = meta
    return out


class PreviewHandler:
    def __init__(self, settings: Settings, source: Source, seats: Seats | None = None) -> None:
        self.settings = settings
        self.reads = Reads(source)
        # Parsing, the preview and encoding take CPU seats, shared fairly among people (seats.py).
        self.seats = seats or Seats(settings.cpu_seats, settings.cpu_queue_per_user)

    async def create(self, request: web.Request) -> web.Response:
        media_type = negotiate(request)
        scope = scope_of(request)
        namespace = request.match_info["namespace"]
        if scope.namespace != namespace:
            raise StatusError(status(403, "Forbidden", "the request's scope does not cover this namespace"))
        level = field_validation(request)
        data = await read_body(request, self.settings.max_body_bytes)
        ticket = self.seats.ticket(person_of(request))
        name, spec, warnings = await ticket.run(lambda: check_request(parse(data).value, level))
        reads = self.reads.within(scope)
        try:
            result = await self._preview(reads, namespace, spec, ticket)
        except AccessRefused as err:
            raise StatusError(err.status) from None
        except SourceUnavailable as err:
            raise unavailable(str(err), timeout=False, retry_after=1) from None
        except ExpandError as err:
            raise StatusError(err.status) from None
        answer: dict[str, Any] = {"kind": KIND, "apiVersion": API_VERSION}
        meta: dict[str, Any] = {"namespace": namespace}
        if name:
            meta["name"] = name
        answer["metadata"] = meta
        answer["spec"] = spec
        answer["status"] = result.as_status()
        headers = CIMultiDict(("Warning", warning_header(w)) for w in warnings)
        body = await ticket.run(partial(encode, answer, media_type))
        return web.Response(status=201, body=body, content_type=media_type, headers=headers)

    async def _preview(self, reads: Any, namespace: str, spec: Mapping[str, Any], ticket: Ticket) -> Preview:
        vm_name = spec.get("vmName")
        edited = spec.get("virtualMachine")
        if vm_name is not None:
            running = await reads.running_vm(vm_name)
            if running is None:
                message = f'virtualmachines.kubevirt.io "{vm_name}" not found'
                details = {"name": vm_name, "group": "kubevirt.io", "kind": "virtualmachines"}
                raise StatusError(status(404, "NotFound", message, details=details))
            current = running.vm
            base = _in_namespace(edited, namespace) if edited is not None else current
            if edited is not None:
                base["metadata"]["name"] = vm_name
            proposed = propose(
                base,
                instancetype=spec.get("instancetype"),
                preference=spec.get("preference"),
                upgrade=bool(spec.get("upgrade")),
            )
            vmi, revision, start_vm = running.vmi, running.start_revision, None
        else:
            proposed = _in_namespace(edited or {}, namespace)
            run = spec.get("running") or {}
            start_vm = run.get("virtualMachine")
            if start_vm is not None:
                start_vm = _in_namespace(start_vm, namespace)
            vmi, revision, current = run.get("virtualMachineInstance"), None, start_vm

        def work(lookup: ObjectLookup, kubevirt: Mapping[str, Any] | None) -> Preview:
            try:
                return preview(
                    proposed,
                    lookup,
                    current=current,
                    vmi=vmi,
                    start_vm=start_vm,
                    start_revision=revision,
                    kubevirt=kubevirt,
                )
            except GoDecodeError as err:
                cause = Cause(err.path, str(err), CAUSE_INVALID)
                raise ExpandError.invalid(f"the VirtualMachine cannot be read: {err}", cause) from None

        result: Preview = await reads.evaluate(work, run=ticket.run)
        return result


def add_routes(app: web.Application, settings: Settings, source: Source, seats: Seats | None = None) -> None:
    handler = PreviewHandler(settings, source, seats)
    app.router.add_post(f"/apis/{evm.GROUP}/{evm.VERSION}/namespaces/{{namespace}}/{PLURAL}", handler.create)


__all__ = ["API_VERSION", "KIND", "PLURAL", "SINGULAR", "add_routes", "check_request"]
