"""``expandedvirtualmachines.expand.kubevirt-expand.io``: get, list and watch the rendered VMs.

The items come from the source's :class:`~apiserver.sources.rendered.store.RenderedStore` (only
with ``--vm-cache``); this module reads the query as kube-apiserver reads a list's, cuts pages from the
store's snapshots, streams the answer, and writes Tables for ``kubectl get``. Items whose rendering
read objects other than instancetypes and preferences are shown only to a caller who may read those
objects (a SubjectAccessReview each, cached like every review); to anyone else they are an item that
says so, without anything of the rendering.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import random
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

import orjson
from aiohttp import web

from apiserver.http.errors import StatusError, bad_request, not_found, unavailable
from apiserver.http.keys import DEADLINE, scope_of
from apiserver.http.media import JSON, YAML, encode, parse_accept
from apiserver.http.metrics import Metrics
from apiserver.http.transport.budget import caller_of, person_of
from apiserver.http.transport.seats import Seats
from apiserver.http.transport.shares import Shares
from apiserver.render.kubernetes.errors import status
from apiserver.sources.access import AccessGate, Reviews
from apiserver.sources.rendered import items as it
from apiserver.sources.rendered.items import REDACTED_MESSAGE, Item, Key, redacted
from apiserver.sources.rendered.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from apiserver.sources.rendered.store import Gone, RenderedStore, ScopedSnapshot, TooNew
from apiserver.sources.rendered.versions import InvalidVersion, Vector
from apiserver.sources.scope import Scope

TABLE_GROUP = "meta.k8s.io"
TABLE_VERSIONS = ("v1", "v1beta1")
# kube-apiserver waits this long for its cache to reach a resourceVersion it was asked for.
WAIT_FOR_VERSION = 3.0
# kube-apiserver's --min-request-timeout: a watch without timeoutSeconds lasts between it and twice it.
MIN_REQUEST_TIMEOUT = 1800
BOOKMARK_EVERY = 60.0
_CHUNK = 256 * 1024  # bytes written to a streamed list between drains


def _truthy(value: str) -> bool:
    return value.lower() not in ("0", "false")


@dataclass(frozen=True, slots=True)
class Query:
    """A list or watch request's parameters, checked."""

    labels: LabelSelector
    fields: FieldSelector
    limit: int
    continue_token: str
    version: str
    version_match: str
    watch: bool
    bookmarks: bool
    timeout: float | None
    include_object: str


def read_query(request: web.Request) -> Query:
    q = request.query
    try:
        labels = parse_label_selector(q.get("labelSelector", ""))
        fields = parse_field_selector(q.get("fieldSelector", ""))
    except SelectorError as err:
        raise bad_request(str(err)) from None
    limit_text = q.get("limit", "")
    limit = 0
    if limit_text:
        if not limit_text.lstrip("-").isdigit():
            raise bad_request(f'limit: Invalid value: "{limit_text}": must be an integer')
        limit = max(0, int(limit_text))
    timeout: float | None = None
    if q.get("timeoutSeconds"):
        text = q["timeoutSeconds"]
        if not text.isdigit():
            raise bad_request(f'timeoutSeconds: Invalid value: "{text}": must be a whole number of seconds')
        timeout = float(text)
    match = q.get("resourceVersionMatch", "")
    if match not in ("", "NotOlderThan", "Exact"):
        raise StatusError(
            status(
                422,
                "Invalid",
                f'resourceVersionMatch: Unsupported value: "{match}": supported values: "Exact", "NotOlderThan"',
            )
        )
    include = q.get("includeObject", "Metadata")
    if include not in ("None", "Metadata", "Object"):
        raise bad_request(
            f'includeObject: Unsupported value: "{include}": supported values: "None", "Metadata", "Object"'
        )
    watch = "watch" in q and _truthy(q.get("watch", ""))
    if q.get("sendInitialEvents") and _truthy(q["sendInitialEvents"]):
        raise StatusError(
            status(
                422,
                "Invalid",
                "sendInitialEvents: Forbidden: sendInitialEvents is not supported by this server; "
                "list, then watch from the list's resourceVersion",
            )
        )
    return Query(
        labels=labels,
        fields=fields,
        limit=limit,
        continue_token=q.get("continue", ""),
        version=q.get("resourceVersion", ""),
        version_match=match,
        watch=watch,
        bookmarks="allowWatchBookmarks" in q and _truthy(q.get("allowWatchBookmarks", "")),
        timeout=timeout,
        include_object=include,
    )


