"""RFC 6902 JSON Patch between two JSON documents, and the list of changed leaves.

The patch uses ``add``, ``remove`` and ``replace`` only: members are compared one by one; lists of equal
length element by element, lists of other lengths are replaced whole (a correct, readable patch rather than
a minimal one).
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]
_MISSING = object()


def pointer(parts: list[str | int]) -> str:
    """An RFC 6901 JSON Pointer."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def diff(old: Any, new: Any) -> list[JSON]:
    """The operations that turn ``old`` into ``new``."""
    ops: list[JSON] = []
    _diff(old, new, [], ops)
    return ops


def _diff(old: Any, new: Any, path: list[str | int], ops: list[JSON]) -> None:
    if type(old) is dict and type(new) is dict:
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": pointer([*path, key])})
        for key, value in new.items():
            if key not in old:
                ops.append({"op": "add", "path": pointer([*path, key]), "value": value})
            else:
                _diff(old[key], value, [*path, key], ops)
        return
    if type(old) is list and type(new) is list and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _diff(a, b, [*path, i], ops)
        return
    if old != new or type(old) is not type(new):
        ops.append({"op": "replace", "path": pointer(path), "value": new})


def changes(old: Any, new: Any) -> list[JSON]:
    """Every changed leaf as ``{"path", "old", "new"}`` (a side that lacks it: no member)."""
    out: list[JSON] = []
    _changes(old, new, [], out)
    return out


def _changes(old: Any, new: Any, path: list[str | int], out: list[JSON]) -> None:
    if type(old) is dict and type(new) is dict:
        for key in list(old) + [k for k in new if k not in old]:
            _changes(old.get(key, _MISSING), new.get(key, _MISSING), [*path, key], out)
        return
    if type(old) is list and type(new) is list:
        for i in range(max(len(old), len(new))):
            _changes(
                old[i] if i < len(old) else _MISSING, new[i] if i < len(new) else _MISSING, [*path, i], out
            )
        return
    if old is _MISSING and type(new) in (dict, list) and new:
        _changes({} if type(new) is dict else [], new, path, out)
        return
    if new is _MISSING and type(old) in (dict, list) and old:
        _changes(old, {} if type(old) is dict else [], path, out)
        return
    if old is _MISSING and new is _MISSING:
        return
    if old is not _MISSING and new is not _MISSING and old == new and type(old) is type(new):
        return
    entry: JSON = {"path": pointer(path)}
    if old is not _MISSING:
        entry["old"] = old
    if new is not _MISSING:
        entry["new"] = new
    out.append(entry)
