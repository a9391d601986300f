"""The one store of rendered VMs: kept current as the watches deliver changes, read by GET expand-spec,
list and watch alike.

How it stays current. Every watch cache of the cluster source tells the store of each change (a VM,
an instancetype, a preference, a preset list, the KubeVirt CR) with kube-apiserver's resourceVersion.
Changes queue up in the order they arrived and one task works through them: a VM change re-renders that
VM; any other object re-renders exactly the VMs whose last rendering read it, found in the dependency
index (object -> VMs) that every rendering updates (with what the VM's drift read: the live object of a
matcher pinned to a revision, so an edit of it changes the item though not the rendering); the KubeVirt CR re-renders the VMs with an
instancetype or preference, and only when the configuration rendering reads from it changed. A new
rendering that answers the same as the old one is dropped, so each change of what a VM renders to is
one event, and nothing else is.

Versions. The store's state is named by the vector of the watched collections' resourceVersions
(:mod:`.versions`), published once a change has been worked through. Each event in the log carries the
change that caused it; a watch from a version sends the events whose cause that version does not
include. A replica can do so for a version another replica gave out as long as the events it has of
what the version includes come before those it does not (the same changes, in an order that does not
contradict it); otherwise, as when the version is older than the log, it answers 410 Expired and the
client lists again, as with kube-apiserver. The events of one change that touches many VMs carry the
version from before the change, but the last, which carries the version after it: a watch cut off in
the middle resumes before the change and gets its events again (the same content), never skips them.

Memory. An item is its encoded JSON (the rendered VM inside) and a few references; the VM it was
rendered from is the cache's own instance. Nothing is encoded per request.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, overload

from apiserver.render import ExpandError
from apiserver.render import objects as o
from apiserver.render.instancetype.find import INSTANCETYPE_FAMILY, PREFERENCE_FAMILY, named_revision
from apiserver.render.objects import ref_of
from apiserver.render.templateservice.config import launcher_config
from apiserver.render.virtconfig import cluster_config
from apiserver.render.vmcontroller.drift import VMDrift, drift_of
from apiserver.runtime.heap import return_freed
from apiserver.sources.access import Reviews
from apiserver.sources.base import Source, SourceUnavailable
from apiserver.sources.gather import evaluate_and_record, render_and_record
from apiserver.sources.rendered.items import (
    Item,
    Key,
    make_item,
    may_be_redacted,
    same_content,
    same_redacted,
)
from apiserver.sources.rendered.versions import COMPONENTS, INDEX, InvalidVersion, Vector
from apiserver.sources.scope import Scope

log = logging.getLogger("apiserver.sources.rendered")

JSONDict = dict[str, Any]
Change = tuple[JSONDict | None, JSONDict | None]

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
# How long a run of rendering may hold the loop before it lets requests in.
_SLICE_SECONDS = 0.005
# The kinds whose objects a rendering may depend on by ref (flavors count as the instancetype kinds).
_REF_KINDS = frozenset(
    {o.INSTANCETYPE, o.CLUSTER_INSTANCETYPE, o.PREFERENCE, o.CLUSTER_PREFERENCE, o.FLAVOR, o.CLUSTER_FLAVOR}
)
_PRESETS = "presets"
# From this many keys a batch's keys are put in order from the sorted keys held (see _in_key_order).
_MANY_KEYS = 1000
# References dropped per turn of the loop when a batch's leftovers are freed (a few ms of work).
_RELEASE_STEP = 250


class Gone(Exception):
    """The version asked for is older than what this replica can answer from (410 Expired)."""


class TooNew(Exception):
    """The version asked for is ahead of this replica, and it did not catch up in time."""


@dataclass(slots=True, eq=False)
class Entry:
    """One event of the log: ``item`` is the state after it (the last one's, for DELETED)."""

    seq: int
    type: str
    item: Item
    version: str
    cause: tuple[int, int]  # (component index, resourceVersion) of the change behind it
    before_labels: Mapping[str, str] | None  # the item's labels before (None: it did not exist)
    before_fields: Mapping[str, str] | None = None  # its selectable fields before (None: it did not exist)
    # For a MODIFIED event: what a caller had to pass to be shown the item before it whole, and whether
    # its redacted form is the same as before (a caller shown it redacted both times gets no event).
    before_reviews: Reviews | None = None
    redacted_same: bool = False

    @property
    def body(self) -> bytes:
        """The event's object, under ``version``.

        Made when sent, not kept: all events of a change but the last carry the version from before
        it, so a kept copy per event held a second copy of every item a relist changed for as long as
        the log keeps them (up to 200,000 events). Heap allocated by a relist of 10,000 VMs, all
        changed, and alive after it (tracemalloc): 50.8 -> 36.5 MiB. A watcher pays one
        ``bytes.replace`` per event instead.
        """
        item = self.item
        return item.body if self.version == item.version else item.with_version(self.version)


@dataclass(slots=True)
class Snapshot:
    """Items in key order at one published version (pages of a list are cut from one)."""

    version: str
    keys: list[Key]
    items: list[Item]
    made: float = field(default_factory=time.monotonic)

    def range(self, namespace: str | None, after: Key | None = None) -> tuple[int, int]:
        """Index range of the items of ``namespace`` (all: None), starting after ``after``."""
        if namespace is None:
            lo, hi = 0, len(self.keys)
        else:
            lo = bisect.bisect_left(self.keys, (namespace, ""))
            hi = bisect.bisect_left(self.keys, (namespace + "\0", ""))
        if after is not None:
            lo = max(lo, bisect.bisect_right(self.keys, after))
        return lo, hi


def _named(scope: Scope) -> Key | None:
    """The one key a scope names (a get), or None when it names a collection."""
    if scope.namespace is None or scope.name is None:
        return None
    return (scope.namespace, scope.name)


class Window(Sequence[Item]):
    """Items of a snapshot in key order, from one index to another: a page is cut from it without a
    copy of the snapshot's list, and without a way to index outside it."""

    __slots__ = ("_hi", "_items", "_lo")

    def __init__(self, items: list[Item], lo: int, hi: int) -> None:
        self._items, self._lo, self._hi = items, lo, max(lo, hi)

    def __len__(self) -> int:
        return self._hi - self._lo

    def __iter__(self) -> Iterator[Item]:
        return itertools.islice(self._items, self._lo, self._hi)

    @overload
    def __getitem__(self, index: int) -> Item: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Item]: ...
    def __getitem__(self, index: int | slice) -> Item | Sequence[Item]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._items[self._lo + index]


