"""A watch-backed cache of one resource type (a reflector, as client-go calls it).

List once, then watch from the list's resourceVersion with bookmarks, so that a reconnect resumes where
it stopped instead of listing again. A 410 Expired (history compacted while we were away) forces a new
list. Errors back off exponentially with jitter; the cache keeps serving what it holds meanwhile.
A CRD that is not installed is found through discovery and skipped with one log line; it is looked for
again now and then, so installing KubeVirt after this server starts works.
"""

from __future__ import annotations

import asyncio
import logging
import random
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import orjson

from apiserver.render import objects as o
from apiserver.runtime.heap import freeze_loaded
from apiserver.sources.base import SourceUnavailable
from apiserver.sources.cluster.client import ApiError, JSONDict, KubeClient
from apiserver.sources.cluster.kinds import Resource

log = logging.getLogger("apiserver.sources.cluster")

Key = tuple[str, str]  # (namespace, name)
Change = tuple[JSONDict | None, JSONDict | None]  # (before, after); None: absent

# Caches this large freeze what a list page left in them (see apiserver/runtime/heap.py); small ones need not.
_FREEZE_FROM = 2000
# Objects of a list page taken in between two turns of the event loop.
_STEP = 100


class CacheListener(Protocol):
    """Told of every change of a cache, synchronously, after the cache has applied it."""

    def changed(
        self, kind: str, changes: Sequence[Change], version: int | None, *, reset: bool = False
    ) -> None:
        """``changes`` took the cache to ``version`` (kube-apiserver's resourceVersion of the event or
        list; None when unknown). ``reset``: the cache was emptied or replaced without a version
        (its kind went away), so history before it means nothing."""

    def progressed(self, kind: str, version: int) -> None:
        """The cache has seen every change up to ``version`` (a bookmark, a list)."""


def rv_of(obj: Mapping[str, Any]) -> int | None:
    """resourceVersions are opaque by contract but etcd revisions in practice; None if not a number."""
    try:
        return int(obj["metadata"]["resourceVersion"])
    except (KeyError, TypeError, ValueError):
        return None


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


# Kinds the renderer reads only for their spec (and revisions for their data): the cache keeps that, the
# identity and version (the engine's spec cache keys on uid and resourceVersion), and the labels.
_SPEC_KINDS = frozenset(
    {o.INSTANCETYPE, o.CLUSTER_INSTANCETYPE, o.PREFERENCE, o.CLUSTER_PREFERENCE, o.FLAVOR, o.CLUSTER_FLAVOR}
)
_KEEP_META = ("name", "namespace", "uid", "resourceVersion", "generation", "labels")
# A VM's start revision is used only when the VM owns it (apiserver.render.vmcontroller.revision).
_KEEP_META_OF = {o.CONTROLLER_REVISION: (*_KEEP_META, "ownerReferences")}
_KEEP = {kind: ("spec",) for kind in _SPEC_KINDS} | {o.CONTROLLER_REVISION: ("data", "revision")}
# Identical label sets (common-instancetypes labels every object alike) are kept once.
_LABEL_SETS: dict[tuple[tuple[str, Any], ...], JSONDict] = {}
_LABEL_SETS_MAX = 4096
_INTERN_MAX = 64  # strings up to this long (names, keys, enum values, quantities) are shared


# Canonical copies of the containers seen so far, keyed by their members (children by identity: they
# are canonical already), so that identical subtrees of different objects (the same preferred devices,
# the same CPU count) are kept once. Stored objects are never modified (see Source), so sharing is safe.
# Bounded: when full it starts over, which costs sharing, never correctness.
_CANONICAL: dict[tuple[Any, ...], Any] = {}
_CANONICAL_MAX = 16384


def _member(value: Any) -> tuple[type, Any]:
    # The type keeps True, 1 and 1.0 apart; containers are canonical, so their identity is their value.
    return (type(value), id(value) if isinstance(value, (dict, list)) else value)


