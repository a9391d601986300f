"""Drive the pure renderer over an asynchronous source: fetch what it asks for, then render again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from apiserver.render import ExpandResult, LookupPending, ObjectRef, expand
from apiserver.sources.base import Source

# A VM references at most two objects, each possibly through a revision and then the live object,
# plus the presets of its namespace: a handful of rounds. The bound only guards against a bug.
_MAX_ROUNDS = 16


class _Fetched:
    """An ObjectLookup over what has been fetched so far for one request."""

    __slots__ = ("objects", "preset_lists")

    def __init__(self) -> None:
        self.objects: dict[ObjectRef, Mapping[str, Any] | None] = {}
        self.preset_lists: dict[str, Sequence[Mapping[str, Any]]] = {}

    def get(self, ref: ObjectRef) -> Mapping[str, Any] | None:
        try:
            return self.objects[ref]
        except KeyError:
            raise LookupPending(ref) from None

    def presets(self, namespace: str) -> Sequence[Mapping[str, Any]]:
        try:
            return self.preset_lists[namespace]
        except KeyError:
            raise LookupPending(presets_namespace=namespace) from None


async def render_from_source(
    source: Source,
    vm: Mapping[str, Any],
    *,
    presets: bool = False,
    validate: bool = False,
    exact_names: bool = False,
) -> tuple[ExpandResult, list[ObjectRef]]:
    """Expand ``vm`` with the objects ``source`` holds; also return the refs that were read.

    Raises ExpandError (the user's problem), SourceUnavailable (the store's) or LookupPending never.
    """
    fetched = _Fetched()
    kubevirt = await source.kubevirt()
    for _ in range(_MAX_ROUNDS):
        try:
            result = expand(
                vm, fetched, kubevirt=kubevirt, presets=presets, validate=validate, exact_names=exact_names
            )
        except LookupPending as pending:
            if pending.ref is not None:
                fetched.objects[pending.ref] = await source.get(pending.ref)
            elif pending.presets_namespace is not None:
                ns = pending.presets_namespace
                fetched.preset_lists[ns] = await source.presets(ns)
            continue
        return result, list(fetched.objects)
    raise RuntimeError("the renderer kept asking for objects")  # pragma: no cover - a bug