EMPTY = Window([], 0, 0)


class ScopedSnapshot:
    """A snapshot as one request's scope sees it: windows of the items it covers, never others."""

    __slots__ = ("_scope", "_snap")

    def __init__(self, snap: Snapshot, scope: Scope) -> None:
        self._snap = snap
        self._scope = scope

    @property
    def version(self) -> str:
        return self._snap.version

    def window(
        self, namespace: str | None = None, after: Key | None = None, name: str | None = None
    ) -> Window:
        """The items of ``namespace`` (a field selector's; None: the scope's), after ``after``, and
        only ``name`` when given, inside the scope: empty when the namespace is not the scope's (a
        field selector naming another namespace selects nothing, as with kube-apiserver)."""
        narrowed = self._scope.narrowed(namespace)
        if narrowed is False:
            return EMPTY
        snap = self._snap
        where = narrowed if isinstance(narrowed, str) else None
        lo, hi = snap.range(where, after)
        if name is not None and where is not None:
            at = bisect.bisect_left(snap.keys, (where, name))
            lo, hi = max(lo, at), min(hi, at + 1)
            if at >= len(snap.keys) or snap.keys[at] != (where, name):
                return EMPTY
        if self._scope.name is not None:  # a get's scope: the one item, whatever was asked
            return EMPTY
        return Window(snap.items, lo, hi)


@dataclass(slots=True)
class _Batch:
    kind: str
    version: int | None
    changes: Sequence[Change]
    reset: bool = False
    progress_only: bool = False


def _config_key(cr: Mapping[str, Any] | None) -> Any:
    """What a rendering reads of the KubeVirt CR; two CRs with equal keys render every VM alike (the
    item's virt-launcher pod included: ratios, support containers, feature gates)."""
    try:
        return (cluster_config(cr), launcher_config(cr))
    except ExpandError as err:
        return ("error", err.message)