# ---------------------------------------------------------------------------------------- media


@dataclass(frozen=True, slots=True)
class Media:
    kind: str  # json, yaml or table
    table_version: str = "v1"


def negotiate_media(request: web.Request) -> Media:
    """JSON, YAML or a Table (``application/json;as=Table;g=meta.k8s.io;v=v1``), as kubectl asks."""
    header = request.headers.get("Accept", "")
    if not header.strip():
        return Media("json")
    for media_range in parse_accept(header):
        params = media_range.params
        if media_range.converted:
            if (
                media_range.matches(JSON)
                and params.get("as") == "Table"
                and params.get("g") == TABLE_GROUP
                and params.get("v") in TABLE_VERSIONS
            ):
                return Media("table", params["v"])
            continue
        if media_range.matches(JSON):
            return Media("json")
        if media_range.matches(YAML):
            return Media("yaml")
    raise StatusError(
        status(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml, "
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
    )


# ---------------------------------------------------------------------------------------- tables


def age(created: str, now: float) -> str:
    """kubectl's HumanDuration of the time since ``created``, as kube-apiserver's Table cells say it."""
    if not created:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return "<unknown>"
    seconds = int(now - then)
    if seconds < 0:
        return "<invalid>"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m{s}s" if s else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h{m}m" if m else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        h = hours % 24
        return f"{days}d{h}h" if h else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    years = days // 365
    if days < 365 * 8:
        d = days % 365
        return f"{years}y{d}d" if d else f"{years}y"
    return f"{years}y"


def column_definitions() -> list[dict[str, Any]]:
    return [
        {"name": n, "type": t, "format": f, "description": d, "priority": p}
        for n, t, f, d, p in it.TABLE_COLUMNS
    ]


def _row(item: Item, now: float, include: str) -> dict[str, Any]:
    c = item.cells
    cells = [
        item.key[1],
        c[0],
        c[1],
        c[2],
        c[3],
        c[9],
        c[10],
        c[4],
        c[11],
        c[12],
        age(item.created, now),
        c[5],
        c[6],
        c[7],
        c[8],
    ]
    row: dict[str, Any] = {"cells": cells}
    if include == "Object":
        row["object"] = orjson.Fragment(item.body)
    elif include == "Metadata":
        meta: dict[str, Any] = {
            "name": item.key[1],
            "namespace": item.key[0],
            "resourceVersion": item.version,
        }
        if item.created:
            meta["creationTimestamp"] = item.created
        if item.labels:
            meta["labels"] = item.labels
        row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": f"{TABLE_GROUP}/v1", "metadata": meta}
    return row


def table(
    items: Iterable[Item], meta: Mapping[str, Any], media: Media, include: str, *, columns: bool = True
) -> bytes:
    now = time.time()
    doc: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": f"{TABLE_GROUP}/{media.table_version}",
        "metadata": dict(meta),
        "columnDefinitions": column_definitions() if columns else None,
        "rows": [_row(item, now, include) for item in items],
    }
    if not columns:
        doc["columnDefinitions"] = []
    return orjson.dumps(doc)


# ---------------------------------------------------------------------------------------- tokens


def encode_continue(version: str, after: Key, namespace: str | None) -> str:
    doc = {"v": version, "k": [after[0], after[1]], "n": namespace}
    return base64.urlsafe_b64encode(orjson.dumps(doc)).decode().rstrip("=")


