"""The cluster source: what KubeVirt's API server would read, from a cache wherever that stays correct.

* Instancetypes, preferences (four kinds, plus the legacy flavor kinds when their CRDs exist), presets
  and the KubeVirt CR: watch caches. A miss is read directly (a just-created object is found at once) and
  the result goes into the cache when it is newer than what the cache knows.
* ControllerRevisions: immutable, read by name on first use and kept in a bounded LRU.
* VirtualMachines: read fresh for every request, or from a watch cache with ``vm_cache``.
* PVCs, DataVolumes, DataSources, VolumeSnapshots (inferFromVolume): read directly.

Concurrent reads of the same object share one request. Every request has a deadline, so a slow or absent
API server becomes :class:`SourceUnavailable` (503/504 with Retry-After), never a hung request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

from kubernetes_asyncio.client import Configuration

from apiserver.render import objects as o
from apiserver.render.objects import ObjectRef
from apiserver.sources.base import MISSING, CacheStats, Check, Missing, SourceUnavailable
from apiserver.sources.cluster import kinds
from apiserver.sources.cluster.cache import Backoff, WatchCache, deployed, slim
from apiserver.sources.cluster.client import ApiError, JSONDict, KubeClient, load_configuration
from apiserver.sources.cluster.kinds import InvalidName, Resource
from apiserver.sources.cluster.revisions import ABSENT, RevisionCache
from apiserver.sources.rendered.store import RenderedStore

log = logging.getLogger("apiserver.sources.cluster")

T = TypeVar("T")


class ClusterSource:
    """A :class:`~apiserver.sources.base.Source` backed by kube-apiserver."""

    def __init__(
        self,
        client: KubeClient | None = None,
        *,
        configuration: Configuration | None = None,
        kubeconfig: str | None = None,
        context: str | None = None,
        vm_cache: bool = False,
        read_timeout: float = 5.0,
        revision_cache_size: int = 4096,
        revision_negative_ttl: float = 1.0,
        backoff: tuple[float, float] = (0.2, 30.0),
        watch_seconds: tuple[int, int] = (300, 600),
        watch_idle_timeout: float = 120.0,
        recheck_missing: float = 60.0,
        progress_every: float = 5.0,
    ) -> None:
        self.client = client
        self.configuration = configuration
        self.kubeconfig = kubeconfig
        self.context = context
        self.vm_cache = vm_cache
        self.read_timeout = read_timeout
        self.revisions = RevisionCache(revision_cache_size, revision_negative_ttl)
        self._cache_options: dict[str, Any] = {
            "watch_seconds": watch_seconds,
            "idle_timeout": watch_idle_timeout,
            "recheck_missing": recheck_missing,
        }
        self._backoff = backoff
        self._probe = {"every": progress_every}
        self.caches: dict[str, WatchCache] = {}  # by kind
        self._tasks: list[asyncio.Task[None]] = []
        self._inflight: dict[Hashable, asyncio.Future[Any]] = {}
        self.coalesced = 0
        # The rendered VMs (list, watch, and GET expand-spec's answers): only over the VM cache.
        self.rendered: RenderedStore | None = RenderedStore(self) if vm_cache else None

    @classmethod
    def from_options(
        cls,
        kubeconfig: str | None = None,
        vm_cache: bool = False,
        *,
        context: str | None = None,
        read_timeout: float = 5.0,
        revision_cache_size: int = 4096,
    ) -> ClusterSource:
        """The source ``kubevirt-expand serve`` uses; the configuration is loaded by :meth:`start`."""
        return cls(
            kubeconfig=kubeconfig,
            context=context,
            vm_cache=vm_cache,
            read_timeout=read_timeout,
            revision_cache_size=revision_cache_size,
        )

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Load the configuration (ValueError if it cannot be), then list and watch in the background."""
        if self._tasks:
            return
        if self.client is None:
            config = self.configuration or await load_configuration(self.kubeconfig, context=self.context)
            self.client = KubeClient.from_configuration(config, read_timeout=self.read_timeout)
        watched: list[Resource] = [*kinds.CACHED, *kinds.FLAVORS.values()]
        if self.vm_cache:
            watched.append(kinds.VIRTUAL_MACHINE)
        for resource in watched:
            cache = WatchCache(self.client, resource, backoff=Backoff(*self._backoff), **self._cache_options)
            self.caches[resource.kind] = cache
            self._tasks.append(asyncio.create_task(cache.run(), name=f"watch {resource.plural}"))
        if self.rendered is not None:
            self.rendered.attach(self.caches, self.wait_synced)
            for cache in self.caches.values():
                name = f"progress of {cache.resource.plural}"
                self._tasks.append(asyncio.create_task(cache.probe_progress(**self._probe), name=name))
            self._tasks.append(asyncio.create_task(self.rendered.run(), name="render the collection"))

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self.client is not None:
            await self.client.close()

    async def wait_synced(self) -> None:
        """Wait until every cache has synced or is known not to be installed (bound it with a timeout)."""
        for cache in list(self.caches.values()):
            await cache.ready.wait()

    # ------------------------------------------------------------------ Source

    async def get_vm(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        cache = self.caches.get(o.VIRTUAL_MACHINE)
        if cache is not None and cache.usable:
            hit = cache.lookup(namespace, name)
            if hit is not None:
                return hit
            return await self._read_into(cache, namespace, name)
        # Fresh and not shared: a read that started before ours may predate a write our caller made.
        return await self._read(kinds.VIRTUAL_MACHINE, namespace, name)

    async def get(self, ref: ObjectRef) -> Mapping[str, Any] | None:
        kind = ref.kind
        if kind == o.CONTROLLER_REVISION:
            return await self._revision(ref.namespace, ref.name)
        if kind in (o.INSTANCETYPE, o.CLUSTER_INSTANCETYPE, o.PREFERENCE, o.CLUSTER_PREFERENCE):
            return await self._cached(kind, ref)
        if kind == o.VIRTUAL_MACHINE:
            return await self.get_vm(ref.namespace, ref.name)
        if kind in kinds.DIRECT:
            if not ref.namespace:
                return None
            return await self._shared(
                ("get", kind, ref.namespace, ref.name),
                lambda: self._read(kinds.DIRECT[kind], ref.namespace, ref.name),
            )
        if kind == o.PRESET:
            return next(
                (p for p in await self.presets(ref.namespace) if p["metadata"]["name"] == ref.name), None
            )
        return None

    async def presets(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        cache = self.caches.get(o.PRESET)
        if cache is not None and cache.usable:
            cache.hits += 1
            return cache.in_namespace(namespace)
        items = await self._shared(("list", o.PRESET, namespace), lambda: self._list(kinds.PRESET, namespace))
        return sorted(items, key=lambda p: str(p["metadata"]["name"]))

    async def launch_objects(
        self, namespace: str
    ) -> tuple[Mapping[str, Any] | None, list[Mapping[str, Any]]]:
        """The Namespace and its ResourceQuotas, read fresh (launch-spec; the caller was reviewed)."""
        found = await self._read(kinds.NAMESPACE, "", namespace)
        quotas = await self._list(kinds.RESOURCE_QUOTA, namespace)
        return found, list(quotas)

    # ------------------------------------------------------------------ HoldsFleet

    def holds_fleet(self) -> bool:
        return self.vm_cache

    def fleet_vms(self) -> Mapping[tuple[str, str], Mapping[str, Any]] | None:
        """The VM cache's VMs (None without ``vm_cache``, or before it synced: no answer without a
        list of every namespace, which the reader role grants only with the cache)."""
        if not self.vm_cache:
            raise SourceUnavailable("this server does not hold the fleet: run it with --vm-cache")
        cache = self.caches.get(o.VIRTUAL_MACHINE)
        if cache is None or not cache.synced.is_set():
            return None
        return dict(cache.store)

    def catalog_objects(self) -> Sequence[Mapping[str, Any]] | None:
        """The watch caches of the four instancetype and preference kinds (None until each synced)."""
        found: list[Mapping[str, Any]] = []
        for kind in (o.INSTANCETYPE, o.CLUSTER_INSTANCETYPE, o.PREFERENCE, o.CLUSTER_PREFERENCE):
            cache = self.caches.get(kind)
            if cache is None or not cache.usable:
                return None
            found += cache.store.values()
        return found

    async def quotas(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        """The ResourceQuotas of ``namespace``, read fresh (the caller was reviewed)."""
        return await self._list(kinds.RESOURCE_QUOTA, namespace)

    async def kubevirt(self) -> Mapping[str, Any] | None:
        cache = self.caches.get(o.KUBEVIRT)
        if cache is not None and cache.usable:
            cache.hits += 1
            return cache.deployed()
        return deployed(await self._shared(("list", o.KUBEVIRT), lambda: self._list(kinds.KUBEVIRT, "")))

    # ------------------------------------------------------------------ Peekable

    # What the caches answer without a request. A watch-cache miss is no proof of absence (``get``
    # reads a just-created object directly), so it is MISSING; a negatively cached revision is None.

    def peek(self, ref: ObjectRef) -> Mapping[str, Any] | Missing | None:
        kind = ref.kind
        if kind == o.CONTROLLER_REVISION:
            known = self.revisions.peek(ref.namespace, ref.name)
            return MISSING if known is ABSENT else known
        if kind in (o.INSTANCETYPE, o.CLUSTER_INSTANCETYPE, o.PREFERENCE, o.CLUSTER_PREFERENCE):
            cache = self.caches.get(kind)
            if cache is None:
                return MISSING
            if cache.usable:
                hit = cache.peek(ref.namespace, ref.name)
                if hit is not None:
                    return hit
            flavor = self.caches.get(kinds.FLAVORS[kind].kind) if kind in kinds.FLAVORS else None
            if flavor is not None and flavor.usable and flavor.missing is not True:
                hit = flavor.peek(ref.namespace, ref.name)
                if hit is not None:
                    return hit
            return MISSING
        if kind == o.VIRTUAL_MACHINE:
            return self.peek_vm(ref.namespace, ref.name)
        return MISSING

    def peek_vm(self, namespace: str, name: str) -> Mapping[str, Any] | Missing | None:
        cache = self.caches.get(o.VIRTUAL_MACHINE)
        if cache is not None and cache.usable:
            hit = cache.peek(namespace, name)
            if hit is not None:
                return hit
        return MISSING

    def peek_presets(self, namespace: str) -> Sequence[Mapping[str, Any]] | Missing:
        cache = self.caches.get(o.PRESET)
        if cache is not None and cache.usable:
            cache.hits += 1
            return cache.in_namespace(namespace)
        return MISSING

    def peek_kubevirt(self) -> Mapping[str, Any] | Missing | None:
        cache = self.caches.get(o.KUBEVIRT)
        if cache is not None and cache.usable:
            cache.hits += 1
            return cache.deployed()
        return MISSING

    def checks(self) -> Sequence[Check]:
        if not self.caches:
            return [Check("cluster", False, "not started")]
        out = []
        for cache in self.caches.values():
            if cache.missing is True:
                out.append(Check(f"cache-{cache.name}", True, "not installed in this cluster"))
                continue
            # No counts: /readyz is open to anyone (as kube-apiserver's), and how many objects each
            # kind has in the cluster is not theirs to learn; /metrics (authorized) has them.
            message = "" if cache.synced.is_set() else "not synced yet"
            if cache.last_error:
                message += ("; " if message else "") + f"last error: {cache.last_error}"
            out.append(Check(f"cache-{cache.name}", cache.synced.is_set(), message))
        if self.rendered is not None:
            ready = self.rendered.ready.is_set()
            out.append(Check("collection", ready, "" if ready else "rendering the VMs"))
        return out

    def cache_stats(self) -> Sequence[CacheStats]:
        stats = [CacheStats(c.name, len(c.store), c.hits, c.misses) for c in self.caches.values()]
        stats.append(
            CacheStats("controllerrevisions", len(self.revisions), self.revisions.hits, self.revisions.misses)
        )
        if self.rendered is not None:
            stats.append(CacheStats("expandedvirtualmachines", self.rendered.size))
        return stats

    # ------------------------------------------------------------------ reads

    async def _cached(self, kind: str, ref: ObjectRef) -> Mapping[str, Any] | None:
        cache = self.caches.get(kind)
        if cache is None:
            raise SourceUnavailable("the cluster source has not been started")
        flavor = self.caches.get(kinds.FLAVORS[kind].kind) if kind in kinds.FLAVORS else None
        if cache.usable:
            hit = cache.lookup(ref.namespace, ref.name)
            if hit is not None:
                return hit
        if flavor is not None and flavor.usable:
            hit = flavor.lookup(ref.namespace, ref.name) if flavor.missing is not True else None
            if hit is not None:
                return hit
        if cache.missing is not True:
            found = await self._read_into(cache, ref.namespace, ref.name)
            if found is not None:
                return found
        if flavor is not None and flavor.missing is False:
            return await self._read_into(flavor, ref.namespace, ref.name)
        return None

    async def _read_into(self, cache: WatchCache, namespace: str, name: str) -> JSONDict | None:
        """A direct read for a cache miss, shared by concurrent callers; the cache gets the result."""
        key = ("get", cache.resource.kind, namespace, name)

        async def read() -> JSONDict | None:
            obj = await self._read(cache.resource, namespace, name)
            if obj is not None:
                cache.offer(obj)
            return obj

        return await self._shared(key, read)

    async def _revision(self, namespace: str, name: str) -> JSONDict | None:
        known = self.revisions.lookup(namespace, name)
        if known is not ABSENT:
            return known  # type: ignore[no-any-return]

        async def read() -> JSONDict | None:
            obj = await self._read(kinds.CONTROLLER_REVISION, namespace, name)
            self.revisions.put(namespace, name, obj)
            return obj

        return await self._shared(("get", o.CONTROLLER_REVISION, namespace, name), read)

    async def _read(self, resource: Resource, namespace: str, name: str) -> JSONDict | None:
        client = self._client()
        try:
            if not name:  # the path would be the collection's
                raise InvalidName("an object needs a name")
            path = resource.path(namespace, name)
        except InvalidName:  # no such object can exist: nothing to ask
            return None
        try:
            obj = await client.get(path)
        except ApiError as err:
            if err.code == 404:
                return None
            raise _unavailable(resource, err) from err
        return slim(obj, resource)

    async def _list(self, resource: Resource, namespace: str) -> list[JSONDict]:
        client = self._client()
        try:
            path = resource.path(namespace)
        except InvalidName:
            return []
        try:
            page = await client.get(path, verb="list")
        except ApiError as err:
            if err.code == 404:
                return []
            raise _unavailable(resource, err) from err
        return [slim(item, resource) for item in page.get("items") or ()]

    def _client(self) -> KubeClient:
        if self.client is None:
            raise SourceUnavailable("the cluster source has not been started")
        return self.client

    async def _shared(self, key: Hashable, factory: Callable[[], Awaitable[T]]) -> T:
        """Run ``factory`` once for all concurrent callers with the same ``key``."""
        fut = self._inflight.get(key)
        if fut is None:
            fut = asyncio.ensure_future(factory())
            self._inflight[key] = fut
            fut.add_done_callback(lambda f: self._finished(key, f))
        else:
            self.coalesced += 1
        result: T = await asyncio.shield(fut)
        return result

    def _finished(self, key: Hashable, fut: asyncio.Future[Any]) -> None:
        if self._inflight.get(key) is fut:
            del self._inflight[key]
        if not fut.cancelled():
            fut.exception()  # retrieved here so that callers that went away leave no warning


def _unavailable(resource: Resource, err: ApiError) -> SourceUnavailable:
    """Errors a user cannot fix (our own RBAC, a broken API server) are the server's, not the request's."""
    return SourceUnavailable(f"the Kubernetes API refused to read {resource.plural}: {err} ({err.code})")


def source_from_args(args: Any) -> ClusterSource:
    """The source for ``kubevirt-expand serve`` without ``--manifests``.

    The configuration is loaded here, before the server starts, so a bad ``--kubeconfig`` or a missing
    service account is a start-up error (ValueError), not a server that never becomes ready.
    """
    kubeconfig = getattr(args, "kubeconfig", None)
    context = getattr(args, "context", None)
    configuration = asyncio.run(load_configuration(kubeconfig, context=context))
    return ClusterSource(
        configuration=configuration,
        vm_cache=bool(getattr(args, "vm_cache", False)),
        read_timeout=float(getattr(args, "kube_timeout", 5.0)),
    )
