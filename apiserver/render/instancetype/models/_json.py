"""Reading raw JSON bytes the way Go's decoders see them (for ControllerRevision data)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


class Number(float):
    """A JSON number with a fraction or exponent, remembering its text (a Quantity may keep it)."""

    text: str

    def __new__(cls, text: str) -> Number:
        obj = super().__new__(cls, text)
        obj.text = text
        return obj


class Parsed:
    """A parsed document plus whether any object in it repeated a member name."""

    __slots__ = ("duplicates", "value")

    def __init__(self, value: Any, duplicates: bool) -> None:
        self.value = value
        self.duplicates = duplicates


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


def parse(raw: bytes) -> Parsed:
    """Parse like Go: NaN/Infinity are errors, invalid UTF-8 becomes U+FFFD, duplicates are noted."""
    duplicates = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal duplicates
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                duplicates = True
            out[key] = value
        return out

    text = raw.decode("utf-8", errors="replace")
    value = json.loads(text, object_pairs_hook=pairs, parse_float=Number, parse_constant=_reject_constant)
    return Parsed(value, duplicates)


def compact(value: Any) -> str:
    """The compact JSON text of a value (what ``json.Marshal`` of a RawExtension stores)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def go_json_kind(value: Any) -> str:
    """How ``encoding/json`` names a JSON value's kind in its type errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return "null"