def decode_continue(token: str, scope: Scope) -> tuple[str, Key]:
    """The version and last key of a continue token this server gave out for a list of ``scope``'s
    namespace (400 for any other token: another namespace's, forged, or damaged)."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        doc = orjson.loads(raw)
        version, after, named = doc["v"], doc["k"], doc["n"]
        if not (isinstance(version, str) and isinstance(after, list) and len(after) == 2):
            raise ValueError
        key = (str(after[0]), str(after[1]))
    except (binascii.Error, ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise bad_request("continue key is not valid: not a continue token this server gave out") from None
    if named != scope.namespace or not scope.covers(key[0]):
        raise bad_request("continue key is not valid: it continues a list of another namespace")
    return version, key


def expired(message: str, token: str = "") -> StatusError:
    body = status(410, "Expired", message)
    if token:
        body["metadata"] = {"continue": token}
    return StatusError(body)


# ---------------------------------------------------------------------------------------- handlers


class ExpandedVMHandlers:
    """get, list and watch over a store (None: the collection is not served, every call says why)."""

    def __init__(
        self,
        store: RenderedStore | None,
        metrics: Metrics,
        watches: Shares | None = None,
        seats: Seats | None = None,
    ) -> None:
        """``watches``: the places watches take, per user and in all (none: unbounded, for tests);
        ``seats``: the CPU seats a list's table or YAML takes (none: not shared, for tests)."""
        self.store = store
        self.metrics = metrics
        self.watches = watches
        self.seats = seats or Seats(0, 1)

    def _store(self) -> RenderedStore:
        store = self.store
        if store is None:
            raise not_found(
                "expandedvirtualmachines are served only with the VM cache: start the server with "
                "--vm-cache (the manifests in apiservice/ do)"
            )
        if not store.ready.is_set():
            raise unavailable(
                "the rendered VMs are not ready yet (the VM cache is syncing or the VMs are being rendered)",
                timeout=False,
                retry_after=1,
            )
        return store

    # -- get ---------------------------------------------------------------------------------
    #
    # Every read of the store takes the request's scope (apiserver.http.filters.scoping): the path's namespace
    # and name as authorized. Selectors, continue tokens and versions only filter inside it.

    async def get(self, request: web.Request) -> web.StreamResponse:
        store = self._store()
        scope = scope_of(request)
        media = negotiate_media(request)
        version = request.query.get("resourceVersion", "")
        if version not in ("", "0"):
            await self._wait(store, self._parse(version))
        item = store.get(scope)
        if item is None:
            name = scope.name or ""
            details = {"name": name, "group": it.GROUP, "kind": it.PLURAL}
            raise StatusError(
                status(404, "NotFound", f'{it.PLURAL}.{it.GROUP} "{name}" not found', details=details)
            )
        body = await self._visible(scope.gate, item)
        if media.kind == "table":
            shown = item if body is item.body else _with_body(item, body)
            meta = {"resourceVersion": shown.version}
            include = request.query.get("includeObject", "Metadata")
            return web.Response(body=table([shown], meta, media, include), content_type=JSON)
        return self._respond(body, media)

    def _respond(self, body: bytes, media: Media) -> web.Response:
        if media.kind == "yaml":
            return web.Response(body=encode(orjson.loads(body), YAML), content_type=YAML)
        return web.Response(body=body, content_type=JSON)

    # -- list ----------------------------------------------------------------------------------

    async def list_or_watch(self, request: web.Request) -> web.StreamResponse:
        store = self._store()
        scope = scope_of(request)
        query = read_query(request)
        media = negotiate_media(request)
        if query.watch:
            return await self._watch(request, store, scope, query, media)
        return await self._list(request, store, scope, query, media)

    def _parse(self, text: str) -> Vector:
        try:
            return Vector.parse(text)
        except InvalidVersion as err:
            raise bad_request(str(err)) from None

    async def _wait(self, store: RenderedStore, version: Vector) -> None:
        try:
            await store.wait_for(version, WAIT_FOR_VERSION)
        except TooNew:
            body = status(
                504,
                "Timeout",
                f"Too large resource version: {version}, current: {store.version_text}",
                details={
                    "causes": [
                        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                    ],
                    "retryAfterSeconds": 1,
                },
            )
            raise StatusError(body, {"Retry-After": "1"}) from None

    async def _list(
        self, request: web.Request, store: RenderedStore, scope: Scope, query: Query, media: Media
    ) -> web.StreamResponse:
        snap: ScopedSnapshot | None = None
        after: Key | None = None
        if query.continue_token:
            if query.version not in ("", "0"):
                raise bad_request("specifying resource version is not allowed when using continue")
            version, after = decode_continue(query.continue_token, scope)
            snap = store.continued(scope, version)
            if snap is None:
                # As kube-apiserver when etcd compacted the list's revision: the rest of the list at the
                # current version, under a token the error carries.
                current = store.snapshot(scope)
                store.keep_snapshot(current)
                raise expired(
                    "The provided continue parameter is too old to display a consistent list result. You "
                    "can start a new list without the continue parameter, or use the continue token in "
                    "this response to retrieve the remainder of the results. Continuing with the provided "
                    "token results in an inconsistent list - objects that were created, modified, or "
                    "deleted between the time the first chunk was returned and now may show up in the list.",
                    encode_continue(current.version, after, scope.namespace),
                )
        else:
            if query.version not in ("", "0"):
                wanted = self._parse(query.version)
                if query.version_match == "Exact" and wanted != store.version:
                    raise expired(
                        f"too old resource version: {query.version} ({store.version_text}): this server "
                        "keeps no history to list from; list without resourceVersionMatch=Exact"
                    )
                await self._wait(store, wanted)
            snap = store.snapshot(scope)
        window = snap.window(query.fields.namespace(), after, query.fields.name())
        picked: list[Item] = []
        last: Key | None = None
        more = False
        remaining = 0
        needs_filter = not query.labels.empty or bool(query.fields.requirements)
        gate = scope.gate if query.fields.reads_drift else None
        for index, item in enumerate(window):
            if needs_filter and not (
                query.fields.matches(item.key[0], item.key[1], item.fields)
                and query.labels.matches(item.labels)
            ):
                continue
            if gate is not None and not await self._whole(gate, item):
                continue  # whether it is stale is part of what the caller may not see of it
            if query.limit and len(picked) >= query.limit:
                more = True
                if not needs_filter:
                    remaining = len(window) - index
                break
            picked.append(item)
            last = item.key
        meta: dict[str, Any] = {"resourceVersion": snap.version}
        if more and last is not None:
            store.keep_snapshot(snap)
            meta["continue"] = encode_continue(snap.version, last, scope.namespace)
            if remaining:
                meta["remainingItemCount"] = remaining
        bodies = await self._bodies(scope.gate, picked)
        # The items' bytes are ready; a table or YAML of them is the list's CPU-heavy step: in a seat.
        ticket = self.seats.ticket(person_of(request))
        if media.kind == "table":
            shown = [i if b is i.body else _with_body(i, b) for i, b in zip(picked, bodies, strict=True)]
            rows = await ticket.run(partial(table, shown, meta, media, query.include_object))
            return web.Response(body=rows, content_type=JSON)
        if media.kind == "yaml":

            def yaml() -> bytes:
                doc = {
                    "apiVersion": it.API_VERSION,
                    "kind": it.LIST_KIND,
                    "metadata": meta,
                    "items": [orjson.loads(b) for b in bodies],
                }
                return encode(doc, YAML)

            return web.Response(body=await ticket.run(yaml), content_type=YAML)
        head = orjson.dumps({"apiVersion": it.API_VERSION, "kind": it.LIST_KIND, "metadata": meta})
        head = head[:-1] + b',"items":['
        total = len(head) + sum(len(b) for b in bodies) + max(0, len(bodies) - 1) + 2
        if total <= _CHUNK:
            return web.Response(body=head + b",".join(bodies) + b"]}", content_type=JSON)
        response = web.StreamResponse(headers={"Content-Type": JSON})
        response.content_length = total
        await response.prepare(request)
        await _write_joined(response, head, bodies, b"]}")
        await response.write_eof()
        return response

    async def _visible(
        self, gate: AccessGate | None, item: Item, version: str | None = None, body: bytes | None = None
    ) -> bytes:
        """The item as this caller may see it: whole once they pass the reviews its rendering calls
        for (the tenancy model's, the same cached SubjectAccessReviews as GET expand-spec's), else
        :func:`redacted`. ``body``: the item's bytes to send when whole (a watch event's copy)."""
        whole = item.body if body is None else body
        if gate is None:
            return whole
        due = gate.due(item.reviews)
        if not due or await gate.allows(due):
            return whole
        return redacted(item, version)

    async def _whole(self, gate: AccessGate, item: Item) -> bool:
        """Whether the caller is shown ``item`` whole (not :func:`redacted`)."""
        return await _passes(gate, item.reviews)

    async def _bodies(self, gate: AccessGate | None, picked: Sequence[Item]) -> list[bytes]:
        if gate is None or not any(gate.due(i.reviews) for i in picked):
            return [i.body for i in picked]
        return [await self._visible(gate, i) for i in picked]

    # -- watch ---------------------------------------------------------------------------------

    async def _watch(
        self, request: web.Request, store: RenderedStore, scope: Scope, query: Query, media: Media
    ) -> web.StreamResponse:
        initial: list[Item] = []
        if query.version in ("", "0"):
            snap = store.snapshot(scope)
            cursor = store.last_seq
            initial = [i for i in snap.window(query.fields.namespace()) if _selected(i, query)]
            if query.fields.reads_drift and scope.gate is not None:
                initial = [i for i in initial if await self._whole(scope.gate, i)]
        else:
            wanted = self._parse(query.version)
            await self._wait(store, wanted)
            try:
                cursor = store.resume_point(wanted)
            except Gone:
                return await self._watch_error(request, _too_old(query.version, store.version_text))
        # A place of the user's among the watches (429 when they, or their person, hold their share);
        # displaced by a person holding fewer, the watch ends as at its timeout.
        ending: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        end = partial(_end, ending)
        place = (
            None if self.watches is None else self.watches.hold(caller_of(request), end, person_of(request))
        )
        # A client gone away ends the watch at once (it writes nothing for minutes, so would not notice).
        when_lost = getattr(request.protocol, "when_lost", None)
        forget = when_lost(end) if when_lost is not None else None
        try:
            return await self._stream(request, store, scope, query, media, initial, cursor, ending)
        finally:
            if forget is not None:
                forget()
            if place is not None and self.watches is not None:
                self.watches.release(place)

    async def _stream(
        self,
        request: web.Request,
        store: RenderedStore,
        scope: Scope,
        query: Query,
        media: Media,
        initial: list[Item],
        cursor: int,
        ending: asyncio.Future[None],
    ) -> web.StreamResponse:
        narrowed = scope.narrowed(query.fields.namespace())
        release_deadline(request)
        timeout = query.timeout if query.timeout is not None else MIN_REQUEST_TIMEOUT * (1 + random.random())
        ends = time.monotonic() + timeout
        response = web.StreamResponse(headers={"Content-Type": JSON, "Transfer-Encoding": "chunked"})
        await response.prepare(request)
        writer = _EventWriter(response, media, query.include_object)
        gate = scope.gate
        try:
            for item in initial:
                await writer.event("ADDED", await self._visible(gate, item), item)
            last_bookmark = time.monotonic()
            sent_version = ""
            while True:
                try:
                    cursor, entries = store.entries_after(scope, cursor)
                except Gone:
                    await writer.error(_too_old(str(cursor), store.version_text))
                    break
                for entry in entries:
                    kind = None if narrowed is False else _event_type(entry, query)
                    if kind is None:
                        continue
                    if gate is not None and not await self._whole(gate, entry.item):
                        if query.fields.reads_drift:
                            continue  # whether it is stale is part of what the caller may not see of it
                        if await _unchanged_for(gate, entry):
                            continue  # a redacted item is a fixed point: nothing the caller may see moved
                    body = await self._visible(gate, entry.item, entry.version, entry.body)
                    await writer.event(kind, body, entry.item, entry.version)
                    sent_version = entry.version
                now = time.monotonic()
                if now >= ends or ending.done():
                    break
                if query.bookmarks and now - last_bookmark >= BOOKMARK_EVERY and cursor == store.last_seq:
                    if store.version_text != sent_version and not store.pending:
                        await writer.bookmark(store.version_text)
                        sent_version = store.version_text
                    last_bookmark = now
                wait = ends - now
                if query.bookmarks:
                    wait = min(wait, max(0.05, BOOKMARK_EVERY - (now - last_bookmark)))
                change = asyncio.ensure_future(store.next_change(cursor))
                try:
                    await asyncio.wait((change, ending), timeout=wait, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    change.cancel()
        except ConnectionResetError:  # the client went away: a watch's usual end
            return response
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response

    async def _watch_error(self, request: web.Request, error: dict[str, Any]) -> web.StreamResponse:
        release_deadline(request)
        response = web.StreamResponse(headers={"Content-Type": JSON})
        await response.prepare(request)
        await response.write(orjson.dumps({"type": "ERROR", "object": error}) + b"\n")
        await response.write_eof()
        return response


async def _passes(gate: AccessGate, reviews: Reviews) -> bool:
    """Whether the caller passes ``reviews`` (is shown an item with them whole)."""
    due = gate.due(reviews)
    return not due or await gate.allows(due)


async def _unchanged_for(gate: AccessGate, entry: Any) -> bool:
    """Whether a MODIFIED event of an item the caller is shown redacted changes nothing they see: its
    redacted form is the same as before, and they were shown it redacted before too. Such an event is
    a change of objects they may not read (a DataSource of another namespace, an instancetype its label
    names); sending it would tell them that, one bit per probe."""
    if entry.type != "MODIFIED" or not entry.redacted_same or entry.before_reviews is None:
        return False
    return not await _passes(gate, entry.before_reviews)


def _end(ending: asyncio.Future[None]) -> None:
    if not ending.done():
        ending.set_result(None)


def _too_old(asked: str, current: str) -> dict[str, Any]:
    return status(410, "Expired", f"too old resource version: {asked} ({current})")


def _selected(item: Item, query: Query) -> bool:
    return query.fields.matches(item.key[0], item.key[1], item.fields) and query.labels.matches(item.labels)


def _event_type(entry: Any, query: Query) -> str | None:
    """The event a watcher with these selectors sees for ``entry``, an event its scope covers (None:
    none), as kube-apiserver's cacher turns a change into ADDED or DELETED when labels or fields move an
    object into or out of a selector (a VM becoming stale enters ``status.stale=true``)."""
    item = entry.item
    ns, name = item.key
    if query.labels.empty and not query.fields.requirements:
        return str(entry.type)
    now = query.fields.matches(ns, name, item.fields) and query.labels.matches(item.labels)
    if entry.type == "DELETED":
        return "DELETED" if now else None
    before = entry.before_labels is not None and (
        query.fields.matches(ns, name, entry.before_fields) and query.labels.matches(entry.before_labels)
    )
    if now and before:
        return "MODIFIED"
    if now:
        return "ADDED"
    if before:
        return "DELETED"
    return None


def _with_body(item: Item, body: bytes) -> Item:
    """The item as one caller sees it (redacted): its body, and the version that body carries (a Table's
    row says what the object does)."""
    doc = orjson.loads(body)
    cond = ((doc.get("status") or {}).get("conditions") or [{}])[0]
    summary = doc.get("summary") or {}
    copy = Item(
        item.key,
        item.vm,
        item.labels,
        item.created,
        str((doc.get("metadata") or {}).get("resourceVersion") or item.shown_redacted_version),
        body,
        None,
        "",
        (),
        None,
        it.table_cells(summary, cond),
        item.fields,
        item.reviews,
    )
    return copy


class _EventWriter:
    def __init__(self, response: web.StreamResponse, media: Media, include: str) -> None:
        self.response = response
        self.media = media
        self.include = include
        self.columns = True

    async def event(self, kind: str, body: bytes, item: Item, version: str | None = None) -> None:
        if self.media.kind == "table":
            shown = item if body is item.body else _with_body(item, body)
            meta = {"resourceVersion": version or item.version}
            obj = table([shown], meta, self.media, self.include, columns=self.columns)
            self.columns = False
        else:
            obj = body
        await self.response.write(b'{"type":"' + kind.encode() + b'","object":' + obj + b"}\n")

    async def bookmark(self, version: str) -> None:
        obj = {"kind": it.KIND, "apiVersion": it.API_VERSION, "metadata": {"resourceVersion": version}}
        await self.response.write(orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n")

    async def error(self, error: Mapping[str, Any]) -> None:
        await self.response.write(orjson.dumps({"type": "ERROR", "object": error}) + b"\n")


async def _write_joined(
    response: web.StreamResponse, head: bytes, bodies: Sequence[bytes], tail: bytes
) -> None:
    buffer = bytearray(head)
    for n, body in enumerate(bodies):
        if n:
            buffer += b","
        buffer += body
        if len(buffer) >= _CHUNK:
            await response.write(bytes(buffer))
            buffer.clear()
    buffer += tail
    await response.write(bytes(buffer))


def release_deadline(request: web.Request) -> None:
    """A watch is long-running: the request timeout no longer applies to it (as kube-apiserver exempts
    watches from --request-timeout)."""
    deadline = request.get(DEADLINE)
    if deadline is not None:
        deadline.finish()


def add_routes(app: web.Application, handlers: ExpandedVMHandlers) -> None:
    base = f"/apis/{it.GROUP}/{it.VERSION}"
    app.router.add_get(f"{base}/{it.PLURAL}", handlers.list_or_watch, allow_head=False)
    app.router.add_get(
        f"{base}/namespaces/{{namespace}}/{it.PLURAL}", handlers.list_or_watch, allow_head=False
    )
    app.router.add_get(
        f"{base}/namespaces/{{namespace}}/{it.PLURAL}/{{name}}", handlers.get, allow_head=False
    )


__all__ = ["REDACTED_MESSAGE", "ExpandedVMHandlers", "add_routes", "redacted", "release_deadline"]