def _uses_config(vm: Mapping[str, Any]) -> bool:
    """Whether the VM's item changes with the KubeVirt CR: every item does, through its pod's resources."""
    return True


class RenderedStore:
    """Renderings of every VM of the source's VM cache, their dependency index and their event log."""

    def __init__(
        self,
        source: Source,
        *,
        log_size: int = 200_000,
        snapshots: int = 8,
        snapshot_seconds: float = 300.0,
    ) -> None:
        self.source = source
        self.log_size = log_size
        self.max_snapshots = snapshots
        self.snapshot_seconds = snapshot_seconds
        self._items: dict[Key, Item] = {}
        self._keys: list[Key] = []  # sorted
        self._deps: dict[Any, set[Key]] = {}  # ObjectRef or ("presets", ns) -> VMs that read it
        self._item_deps: dict[Key, tuple[Any, ...]] = {}
        self._config_users: set[Key] = set()
        self._config: Any = None
        self._progress = [0] * len(COMPONENTS)  # what each cache has told us it has seen
        self.version = Vector.zero()  # published: every change up to it is worked through
        self.version_text = str(self.version)
        self._events: deque[Entry] = deque()
        self._seq = 0
        self._dropped = [0] * len(COMPONENTS)  # causes no longer in the log (componentwise max)
        self._queue: deque[_Batch] = deque()
        self._wake = asyncio.Event()
        self._waiters: list[asyncio.Future[None]] = []
        self._snapshots: OrderedDict[str, Snapshot] = OrderedDict()
        self.ready = asyncio.Event()
        self.renders = 0
        self.unchanged = 0
        self.resets = 0
        self._kinds_ready: Callable[[], Awaitable[None]] = _nothing
        self._busy = False

    # ------------------------------------------------------------------ feeding

    def attach(self, caches: Mapping[str, Any], ready: Callable[[], Awaitable[None]]) -> None:
        """Listen to the source's watch caches (by kind); ``ready``: returns once every one has synced
        or is known not to be installed."""
        for cache in caches.values():
            cache.listeners.append(self)
        self._kinds_ready = ready

    def changed(
        self, kind: str, changes: Sequence[Change], version: int | None, *, reset: bool = False
    ) -> None:
        if kind not in INDEX:
            return
        self._queue.append(_Batch(kind, version, list(changes), reset=reset))
        self._wake.set()

    def progressed(self, kind: str, version: int) -> None:
        if kind not in INDEX:
            return
        self._queue.append(_Batch(kind, version, (), progress_only=True))
        self._wake.set()

    @property
    def pending(self) -> bool:
        """Changes the caches hold that the items do not show yet."""
        return self._busy or bool(self._queue) or not self.ready.is_set()

    # ------------------------------------------------------------------ the worker

    async def run(self) -> None:
        """Wait for the caches, render every VM, then follow the changes; until cancelled."""
        await self._kinds_ready()
        while True:
            try:
                await self._build()
                break
            except SourceUnavailable as err:
                log.warning("collection: %s; building again", err)
                await asyncio.sleep(1.0)
        while True:
            while self._queue:
                batch = self._queue.popleft()
                self._busy = True
                try:
                    await self._apply(batch)
                except SourceUnavailable as err:
                    # A rendering needed a read the API server did not answer: try the batch again.
                    log.warning("collection: %s; retrying", err)
                    self._queue.appendleft(batch)
                    await asyncio.sleep(1.0)
                finally:
                    self._busy = False
            self._wake.clear()
            await self._wake.wait()

    async def _build(self) -> None:
        started = time.monotonic()
        vms = self._vm_store()
        # Changes queued while the caches synced are part of what is built now.
        for batch in self._queue:
            if batch.version is not None:
                i = INDEX[batch.kind]
                self._progress[i] = max(self._progress[i], batch.version)
        self._queue.clear()
        self._config = _config_key(await self._kubevirt())
        budget = time.monotonic() + _SLICE_SECONDS
        version = str(Vector(self._progress))
        for key in sorted(vms):
            item = await self._render(key, vms[key], version)
            self._store(key, item)
            if time.monotonic() > budget:
                budget = await _pause()
        self._publish(Vector(self._progress))
        self._dropped = list(self.version)
        self.ready.set()
        log.info(
            "collection ready: %d VMs rendered in %.1fs at resourceVersion %s",
            len(self._items),
            time.monotonic() - started,
            self.version_text,
        )

    def _vm_store(self) -> Mapping[Key, JSONDict]:
        caches = getattr(self.source, "caches", {})
        cache = caches.get(o.VIRTUAL_MACHINE)
        return cache.store if cache is not None else {}

    async def _kubevirt(self) -> Mapping[str, Any] | None:
        return await self.source.kubevirt()

    async def _apply(self, batch: _Batch) -> None:
        i = INDEX[batch.kind]
        if batch.version is not None:
            self._progress[i] = max(self._progress[i], batch.version)
        if batch.progress_only:
            if not self._queue or all(b.progress_only for b in self._queue):
                self._publish(Vector(self._progress))
            return
        cause = (i, batch.version if batch.version is not None else self._progress[i])
        before = self.version_text
        after = str(Vector(self._progress))
        keys = await self._affected(batch)
        # Render, compare and write the events first (in slices of the loop's time), then commit without
        # an await: a batch cut short by an unreachable API server is rendered again whole, and no list
        # sees half of it committed. Only this task changes the items and the log, so what a rendering is
        # compared with, and the log's next sequence number, are still so at the commit, which is then a
        # few dictionary writes an item. A relist of 30,000 VMs, every one changed, held the loop for
        # 330-370 ms at a time (hack/benchmarks/collection_memory.py --sizes 30000 --relist), mostly sorting its keys,
        # comparing, making the events and freeing what the batch replaced in one step; 41-75 ms now.
        renders: list[tuple[Key, Item | None, Item | None]] = []  # (key, new, old) where they differ
        unchanged: list[tuple[Item, Item]] = []
        vms = self._vm_store()
        items = self._items
        budget = time.monotonic() + _SLICE_SECONDS
        for key in self._in_key_order(keys):
            vm = vms.get(key)
            item = None if vm is None else await self._render(key, vm, after)
            old = items.get(key)
            if item is not None and old is not None and same_content(old, item):
                unchanged.append((old, item))
            elif item is not None or old is not None:
                renders.append((key, item, old))
            if time.monotonic() > budget:
                budget = await _pause()
        entries: list[Entry] = []
        stored: dict[Key, Item] = {}
        added: list[Key] = []
        dropped: list[Key] = []
        seq = self._seq
        for key, item, old in renders:
            seq += 1
            if item is not None:
                stored[key] = item
                if old is None:
                    added.append(key)
                kind = MODIFIED if old is not None else ADDED
                hidden_only = False
                if old is not None and (may_be_redacted(old) or may_be_redacted(item)):
                    # A redacted item is a fixed point: its version moves only with what redaction shows.
                    hidden_only = same_redacted(old, item)
                    if hidden_only:
                        item.redacted_version = old.shown_redacted_version
                entries.append(
                    Entry(
                        seq,
                        kind,
                        item,
                        before,
                        cause,
                        old.labels if old else None,
                        old.fields if old else None,
                        old.reviews if old else None,
                        hidden_only,
                    )
                )
            elif old is not None:
                dropped.append(key)
                entries.append(Entry(seq, DELETED, old, before, cause, old.labels, old.fields))
            if time.monotonic() > budget:
                budget = await _pause()
        if entries:
            entries[-1].version = after  # the last event of a change carries the version after it
        # The commit.
        self.unchanged += len(unchanged)
        for old, item in unchanged:
            old.vm = item.vm  # the same answer: keep the item and its version, follow the VM instance
        self._items.update(stored)
        for key in added:
            bisect.insort(self._keys, key)
        for key in dropped:
            self._drop(key)
        self._extend_log(entries)
        if batch.reset and batch.changes:
            self._reset_log()
        self._publish(Vector(self._progress))
        # What the batch replaced (the old items, the VMs they were rendered from) is freed after the
        # commit, a slice at a time: freed at once, those of 30,000 VMs held the loop for ~150 ms.
        changes = batch.changes
        many = len(renders) + len(unchanged) >= _MANY_KEYS
        await _release(renders, unchanged, changes if isinstance(changes, list) else [])
        if many:
            return_freed()

    def _in_key_order(self, keys: set[Key]) -> list[Key]:
        """``sorted(keys)``, in a few milliseconds when they are many: sorting 30,000 key tuples afresh
        held the loop for ~50 ms, while the keys of the VMs held are kept sorted already (a sort of two
        sorted runs is one merge)."""
        if len(keys) < _MANY_KEYS:
            return sorted(keys)
        held = [key for key in self._keys if key in keys]
        if len(held) == len(keys):
            return held
        return sorted(held + sorted(keys.difference(held)))

    async def _affected(self, batch: _Batch) -> set[Key]:
        keys: set[Key] = set()
        if batch.kind == o.VIRTUAL_MACHINE:
            budget = time.monotonic() + _SLICE_SECONDS
            for old, new in batch.changes:
                obj = new if new is not None else old
                if obj is not None:
                    meta = obj.get("metadata") or {}
                    keys.add((str(meta.get("namespace") or ""), str(meta.get("name") or "")))
                if time.monotonic() > budget:
                    budget = await _pause()
            return keys
        if batch.kind == o.KUBEVIRT:
            config = _config_key(self._current_kubevirt())
            if config != self._config:
                self._config = config
                keys.update(self._config_users)
            return keys
        for old, new in batch.changes:
            for obj in (old, new):
                if obj is None:
                    continue
                if batch.kind == o.PRESET:
                    ns = str((obj.get("metadata") or {}).get("namespace") or "")
                    keys.update(self._deps.get((_PRESETS, ns), ()))
                    continue
                ref = ref_of(obj)
                if ref is not None:
                    keys.update(self._deps.get(ref, ()))
        return keys

    def _current_kubevirt(self) -> Mapping[str, Any] | None:
        peek = getattr(self.source, "peek_kubevirt", None)
        if peek is not None:
            found = peek()
            if isinstance(found, Mapping) or found is None:
                return found
        return None

    async def _render(self, key: Key, vm: Mapping[str, Any], version: str) -> Item:
        self.renders += 1
        stored = vm
        if "apiVersion" not in vm or "kind" not in vm:
            # virt-api's client puts TypeMeta back on what it reads; so does GET expand-spec.
            vm = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", **vm}
        rendered = await render_and_record(self.source, vm, exact_names=True)
        result = rendered.result
        drift, drift_read = await self._drift(key, vm, result.vm if result is not None else None)
        deps: list[Any] = [ref for ref in rendered.objects if ref.kind in _REF_KINDS]
        deps += [ref for ref in drift_read if ref.kind in _REF_KINDS and ref not in rendered.objects]
        deps += [(_PRESETS, ns) for ns in rendered.preset_lists]
        self._index(key, tuple(deps), _uses_config(vm))
        return make_item(
            key,
            stored,
            result.vm if result is not None else None,
            rendered.error,
            result.warnings if result is not None else (),
            rendered.objects,
            version,
            self._current_kubevirt(),
            drift,
            drift_read,
        )

    async def _drift(
        self, key: Key, vm: Mapping[str, Any], rendered: Mapping[str, Any] | None
    ) -> tuple[VMDrift | None, Mapping[Any, Any]]:
        """The VM's drift (:mod:`apiserver.render.vmcontroller.drift`) and what it read: the live object of
        each matcher pinned to a revision, which the VM now depends on too (an edit of it changes the
        item though not the rendering). Nothing for a VM with neither matcher."""
        spec = vm.get("spec")
        if not isinstance(spec, Mapping) or (
            spec.get("instancetype") is None and spec.get("preference") is None
        ):
            return None, {}
        try:
            if not _captures(vm):  # no revision: nothing to read or compare (NoRevision, Inferred)
                return drift_of(vm, rendered, _NO_READS, None), {}
            return await evaluate_and_record(self.source, partial(drift_of, vm, rendered))
        except SourceUnavailable:
            raise
        except Exception:  # a bug, not the VM's: the item goes without its drift, the store keeps going
            log.exception("collection: the drift of %s/%s could not be computed", *key)
            return None, {}

    def _index(self, key: Key, deps: tuple[Any, ...], uses_config: bool) -> None:
        old = self._item_deps.get(key, ())
        if old != deps:
            for dep in old:
                users = self._deps.get(dep)
                if users is not None:
                    users.discard(key)
                    if not users:
                        del self._deps[dep]
            for dep in deps:
                self._deps.setdefault(dep, set()).add(key)
            if deps:
                self._item_deps[key] = deps
            else:
                self._item_deps.pop(key, None)
        if uses_config:
            self._config_users.add(key)
        else:
            self._config_users.discard(key)

    def _store(self, key: Key, item: Item) -> None:
        if key not in self._items:
            bisect.insort(self._keys, key)
        self._items[key] = item

    def _drop(self, key: Key) -> None:
        del self._items[key]
        i = bisect.bisect_left(self._keys, key)
        if i < len(self._keys) and self._keys[i] == key:
            del self._keys[i]
        self._index(key, (), False)

    def _extend_log(self, entries: list[Entry]) -> None:
        """Add events numbered from the next sequence number on; the oldest go past ``log_size``."""
        if not entries:
            return
        self._events.extend(entries)
        self._seq = entries[-1].seq
        while len(self._events) > self.log_size:
            dropped = self._events.popleft()
            i, rv = dropped.cause
            self._dropped[i] = max(self._dropped[i], rv)

    def _reset_log(self) -> None:
        """History before now cannot be replayed (a kind went away): every resume lists again."""
        self.resets += 1
        self._events.clear()
        # A version from before now lacks the state the reset made: it cannot be resumed from.
        self._dropped = [max(a, b) for a, b in zip(self._progress, self._dropped, strict=True)]

    def _publish(self, version: Vector) -> None:
        if version != self.version:
            self.version = version
            self.version_text = str(version)
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    # ------------------------------------------------------------------ reads
    #
    # Every read of items takes the request's Scope (apiserver.sources.scope) and returns nothing it
    # does not cover: there is no other way to read them. Versions, waits and counts are not tenant data.

    def get(self, scope: Scope) -> Item | None:
        """The item the scope names (a get of one rendered VM)."""
        key = _named(scope)
        return None if key is None else self._items.get(key)

    def current(self, scope: Scope, vm: Mapping[str, Any]) -> Item | None:
        """The item for GET expand-spec of the VM the scope names when it is exactly what rendering
        ``vm`` now would give: the very VM instance the cache holds, and no change waiting to be
        worked through."""
        if self.pending:
            return None
        key = _named(scope)
        item = None if key is None else self._items.get(key)
        if item is None or item.vm is not vm:
            return None
        return item

    def snapshot(self, scope: Scope) -> ScopedSnapshot:
        """The items at the published version, in key order (shared by every page cut from it), as
        the scope may see them."""
        now = time.monotonic()
        found = self._snapshots.get(self.version_text)
        if found is not None and self._fresh(found):
            self._snapshots.move_to_end(self.version_text)
            return ScopedSnapshot(found, scope)
        snap = Snapshot(self.version_text, list(self._keys), [self._items[k] for k in self._keys], now)
        self._snapshots[self.version_text] = snap
        while len(self._snapshots) > self.max_snapshots:
            self._snapshots.popitem(last=False)
        return ScopedSnapshot(snap, scope)

    def _fresh(self, snap: Snapshot) -> bool:
        # While a change is worked through, items change under the same (earlier) version: a list
        # then takes them as they are now.
        return not self.pending

    def continued(self, scope: Scope, version: str) -> ScopedSnapshot | None:
        """The snapshot a continue token names, while it is kept, as the scope may see it."""
        snap = self._snapshots.get(version)
        if snap is None or time.monotonic() - snap.made > self.snapshot_seconds:
            return None
        return ScopedSnapshot(snap, scope)

    def keep_snapshot(self, snap: ScopedSnapshot) -> None:
        """Keep the snapshot a continue token will name (one already made for the version is kept)."""
        whole = snap._snap  # noqa: SLF001 - the store's own snapshot, back from its scoped wrapper
        self._snapshots.setdefault(whole.version, whole)

    @property
    def size(self) -> int:
        """How many VMs are rendered (for /metrics)."""
        return len(self._items)

    async def wait_for(self, version: Vector, seconds: float) -> None:
        """Return once the published version covers ``version``; :class:`TooNew` after ``seconds``."""
        deadline = time.monotonic() + seconds
        while not self.version.covers(version):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TooNew(str(version))
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await asyncio.wait_for(fut, left)
            except TimeoutError:
                raise TooNew(str(version)) from None

    def resume_point(self, version: Vector) -> int:
        """The sequence number after which the events a watch from ``version`` must send start.

        :class:`Gone` when this replica cannot tell: the version lacks changes no longer in the log,
        or its events of what the version includes are not all before those it does not include.
        """
        if not all(v >= d for v, d in zip(version, self._dropped, strict=True)):
            raise Gone(str(version))
        start = None
        for entry in self._events:
            i, rv = entry.cause
            included = version[i] >= rv
            if start is None:
                if not included:
                    start = entry.seq - 1
            elif included:
                raise Gone(str(version))
        return self._seq if start is None else start

    def entries_after(self, scope: Scope, seq: int) -> tuple[int, list[Entry]]:
        """The sequence number of the log's last event and its events after ``seq`` that the scope
        covers; :class:`Gone` when some of them are no longer kept."""
        if not self._events:
            if seq < self._seq:
                raise Gone(str(seq))
            return self._seq, []
        first = self._events[0].seq
        if seq + 1 < first:
            raise Gone(str(seq))
        start = seq + 1 - first
        if start >= len(self._events):
            return self._seq, []
        covers = scope.covers
        return self._seq, [e for e in _islice(self._events, start) if covers(*e.item.key)]

    @property
    def last_seq(self) -> int:
        return self._seq

    async def next_change(self, seq: int) -> None:
        """Return once the log has an event after ``seq`` or the version moved (for bookmarks)."""
        if self._seq > seq:
            return
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        await fut

    def parse_version(self, text: str) -> Vector:
        return Vector.parse(text)

    def stats(self) -> dict[str, int]:
        return {
            "items": len(self._items),
            "log": len(self._events),
            "renders": self.renders,
            "unchanged": self.unchanged,
            "dependencies": len(self._deps),
        }


