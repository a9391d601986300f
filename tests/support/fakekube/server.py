"""An in-process fake of the Kubernetes REST API (see the package docstring for what it does)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import itertools
import json
import re
import ssl
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.fakekube.resources import DEFAULT_RESOURCES, ResourceType

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
JSON = dict[str, Any]

_WATCH_END = object()  # sentinel: end the stream cleanly
_WATCH_ABORT = object()  # sentinel: reset the connection


def status_body(code: int, reason: str, message: str, details: Mapping[str, Any] | None = None) -> JSON:
    body: JSON = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        body["details"] = dict(details)
    body["code"] = code
    return body


def json_response(body: Any, status: int = 200) -> web.Response:
    """JSON as kube-apiserver labels it: ``application/json`` with no charset parameter."""
    return web.Response(
        body=json.dumps(body).encode(), status=status, headers={"Content-Type": "application/json"}
    )


def status_response(
    code: int, reason: str, message: str, details: Mapping[str, Any] | None = None
) -> web.Response:
    return json_response(status_body(code, reason, message, details), status=code)


def page_not_found() -> web.Response:
    """kube-apiserver's answer for a path no installed API serves (a CRD that is not there): plain text,
    not a Status."""
    return web.Response(
        body=b"404 page not found\n",
        status=404,
        headers={"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"},
    )


def not_found_details(rt: ResourceType, name: str) -> JSON:
    details: JSON = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    return details


@dataclass(slots=True)
class RequestRecord:
    """One request as the fake saw it; ``verb`` is the Kubernetes verb (get, list, watch, ...)."""

    method: str
    path: str
    query: dict[str, str]
    verb: str
    resource: str = ""  # plural, "" for discovery and unknown paths
    namespace: str = ""
    name: str = ""
    status: int = 0


@dataclass(slots=True)
class Fault:
    """Answer matching requests with an error ``status`` (``count`` times, or forever when None)."""

    status: int = 500
    count: int | None = None
    path_contains: str = ""
    verbs: frozenset[str] | None = None
    retry_after: int | None = None

    def matches(self, rec: RequestRecord) -> bool:
        if self.count is not None and self.count <= 0:
            return False
        if self.path_contains and self.path_contains not in rec.path:
            return False
        return self.verbs is None or rec.verb in self.verbs


@dataclass(slots=True)
class Latency:
    seconds: float
    path_contains: str = ""
    verbs: frozenset[str] | None = None

    def matches(self, rec: RequestRecord) -> bool:
        if self.path_contains and self.path_contains not in rec.path:
            return False
        return self.verbs is None or rec.verb in self.verbs


@dataclass(slots=True)
class _Event:
    rv: int
    type: str
    obj: JSON


@dataclass(eq=False)
class _Watch:
    rt: ResourceType
    namespace: str
    selector: Callable[[JSON], bool]
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)


def _rv(obj: Mapping[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


_KEY = r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_EXISTS = re.compile(rf"(!?)\s*({_KEY})")
_COMPARE = re.compile(rf"({_KEY})\s*(==|=|!=)\s*({_VALUE})")
_SET = re.compile(rf"({_KEY})\s+(in|notin)\s*\(\s*({_VALUE}(?:\s*,\s*{_VALUE})*)\s*\)")


def _label_test(raw: str) -> Callable[[Mapping[str, str]], bool]:
    """One requirement of a label selector (``k``, ``!k``, ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``,
    ``k notin (a,b)``); :class:`BadRequest` for anything else, as kube-apiserver refuses it."""
    if m := _COMPARE.fullmatch(raw):
        key, op, value = m.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if m := _SET.fullmatch(raw):
        key, op, listed = m.groups()
        values = {v.strip() for v in listed.split(",")}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if m := _EXISTS.fullmatch(raw):
        negated, key = m.groups()
        return (lambda labels: key not in labels) if negated else (lambda labels: key in labels)
    raise BadRequest(f"unable to parse requirement: {raw!r} is not a requirement this fake can read")


def _parse_label_selector(text: str) -> Callable[[Mapping[str, str]], bool]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    tests = [_label_test(raw.strip()) for raw in parts if raw.strip()]
    return lambda labels: all(t(labels) for t in tests)


class BadRequest(Exception):
    """A request kube-apiserver refuses with 400 BadRequest (the message is its text)."""


_FIELD_LABELS = ("metadata.name", "metadata.namespace")


def _selector(query: Mapping[str, str], rt: ResourceType) -> Callable[[JSON], bool]:
    """The object test of ``labelSelector`` and ``fieldSelector``; :class:`BadRequest` for a field label
    the type does not support (objects of every type here support metadata.name and metadata.namespace
    only), with kube-apiserver's text, which differs between built-in types and custom resources."""
    labels = _parse_label_selector(query.get("labelSelector", ""))
    fields: list[tuple[str, bool, str]] = []
    for part in filter(None, (p.strip() for p in query.get("fieldSelector", "").split(","))):
        if "!=" in part:
            key, _, value = part.partition("!=")
            equal = False
        else:
            key, _, value = part.partition("=")
            equal, value = True, value.lstrip("=")
        key = key.strip()
        if key not in _FIELD_LABELS:
            if rt.group in ("", "apps"):
                known = ", ".join(f'"{k}"' for k in _FIELD_LABELS)
                raise BadRequest(f'"{key}" is not a known field selector: only {known}')
            raise BadRequest(f"field label not supported: {key}")
        fields.append((key, equal, value.strip()))

    def match(obj: JSON) -> bool:
        meta = obj.get("metadata", {})
        for key, equal, value in fields:
            actual = meta.get(key.partition(".")[2], "")
            if (actual == value) != equal:
                return False
        return labels(meta.get("labels") or {})

    return match


