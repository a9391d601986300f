"""The two expand endpoints, for every configured version of the configured group.

GET expands the stored VM as read (member names matched exactly, as client-go decodes); PUT expands
the body (member names matched like Go's ``encoding/json``). Rendering runs through
:func:`~apiserver.sources.gather.render_and_record`, behind the response cache of
:mod:`apiserver.http.endpoints.respcache`; its errors map onto Statuses here, either the
contract's (422 with causes, 404) or, with ``--kubevirt-error-codes``, virt-api's (GET 500, PUT 400).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
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
from apiserver.http.keys import scope_of
from apiserver.http.media import JSON, encode, etag_of, negotiate, respond_tagged, tagged_headers
from apiserver.http.metrics import Metrics
from apiserver.http.routing import FastRoute
from apiserver.http.routing import Handler as RouteHandler
from apiserver.http.settings import Settings
from apiserver.http.transport.budget import (
    BodyPace,
    ByteBudget,
    Reservation,
    after_sent,
    caller_of,
    person_of,
    too_many,
)
from apiserver.http.transport.seats import Seats, Ticket
from apiserver.http.transport.shares import Shares, export_shares
from apiserver.render import ExpandError
from apiserver.render.kubernetes import names
from apiserver.render.kubernetes.errors import VM_GROUP, status
from apiserver.sources.access import AccessRefused, Read
from apiserver.sources.base import Missing, Source, SourceUnavailable
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


# Namespaces and names found valid (clients repeat them): a look-up instead of two regular expressions
# and their error lists per request (timed in process, on a loaded machine: 1.2 against 5.4 us; a new
# per-request cost since 58e41c7, seen in cProfile of hack/benchmarks/commits.py's run). The first
# _CHECKED_MAX of each, never cleared: GET of random VMs among more names than that (30,000) checks the
# name alone, and adds nothing to keep.
_CHECKED: dict[tuple[str, str | None], tuple[str, str]] = {}
_NAMESPACES_CHECKED: set[str] = set()
_CHECKED_MAX = 4096


class ExpandHandlers:
    """Request handlers sharing the settings, the source and the metrics."""

    def __init__(
        self,
        settings: Settings,
        source: Source,
        metrics: Metrics,
        cache: ResponseCache | None = None,
        seats: Seats | None = None,
    ) -> None:
        self.settings = settings
        # The source is read only within each request's scope (apiserver.sources.reads).
        self.reads = Reads(source)
        self.metrics = metrics
        # Responses are cached only over a source that can confirm them without I/O.
        self.peekable = peekable(source)
        # With the VM cache, GET expand-spec (the default answer) comes from the rendered VMs' store.
        self.store: RenderedStore | None = getattr(source, "rendered", None)
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
        # Parsing, rendering and encoding take CPU seats, handed round-robin among people (seats.py).
        self.seats = seats or Seats(settings.cpu_seats, settings.cpu_queue_per_user)

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
        key = (namespace, name)
        known = _CHECKED.get(key)
        if known is not None:
            return known
        if (namespace in _NAMESPACES_CHECKED or names.is_label(namespace)) and (
            name is None or names.is_subdomain(name)
        ):
            found = (namespace, name or "")
            # Once full, kept as they are (see routing's memo): a name not among them costs one match.
            if len(_CHECKED) < _CHECKED_MAX:
                _CHECKED[key] = found
            if len(_NAMESPACES_CHECKED) < _CHECKED_MAX:
                _NAMESPACES_CHECKED.add(namespace)
            return found
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
        ticket: Ticket | None = None,
    ) -> web.Response:
        """Render (the response cache had no current entry for ``key``) and keep the answer.
        ``key_size``: bytes the key holds beyond its fixed parts (a PUT body); ``field_warnings`` go
        before the rendering's; ``large``: render and encode on the worker thread; else each rendering
        pass and the encoding in a CPU seat of ``ticket`` (the request's; made here when None)."""
        source = self.peekable
        seated = None
        if not large and self.seats.enabled:
            seated = ticket or self.seats.ticket(person_of(request))
        cache = self.cache
        if get and ("apiVersion" not in vm or "kind" not in vm):
            # virt-api's client puts TypeMeta back on what it reads; so do we.
            vm = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", **vm}
        try:
            rendered = await reads.render(
                vm,
                presets=presets,
                validate=validate,
                exact_names=get,
                run=offload if large else (seated.run if seated is not None else None),
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
        if large:
            body = await offload(partial(encode, result.vm, media_type))
        elif seated is not None:
            body = await seated.run(partial(encode, result.vm, media_type))
        else:
            body = encode(result.vm, media_type)
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

    def _cached(self, key: Hashable | None) -> Entry | None:
        """The response cache's current entry for ``key`` (looked up once per request)."""
        if key is None or self.peekable is None:
            return None
        return self.cache.get(key, self.peekable)

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

    def _stored(self, plan: GetPlan, vm: Mapping[str, Any]) -> Item | None:
        """The store's item for GET expand-spec's default answer (JSON, no presets, no validate) when it
        is current for ``vm`` and read only what the tenancy model shows without a review (the VM's
        instancetypes, preferences and revisions holding one: objects the store watches, or immutable).
        Any other read (the volume inferFromVolume follows: not watched, so the item may be behind it)
        is made again for the caller, through their gate. The caller is shown the item only after
        :meth:`AccessGate.due` of its rendering's reviews (with --authorize-references, every object the
        rendering read; not the live objects the collection's drift compares a pinned VM with)."""
        store = self.store
        if store is None or plan.media_type != JSON or plan.presets or plan.validate:
            return None
        item = store.current(plan.scope, vm)
        if item is None or item.get_reviews.model:
            return None
        return item

    def _from_store(self, request: web.Request, item: Item) -> web.Response:
        if item.error is not None:
            raise self._failed(item.error, get=True)
        body = item.rendered
        assert body is not None
        # Headers made per answer, none kept per item: a VM's first GET costs what any other does, and
        # the store holds nothing more for the VMs that were asked for (0.2 us more an answer than
        # headers kept ready, timed in process).
        warnings = warning_headers(item.warnings) if item.warnings else ()
        return respond_tagged(request, body, JSON, item.etag, headers=warnings)

    # -- GET .../namespaces/{namespace}/virtualmachines/{name}/expand-spec ----------------------------
    #
    # One path: plan the request (pure: what it asks, or its 4xx), look up what answers it without an
    # await (the store's item, a cached answer), and only then read and render. The pipeline's
    # synchronous answer (get_now) is the same plan and look-up, ending where an await would begin.

    def _plan_get(self, request: web.Request) -> GetPlan:
        media_type = negotiate(request)
        presets, validate = _flags(request)  # 400 first
        scope = scope_of(request)
        _namespace, name = self._check_path(scope, named=True)
        return GetPlan(scope, name, media_type, presets, validate)

    def _look_up_get(self, request: web.Request, plan: GetPlan) -> web.Response | GetMiss:
        """The answer when the store or the response cache has it and this caller has nothing left to
        be reviewed for, else what the look-up found on the way."""
        vm = self.reads.within(plan.scope).peek_vm()
        if vm is None:
            raise self._vm_not_found(plan.name)
        if isinstance(vm, Missing):  # the source reads VMs fresh (no VM cache)
            return GetMiss(None, None, None, None)
        item = self._stored(plan, vm)
        if item is not None:
            gate = plan.scope.gate
            if item.error is None and (gate is None or not gate.due(item.get_reviews)):
                return self._from_store(request, item)
            return GetMiss(vm, item, None, None)
        key = _get_key(request, plan, vm_token(vm, held=True))
        entry = self._cached(key)
        if entry is not None and entry.error is None and not entry.reviews:
            return self._response(request, entry, get=True, media_type=plan.media_type)
        return GetMiss(vm, None, key, entry)

    def get_now(self, request: web.Request, params: Mapping[str, str]) -> web.Response | None:
        """:meth:`get`'s answer when it needs no await (None otherwise, and for every error: the whole
        way answers those)."""
        try:
            found = self._look_up_get(request, self._plan_get(request))
        except StatusError:
            return None
        return found if isinstance(found, web.Response) else None

    async def get(self, request: web.Request, params: Mapping[str, str]) -> web.Response:
        plan = self._plan_get(request)
        found = self._look_up_get(request, plan)
        if isinstance(found, web.Response):
            return found
        reads = self.reads.within(plan.scope)
        if found.item is not None:  # the store's, after this caller's reviews (or its error)
            gate = plan.scope.gate
            if gate is not None:
                await self._review(request, gate.due(found.item.get_reviews))
            return self._from_store(request, found.item)
        if found.entry is not None:  # cached, after this caller's reviews (or its error)
            return await self._send(request, found.entry, get=True, media_type=plan.media_type)
        vm, key = found.vm, found.key
        if vm is None:  # not held: read it
            try:
                vm = await reads.get_vm()
            except SourceUnavailable as err:
                raise self._source_failure(err) from None
            if vm is None:
                raise self._vm_not_found(plan.name)
            token = vm_token(vm, held=False)
            key = None if token is None else _get_key(request, plan, token)
            entry = self._cached(key)
            if entry is not None:
                return await self._send(request, entry, get=True, media_type=plan.media_type)
            pinned = None
        else:
            pinned = vm
        return await self._answer(
            request,
            reads,
            key,
            vm,
            get=True,
            media_type=plan.media_type,
            presets=plan.presets,
            validate=plan.validate,
            pinned=pinned,
        )

    # -- PUT .../namespaces/{namespace}/expand-vm-spec ---------------------------------------------------
    #
    # The same: plan, read the body, look the answer up (once), then parse and render.

    def _plan_put(self, request: web.Request) -> PutPlan:
        scope = scope_of(request)
        namespace, _ = self._check_path(scope, named=False)
        media_type = negotiate(request)
        fmt = body_format(request)
        presets, validate = _flags(request)
        level = field_validation(request)
        return PutPlan(scope, namespace, media_type, fmt, presets, validate, level)

    def _look_up_put(
        self, request: web.Request, plan: PutPlan, data: bytes
    ) -> web.Response | tuple[Hashable, Entry | None]:
        key = _put_key(request, plan, data)
        entry = self._cached(key)
        if entry is not None and entry.error is None and not entry.reviews:
            return self._response(request, entry, get=False, media_type=plan.media_type)
        return key, entry

    async def put_after_body(self, request: web.Request, params: Mapping[str, str]) -> web.Response | None:
        """:meth:`put`'s answer when it needs no await but for a body already received whole, of a
        declared length within the limit (None otherwise: nothing waits on the client without the
        request deadline, and a refused body is never half read before :meth:`put`)."""
        length = request.content_length
        if self.peekable is None or length is None or length > self.settings.max_body_bytes:
            return None
        if not request.content.is_eof():  # still arriving
            return None
        try:
            plan = self._plan_put(request)
        except StatusError:  # 406, 415, 400 or 422: the whole way says so
            return None
        data = await request.read()  # kept by the request: put() reads the same bytes
        found = self._look_up_put(request, plan, data)
        return found if isinstance(found, web.Response) else None

    async def put(self, request: web.Request, params: Mapping[str, str]) -> web.Response:
        limit = self.settings.max_body_bytes
        declared = request.content_length
        # Per person (all the ServiceAccounts of a namespace are one): minted names get no more bytes.
        reservation = self.bodies.reserve(
            person_of(request), limit if declared is None or declared > limit else declared
        )
        try:
            response = await self._put(request, reservation)
        except BaseException:
            reservation.release()
            raise
        if isinstance(response.body, bytes) and len(response.body) > reservation.size:
            reservation.resize(len(response.body))
        after_sent(request, reservation.release)  # the body, and the answer, are held until it is written
        return response

    async def _read_body(self, request: web.Request, reservation: Reservation) -> bytes:
        """The body; one still arriving takes one of the user's places for pending bodies, and another
        user may need its place or its bytes more: it is then cut (429, connection closed)."""
        if request.content.is_eof():  # the usual case: it came with the headers
            return await read_body(request, self.settings.max_body_bytes, self.pace)
        cut = partial(_cut_body, request)
        place = self.pending.hold(caller_of(request), cut, person_of(request))
        reservation.waiting(cut)
        try:
            return await read_body(request, self.settings.max_body_bytes, self.pace)
        finally:
            reservation.arrived()
            self.pending.release(place)

    async def _put(self, request: web.Request, reservation: Reservation) -> web.Response:
        plan = self._plan_put(request)
        data = await self._read_body(request, reservation)
        reservation.resize(len(data))  # a body without a length reserved the limit
        found = self._look_up_put(request, plan, data)
        if isinstance(found, web.Response):
            return found
        key, entry = found
        if entry is not None:  # cached, after this caller's reviews (or its error)
            return await self._send(request, entry, get=False, media_type=plan.media_type)
        kubevirt_messages = self.settings.kubevirt_error_codes
        reads = self.reads.within(plan.scope)
        large = len(data) > OFFLOAD_BYTES
        namespace, level = plan.namespace, plan.level

        def read() -> tuple[dict[str, Any], list[str]]:
            body = parse(
                data, kubevirt_messages=kubevirt_messages, go_json=kubevirt_messages and plan.fmt == "json"
            )
            return check_vm(body, namespace, level, kubevirt_messages=kubevirt_messages)

        ticket = None if large or not self.seats.enabled else self.seats.ticket(person_of(request))

        async def answer(vm: dict[str, Any], warnings: list[str]) -> web.Response:
            return await self._answer(
                request,
                reads,
                key,
                vm,
                get=False,
                media_type=plan.media_type,
                presets=plan.presets,
                validate=plan.validate,
                key_size=len(data),
                field_warnings=warnings,
                large=large,
                ticket=ticket,
            )

        if not large:
            return await answer(*(read() if ticket is None else await ticket.run(read)))
        async with self.large_work:  # what is parsed from the body lives only inside
            return await answer(*await offload(read))


@dataclass(frozen=True, slots=True)
class GetPlan:
    """What a GET expand-spec asks, checked: the scope it reads, the VM's name, media type and flags."""

    scope: Scope
    name: str
    media_type: str
    presets: bool
    validate: bool


@dataclass(frozen=True, slots=True)
class GetMiss:
    """What a GET's look-up found short of an answer: the VM held (None: read it), the store's item
    or the cached entry this caller must be reviewed for first, and the response cache's key."""

    vm: Mapping[str, Any] | None
    item: Item | None
    key: Hashable | None
    entry: Entry | None


@dataclass(frozen=True, slots=True)
class PutPlan:
    """What a PUT expand-vm-spec asks, checked before its body is read."""

    scope: Scope
    namespace: str
    media_type: str
    fmt: str
    presets: bool
    validate: bool
    level: str


def _cut_body(request: web.Request) -> None:
    """Stop reading a body still arriving: its request is answered 429 and its connection closed."""
    request.content.set_exception(too_many())


def _get_key(request: web.Request, plan: GetPlan, token: Hashable) -> tuple[Hashable, ...]:
    return ("GET", request.path, plan.presets, plan.validate, plan.media_type, token)


def _put_key(request: web.Request, plan: PutPlan, data: bytes) -> tuple[Hashable, ...]:
    # The answer depends on the body only through its bytes, so they are part of the key (hashing
    # them for a dict costs a fraction of a digest; the cache counts them in the entry's size).
    return ("PUT", request.path, plan.fmt, plan.presets, plan.validate, plan.level, plan.media_type, data)


def _with_match_info(handler: RouteHandler) -> Handler:
    async def routed(request: web.Request) -> web.StreamResponse:
        return await handler(request, request.match_info)

    return routed


def add_routes(
    app: web.Application, settings: Settings, source: Source, metrics: Metrics, seats: Seats | None = None
) -> list[FastRoute]:
    """Register the endpoints of every configured version; returns the expand routes among them."""
    from apiserver.http.endpoints.version import make_handler

    handlers = ExpandHandlers(settings, source, metrics, seats=seats)
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
    expand: list[FastRoute] = []
    for version in settings.api_versions:
        base = f"/apis/{settings.api_group}/{version}"
        get = FastRoute(
            "GET",
            f"{base}/namespaces/{{namespace}}/virtualmachines/{{name}}/expand-spec",
            handlers.get,
            answer_now=handlers.get_now,
        )
        put = FastRoute(
            "PUT",
            f"{base}/namespaces/{{namespace}}/expand-vm-spec",
            handlers.put,
            answer_after_body=handlers.put_after_body,
        )
        app.router.add_get(get.template, _with_match_info(get.handler), allow_head=False)
        app.router.add_put(put.template, _with_match_info(put.handler))
        app.router.add_get(f"{base}/version", version_handler, allow_head=False)
        expand += (get, put)
    return expand
