"""The values the renderer accepts: JSON's, nested at most :data:`MAX_DEPTH` deep.

Bytes read by :mod:`apiserver.sources.documents` are JSON values by construction; values handed to
the Python API are checked here, so that whatever a caller passes either expands or fails with an
:class:`~apiserver.render.errors.ExpandError`, never with a Python error from deep inside.
"""

from __future__ import annotations

import math
from typing import Any, Final

from apiserver.render.errors import ExpandError

MAX_DEPTH: Final = 100
"""Deepest nesting of objects and arrays accepted (a VirtualMachine needs about 25)."""

# Go decodes every JSON number of an untyped value into a float64 first (KubeVirt's PUT does), so a
# number beyond a float's range is refused there; integers within it are kept exactly.
_MAX_INT_BITS: Final = 1024


def _join(path: str, key: str) -> str:
    key = key if len(key) <= 64 else key[:61] + "..."
    return f"{path}.{key}" if path else key


def _where(path: str) -> str:
    return path if len(path) <= 160 else path[:157] + "..."


def _fail(path: str, problem: str) -> ExpandError:
    return ExpandError.bad_request(f"{_where(path)}: {problem}" if path else problem)


def check_json(value: Any, path: str = "") -> None:
    """Raise a 400 :class:`ExpandError` naming the field unless ``value`` is a JSON value: dicts with
    string keys, lists, strings, booleans, None, finite floats and integers within a float's range."""
    _check(value, path, 0)


def _check(value: Any, path: str, depth: int) -> None:
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            raise _fail(path, f"nested deeper than {MAX_DEPTH} levels")
        for key, item in value.items():
            if not isinstance(key, str):
                raise _fail(path, f"mapping key {_show_key(key)} is not a string")
            _check(item, _join(path, key), depth + 1)
    elif isinstance(value, list):
        if depth >= MAX_DEPTH:
            raise _fail(path, f"nested deeper than {MAX_DEPTH} levels")
        for i, item in enumerate(value):
            _check(item, f"{path}[{i}]", depth + 1)
    elif isinstance(value, str) or value is None or isinstance(value, bool):
        return
    elif isinstance(value, int):
        if value.bit_length() > _MAX_INT_BITS:
            raise _fail(path, "number out of range")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise _fail(path, f"{value} is not a JSON number")
    else:
        raise _fail(path, f"a {type(value).__name__} is not a JSON value")


def _show_key(key: Any) -> str:
    if isinstance(key, int) and not isinstance(key, bool) and key.bit_length() > 64:
        return "(a big integer)"
    text = repr(key)
    return text if len(text) <= 64 else text[:61] + "..."
