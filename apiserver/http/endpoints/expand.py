"""The two expand endpoints, for every configured version of the configured group.

GET expands the stored VM as read (member names matched exactly, as client-go decodes); PUT expands
the body (member names matched like Go's ``encoding/json``). Rendering runs through
:func:`~apiserver.sources.gather.render_traced`, behind the response cache of
:mod:`apiserver.http.endpoints.respcache`; its errors map onto Statuses here, either the
contract's (422 with causes, 404) or, with ``--kubevirt-error-codes``, virt-api's (GET 500, PUT 400).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import orjson
from aiohttp import web
from aiohttp.typedefs import Handler
from multidict import CIMultiDict

from apiserver.http.endpoints.bodies import (
    OFFLOAD_BYTES,
    body_format,
    check_vm,
    field_validation,
    offload,
    parse,
    read_body,
)
from apiserver.http.endpoints.respcache import Entry, ResponseCache, vm_token
from apiserver.http.errors import StatusError, bad_request, unavailable
from apiserver.http.filters.scoping import scope_of
from apiserver.http.media import JSON, encode, etag_of, negotiate, respond_tagged, tagged_headers
from apiserver.http.metrics import Metrics
from apiserver.http.settings import Settings
from apiserver.http.transport.budget import BodyPace, ByteBudget, Reservation, after_sent, caller_of, too_many
from apiserver.http.transport.shares import Shares, export_shares
from apiserver.render import ExpandError
from apiserver.render.kubernetes import names
from apiserver.render.kubernetes.errors import VM_GROUP, status
from apiserver.sources.access import AccessRefused, Read
from apiserver.sources.base import MISSING, Missing, Source, SourceUnavailable
from apiserver.sources.gather import peekable
from apiserver.sources.reads import Reads, ScopedReads
from apiserver.sources.rendered.items import Item
from apiserver.sources.rendered.store import RenderedStore
from apiserver.sources.scope import Scope

# kube-apiserver reads a boolean query parameter with k8s.io/apimachinery's
# Convert_Slice_string_To_bool: absent, "0" or "false" (any case) is false, any other value true
# (``?presets`` and ``?presets=`` too), and of repeated values the first counts. We read every value
# it reads as false, and "", "1", "t" and "true" (any case), the same way; any other value kube-apiserver
# would silently take as true ("no", "off", "f", which strconv.ParseBool reads as false, or " false")
# is a 400 here.
_TRUE = frozenset({"", "1", "t", "true"})
_FALSE = frozenset({"0", "false"})


def query_flag(request: web.Request, name: str) -> bool:
    """A boolean query parameter, read as kube-apiserver reads it (see ``_TRUE``); 400 naming it for a
    value kube-apiserver would take as true but nobody writes for true."""
    if not request.query_string:  # the usual call: no query to parse
        return False
    value = request.query.get(name)
    if value is None:
        return False
    folded = value.lower()
    if folded in _TRUE:
        return True
    if folded in _FALSE:
        return False
    shown = orjson.dumps(value if len(value) <= 64 else value[:61] + "...").decode()
    raise bad_request(
        f'query parameter "{name}" must be true or false (also 1 or 0, t, or empty for true), not {shown}'
    )


def _flags(request: web.Request) -> tuple[bool, bool]:
    """``presets`` and ``validate`` (400 as :func:`query_flag` words it)."""
    if not request.query_string:
        return False, False
    return query_flag(request, "presets"), query_flag(request, "validate")


def _refused(err: AccessRefused) -> StatusError:
    """The caller may not see what the rendering needs: kube-apiserver's 403 for that read (or a 503
    with Retry-After when the review could not be made)."""
    retry = (err.status.get("details") or {}).get("retryAfterSeconds")
    return StatusError(err.status, {"Retry-After": str(retry)} if retry else None)


def warning_header(text: str) -> str:
    """RFC 9111 ``Warning`` value with code 299, as kube-apiserver sends deprecation warnings. Control
    characters (a field name of the body may hold any) are written as ``\\xNN``: aiohttp refuses to
    send them, and they have no place in a header."""
    escaped = " ".join(text.split()).replace("\\", "\\\\").replace('"', '\\"')
    if not escaped.isprintable():
        escaped = _CONTROL.sub(
            lambda m: f"\\x{ord(m.group()):02x}" if m.group() < "\u0100" else f"\\u{ord(m.group()):04x}",
            escaped,
        )
    return f'299 - "{escaped}"'


# kube-apiserver's bounds on Warning headers (k8s.io/apiserver's WithWarningRecorder): once the warnings
# of a response exceed 4096 characters in all, each is cut to 256 characters, and warnings stop once
# 4096 characters are written; repeated texts are sent once.
WARNINGS_TOTAL = 4 * 1024
WARNING_ITEM = 256
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def warning_headers(texts: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """The ``Warning`` headers for ``texts``, deduplicated and bounded as kube-apiserver bounds them."""
    unique = [t for t in dict.fromkeys(texts) if t]
    if sum(len(t) for t in unique) <= WARNINGS_TOTAL:
        return tuple(("Warning", warning_header(t)) for t in unique)
    headers: list[tuple[str, str]] = []
    written = 0
    for text in unique:
        if written >= WARNINGS_TOTAL:
            break
        cut = text[:WARNING_ITEM]
        written += len(cut)
        headers.append(("Warning", warning_header(cut)))
    return tuple(headers)


class ExpandHandlers:
    """Request handlers sharing the settings, the source and the metrics."""

    def __init__(
        self,
        settings: Settings,
        source: Source,
        metrics: Metrics,
        cache: ResponseCache | None = None,
    ) -> None:
        self.settings = settings
        # The source is read only within each request's scope (apiserver.sources.reads).
        self.reads = Reads(source)
        self.metrics = metrics
        # Responses are cached only over a source that can confirm them without I/O.
        self.peekable = peekable(source)
        # With the VM cache, GET expand-spec (the default answer) comes from the rendered VMs' store.
        self.store: RenderedStore | None = getattr(source, "collection", None)
        self.cache = cache or ResponseCache()
        self.bodies = ByteBudget(settings.max_body_bytes_in_flight, min_share=settings.max_body_bytes)
        self.pace = BodyPace(settings.body_timeout, settings.min_body_rate)
        # Bodies still arriving hold a connection each: places of their own, per user and in all.
        self.pending = Shares(
            "request bodies still arriving",
            settings.pending_body_places,
            settings.max_pending_bodies_per_user,
            flags=("--max-pending-bodies", "--max-pending-bodies-per-user"),
        )
        # Large bodies one at a time from parsing to encoding the answer: a 2.4 MB body of small labels
        # is ~20 MB of Python objects, and its rendering as much again, so thirty at once took RSS past
        # 1 GB. They run on the one worker thread in turn anyway (bodies.offload); waiting here, a
        # request holds only its bytes, which the budget counts.
        self.large_work = asyncio.Semaphore(1)

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

    def _check_path(self, scope: Scope, *, named: bool) -> tuple[str, str]:
        """The namespace (and VM name, when ``named``) the scope names; 422 for one that no object can
        have, before anything is read under it: as a URL segment, ``.`` or ``..`` would mean a list or
        another resource."""
        namespace = scope.namespace or ""
        name = (scope.name or "") if named else None
        for field, value, errors in (
            ("metadata.namespace", namespace, names.label_errors(namespace)),
            ("metadata.name", name, names.subdomain_errors(name) if name is not None else []),
        ):
            if errors:
                self.metrics.render_errors.labels("Invalid").inc()
                raise StatusError(names.invalid_value(field, value or "", errors, name=name or "").status)
        return namespace, name or ""

    def _failed(self, err: ExpandError, *, get: bool) -> StatusError:
        self.metrics.render_errors.labels(err.reason or "Unknown").inc()
        return self._expand_failure(err, get=get)

    async def _answer(
        self,
        request: web.Request,
        reads: ScopedReads,
        key: Hashable | None,
        vm: Mapping[str, Any],
        *,
        get: bool,
        media_type: str,
        presets: bool,
        validate: bool,
        pinned: object = None,
        key_size: int = 0,
        field_warnings: Sequence[str] = (),
        large: bool = False,
    ) -> web.Response:
        """Serve from the response cache when its entry is current, else render (and keep the answer).
        ``key_size``: bytes the key holds beyond its fixed parts (a PUT body); ``field_warnings`` go
        before the rendering's; ``large``: render and encode on the worker thread."""
        source = self.peekable
        cache = self.cache
        if key is not None and source is not None:
            entry = cache.get(key, source)
            if entry is not None:
                if entry.error is None and not entry.reviews:  # nothing to await
                    return self._response(request, entry, get=get, media_type=media_type)
                return await self._send(request, entry, get=get, media_type=media_type)
        if get and ("apiVersion" not in vm or "kind" not in vm):
            # virt-api's client puts TypeMeta back on what it reads; so do we.
            vm = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", **vm}
        try:
            rendered = await reads.render(
                vm, presets=presets, validate=validate, exact_names=get, run=offload if large else None
            )
        except SourceUnavailable as err:
            raise self._source_failure(err) from None
        except AccessRefused as err:
            raise _refused(err) from None
        if rendered.error is not None:
            if key is not None and source is not None:
                cache.put(key, source, rendered, pinned=pinned, key_size=key_size)
            raise self._failed(rendered.error, get=get)
        result = rendered.result
        assert result is not None
        body = (
            await offload(partial(encode, result.vm, media_type)) if large else encode(result.vm, media_type)
        )
        warnings = warning_headers((*field_warnings, *result.warnings))
        etag = etag_of(body) if get else ""
        entry = Entry(body, etag, warnings, None, rendered.reviews, (), (), None, None, 0)
        if key is not None and source is not None:
            entry = (
                cache.put(
                    key,
                    source,
                    rendered,
                    body=body,
                    etag=etag,
                    warnings=warnings,
                    pinned=pinned,
                    key_size=key_size,
                )
                or entry
            )
        return self._response(request, entry, get=get, media_type=media_type)  # reviews passed above

    async def _send(self, request: web.Request, entry: Entry, *, get: bool, media_type: str) -> web.Response:
        if entry.reviews:  # this caller must pass what the first one did, before anything is shown
            await self._review(request, entry.reviews)
        if entry.error is not None:
            raise self._failed(entry.error, get=get)
        return self._response(request, entry, get=get, media_type=media_type)

    async def _review(self, request: web.Request, reviews: tuple[Read, ...]) -> None:
        """Raise the 403 (or 503) a rendering for this caller would have met, unless they pass every
        review in ``reviews`` (made in the same order as that rendering would)."""
        gate = scope_of(request).gate
        if gate is None or not reviews:
            return
        try:
            for read in reviews:
                await gate.review(read)
        except AccessRefused as err:
            raise _refused(err) from None

    def _response(self, request: web.Request, entry: Entry, *, get: bool, media_type: str) -> web.Response:
        headers = entry.headers
        if headers is None:  # built once per entry, copied by each Response
            if get:
                headers = tagged_headers(entry.etag, media_type, entry.warnings)
            else:
                headers = CIMultiDict([("Content-Type", media_type), *entry.warnings])
            entry.headers = headers
        if get:
            return respond_tagged(
                request, entry.body, media_type, entry.etag, headers=entry.warnings, prebuilt=headers
            )
        return web.Response(body=entry.body, headers=headers)

    def _stored(
        self, scope: Scope, vm: Mapping[str, Any], media_type: str, flags: tuple[bool, bool]
    ) -> Item | None:
        """The store's item for GET expand-spec's default answer (JSON, no presets, no validate) when it
        is current for ``vm`` and read only what the tenancy model shows without a review (the VM's
        instancetypes, preferences and revisions holding one: objects the store watches, or immutable).
        Any other read (the volume inferFromVolume follows: not watched, so the item may be behind it)
        is made again for the caller, through their gate. The caller is shown the item only after
        :meth:`AccessGate.due` of its reviews (with --authorize-references, every object it read)."""
        store = self.store
        if store is None or media_type != JSON or flags != (False, False):
            return None
        item = store.current(scope, vm)
        if item is None or item.reviews.model:
            return None
        return item

    def _from_store(self, request: web.Request, item: Item) -> web.Response:
        if item.error is not None:
            raise self._failed(item.error, get=True)
        headers = item.headers
        if headers is None:
            headers = item.headers = tagged_headers(item.etag, JSON, warning_headers(item.warnings))
        body = item.rendered
        assert body is not None
        return respond_tagged(request, body, JSON, item.etag, prebuilt=headers)

    def get_cached(self, request: web.Request, params: Mapping[str, str]) -> web.Response | None:
        """:meth:`get`'s answer when it is a current cached 200 for the VM the source holds; None for
        anything else (then :meth:`get` decides it all). Called only when no middleware has anything
        left to check (the dispatcher's admission shortcut); an answer that needs a review of what it
        read for this caller (a tenancy gate's) is never given here."""
        source = self.peekable
        if source is None:
            return None
        try:
            media_type = negotiate(request)
            presets, validate = _flags(request)
        except StatusError:  # 406 or 400: the whole way says so
            return None
        scope = scope_of(request)
        vm = self.reads.within(scope).peek_vm()
        if vm is None or vm is MISSING:
            return None
        assert not isinstance(vm, Missing)
        item = self._stored(scope, vm, media_type, (presets, validate))
        if item is not None:
            gate = scope.gate
            if item.error is not None or (gate is not None and gate.due(item.reviews)):
                return None  # the whole way, which reviews them
            return self._from_store(request, item)
        key = _get_key(request, presets, validate, media_type, vm_token(vm, held=True))
        entry = self.cache.get(key, source)
        if entry is None or entry.error is not None or entry.reviews:
            return None
        return self._response(request, entry, get=True, media_type=media_type)

    async def get(self, request: web.Request, params: Mapping[str, str]) -> web.Response:
        """GET .../namespaces/{namespace}/virtualmachines/{name}/expand-spec"""
        media_type = negotiate(request)
        presets, validate = query_flag(request, "presets"), query_flag(request, "validate")  # 400 first
        scope = scope_of(request)
        _namespace, name = self._check_path(scope, named=True)
        reads = self.reads.within(scope)
        vm = reads.peek_vm()
        held = vm is not MISSING
        if vm is MISSING:
            try:
                vm = await reads.get_vm()
            except SourceUnavailable as err:
                raise self._source_failure(err) from None
        if vm is None:
            raise self._vm_not_found(name)
        assert not isinstance(vm, Missing)
        if held:
            item = self._stored(scope, vm, media_type, (presets, validate))
            if item is not None:
                gate = scope.gate
                if gate is not None:
                    await self._review(request, gate.due(item.reviews))
                return self._from_store(request, item)
        token = vm_token(vm, held=held)
        key = None if token is None else _get_key(request, presets, validate, media_type, token)
        return await self._answer(
            request,
            reads,
            key,
            vm,
            get=True,
            media_type=media_type,
            presets=presets,
            validate=validate,
            pinned=vm if held else None,
        )

    async def put_cached(self, request: web.Request, params: Mapping[str, str]) -> web.Response | None:
        """:meth:`put`'s answer when it is a current cached 200 (called as :meth:`get_cached` is);
        None for anything else (then :meth:`put` decides it all). Only a body already received whole,
        of a declared length within the limit, is read here: nothing waits on the client without the
        request deadline, and a refused body is never half read before :meth:`put`."""
        source = self.peekable
        length = request.content_length
        if source is None or length is None or length > self.settings.max_body_bytes:
            return None
        if not request.content.is_eof():  # still arriving
            return None
        try:
            media_type = negotiate(request)
            fmt = body_format(request)
            presets, validate = _flags(request)
            level = field_validation(request)
        except StatusError:  # 406, 415, 400 or 422: the whole way says so
            return None
        data = await request.read()  # kept by the request: put() reads the same bytes
        entry = self.cache.get(_put_key(request, fmt, presets, validate, level, media_type, data), source)
        if entry is None or entry.error is not None or entry.reviews:
            return None
        return self._response(request, entry, get=False, media_type=media_type)

    async def put(self, request: web.Request, params: Mapping[str, str]) -> web.Response:
        """PUT .../namespaces/{namespace}/expand-vm-spec"""
        limit = self.settings.max_body_bytes
        declared = request.content_length
        held = self.bodies.reserve(
            caller_of(request), limit if declared is None or declared > limit else declared
        )
        try:
            response = await self._put(request, params, held)
        except BaseException:
            held.release()
            raise
        if isinstance(response.body, bytes) and len(response.body) > held.size:
            held.resize(len(response.body))
        after_sent(request, held.release)  # the body, and the answer, are held until it is written
        return response

    async def _read_body(self, request: web.Request, held: Reservation) -> bytes:
        """The body; one still arriving takes one of the user's places for pending bodies, and another
        user may need its place or its bytes more: it is then cut (429, connection closed)."""
        if request.content.is_eof():  # the usual case: it came with the headers
            return await read_body(request, self.settings.max_body_bytes, self.pace)
        cut = partial(_cut_body, request)
        place = self.pending.hold(caller_of(request), cut)
        held.waiting(cut)
        try:
            return await read_body(request, self.settings.max_body_bytes, self.pace)
        finally:
            held.arrived()
            self.pending.release(place)

    async def _put(self, request: web.Request, params: Mapping[str, str], held: Reservation) -> web.Response:
        scope = scope_of(request)
        namespace, _ = self._check_path(scope, named=False)
        media_type = negotiate(request)
        fmt = body_format(request)
        presets, validate = query_flag(request, "presets"), query_flag(request, "validate")
        level = field_validation(request)
        data = await self._read_body(request, held)
        held.resize(len(data))  # a body without a length reserved the limit
        key = _put_key(request, fmt, presets, validate, level, media_type, data)
        if self.peekable is not None:
            entry = self.cache.get(key, self.peekable)
            if entry is not None:
                if entry.error is None and not entry.reviews:  # nothing to await
                    return self._response(request, entry, get=False, media_type=media_type)
                return await self._send(request, entry, get=False, media_type=media_type)
        kubevirt_messages = self.settings.kubevirt_error_codes
        reads = self.reads.within(scope)
        large = len(data) > OFFLOAD_BYTES

        def read() -> tuple[dict[str, Any], list[str]]:
            body = parse(data, kubevirt_messages=kubevirt_messages)
            return check_vm(body, namespace, level, kubevirt_messages=kubevirt_messages)

        async def answer(vm: dict[str, Any], warnings: list[str]) -> web.Response:
            return await self._answer(
                request,
                reads,
                key,
                vm,
                get=False,
                media_type=media_type,
                presets=presets,
                validate=validate,
                key_size=len(data),
                field_warnings=warnings,
                large=large,
            )

        if not large:
            return await answer(*read())
        async with self.large_work:  # what is parsed from the body lives only inside
            return await answer(*await offload(read))