class _NoReads:
    """A lookup for a drift that reads nothing (a VM that captured no revision): any read is a bug."""

    def get(self, ref: o.ObjectRef) -> Mapping[str, Any] | None:
        raise RuntimeError(f"the drift of a VM without a revision read {ref}")

    def presets(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        raise RuntimeError("the drift read presets")


_NO_READS = _NoReads()


def _captures(vm: Mapping[str, Any]) -> bool:
    """Whether a matcher of ``vm`` names a revision (``revisionName``, or a status ref's), as the finders
    read it (:func:`~apiserver.render.instancetype.find.named_revision`)."""
    return any(named_revision(family, vm)[0] for family in (INSTANCETYPE_FAMILY, PREFERENCE_FAMILY))


async def _release(*held: list[Any]) -> None:
    """Empty each list a step at a time, letting the loop run in between: what only they held is freed
    by reference counting as it goes, instead of in one cascade when they go out of scope."""
    for values in held:
        while values:
            del values[-_RELEASE_STEP:]
            await asyncio.sleep(0)


async def _pause() -> float:
    """Let the loop run what waits, then give the next slice's deadline."""
    await asyncio.sleep(0)
    return time.monotonic() + _SLICE_SECONDS


async def _nothing() -> None:
    return None


def _islice(entries: deque[Entry], start: int) -> list[Entry]:
    """``entries[start:]`` (a deque has no slices; the newest end is where watchers read)."""
    tail = list(itertools.islice(reversed(entries), len(entries) - start))
    tail.reverse()
    return tail


__all__ = ["Entry", "Gone", "InvalidVersion", "RenderedStore", "Snapshot", "TooNew"]
