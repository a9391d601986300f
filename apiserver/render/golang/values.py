"""The values the renderer accepts: JSON's, nested at most :data:`MAX_DEPTH` deep.

Bytes read by :mod:`apiserver.documents.reader` are JSON values by construction; values handed to
the Python API are checked here, so that whatever a caller passes either expands or fails with an
:class:`~apiserver.render.kubernetes.errors.ExpandError`, never with a Python error from deep inside.

The Python API checks every input on every call, and a walk in Python cost ~40% of a warm render.
So a value is checked by native code (orjson) and walked in Python only when that finds something
to name or cannot vouch for it (:func:`_native_check`): its JSON text (one ``orjson.dumps``, which
refuses keys that are not strings and types JSON lacks), the count of its openers (or its indented
text) for the nesting, and the text read back equal to the value (tuples, NaN and a few types orjson
writes as JSON do not). A value is also recognised by identity: its fingerprint (that text) is kept
beside it, and the same object with the same text passes at the cost of the dump. The fingerprint
then keys what the renderer memoises (:mod:`apiserver.render.memo`). What the dump cannot tell
apart is an object recognised this way but edited in place into a value of the same text that is
not JSON (None into NaN, a list into a tuple); the renderer still answers such a value cleanly, as
it answers any value it does not expect, but not with this module's message. A VM made afresh for
each call (``per_call``) is remembered among the last few only, so that a caller decoding one per
call does not keep a thousand of them alive.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Final

import orjson

from apiserver.render.kubernetes.errors import ExpandError
from apiserver.render.memo import version_of

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


# Values checked, by identity: (the value, its fingerprint or its uid and resourceVersion). The entry
# holds the value, so its id cannot be recycled while it is here. Sized for a call's objects: past it,
# every object is checked again on every call (600 objects passed to apiserver.expand: 14.4 ms a call
# with 256 entries and a walk, 5.1 ms with 1,024, where each is still dumped and indexed), at the price of keeping
# up to 1,024 of the caller's dicts alive. apiserver.api.Expander checks a catalog once instead.
_WALKED: OrderedDict[int, tuple[Any, bytes | tuple[str, str]]] = OrderedDict()
_WALKED_SIZE: Final = 1024
# The same for values made afresh per call (check_json's per_call): the last few only.
_RECENT: OrderedDict[int, tuple[Any, bytes | tuple[str, str]]] = OrderedDict()
_RECENT_SIZE: Final = 8
# orjson refuses these outright (no default): subclasses of str, int, dict, list (which the walk
# accepts, so they are walked every time), dataclasses, datetimes.
_DUMP_OPTIONS: Final = (
    orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
)


def fingerprint(value: Any) -> bytes | None:
    """The compact JSON text of ``value`` (orjson's), or None when orjson cannot write it."""
    try:
        return orjson.dumps(value, option=_DUMP_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None


def check_json(value: Any, path: str = "", *, per_call: bool = False) -> bytes | None:
    """Raise a 400 :class:`ExpandError` naming the field unless ``value`` is a JSON value: dicts with
    string keys, lists, strings, booleans, None, finite floats and integers within a float's range.

    Return its fingerprint (None for an object with a uid and resourceVersion, which key the memos
    themselves, and for a JSON value orjson does not write: integers beyond 64 bits, subclasses of
    the JSON types). A value is recognised when this object passed with the same fingerprint (or
    version) before; else it is checked natively (:func:`_native_check`) and walked in Python only
    when that cannot vouch for it, to find what is wrong or to accept what orjson does not write (see
    the module docstring). ``per_call``: a value the caller makes afresh for each call (the VM a
    caller decodes per call): it is remembered among the last :data:`_RECENT_SIZE` such values only,
    so that passing a new one every call keeps no more of them alive than that."""
    seen = _RECENT if per_call else _WALKED
    version = version_of(value) if type(value) is dict else None
    if version is not None:
        # Read from an API server: replaced, never edited, when it changes (apiserver.render.memo);
        # its version is enough and no fingerprint is needed.
        walked = seen.get(id(value))
        if walked is not None and walked[0] is value and walked[1] == version:
            return None
        if not _native_check(value, fingerprint(value)):
            _check(value, path, 0)
        _remember(seen, value, version)
        return None
    printed = fingerprint(value)
    if printed is not None:
        walked = seen.get(id(value))
        if walked is not None and walked[0] is value and walked[1] == printed:
            # The kept bytes, equal to the new ones: their hash is cached, so the memos' look-ups
            # by fingerprint do not hash a few kilobytes again.
            return walked[1]
    if not _native_check(value, printed):
        _check(value, path, 0)
    if printed is not None:
        _remember(seen, value, printed)
    return printed


# A line of orjson's indented text (two spaces a level) this far in holds a value inside MAX_DEPTH
# containers: where a too deep container may be.
_DEEP_LINE: Final = b"\n" + b" " * (2 * MAX_DEPTH)


def _native_check(value: Any, printed: bytes | None) -> bool:
    """Whether ``value``, which orjson wrote as ``printed``, is a JSON value nested at most
    MAX_DEPTH deep, told by native code alone: orjson refuses keys that are not strings, integers
    beyond 64 bits, nesting beyond 255 levels and (with ``_DUMP_OPTIONS``) every other type but
    tuples, NaN and infinities (written as null), UUIDs, enums and fragments; those do not read back
    equal to themselves. Nesting: text with at most MAX_DEPTH openers cannot nest deeper, else its
    indented form shows it. False means "walk it": the walk names what is wrong, or accepts it."""
    if printed is None:
        return False
    if printed.count(b"{") + printed.count(b"[") > MAX_DEPTH and _DEEP_LINE in orjson.dumps(
        value, option=_DUMP_OPTIONS | orjson.OPT_INDENT_2
    ):
        return False
    return bool(orjson.loads(printed) == value)


def _remember(
    seen: OrderedDict[int, tuple[Any, bytes | tuple[str, str]]], value: Any, key: bytes | tuple[str, str]
) -> None:
    seen[id(value)] = (value, key)
    if len(seen) > (_RECENT_SIZE if seen is _RECENT else _WALKED_SIZE):
        seen.popitem(last=False)


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