def _compact(value: Any) -> Any:
    """The same JSON value with keys and short strings interned and repeated subtrees shared."""
    if isinstance(value, dict):
        items = {sys.intern(k) if isinstance(k, str) else k: _compact(v) for k, v in value.items()}
        key: tuple[Any, ...] = ("d", *((k, *_member(v)) for k, v in items.items()))
    elif isinstance(value, list):
        items = [_compact(v) for v in value]  # type: ignore[assignment]
        key = ("l", *(_member(v) for v in items))
    elif isinstance(value, str) and len(value) <= _INTERN_MAX:
        return sys.intern(value)
    else:
        return value
    found = _CANONICAL.get(key)
    if found is None:
        if len(_CANONICAL) >= _CANONICAL_MAX:
            _CANONICAL.clear()
        found = _CANONICAL[key] = items
    return found


def _shared_labels(labels: Any) -> Any:
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        return labels
    key = tuple(labels.items())
    found = _LABEL_SETS.get(key)
    if found is None:
        if len(_LABEL_SETS) >= _LABEL_SETS_MAX:
            _LABEL_SETS.clear()
        found = _LABEL_SETS[key] = _compact(labels)
    return found


# Subtrees of cached whole objects (VMs) seen so far, by their JSON, so that what VMs made from one
# template have alike (the template's spec, the instancetype and preference refs, label sets) is kept
# once; see :func:`shared`. Only subtrees up to _SHARED_BYTES of JSON are kept as keys (larger ones are
# rarely alike and would cost their size again); bounded like _CANONICAL.
_SHARED: dict[bytes, Any] = {}
_SHARED_MAX = 16384
_SHARED_BYTES = 1024


def shared(value: Any, unique: bool = True) -> Any:
    """``value`` with the subtrees it has in common with objects stored before taken from them.

    Why: a decoded VM of hack/benchmarks/load_vms.py (880 bytes of JSON) takes 4.2 KiB as Python dicts, most of
    it the containers every VM of a template has alike; sharing them takes it to 1.8 KiB (measured
    with tracemalloc over 10,000 VMs: 4,283 -> 1,783 bytes per VM; at 100,000 VMs ~240 MiB less).
    It costs about 25-35 us per VM on a list (one orjson encoding per container on the way down,
    stopping at the first subtree already seen), against 50-80 us to decode the VM. Top-down and
    keyed by the encoding (which keeps key order and tells 1 from 1.0 and true): cheaper than
    :func:`_compact`'s bottom-up keys (~100 us per VM). The object itself and its metadata are
    ``unique`` (they hold the uid): not looked up, not kept as keys. Stored objects are never
    modified (see Source), so sharing is safe.
    """
    if isinstance(value, str):
        return sys.intern(value) if len(value) <= _INTERN_MAX else value
    if not isinstance(value, (dict, list)):
        return value
    key = b""
    if not unique:
        key = orjson.dumps(value)
        if len(key) > _SHARED_BYTES:
            key = b""
        else:
            found = _SHARED.get(key)
            if found is not None:
                return found
    out: Any
    if isinstance(value, dict):
        out = {k: shared(v, unique and k == "metadata") for k, v in value.items()}
    else:
        out = [shared(v, False) for v in value]
    if key:
        if len(_SHARED) >= _SHARED_MAX:
            _SHARED.clear()
        # A copy: orjson's answer keeps the capacity it was written into (4 KiB however short it is).
        _SHARED[bytes(memoryview(key))] = out
    return out


def stored(obj: JSONDict, resource: Resource) -> JSONDict:
    """What a watch cache keeps of a freshly read object: :func:`slim`, and for the kinds kept whole
    (VMs above all), with the subtrees it shares with other objects taken from them (:func:`shared`)."""
    return kept(slim(obj, resource), resource)


def kept(obj: JSONDict, resource: Resource) -> JSONDict:
    """:func:`stored` of an object :func:`slim` has been through already."""
    if resource.kind in _KEEP:
        return obj
    return shared(obj)  # type: ignore[no-any-return]