def _cut_body(request: web.Request) -> None:
    """Stop reading a body still arriving: its request is answered 429 and its connection closed."""
    request.content.set_exception(too_many())


def _get_key(
    request: web.Request, presets: bool, validate: bool, media_type: str, token: Hashable
) -> tuple[Hashable, ...]:
    return ("GET", request.path, presets, validate, media_type, token)


def _put_key(
    request: web.Request, fmt: str, presets: bool, validate: bool, level: str, media_type: str, data: bytes
) -> tuple[Hashable, ...]:
    # The answer depends on the body only through its bytes, so they are part of the key (hashing
    # them for a dict costs a fraction of a digest; the cache counts them in the entry's size).
    return ("PUT", request.path, fmt, presets, validate, level, media_type, data)


ExpandHandler = Callable[[web.Request, Mapping[str, str]], Awaitable[web.Response]]
CachedHandler = Callable[[web.Request, Mapping[str, str]], web.Response | None]
BodyCachedHandler = Callable[[web.Request, Mapping[str, str]], Awaitable[web.Response | None]]


@dataclass(frozen=True, slots=True)
class ExpandRoute:
    """One expand endpoint: its method, its path template (also its metrics label) and its handler,
    which takes the template's variables as an argument rather than from ``request.match_info`` so
    that :mod:`apiserver.http.dispatch` can call it without aiohttp's router; ``cached``, when given,
    answers synchronously what it can (an answer equal to the handler's), else returns None;
    ``cached_after_body`` likewise, awaiting nothing but the request body."""

    method: str
    template: str
    handler: ExpandHandler
    cached: CachedHandler | None = None
    cached_after_body: BodyCachedHandler | None = None


