"""The interface every source of objects (a folder of manifests, a cluster) offers the server."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from apiserver.render.objects import ObjectRef


class SourceUnavailable(Exception):
    """The backing store could not answer in time; the server answers 503/504 with ``Retry-After``."""

    def __init__(
        self, message: str, *, timeout: bool = False, retry_after: int = 1, throttled: bool = False
    ) -> None:
        super().__init__(message)
        self.timeout = timeout
        self.retry_after = retry_after
        self.throttled = throttled  # the store asked its callers to slow down (429 TooManyRequests)


@dataclass(frozen=True, slots=True)
class Check:
    """One named readiness check, listed by ``/readyz?verbose``; a passing check's message is a warning or a
    note shown beside it (``[+]name ok - message``), a failing one's the reason."""

    name: str
    ok: bool
    message: str = ""


@dataclass(frozen=True, slots=True)
class CacheStats:
    """One cache of a source, as ``/metrics`` reports it: objects held, lookups answered and missed."""

    cache: str
    size: int
    hits: int = 0
    misses: int = 0


@runtime_checkable
class ReportsCacheStats(Protocol):
    """Optional for a source: the metrics endpoint reads these counters at every scrape."""

    def cache_stats(self) -> Sequence[CacheStats]:
        """The current figures of every cache the source keeps."""


@runtime_checkable
class ReportsProblems(Protocol):
    """Optional for a source: inputs it could not read, while it keeps serving (``/metrics`` counts them)."""

    def problems(self) -> Sequence[str]:
        """One line per input whose latest read failed (file, document, line and why)."""


class Source(Protocol):
    """Where VMs and the objects they reference come from.

    Every read returns a plain dict (the object as the API server or the file has it) or None when it
    does not exist. Reads may raise :class:`SourceUnavailable`. Objects are never modified by callers.
    """

    async def start(self) -> None:
        """Begin loading (list/watch, read the folder); return without waiting for the first sync."""

    async def close(self) -> None:
        """Stop background work and release connections."""

    async def get_vm(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The stored VirtualMachine."""

    async def get(self, ref: ObjectRef) -> Mapping[str, Any] | None:
        """An instancetype, preference (any of the four kinds) or ControllerRevision."""

    async def presets(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        """Every VirtualMachineInstancePreset of a namespace."""

    async def kubevirt(self) -> Mapping[str, Any] | None:
        """The KubeVirt CR whose configuration feeds the rendering defaults, if there is one."""

    def checks(self) -> Sequence[Check]:
        """Readiness checks (caches synced, folder read once without errors, ...)."""


@runtime_checkable
class HoldsFleet(Protocol):
    """Optional for a source: the whole fleet and catalog as it holds them now, for a catalog change
    preview (:meth:`apiserver.sources.reads.ScopedReads.fleet`, which keeps a caller to what they may
    read). A source that cannot list every VM without a request (the cluster source without its VM
    cache) answers None."""

    def holds_fleet(self) -> bool:
        """Whether the fleet can be read at all (the cluster source: only with its VM cache)."""

    def fleet_vms(self) -> Mapping[tuple[str, str], Mapping[str, Any]] | None:
        """Every VirtualMachine by namespace and name, or None when the source does not hold them."""

    def catalog_objects(self) -> Sequence[Mapping[str, Any]] | None:
        """Every instancetype and preference (the four kinds), or None when not known yet."""

    async def quotas(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        """The ResourceQuotas of a namespace (read only after the caller's review)."""


class Missing:
    """The answer of a ``peek`` that the source cannot give without I/O."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING = Missing()


@runtime_checkable
class Peekable(Protocol):
    """Optional for a source: synchronous, cache-only reads, so a warm request needs no await.

    Each returns exactly what the asynchronous read would return now, or :data:`MISSING` when only the
    asynchronous read can answer (not cached, or a cache miss that is not proof of absence). Objects
    returned are the ones the source holds: while the source keeps serving an object, ``peek`` returns
    the same instance, and a changed object is a new instance (sources never modify what they hold), so
    identity tells a caller whether what it rendered from is still current.
    """

    def peek(self, ref: ObjectRef) -> Mapping[str, Any] | Missing | None:
        """The object ``get(ref)`` would return, or MISSING."""

    def peek_vm(self, namespace: str, name: str) -> Mapping[str, Any] | Missing | None:
        """The VM ``get_vm`` would return, or MISSING (a source that reads VMs fresh always says so)."""

    def peek_presets(self, namespace: str) -> Sequence[Mapping[str, Any]] | Missing:
        """The presets ``presets(namespace)`` would return, or MISSING."""

    def peek_kubevirt(self) -> Mapping[str, Any] | Missing | None:
        """The CR ``kubevirt()`` would return, or MISSING."""