class FakeKube:
    """A fake kube-apiserver. See :mod:`tests.support.fakekube` for the feature list and the extension point."""

    def __init__(
        self,
        resources: Iterable[ResourceType] = DEFAULT_RESOURCES,
        *,
        token: str | None = None,
        bookmark_interval: float = 1.0,
        host: str = "127.0.0.1",
    ) -> None:
        self.resources: list[ResourceType] = list(resources)
        self.token = token
        self.bookmark_interval = bookmark_interval
        self.max_watch_seconds: float | None = None
        self.host = host
        self.port = 0
        self.faults: list[Fault] = []
        self.latencies: list[Latency] = []
        self.log: list[RequestRecord] = []
        self._rv = itertools.count(1)
        self.current_rv = 0
        self.compacted_rv = 0
        # Where the watch cache's history starts: a (re)started kube-apiserver remembers no older event.
        self.watch_window_rv = 0
        # The resourceVersion of each kind's last event since (re)start; kube-apiserver bookmarks only a
        # kind whose watch cache has seen an event, with that version.
        self._last_event_rv: dict[ResourceType, int] = {}
        self._started_before = False
        # Restricted users: bearer token -> (user name, allowed (group, resource, verb)); see grant().
        self.users: dict[str, tuple[str, frozenset[tuple[str, str, str]]]] = {}
        self._objects: dict[ResourceType, dict[tuple[str, str], JSON]] = {rt: {} for rt in self.resources}
        self._events: dict[ResourceType, list[_Event]] = {rt: [] for rt in self.resources}
        self._watches: set[_Watch] = set()
        self._extra_routes: list[tuple[str, str, Handler]] = []
        self._runner: web.AppRunner | None = None
        self._ssl: ssl.SSLContext | None = None
        self.app: web.Application | None = None

    # ---------------------------------------------------------------- lifecycle

    def add_handler(self, method: str, path: str, handler: Handler) -> None:
        """Serve ``method path`` with ``handler`` (an aiohttp route, before the built-in API paths).

        Register before :meth:`start`; handlers survive :meth:`stop`/:meth:`start`.
        """
        self._extra_routes.append((method, path, handler))

    @property
    def url(self) -> str:
        scheme = "https" if self._ssl else "http"
        return f"{scheme}://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._runner is not None

    async def start(
        self, ssl_context: ssl.SSLContext | None = None, *, fresh_watch_cache: bool = True
    ) -> None:
        """Listen (again) on the same port; the stored objects and resourceVersions are kept.

        A restart (``start`` after ``stop``) begins with a fresh watch cache, as kube-apiserver's does:
        a watch from a resourceVersion older than now gets the 410 Expired ERROR event, and no kind is
        bookmarked until it changes again. ``fresh_watch_cache=False`` keeps the history instead.
        """
        if self._runner is not None:
            return
        if self._started_before and fresh_watch_cache:
            self.watch_window_rv = self.current_rv
            self._last_event_rv.clear()
        self._started_before = True
        if ssl_context is not None:
            self._ssl = ssl_context
        app = web.Application(middlewares=[self._middleware])
        for method, path, handler in self._extra_routes:
            app.router.add_route(method, path, handler)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        runner = web.AppRunner(app, shutdown_timeout=0.1, handle_signals=False, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, ssl_context=self._ssl, reuse_address=True)
        await site.start()
        if self.port == 0:
            server = site._server
            assert server is not None
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        self.app = app
        self._runner = runner

    async def stop(self) -> None:
        """Stop listening and reset every open connection (like a crashed or restarted API server)."""
        self.drop_watches(abort=True)
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> FakeKube:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ---------------------------------------------------------------- faults

    def fail(
        self,
        status: int = 500,
        *,
        count: int | None = None,
        path_contains: str = "",
        verbs: Iterable[str] | None = None,
        retry_after: int | None = None,
    ) -> Fault:
        """Answer matching requests with a Status error; remove it again with :meth:`clear_faults`."""
        fault = Fault(status, count, path_contains, frozenset(verbs) if verbs else None, retry_after)
        self.faults.append(fault)
        return fault

    def delay(
        self, seconds: float, *, path_contains: str = "", verbs: Iterable[str] | None = None
    ) -> Latency:
        """Hold matching requests for ``seconds`` before answering."""
        lat = Latency(seconds, path_contains, frozenset(verbs) if verbs else None)
        self.latencies.append(lat)
        return lat

    def clear_faults(self) -> None:
        self.faults.clear()
        self.latencies.clear()

    def drop_watches(self, *, abort: bool = False) -> int:
        """End every open watch stream (cleanly, or by resetting the connection); return how many."""
        watches = list(self._watches)
        for w in watches:
            w.queue.put_nowait(_WATCH_ABORT if abort else _WATCH_END)
        return len(watches)

    def compact(self) -> None:
        """Forget history: a watch or exact list at any resourceVersion up to now gets 410 Expired."""
        self.compacted_rv = self.current_rv

    def grant(self, token: str, user: str, rules: Iterable[tuple[str, str, Iterable[str]]] = ()) -> None:
        """Make ``token`` a user that RBAC allows only ``rules`` ((api group, resource, verbs), every
        namespace); anything else it asks is refused 403 Forbidden in kube-apiserver's words. Discovery
        stays open to it (``system:discovery``). Other requests are unaffected."""
        allowed = frozenset((group, resource, verb) for group, resource, verbs in rules for verb in verbs)
        self.users[token] = (user, allowed)

    @property
    def oldest_watchable_rv(self) -> int:
        return max(self.compacted_rv, self.watch_window_rv)

    def expire_watches(self) -> int:
        """Compact, then send every open watch the 410 Expired ERROR event and end it."""
        self.compact()
        watches = list(self._watches)
        for w in watches:
            w.queue.put_nowait(self._expired_event(self.oldest_watchable_rv))
            w.queue.put_nowait(_WATCH_END)
        return len(watches)

    @property
    def open_watches(self) -> int:
        return len(self._watches)

    # ---------------------------------------------------------------- request log

    def requests(
        self,
        verb: str | None = None,
        *,
        resource: str | None = None,
        name: str | None = None,
        path: str | None = None,
    ) -> list[RequestRecord]:
        return [
            r
            for r in self.log
            if (verb is None or r.verb == verb)
            and (resource is None or r.resource == resource)
            and (name is None or r.name == name)
            and (path is None or r.path == path)
        ]

    def count(self, verb: str | None = None, **kw: Any) -> int:
        return len(self.requests(verb, **kw))

    def reset_log(self) -> None:
        self.log.clear()

    # ---------------------------------------------------------------- objects

    def resource_for(self, api_version: str, kind: str) -> ResourceType:
        for rt in self.resources:
            if rt.group_version == api_version and rt.kind == kind:
                return rt
        raise KeyError(f"the fake does not serve {api_version} {kind}")

    def remove_resource(self, plural: str, group: str) -> None:
        """Uninstall a resource type (a CRD that goes away); its objects go with it, and its open watches
        end (cleanly, without an event, as kube-apiserver ends them when a CRD is deleted)."""
        for rt in list(self.resources):
            if rt.plural == plural and rt.group == group:
                self.resources.remove(rt)
                self._objects.pop(rt, None)
                self._events.pop(rt, None)
                self._last_event_rv.pop(rt, None)
                for w in self._watches:
                    if w.rt == rt:
                        w.queue.put_nowait(_WATCH_END)

    def add_resource(self, rt: ResourceType) -> None:
        if rt not in self.resources:
            self.resources.append(rt)
            self._objects[rt] = {}
            self._events[rt] = []

    def _key(self, rt: ResourceType, obj: Mapping[str, Any]) -> tuple[str, str]:
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        if not name:
            raise ValueError("object without metadata.name")
        namespace = meta.get("namespace", "") if rt.namespaced else ""
        if rt.namespaced and not namespace:
            raise ValueError(f"{rt.kind} {name} needs metadata.namespace")
        return namespace, name

    def _next_rv(self) -> int:
        self.current_rv = next(self._rv)
        return self.current_rv

    def get_object(self, api_version: str, kind: str, name: str, namespace: str = "") -> JSON | None:
        rt = self.resource_for(api_version, kind)
        obj = self._objects[rt].get((namespace if rt.namespaced else "", name))
        return copy.deepcopy(obj) if obj is not None else None

    def create(self, obj: Mapping[str, Any]) -> JSON:
        """POST: a kind with the status subresource stores no status (``create cannot set status``)."""
        rt = self.resource_for(obj["apiVersion"], obj["kind"])
        key = self._key(rt, obj)
        if key in self._objects[rt]:
            raise ValueError(f"{rt.qualified} {key} already exists")
        stored = copy.deepcopy(dict(obj))
        if rt.status_subresource:
            stored.pop("status", None)
        meta = stored.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        meta["generation"] = 1
        if not rt.namespaced:
            meta.pop("namespace", None)
        return self._store(rt, key, stored, "ADDED")

    def update(self, obj: Mapping[str, Any]) -> JSON:
        """PUT of the object: a kind with the status subresource keeps the status it had (whatever ``obj``
        says); the generation moves when anything but metadata changed, as kube-apiserver's custom
        resource strategy counts it (so a status change moves it where status is no subresource)."""
        rt = self.resource_for(obj["apiVersion"], obj["kind"])
        key = self._key(rt, obj)
        old = self._objects[rt].get(key)
        if old is None:
            raise KeyError(f"{rt.qualified} {key} not found")
        stored = copy.deepcopy(dict(obj))
        if rt.status_subresource:
            stored.pop("status", None)
            if "status" in old:
                stored["status"] = copy.deepcopy(old["status"])
        meta = stored.setdefault("metadata", {})
        meta["uid"] = old["metadata"]["uid"]
        meta["creationTimestamp"] = old["metadata"]["creationTimestamp"]
        gen = old["metadata"].get("generation", 1)
        meta["generation"] = gen + 1 if _content(stored, rt) != _content(old, rt) else gen
        if not rt.namespaced:
            meta.pop("namespace", None)
        return self._store(rt, key, stored, "MODIFIED")

    def update_status(self, obj: Mapping[str, Any]) -> JSON:
        """PUT of ``/status``: only ``obj``'s status is written (none: the status is removed); the rest,
        metadata included, stays as stored, and the generation with it. A kind without the subresource
        has no such path: KeyError, as kube-apiserver answers 404."""
        rt = self.resource_for(obj["apiVersion"], obj["kind"])
        if not rt.status_subresource:
            raise KeyError(f"{rt.qualified} has no status subresource")
        key = self._key(rt, obj)
        old = self._objects[rt].get(key)
        if old is None:
            raise KeyError(f"{rt.qualified} {key} not found")
        stored = copy.deepcopy(old)
        stored.pop("status", None)
        if "status" in obj:
            stored["status"] = copy.deepcopy(obj["status"])
        return self._store(rt, key, stored, "MODIFIED")

    def apply(self, obj: Mapping[str, Any]) -> JSON:
        """Create or replace."""
        rt = self.resource_for(obj["apiVersion"], obj["kind"])
        if self._key(rt, obj) in self._objects[rt]:
            return self.update(obj)
        return self.create(obj)

    def delete(self, api_version: str, kind: str, name: str, namespace: str = "") -> JSON:
        rt = self.resource_for(api_version, kind)
        key = (namespace if rt.namespaced else "", name)
        old = self._objects[rt].pop(key)
        gone = copy.deepcopy(old)
        gone["metadata"]["resourceVersion"] = str(self._next_rv())
        self._emit(rt, "DELETED", gone)
        return gone

    def _store(self, rt: ResourceType, key: tuple[str, str], obj: JSON, event: str) -> JSON:
        obj["metadata"]["resourceVersion"] = str(self._next_rv())
        obj["apiVersion"] = rt.group_version
        obj["kind"] = rt.kind
        self._objects[rt][key] = obj
        self._emit(rt, event, copy.deepcopy(obj))
        return copy.deepcopy(obj)

    def _emit(self, rt: ResourceType, event_type: str, obj: JSON) -> None:
        self._events[rt].append(_Event(_rv(obj), event_type, obj))
        self._last_event_rv[rt] = _rv(obj)
        for w in self._watches:
            if w.rt == rt and self._in_scope(w.namespace, obj) and w.selector(obj):
                w.queue.put_nowait({"type": event_type, "object": obj})

    @staticmethod
    def _in_scope(namespace: str, obj: JSON) -> bool:
        return not namespace or obj["metadata"].get("namespace", "") == namespace

    # ---------------------------------------------------------------- HTTP

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        rec = self._classify(request)
        self.log.append(rec)
        authorization = request.headers.get("Authorization", "")
        restricted = self.users.get(authorization.removeprefix("Bearer ")) if authorization else None
        if restricted is None and self.token is not None and authorization != f"Bearer {self.token}":
            rec.status = 401
            return status_response(401, "Unauthorized", "Unauthorized")
        if restricted is not None and rec.resource:
            refused = self._forbidden(rec, *restricted)
            if refused is not None:
                rec.status = 403
                return refused
        for lat in self.latencies:
            if lat.matches(rec):
                await asyncio.sleep(lat.seconds)
        for fault in self.faults:
            if fault.matches(rec):
                if fault.count is not None:
                    fault.count -= 1
                rec.status = fault.status
                resp = status_response(
                    fault.status, _REASONS.get(fault.status, "InternalError"), "injected fault"
                )
                if fault.retry_after is not None:
                    resp.headers["Retry-After"] = str(fault.retry_after)
                return resp
        answer = await handler(request)
        rec.status = answer.status
        return answer

    def _forbidden(
        self, rec: RequestRecord, user: str, allowed: frozenset[tuple[str, str, str]]
    ) -> web.Response | None:
        rt = next(r for r in self.resources if r.plural == rec.resource)
        if (rt.group, rt.plural, rec.verb) in allowed:
            return None
        subject = f'{rt.qualified} "{rec.name}"' if rec.name else rt.qualified
        scope = f'in the namespace "{rec.namespace}"' if rec.namespace else "at the cluster scope"
        message = (
            f'{subject} is forbidden: User "{user}" cannot {rec.verb} resource "{rt.plural}" '
            f'in API group "{rt.group}" {scope}'
        )
        details: JSON = {"name": rec.name} if rec.name else {}
        if rt.group:
            details["group"] = rt.group
        details["kind"] = rt.plural
        return status_response(403, "Forbidden", message, details)

    def _classify(self, request: web.Request) -> RequestRecord:
        query = dict(request.query)
        rec = RequestRecord(request.method, request.path, query, "other")
        parsed = self._parse(request.path)
        if parsed is None:
            if request.method == "POST":
                rec.verb = "create"
            elif request.path.startswith(("/api", "/apis")) and request.method == "GET":
                rec.verb = "discovery"
            return rec
        rt, namespace, name = parsed
        rec.resource, rec.namespace, rec.name = rt.plural, namespace, name
        if request.method == "GET":
            if query.get("watch") in ("1", "true"):
                rec.verb = "watch"
            else:
                rec.verb = "get" if name else "list"
        else:
            rec.verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
                request.method, "other"
            )
        return rec

    def _parse(self, path: str) -> tuple[ResourceType, str, str] | None:
        """(resource type, namespace, name) for an API object path, None for anything else."""
        segs = [s for s in path.split("/") if s]
        if len(segs) >= 3 and segs[0] == "api" and segs[1] == "v1":
            group, version, rest = "", "v1", segs[2:]
        elif len(segs) >= 4 and segs[0] == "apis":
            group, version, rest = segs[1], segs[2], segs[3:]
        else:
            return None
        namespace = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 2:
            return None
        plural, name = rest[0], rest[1] if len(rest) == 2 else ""
        for rt in self.resources:
            if rt.group == group and rt.version == version and rt.plural == plural:
                if bool(namespace) and not rt.namespaced:
                    return None
                if rt.namespaced and name and not namespace:
                    return None
                return rt, namespace, name
        return None

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        discovery = self._discovery(request.path)
        if discovery is not None:
            return json_response(discovery)
        parsed = self._parse(request.path)
        if parsed is None:
            return page_not_found()
        rt, namespace, name = parsed
        if request.method != "GET":
            return status_response(405, "MethodNotAllowed", "the fake API server only serves reads")
        query = request.query
        if query.get("watch") in ("1", "true"):
            return await self._watch(request, rt, namespace)
        if name:
            too_large = self._too_large(query.get("resourceVersion", ""))
            if too_large is not None:
                return too_large
            obj = self._objects[rt].get((namespace, name))
            if obj is None:
                return status_response(
                    404, "NotFound", f'{rt.qualified} "{name}" not found', not_found_details(rt, name)
                )
            return json_response(obj)
        return self._list(rt, namespace, query)

    def _list(self, rt: ResourceType, namespace: str, query: Mapping[str, str]) -> web.Response:
        rv_param = query.get("resourceVersion", "")
        if rv_param not in ("", "0"):
            wanted = int(rv_param)
            exact = query.get("resourceVersionMatch") == "Exact"
            if exact and wanted < self.compacted_rv:
                return self._expired_response(wanted)
            if exact and wanted > self.current_rv:  # straight to etcd, which refuses the future
                return json_response(
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {},
                        "status": "Failure",
                        "message": "etcdserver: mvcc: required revision is a future revision",
                        "code": 500,
                    },
                    status=500,
                )
            too_large = self._too_large(rv_param)
            if too_large is not None:
                return too_large
        try:
            select = _selector(query, rt)
        except BadRequest as err:
            return status_response(400, "BadRequest", str(err))
        items = sorted(
            (o for o in self._objects[rt].values() if self._in_scope(namespace, o) and select(o)),
            key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]),
        )
        list_rv = self.current_rv
        start = 0
        cont = query.get("continue")
        if cont:
            try:
                token = _decode_continue(cont)
                list_rv, start = int(token["rv"]), int(token["start"])
            except (ValueError, KeyError, TypeError) as err:
                return status_response(
                    400, "BadRequest", f"invalid continue token: continue key is not valid: {err}"
                )
            if list_rv < self.compacted_rv:
                return self._expired_response(list_rv, continue_token=True)
        meta: JSON = {"resourceVersion": str(list_rv)}
        limit = int(query.get("limit", "0") or 0)
        if limit and start + limit < len(items):
            token = {"rv": list_rv, "start": start + limit}
            meta["continue"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
            meta["remainingItemCount"] = len(items) - start - limit
            items = items[start : start + limit]
        else:
            items = items[start:]
            if not builtin_type(rt):
                meta["continue"] = ""  # custom resources' lists always carry it; built-in types' do not
        # kube-apiserver leaves kind/apiVersion out of list items of built-in types, keeps them for CRs.
        builtin = builtin_type(rt)
        out = [
            {k: v for k, v in o.items() if k not in ("kind", "apiVersion")} if builtin else o for o in items
        ]
        return json_response(
            {"apiVersion": rt.group_version, "kind": f"{rt.kind}List", "metadata": meta, "items": out}
        )

    def _too_large(self, rv_param: str) -> web.Response | None:
        """kube-apiserver's answer to a read at a resourceVersion it has not reached (its watch cache
        waits up to 3 s for it first): 504 with ResourceVersionTooLarge and Retry-After."""
        if rv_param in ("", "0") or int(rv_param) <= self.current_rv:
            return None
        resp = status_response(
            504,
            "Timeout",
            f"Timeout: Too large resource version: {rv_param}, current: {self.current_rv}",
            {
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1,
            },
        )
        resp.headers["Retry-After"] = "1"
        return resp

    def _expired_response(self, rv: int, *, continue_token: bool = False) -> web.Response:
        message = (
            "The provided continue parameter is too old to display a consistent list result."
            if continue_token
            else f"too old resource version: {rv} ({self.compacted_rv})"
        )
        return status_response(410, "Expired", message, {})

    def _expired_event(self, rv: int) -> JSON:
        oldest = self.oldest_watchable_rv
        return {
            "type": "ERROR",
            "object": status_body(410, "Expired", f"too old resource version: {rv} ({oldest})"),
        }

    async def _watch(self, request: web.Request, rt: ResourceType, namespace: str) -> web.StreamResponse:
        query = request.query
        try:
            select = _selector(query, rt)
        except BadRequest as err:
            return status_response(400, "BadRequest", str(err))
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true")
        timeout = float(query["timeoutSeconds"]) if "timeoutSeconds" in query else None
        if self.max_watch_seconds is not None:
            timeout = min(timeout or self.max_watch_seconds, self.max_watch_seconds)
        watch = _Watch(rt, namespace, select)
        rv_param = query.get("resourceVersion", "")
        # The version the watch starts from (moved on by replayed events, not by live ones): kube-apiserver
        # bookmarks it only with a newer one.
        start_rv = self.current_rv if rv_param in ("", "0") else int(rv_param)
        if rv_param in ("", "0"):
            for obj in sorted(self._objects[rt].values(), key=_rv):
                if self._in_scope(namespace, obj) and select(obj):
                    watch.queue.put_nowait({"type": "ADDED", "object": copy.deepcopy(obj)})
        else:
            since = int(rv_param)
            if since < self.oldest_watchable_rv:
                watch.queue.put_nowait(self._expired_event(since))
                watch.queue.put_nowait(_WATCH_END)
            else:
                for ev in self._events[rt]:
                    if ev.rv > since and self._in_scope(namespace, ev.obj) and select(ev.obj):
                        watch.queue.put_nowait({"type": ev.type, "object": copy.deepcopy(ev.obj)})
                        start_rv = ev.rv  # replayed: no bookmark at or before it
        self._watches.add(watch)
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        deadline = time.monotonic() + timeout if timeout else None
        try:
            await resp.prepare(request)
            while True:
                wait = self.bookmark_interval if bookmarks else None
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    wait = left if wait is None else min(wait, left)
                try:
                    item = await asyncio.wait_for(watch.queue.get(), wait)
                except TimeoutError:
                    last = self._last_event_rv.get(rt)
                    fresh = last is not None and last > start_rv
                    if bookmarks and fresh and (deadline is None or time.monotonic() < deadline):
                        item = {
                            "type": "BOOKMARK",
                            "object": {
                                "kind": rt.kind,
                                "apiVersion": rt.group_version,
                                "metadata": {"resourceVersion": str(last)},
                            },
                        }
                    else:
                        continue
                if item is _WATCH_END:
                    break
                if item is _WATCH_ABORT:
                    if request.transport is not None:
                        request.transport.abort()
                    break
                await resp.write(json.dumps(item).encode() + b"\n")
            with contextlib.suppress(ConnectionError, RuntimeError):
                await resp.write_eof()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._watches.discard(watch)
        return resp

    # ---------------------------------------------------------------- discovery

    def _discovery(self, path: str) -> JSON | None:
        path = path.rstrip("/")
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if path == "/apis":
            return {
                "kind": "APIGroupList",
                "apiVersion": "v1",
                "groups": [self._group(g) for g in self._groups()],
            }
        segs = path.split("/")[1:]
        if path == "/api/v1":
            return self._resource_list("", "v1")
        if len(segs) == 2 and segs[0] == "apis" and segs[1] in self._groups():
            return {"kind": "APIGroup", "apiVersion": "v1", **self._group(segs[1])}
        served = any(
            len(segs) == 3 and rt.group == segs[1] and rt.version == segs[2] for rt in self.resources
        )
        if served and segs[0] == "apis":
            return self._resource_list(segs[1], segs[2])
        return None

    def _groups(self) -> list[str]:
        return list(dict.fromkeys(rt.group for rt in self.resources if rt.group))

    def _group(self, group: str) -> JSON:
        versions = list(dict.fromkeys(rt.version for rt in self.resources if rt.group == group))
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}

    def _resource_list(self, group: str, version: str) -> JSON:
        resources: list[JSON] = []
        for rt in self.resources:
            if rt.group != group or rt.version != version:
                continue
            resources.append(
                {
                    "name": rt.plural,
                    "singularName": rt.singular,
                    "namespaced": rt.namespaced,
                    "kind": rt.kind,
                    "verbs": ["get", "list", "watch"],
                    **({"shortNames": list(rt.short_names)} if rt.short_names else {}),
                }
            )
            if rt.status_subresource:  # as kube-apiserver lists a subresource: no singular name
                resources.append(
                    {
                        "name": f"{rt.plural}/status",
                        "singularName": "",
                        "namespaced": rt.namespaced,
                        "kind": rt.kind,
                        "verbs": ["get", "patch", "update"],
                    }
                )
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }


def _content(obj: Mapping[str, Any], rt: ResourceType) -> Any:
    """What moves a generation: for a custom resource everything but metadata (the custom resource
    strategy's ``copyNonMetadata``); a built-in kind's own strategy is not modelled: its spec."""
    if builtin_type(rt):
        return obj.get("spec")
    return {k: v for k, v in obj.items() if k not in ("metadata", "apiVersion", "kind")}


def _decode_continue(token: str) -> Any:
    """A continue token as kube-apiserver reads one (unpadded base64url JSON); ValueError in Go's words
    (``invalid character '\\x81' looking for beginning of value``) for one that is not."""
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    try:
        return json.loads(raw)
    except ValueError:
        first = raw.lstrip()[:1]
        char = chr(first[0]) if first and 0x20 <= first[0] < 0x7F else f"\\x{first[0]:02x}" if first else ""
        raise ValueError(f"invalid character '{char}' looking for beginning of value") from None


def builtin_type(rt: ResourceType) -> bool:
    """Served by kube-apiserver's own code, not from a CRD (list shapes and messages differ)."""
    return rt.group in ("", "apps")


_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