def slim(obj: JSONDict, resource: Resource) -> JSONDict:
    """Fill in kind/apiVersion (list items of built-in types lack them) and drop what nobody reads.

    VMs are kept whole: GET expand-spec answers with the VM as virt-api reads it from kube-apiserver,
    ``metadata.managedFields`` included (docs/performance.md gives what that costs). Every other object
    loses managedFields: only rendering reads them. Instancetypes, preferences and ControllerRevisions keep
    only what rendering reads (see ``_KEEP``): no annotations (kubectl's last-applied copy doubles an
    object), no status, no timestamps, and no owner references but a revision's (whether a VM owns its
    start revision). Idempotent; never changes a stored object.
    """
    obj.setdefault("apiVersion", resource.api_version)
    obj.setdefault("kind", resource.kind)
    meta = obj.get("metadata")
    keep = _KEEP.get(resource.kind)
    if keep is None or not isinstance(meta, dict):
        if isinstance(meta, dict) and resource.kind != o.VIRTUAL_MACHINE:
            meta.pop("managedFields", None)
        return obj
    kept_meta = _KEEP_META_OF.get(resource.kind, _KEEP_META)
    slim_meta = {key: _compact(meta[key]) for key in kept_meta if key in meta and key != "labels"}
    if "labels" in meta:
        slim_meta["labels"] = _shared_labels(meta["labels"])
    out: JSONDict = {
        "apiVersion": _compact(obj["apiVersion"]),
        "kind": _compact(obj["kind"]),
        "metadata": slim_meta,
    }
    for key in keep:
        if key in obj:
            out[key] = _compact(obj[key])
    return out


def deployed(crs: Sequence[JSONDict]) -> JSONDict | None:
    """The KubeVirt CR virt-api takes its configuration from (KubeVirt's GetConfigFromKubeVirtCR): one with
    a ``status.phase`` that is not being deleted; the Deployed one where there are several, else the first
    by namespace and name. None where there is none: virt-api then renders with its built-in
    configuration, whatever a CR without a phase (not yet seen by virt-operator) configures."""
    ordered = sorted(crs, key=lambda cr: (cr["metadata"].get("namespace", ""), cr["metadata"]["name"]))
    read = [cr for cr in ordered if _phase(cr) and not cr["metadata"].get("deletionTimestamp")]
    for cr in read:
        if _phase(cr) == "Deployed":
            return cr
    return read[0] if read else None


def _phase(cr: JSONDict) -> Any:
    status = cr.get("status")
    return status.get("phase") if isinstance(status, dict) else None


class Backoff:
    """Exponential backoff with "equal jitter": half fixed, half random, capped.

    ``unreachable_cap`` caps the delay after failures that cost kube-apiserver nothing (it could not be
    reached, or answered 5xx/429 while starting): retrying about once a second finds it within a
    second of its readiness, where the 30 s cap made recovery after an outage take up to 30 s more.
    """

    def __init__(self, base: float = 0.2, cap: float = 30.0, unreachable_cap: float = 1.0) -> None:
        self.base = base
        self.cap = cap
        self.unreachable_cap = unreachable_cap
        self.failures = 0

    def next_delay(self, *, unreachable: bool = False) -> float:
        cap = min(self.cap, self.unreachable_cap) if unreachable else self.cap
        ceiling = min(cap, self.base * 2**self.failures)
        self.failures += 1
        delay: float = ceiling / 2 + random.uniform(0, ceiling / 2)
        return delay

    def reset(self) -> None:
        self.failures = 0


async def served(client: KubeClient, resource: Resource) -> bool:
    """Whether the API server serves ``resource`` (its CRD is installed), by discovery."""
    try:
        doc = await client.get(resource.group_version_path, verb="discovery")
    except ApiError as err:
        if err.code == 404:
            return False
        raise
    return any(r.get("name") == resource.plural for r in doc.get("resources") or ())


