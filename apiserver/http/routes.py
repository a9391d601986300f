"""The two expand endpoints, for every configured version of the configured group.

GET expands the stored VM as read (member names matched exactly, as client-go decodes); PUT expands
the body (member names matched like Go's ``encoding/json``). Rendering runs through
:func:`~apiserver.sources.gather.render_from_source`; its errors map onto Statuses here, either the
contract's (422 with causes, 404) or, with ``--kubevirt-error-codes``, virt-api's (GET 500, PUT 400).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from apiserver.http.authn import check_references
from apiserver.http.bodies import body_format, check_vm, parse, read_body
from apiserver.http.errors import StatusError, bad_request, unavailable
from apiserver.http.media import encode, negotiate, respond, respond_cacheable
from apiserver.http.metrics import Metrics
from apiserver.http.settings import Settings
from apiserver.render import ExpandError, ExpandResult
from apiserver.render.errors import VM_GROUP, status
from apiserver.sources.base import Source, SourceUnavailable
from apiserver.sources.gather import render_from_source

_TRUE = ("true", "1")
_FALSE = ("false", "0", "")


def query_flag(request: web.Request, name: str) -> bool:
    """A boolean query parameter: true/false/1/0 (absent = false); 400 naming it otherwise."""
    values = request.query.getall(name, [])
    if not values:
        return False
    if len(values) > 1:
        raise bad_request(f'query parameter "{name}" was given {len(values)} times; give it once')
    value = values[0].strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise bad_request(f'query parameter "{name}" must be true or false (or 1 or 0), not "{values[0]}"')


def warning_header(text: str) -> str:
    """RFC 9111 ``Warning`` value with code 299, as kube-apiserver sends deprecation warnings."""
    escaped = " ".join(text.split()).replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{escaped}"'


class ExpandHandlers:
    """Request handlers sharing the settings, the source and the metrics."""

    def __init__(self, settings: Settings, source: Source, metrics: Metrics) -> None:
        self.settings = settings
        self.source = source
        self.metrics = metrics

    async def _render(self, vm: Mapping[str, Any], request: web.Request, *, get: bool) -> ExpandResult:
        presets = query_flag(request, "presets")
        validate = query_flag(request, "validate")
        try:
            result, refs = await render_from_source(
                self.source, vm, presets=presets, validate=validate, exact_names=get
            )
        except ExpandError as err:
            self.metrics.render_errors.labels(err.reason or "Unknown").inc()
            raise self._expand_failure(err, get=get) from None
        except SourceUnavailable as err:
            raise self._source_failure(err) from None
        await check_references(request, refs)  # --authorize-references: may the caller read them?
        return result

    def _expand_failure(self, err: ExpandError, *, get: bool) -> StatusError:
        if not self.settings.kubevirt_error_codes:
            return StatusError(err.status)
        if get:
            details = {"causes": [{"message": err.message}]}
            return StatusError(
                status(500, "InternalError", f"Internal error occurred: {err.message}", details=details)
            )
        return StatusError(status(400, "BadRequest", err.message))

    def _source_failure(self, err: SourceUnavailable) -> StatusError:
        self.metrics.render_errors.labels("Timeout" if err.timeout else "ServiceUnavailable").inc()
        return unavailable(str(err), timeout=err.timeout, retry_after=err.retry_after)

    def _vm_not_found(self, name: str) -> StatusError:
        self.metrics.render_errors.labels("NotFound").inc()
        if self.settings.kubevirt_error_codes:
            message, kind = f'virtualmachine.kubevirt.io "{name}" not found', "virtualmachine"
        else:
            message, kind = f'virtualmachines.kubevirt.io "{name}" not found', "virtualmachines"
        details = {"name": name, "group": VM_GROUP, "kind": kind}
        return StatusError(status(404, "NotFound", message, details=details))

    async def get(self, request: web.Request) -> web.Response:
        """GET .../namespaces/{namespace}/virtualmachines/{name}/expand-spec"""
        media_type = negotiate(request)
        query_flag(request, "presets"), query_flag(request, "validate")  # 400 before any read
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        try:
            vm = await self.source.get_vm(namespace, name)
        except SourceUnavailable as err:
            raise self._source_failure(err) from None
        if vm is None:
            raise self._vm_not_found(name)
        if "apiVersion" not in vm or "kind" not in vm:
            # virt-api's client puts TypeMeta back on what it reads; so do we.
            vm = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", **vm}
        result = await self._render(vm, request, get=True)
        headers = [("Warning", warning_header(w)) for w in result.warnings]
        return respond_cacheable(request, encode(result.vm, media_type), media_type, headers=headers)

    async def put(self, request: web.Request) -> web.Response:
        """PUT .../namespaces/{namespace}/expand-vm-spec"""
        media_type = negotiate(request)
        fmt = body_format(request)
        query_flag(request, "presets"), query_flag(request, "validate")
        data = await read_body(request, self.settings.max_body_bytes)
        kubevirt_messages = self.settings.kubevirt_error_codes
        doc = parse(data, fmt, kubevirt_messages=kubevirt_messages)
        vm = check_vm(doc, request.match_info["namespace"], kubevirt_messages=kubevirt_messages)
        result = await self._render(vm, request, get=False)
        headers = [("Warning", warning_header(w)) for w in result.warnings]
        response = respond(result.vm, media_type)
        for key, value in headers:
            response.headers.add(key, value)
        return response


def add_routes(app: web.Application, settings: Settings, source: Source, metrics: Metrics) -> None:
    from apiserver.http.version import make_handler

    handlers = ExpandHandlers(settings, source, metrics)
    version_handler = make_handler(source)
    for version in settings.api_versions:
        base = f"/apis/{settings.api_group}/{version}"
        app.router.add_get(
            f"{base}/namespaces/{{namespace}}/virtualmachines/{{name}}/expand-spec",
            handlers.get,
            allow_head=False,
        )
        app.router.add_put(f"{base}/namespaces/{{namespace}}/expand-vm-spec", handlers.put)
        app.router.add_get(f"{base}/version", version_handler, allow_head=False)
