"""Small helpers for editing decoded Go objects held as dicts (absent member = nil pointer/map/slice)."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


def child(parent: JSON, key: str) -> JSON:
    """The object under ``key``, created empty when absent (Go: ``if x == nil { x = &T{} }``)."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value  # type: ignore[no-any-return,unused-ignore]


def peek(parent: JSON | None, *path: str) -> Any:
    """The value at ``path`` or None, without creating anything."""
    cur: Any = parent
    for key in path:
        if cur is None:
            return None
        cur = cur.get(key)
    return cur


def clone(value: Any) -> Any:
    """A deep copy of decoded JSON (dicts, lists; scalars, quantities included, are immutable and shared):
    ``copy.deepcopy`` without its memo, 4x faster."""
    if type(value) is dict:
        return {k: clone(v) for k, v in value.items()}
    if type(value) is list:
        return [clone(v) for v in value]
    return value
