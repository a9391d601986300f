"""Drive the pure renderer over a source: answer from its caches synchronously where it can, fetch the
rest asynchronously, then render again.

A source that implements :class:`~apiserver.sources.base.Peekable` answers every cached object without
an await, so a warm request renders in one pass; only what its caches do not hold costs a
``LookupPending`` round trip. The objects each render read are returned, so a caller can tell later
whether a rendering is still current (:mod:`apiserver.http.endpoints.respcache`).

With an :class:`~apiserver.sources.access.AccessGate` (a caller is known), nothing reaches the renderer
that the tenancy model does not let the caller see: an object that needs a review takes the
asynchronous way even when cached, and the reviews made are returned in order, so that a cached
rendering can be given to another caller only after the same reviews for them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from apiserver.render import ExpandError, ExpandResult, LookupPending, ObjectRef, expand
from apiserver.render.objects import ObjectLookup
from apiserver.sources.access import AccessGate, Read, presets_read, read_of
from apiserver.sources.base import MISSING, Peekable, Source

# A VM references at most two objects, each possibly through a revision and then the live object,
# plus the presets of its namespace: a handful of rounds. The bound only guards against a bug.
_MAX_ROUNDS = 16
T = TypeVar("T")


class _Fetched:
    """An ObjectLookup over what has been read so far for one request (peeked or fetched), and what
    the caller has been reviewed for (``reviews``, in order; nothing without a gate)."""

    __slots__ = ("_gate", "_peekable", "objects", "preset_lists", "reviews")

    def __init__(self, peekable: Peekable | None, gate: AccessGate | None) -> None:
        self.objects: dict[ObjectRef, Mapping[str, Any] | None] = {}
        self.preset_lists: dict[str, Sequence[Mapping[str, Any]]] = {}
        self.reviews: list[Read] = []
        self._peekable = peekable
        self._gate = gate

    def get(self, ref: ObjectRef) -> Mapping[str, Any] | None:
        try:
            return self.objects[ref]
        except KeyError:
            pass
        if self._peekable is not None:
            obj = self._peekable.peek(ref)
            if obj is not MISSING:
                gate = self._gate
                # Only what needs no review now is used at once; the rest is reviewed on the way back.
                if gate is None or not gate.needs_review(ref, obj):  # type: ignore[arg-type]
                    self.objects[ref] = obj  # type: ignore[assignment]
                    return obj  # type: ignore[return-value]
        raise LookupPending(ref)

    def presets(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        try:
            return self.preset_lists[namespace]
        except KeyError:
            pass
        if self._peekable is not None and self._gate is None:
            found = self._peekable.peek_presets(namespace)
            if found is not MISSING:
                self.preset_lists[namespace] = found  # type: ignore[assignment]
                return found  # type: ignore[return-value]
        raise LookupPending(presets_namespace=namespace)

    async def review(self, read: Read) -> None:
        """Ask the gate once per read and request (raises AccessRefused)."""
        if self._gate is not None and read not in self.reviews:
            await self._gate.review(read)
            self.reviews.append(read)

    async def fetch(self, source: Source, ref: ObjectRef) -> None:
        """Read ``ref`` for the renderer, with the reviews the gate asks for around the read."""
        gate = self._gate
        if gate is not None and gate.review_first(ref):
            await self.review(read_of(ref))
        found = await source.get(ref)
        if gate is not None and gate.needs_review(ref, found):
            await self.review(read_of(ref))
        self.objects[ref] = found

    async def fetch_presets(self, source: Source, namespace: str) -> None:
        if self._gate is not None:
            await self.review(presets_read(namespace))
        found: Sequence[Mapping[str, Any]] | object = MISSING
        if self._peekable is not None:
            found = self._peekable.peek_presets(namespace)
        if found is MISSING:
            found = await source.presets(namespace)
        self.preset_lists[namespace] = found  # type: ignore[assignment]


@dataclass(slots=True)
class Rendered:
    """One rendering (a result, or the user's error) and everything it read: each ref with the object
    found (None: absent), the preset list of each namespace asked for, and the KubeVirt CR."""

    result: ExpandResult | None
    error: ExpandError | None
    objects: dict[ObjectRef, Mapping[str, Any] | None]
    preset_lists: dict[str, Sequence[Mapping[str, Any]]]
    kubevirt: Mapping[str, Any] | None
    # The reviews the caller passed, in the order made (what another caller must pass for this answer).
    reviews: tuple[Read, ...] = ()


# Whether a source's class implements Peekable, by class: ``isinstance`` against a runtime-checkable
# protocol checks every member each time. Without it a warm GET costs 1.17x the server CPU on the folder
# source, 1.08x on the cluster source; PUT 0.84-0.93x, within the noise (hack/benchmarks/switches.py,
# peekable-memo).
_PEEKABLE: dict[type, bool] = {}


def peekable(source: Source) -> Peekable | None:
    """``source`` when it is :class:`Peekable`, else None; decided once per class."""
    cls = type(source)
    known = _PEEKABLE.get(cls)
    if known is None:
        known = _PEEKABLE[cls] = isinstance(source, Peekable)
    return source if known else None  # type: ignore[return-value]


async def kubevirt_of(source: Source) -> Mapping[str, Any] | None:
    """The KubeVirt CR, from the source's cache when it can answer synchronously."""
    peek = peekable(source)
    if peek is not None:
        cr = peek.peek_kubevirt()
        if cr is not MISSING:
            return cr  # type: ignore[return-value]
    return await source.kubevirt()


async def render_and_record(
    source: Source,
    vm: Mapping[str, Any],
    *,
    presets: bool = False,
    validate: bool = False,
    exact_names: bool = False,
    kubevirt: Mapping[str, Any] | object | None = MISSING,
    run: Callable[[Callable[[], ExpandResult]], Awaitable[ExpandResult]] | None = None,
    gate: AccessGate | None = None,
) -> Rendered:
    """Expand ``vm`` with the objects ``source`` holds; return the result and what it read.

    ``kubevirt`` is the CR when the caller already read it. ``run`` runs each rendering pass (a
    worker thread for a large VM; by default here, synchronously). ``gate``: the caller's, when one is
    known (see :mod:`apiserver.sources.access`). A rendering failure (ExpandError, the user's problem)
    is returned in ``error``; SourceUnavailable (the store's) and AccessRefused (the caller may not see
    what the rendering needs) are raised.
    """
    fetched = _Fetched(peekable(source), gate)
    cr: Mapping[str, Any] | None = (
        await kubevirt_of(source) if kubevirt is MISSING else kubevirt  # type: ignore[assignment]
    )
    for _ in range(_MAX_ROUNDS):
        try:
            if run is None:
                result = expand(
                    vm, fetched, kubevirt=cr, presets=presets, validate=validate, exact_names=exact_names
                )
            else:
                result = await run(
                    partial(
                        expand,
                        vm,
                        fetched,
                        kubevirt=cr,
                        presets=presets,
                        validate=validate,
                        exact_names=exact_names,
                    )
                )
        except LookupPending as pending:
            if pending.ref is not None:
                await fetched.fetch(source, pending.ref)
            elif pending.presets_namespace is not None:
                await fetched.fetch_presets(source, pending.presets_namespace)
            continue
        except ExpandError as err:
            return Rendered(None, err, fetched.objects, fetched.preset_lists, cr, tuple(fetched.reviews))
        return Rendered(result, None, fetched.objects, fetched.preset_lists, cr, tuple(fetched.reviews))
    raise RuntimeError("the renderer kept asking for objects")  # pragma: no cover - a bug


async def render_from_source(
    source: Source,
    vm: Mapping[str, Any],
    *,
    presets: bool = False,
    validate: bool = False,
    exact_names: bool = False,
    gate: AccessGate | None = None,
) -> tuple[ExpandResult, list[ObjectRef]]:
    """Expand ``vm`` with the objects ``source`` holds; also return the refs that were read.

    Raises ExpandError (the user's problem), SourceUnavailable (the store's), AccessRefused (with a
    ``gate``: the caller's) or LookupPending never.
    """
    rendered = await render_and_record(
        source, vm, presets=presets, validate=validate, exact_names=exact_names, gate=gate
    )
    if rendered.error is not None:
        raise rendered.error
    assert rendered.result is not None
    return rendered.result, list(rendered.objects)


async def evaluate_with_source(
    source: Source,
    work: Callable[[ObjectLookup, Mapping[str, Any] | None], T],
    *,
    gate: AccessGate | None = None,
    run: Callable[[Callable[[], T]], Awaitable[T]] | None = None,
) -> T:
    """Run the pure ``work`` (given a lookup and the KubeVirt CR) over ``source``: fetch what it asks for
    (``LookupPending``) through the caller's ``gate``, as :func:`render_and_record` does, and run it again
    (each pass through ``run`` when given, as there). Raises what ``work`` raises, SourceUnavailable and
    AccessRefused."""
    value, _ = await evaluate_and_record(source, work, gate=gate, run=run)
    return value


async def evaluate_and_record(
    source: Source,
    work: Callable[[ObjectLookup, Mapping[str, Any] | None], T],
    *,
    gate: AccessGate | None = None,
    kubevirt: Mapping[str, Any] | object | None = MISSING,
    run: Callable[[Callable[[], T]], Awaitable[T]] | None = None,
) -> tuple[T, dict[ObjectRef, Mapping[str, Any] | None]]:
    """:func:`evaluate_with_source`, also returning what ``work`` read (each ref with the object found;
    None: absent). ``kubevirt``: the CR when the caller already read it."""
    fetched = _Fetched(peekable(source), gate)
    cr: Mapping[str, Any] | None = (
        await kubevirt_of(source) if kubevirt is MISSING else kubevirt  # type: ignore[assignment]
    )
    for _ in range(_MAX_ROUNDS):
        try:
            if run is None:
                return work(fetched, cr), fetched.objects
            return await run(partial(work, fetched, cr)), fetched.objects
        except LookupPending as pending:
            if pending.ref is not None:
                await fetched.fetch(source, pending.ref)
            elif pending.presets_namespace is not None:
                await fetched.fetch_presets(source, pending.presets_namespace)
    raise RuntimeError("the engine kept asking for objects")  # pragma: no cover - a bug
