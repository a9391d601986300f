"""Results computed from an input object, reused while the object is unchanged.

Decoding an instancetype with pydantic, checking a VM against the schema, building the cluster
configuration: each is a pure function of one object and costs more than a warm render itself. A memo
keeps the result under the object's version:

* an object with a ``metadata.uid`` and ``resourceVersion`` (everything a source reads from an API
  server) is keyed by its identity and checked by that pair: sources never modify an object, they
  replace it when it changes; the entry holds the object, so its ``id`` cannot be recycled;
* any other object (the Python API's dicts, files) is keyed by its *fingerprint*, its compact JSON
  text, when the caller has one (the Python API's input check computes it): equal text is equal
  content, whatever the identity, so a dict edited between calls is computed afresh;
* without either the result is computed every time.

A fingerprint is only good for values known to be JSON (the input check proved it; sources parse
JSON): a float NaN and ``None`` have the same text.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_NO_META: Mapping[str, Any] = {}
# Fingerprints longer than this are not kept (a memo of N entries holds at most N of them).
MAX_FINGERPRINT = 256 * 1024


def version_of(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(uid, resourceVersion)`` when the object carries both as strings."""
    meta = obj.get("metadata") or _NO_META
    if type(meta) is not dict and not isinstance(meta, Mapping):
        return None
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    if uid and version and type(uid) is str and type(version) is str:
        return uid, version
    return None


class Memo(Generic[T]):
    """Results per object version, at most ``size`` of each kind (the oldest go first)."""

    __slots__ = ("_by_content", "_by_identity", "_size")

    def __init__(self, size: int) -> None:
        self._size = size
        self._by_identity: OrderedDict[Hashable, tuple[object, tuple[str, str], T]] = OrderedDict()
        self._by_content: OrderedDict[Hashable, T] = OrderedDict()

    def clear(self) -> None:
        self._by_identity.clear()
        self._by_content.clear()

    def get(
        self,
        obj: Mapping[str, Any],
        compute: Callable[[], T],
        *,
        what: Hashable = None,
        fingerprint: bytes | None = None,
    ) -> T:
        """The result of ``compute()`` for ``obj`` (``what`` tells results of one object apart)."""
        version = version_of(obj)
        if version is not None:
            key: Hashable = (id(obj), what)
            entry = self._by_identity.get(key)
            if entry is not None and entry[0] is obj and entry[1] == version:
                return entry[2]
            value = compute()
            self._by_identity[key] = (obj, version, value)
            if len(self._by_identity) > self._size:
                self._by_identity.popitem(last=False)
            return value
        if fingerprint is None or len(fingerprint) > MAX_FINGERPRINT:
            return compute()
        key = (fingerprint, what)
        try:
            return self._by_content[key]
        except KeyError:
            pass
        value = compute()
        self._by_content[key] = value
        if len(self._by_content) > self._size:
            self._by_content.popitem(last=False)
        return value