def _with_match_info(handler: ExpandHandler) -> Handler:
    async def routed(request: web.Request) -> web.Response:
        return await handler(request, request.match_info)

    return routed


def add_routes(
    app: web.Application, settings: Settings, source: Source, metrics: Metrics
) -> list[ExpandRoute]:
    """Register the endpoints of every configured version; returns the expand routes among them."""
    from apiserver.http.endpoints.version import make_handler

    handlers = ExpandHandlers(settings, source, metrics)
    budget = handlers.bodies
    metrics.read_at_scrape(
        "body_bytes_held",
        "Bytes of PUT bodies held (counted at their declared length until their answer is written), "
        "against --max-body-bytes-in-flight.",
        lambda: budget.held,
    )
    metrics.read_at_scrape(
        "body_cuts",
        "PUT bodies still arriving cut (429) to make room for a user holding less.",
        lambda: budget.cut_bodies + handlers.pending.displaced,
        counter=True,
    )
    export_shares(metrics, "pending_bodies", handlers.pending)
    version_handler = make_handler(source)
    expand: list[ExpandRoute] = []
    for version in settings.api_versions:
        base = f"/apis/{settings.api_group}/{version}"
        get = ExpandRoute(
            "GET",
            f"{base}/namespaces/{{namespace}}/virtualmachines/{{name}}/expand-spec",
            handlers.get,
            handlers.get_cached,
        )
        put = ExpandRoute(
            "PUT",
            f"{base}/namespaces/{{namespace}}/expand-vm-spec",
            handlers.put,
            cached_after_body=handlers.put_cached,
        )
        app.router.add_get(get.template, _with_match_info(get.handler), allow_head=False)
        app.router.add_put(put.template, _with_match_info(put.handler))
        app.router.add_get(f"{base}/version", version_handler, allow_head=False)
        expand += (get, put)
    return expand