class WatchCache:
    """Objects of one resource type in every namespace, kept current by a watch."""

    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        *,
        backoff: Backoff | None = None,
        watch_seconds: tuple[int, int] = (300, 600),
        idle_timeout: float = 120.0,
        recheck_missing: float = 60.0,
        list_timeout: float = 60.0,
    ) -> None:
        self.client = client
        self.resource = resource
        self.name = resource.plural
        self.backoff = backoff or Backoff()
        self.watch_seconds = watch_seconds
        self.idle_timeout = idle_timeout
        self.recheck_missing = recheck_missing
        # A list runs in the background, no request waits for it: it may take longer than a read.
        self.list_timeout = list_timeout
        self.store: dict[Key, JSONDict] = {}
        # The resourceVersion up to which the store reflects every change (list, events, bookmarks).
        self.rv: str | None = None
        self.synced = asyncio.Event()
        self.ready = asyncio.Event()  # synced, or known not to be installed
        self.missing: bool | None = None  # unknown until discovery answered
        self.last_error = ""
        self.last_error_at = 0.0
        self.hits = 0
        self.misses = 0
        self.lists = 0
        self.watches = 0
        # Bumped whenever the store changes; answers derived from the store are memoized under it.
        self.generation = 0
        self._memo: dict[tuple[str, str], tuple[int, Any]] = {}
        self.listeners: list[CacheListener] = []

    def _tell(self, changes: Sequence[Change], version: int | None, *, reset: bool = False) -> None:
        for listener in self.listeners:
            listener.changed(self.resource.kind, changes, version, reset=reset)

    # ------------------------------------------------------------------ reads

    @property
    def usable(self) -> bool:
        """Synced, or known not to exist: either way its answer needs no request."""
        return self.synced.is_set() or self.missing is True

    def lookup(self, namespace: str, name: str) -> JSONDict | None:
        obj = self.store.get((namespace if self.resource.namespaced else "", name))
        if obj is None:
            self.misses += 1
        else:
            self.hits += 1
        return obj

    def peek(self, namespace: str, name: str) -> JSONDict | None:
        """Like :meth:`lookup`, but a miss is not counted (the read that follows counts it)."""
        obj = self.store.get((namespace if self.resource.namespaced else "", name))
        if obj is not None:
            self.hits += 1
        return obj

    def in_namespace(self, namespace: str) -> list[JSONDict]:
        """The objects of a namespace by name; the same list until the store changes."""
        memo = self._memo.get(("ns", namespace))
        if memo is not None and memo[0] == self.generation:
            return memo[1]  # type: ignore[no-any-return]
        found = sorted(
            (o for (ns, _), o in self.store.items() if ns == namespace), key=lambda o: key_of(o)[1]
        )
        if len(self._memo) > 1024:
            self._memo.clear()
        self._memo[("ns", namespace)] = (self.generation, found)
        return found

    def deployed(self) -> JSONDict | None:
        """:func:`deployed` of the cached CRs."""
        memo = self._memo.get(("deployed", ""))
        if memo is not None and memo[0] == self.generation:
            return memo[1]  # type: ignore[no-any-return]
        found = deployed(list(self.store.values()))
        self._memo[("deployed", "")] = (self.generation, found)
        return found

    def _changed(self) -> None:
        self.generation += 1

    def offer(self, obj: JSONDict) -> None:
        """Put a freshly read object in, unless the cache already knows something newer.

        An object absent from the store at a resourceVersion not newer than the cache's own was deleted
        after it was read (the watch already said so): keeping it out keeps deleted objects deleted.
        """
        if not self.synced.is_set():
            return
        new_rv = rv_of(obj)
        key = key_of(obj)
        if not self.resource.namespaced:
            key = ("", key[1])
        current = self.store.get(key)
        if new_rv is None:
            return
        if current is not None:
            cur_rv = rv_of(current)
            if cur_rv is None or new_rv > cur_rv:
                new = self.store[key] = stored(obj, self.resource)
                self._changed()
                self._tell([(current, new)], new_rv)
            return
        known = int(self.rv) if self.rv and self.rv.isdigit() else None
        if known is None or new_rv > known:
            new = self.store[key] = stored(obj, self.resource)
            self._changed()
            self._tell([(None, new)], new_rv)

    # ------------------------------------------------------------------ the loop

    async def run(self) -> None:
        while True:
            try:
                if self.missing is not False and not await self._discover():
                    await asyncio.sleep(self.recheck_missing)
                    continue
                if self.rv is None:
                    await self._list()
                await self._watch()
                self.backoff.reset()
            except asyncio.CancelledError:
                raise
            except ApiError as err:
                if err.code == 404:
                    # The CRD went away (kube-apiserver just ends its watches; then its paths answer a
                    # plain-text 404): no error, look it up again after a pause.
                    log.info("%s is no longer served (%s); looking it up again", self.name, err)
                    self.missing = None
                    await asyncio.sleep(self.backoff.next_delay())
                    continue
                await self._failed(err)
            except SourceUnavailable as err:
                # Retry-After is followed when kube-apiserver throttles (429), not on a 503: while it
                # starts it answers 503 "before all known HTTP paths have been installed" with
                # Retry-After 5 until about when /readyz says ok; following it made VMs fresh 5.1 s
                # after kube-apiserver was ready again (hack/benchmarks/collection.py, restart at 1,000 VMs).
                await self._failed(err, unreachable=True, retry_after=err.retry_after if err.throttled else 1)
            except ValueError as err:
                await self._failed(err)

    async def _discover(self) -> bool:
        found = await served(self.client, self.resource)
        if not found:
            if self.missing is not True:
                log.info("%s is not served by this cluster (CRD not installed); not caching it", self.name)
            self.missing = True
            self.ready.set()
            gone = [(obj, None) for obj in self.store.values()]
            self.store.clear()
            self._changed()
            self.rv = None
            if gone:  # the kind went away with objects in it (a CRD removed while cached)
                self._tell(gone, None, reset=True)
            return False
        if self.missing is True:
            log.info("%s is served now; caching it", self.name)
        self.missing = False
        return True

    async def _failed(self, err: Exception, *, unreachable: bool = False, retry_after: int = 1) -> None:
        self.last_error = str(err)
        self.last_error_at = time.time()
        delay = self.backoff.next_delay(unreachable=unreachable)
        if unreachable and retry_after > 1:  # kube-apiserver asked for a pause (429 with Retry-After)
            delay = max(delay, min(float(retry_after), self.backoff.cap))
        log.warning("cache %s: %s (retrying in %.1fs)", self.name, err, delay)
        await asyncio.sleep(delay)

    async def _list(self) -> None:
        """List every object, page by page, into the store in place.

        A relist (after a 410, or a CRD that came back) keeps the instance it holds for every object
        whose resourceVersion is unchanged and drops the fresh copy at once, so memory stays near one
        store and one page instead of two stores, and whoever renders from these objects sees only
        the objects that really changed. Objects the list no longer has are removed at the end.
        Listeners hear of every change at once, when the list is complete, under its resourceVersion.
        """
        self.lists += 1
        store = self.store
        first = not self.synced.is_set()
        seen: set[Key] = set()
        changes: list[Change] = []
        query: dict[str, str] = {"limit": "500"}
        while True:
            page = await self.client.get(self.resource.path(), query, verb="list", seconds=self.list_timeout)
            items = page.get("items") or ()
            for start in range(0, len(items), _STEP):
                if start:
                    # Taking in a page of 500 VMs at once held the loop for 80-100 ms (hack/benchmarks/collection_memory.py
                    # --relist, 30,000 VMs); requests go in between.
                    await asyncio.sleep(0)
                for item in items[start : start + _STEP]:
                    obj = slim(item, self.resource)
                    key = key_of(obj)
                    seen.add(key)
                    current = store.get(key)
                    if current is not None and rv_of(current) == rv_of(obj) and rv_of(obj) is not None:
                        continue
                    store[key] = obj = kept(obj, self.resource)
                    changes.append((current, obj))
            if len(store) >= _FREEZE_FROM:
                freeze_loaded()
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                break
            query = {"limit": "500", "continue": str(meta["continue"])}
        if len(seen) != len(store):
            for key in [k for k in store if k not in seen]:
                changes.append((store.pop(key), None))
        self._changed()
        self.rv = str(meta.get("resourceVersion") or "")
        self.last_error = ""
        if first:
            log.info("cache %s synced: %d objects at resourceVersion %s", self.name, len(store), self.rv)
        elif changes:
            log.info("cache %s listed again: %d objects changed while not watched", self.name, len(changes))
        self.synced.set()
        self.ready.set()
        version = int(self.rv) if self.rv.isdigit() else None
        self._tell(changes, version)
        if version is not None:
            for listener in self.listeners:
                listener.progressed(self.resource.kind, version)

    async def probe_progress(self, every: float = 5.0, per_object: float = 0.01) -> None:
        """Tell the listeners how far this cache is current even while nothing changes.

        kube-apiserver sends a quiet kind's watch no bookmark for minutes (its own watch cache does not
        advance without changes), so a listener could not tell "nothing happened" from "not heard yet".
        Now and then (every ``every`` seconds, longer for a large cache: ``per_object`` seconds per
        object) a quorum list shows the state at the current revision; merged into the store (only an
        object newer than the one held changes it), the cache has every change up to that revision.
        Only while the watch is quiet: its own events say as much.
        """
        last_rv = self.rv
        while True:
            await asyncio.sleep(max(every, per_object * len(self.store)) * random.uniform(0.9, 1.1))
            if not self.synced.is_set() or self.missing is not False or self.rv != last_rv:
                last_rv = self.rv
                continue
            try:
                await self._confirm()
            except (ApiError, SourceUnavailable, ValueError) as err:
                log.debug("cache %s: progress probe failed: %s", self.name, err)
            last_rv = self.rv

    async def _confirm(self) -> None:
        watched = self.rv
        listed: dict[Key, JSONDict] = {}
        query: dict[str, str] = {"limit": "500"}
        while True:
            page = await self.client.get(self.resource.path(), query, verb="list", seconds=self.list_timeout)
            for item in page.get("items") or ():
                obj = stored(item, self.resource)
                listed[key_of(obj)] = obj
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                break
            query = {"limit": "500", "continue": str(meta["continue"])}
        text = str(meta.get("resourceVersion") or "")
        if not text.isdigit() or self.rv != watched or not self.synced.is_set():
            return  # the watch moved meanwhile (its events say how far it is) or the cache was reset
        version = int(text)
        if watched and watched.isdigit() and int(watched) >= version:
            return
        # The watch has seen everything up to ``watched`` and nothing since; the list is the state at
        # ``version``: what differs changed in between, and the watch will bring the same versions.
        changes: list[Change] = []
        for key, obj in listed.items():
            current = self.store.get(key)
            cur_rv, new_rv = (rv_of(current) if current is not None else None), rv_of(obj)
            if current is None or (new_rv is not None and cur_rv is not None and new_rv > cur_rv):
                self.store[key] = obj
                changes.append((current, obj))
        for key in [k for k in self.store if k not in listed]:
            current = self.store[key]
            cur_rv = rv_of(current)
            if cur_rv is not None and cur_rv <= version:  # gone by the listed revision
                del self.store[key]
                changes.append((current, None))
        if changes:
            self._changed()
            log.info("cache %s: %d changes the watch had not delivered yet", self.name, len(changes))
            self._tell(changes, version)
        for listener in self.listeners:
            listener.progressed(self.resource.kind, version)

    async def _watch(self) -> None:
        self.watches += 1
        query = {
            "resourceVersion": self.rv or "",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(random.randint(*self.watch_seconds)),
        }
        async for event in self.client.watch(self.resource.path(), query, idle_timeout=self.idle_timeout):
            kind = event.get("type")
            obj = event.get("object")
            if not isinstance(obj, dict):
                continue
            if kind == "ERROR":
                if obj.get("code") == 410:
                    log.info("cache %s: resourceVersion %s expired; listing again", self.name, self.rv)
                    self.rv = None
                    return
                raise ApiError(int(obj.get("code") or 500), obj)
            rv = (obj.get("metadata") or {}).get("resourceVersion")
            if rv:
                self.rv = str(rv)
            if kind in ("ADDED", "MODIFIED"):
                self._put(stored(obj, self.resource))
            elif kind == "DELETED":
                self._remove(obj)
            elif kind == "BOOKMARK" and self.rv and self.rv.isdigit():
                for listener in self.listeners:
                    listener.progressed(self.resource.kind, int(self.rv))
            self.backoff.reset()
            self.last_error = ""

    def _put(self, obj: JSONDict) -> None:
        key = key_of(obj)
        current = self.store.get(key)
        if current is not None:
            new_rv, cur_rv = rv_of(obj), rv_of(current)
            if new_rv is not None and cur_rv is not None and new_rv < cur_rv:
                return  # a direct read already brought a newer version
            if new_rv is not None and new_rv == cur_rv:
                return  # the same version, already brought by a direct read: nothing changed
        self.store[key] = obj
        self._changed()
        self._tell([(current, obj)], rv_of(obj))

    def _remove(self, obj: JSONDict) -> None:
        key = key_of(obj)
        current = self.store.get(key)
        if current is None:
            return
        gone_rv, cur_rv = rv_of(obj), rv_of(current)
        if gone_rv is not None and cur_rv is not None and cur_rv > gone_rv:
            return  # re-created since, and a direct read already brought the new one
        del self.store[key]
        self._changed()
        self._tell([(current, None)], gone_rv)
