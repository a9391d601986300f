"""Rendered responses, kept under everything that determines them, so a warm request renders nothing.

A key names the request: method and path (group, version, namespace, VM name), the flags, the media
type, and the VM (GET: the instance the source holds, or uid and resourceVersion of a VM read fresh
from the API server) or the body (PUT: format and the bytes themselves, counted in the entry's size).
An entry also records every object the rendering read - each ref with the instance found or None, the preset lists, the KubeVirt
CR - and is served only while the source's caches still hold those very instances
(:class:`~apiserver.sources.base.Peekable`: a changed object is always a new instance). Invalidation
is implicit: a changed object fails the check and the request renders again. Entries pin the objects
they depend on, so an ``id()`` in a key cannot be reused while the entry lives.

Bounded by count and by bytes, least recently used out first.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from multidict import CIMultiDict

from apiserver.render import ExpandError
from apiserver.render.objects import ObjectRef
from apiserver.sources.access import Read
from apiserver.sources.base import Peekable
from apiserver.sources.gather import Rendered

# Per-entry bookkeeping beyond the body (key, tuples, the dataclass), roughly.
_OVERHEAD = 512


@dataclass(slots=True)
class Entry:
    """One cached answer: the encoded 200 (body, ETag, Warning headers) or the rendering error, and
    the reviews a caller must pass to be given it (``reviews``: those its first caller passed, in
    order; a rendering for another caller would make the very same, as it reads the same objects)."""

    body: bytes
    etag: str
    warnings: tuple[tuple[str, str], ...]
    error: ExpandError | None
    reviews: tuple[Read, ...]
    # What the rendering read, compared by identity with what the source holds now.
    objects: tuple[tuple[ObjectRef, Mapping[str, Any] | None], ...]
    preset_lists: tuple[tuple[str, Sequence[Mapping[str, Any]]], ...]
    kubevirt: Mapping[str, Any] | None
    pinned: object  # the VM instance whose id() is in the key, or None
    size: int
    # The 200's headers, built on first use and copied into each response (routes.py).
    headers: CIMultiDict[str] | None = None


def _same_list(a: Sequence[Any] | object, b: Sequence[Any]) -> bool:
    if a is b:
        return True
    if not isinstance(a, Sequence) or len(a) != len(b):
        return False
    return all(x is y for x, y in zip(a, b, strict=True))


def is_current(entry: Entry, source: Peekable) -> bool:
    """Whether the source still holds exactly the objects the entry was rendered from."""
    peek = source.peek
    for ref, obj in entry.objects:
        if peek(ref) is not obj:
            return False
    for namespace, items in entry.preset_lists:
        if not _same_list(source.peek_presets(namespace), items):
            return False
    return source.peek_kubevirt() is entry.kubevirt


def vm_token(vm: Mapping[str, Any], *, held: bool) -> Hashable | None:
    """What identifies the VM's content in a key, or None when nothing does.

    ``held``: the instance is the one the source keeps (peeked), so its identity is its version. A VM
    read fresh from the API server is named by uid and resourceVersion instead.
    """
    if held:
        return ("id", id(vm))
    meta = vm.get("metadata")
    if isinstance(meta, Mapping):
        uid, version = meta.get("uid"), meta.get("resourceVersion")
        if isinstance(uid, str) and uid and isinstance(version, str) and version:
            return ("rv", uid, version)
    return None


class ResponseCache:
    """LRU of :class:`Entry` by key, bounded by ``max_entries`` and ``max_bytes``.

    What it saves (hack/benchmarks/switches.py, response-cache: server CPU per request without it, against
    all on): warm GET expand-spec 3.2x and PUT expand-vm-spec 3.3x on the folder source, PUT 2.7x on the
    cluster source (its GETs are answered from the rendered store either way)."""

    def __init__(self, max_entries: int = 4096, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, Entry] = OrderedDict()
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable, source: Peekable) -> Entry | None:
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        if not is_current(entry, source):
            self._drop(key)
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry

    def put(
        self,
        key: Hashable,
        source: Peekable,
        rendered: Rendered,
        *,
        body: bytes = b"",
        etag: str = "",
        warnings: tuple[tuple[str, str], ...] = (),
        pinned: object = None,
        key_size: int = 0,
    ) -> Entry | None:
        """Keep an answer, unless the source could not confirm it later (something read bypassed its
        caches, so every check would fail) or it is too big. ``key_size``: bytes the key holds (a PUT
        body), counted with the entry."""
        entry = Entry(
            body=body,
            etag=etag,
            warnings=warnings,
            error=rendered.error,
            reviews=rendered.reviews,
            objects=tuple(rendered.objects.items()),
            preset_lists=tuple(rendered.preset_lists.items()),
            kubevirt=rendered.kubevirt,
            pinned=pinned,
            size=len(body) + key_size + _OVERHEAD,
        )
        if entry.size > self.max_bytes // 8 or not is_current(entry, source):
            return None
        if key in self._entries:
            self._drop(key)
        self._entries[key] = entry
        self.bytes += entry.size
        while len(self._entries) > self.max_entries or self.bytes > self.max_bytes:
            self._drop(next(iter(self._entries)))
        return entry

    def _drop(self, key: Hashable) -> None:
        entry = self._entries.pop(key)
        self.bytes -= entry.size

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0
