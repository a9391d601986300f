"""The Go type graph the codec works from (generated ``gotypes.json``, see hack/generators/gotypes.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_DATA: dict[str, Any] = json.loads((Path(__file__).with_name("gotypes.json")).read_text(encoding="utf-8"))

ROOTS: dict[str, str] = _DATA["roots"]
STRUCTS: dict[str, dict[str, Any]] = _DATA["structs"]

# Go integer kinds and their ranges.
INT_RANGES: dict[str, tuple[int, int]] = {
    "int": (-(1 << 63), (1 << 63) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "int8": (-(1 << 7), (1 << 7) - 1),
    "uint": (0, (1 << 64) - 1),
    "uint64": (0, (1 << 64) - 1),
    "uint32": (0, (1 << 32) - 1),
    "uint16": (0, (1 << 16) - 1),
    "uint8": (0, (1 << 8) - 1),
}


@dataclass(frozen=True, slots=True)
class Field:
    """One JSON member of a struct, in encoder order."""

    name: str
    ref: dict[str, Any]
    omitempty: bool
    omitzero: bool


def resolve_root(root: str) -> str:
    """A root key (``VirtualMachine``) or a full Go type name, as a struct type name."""
    name = ROOTS.get(root, root)
    if name not in STRUCTS:
        raise KeyError(f"unknown Go type or root {root!r}")
    return name


def fields_of(type_name: str) -> list[Field]:
    return [Field(name, ref, "e" in omit, "z" in omit) for name, ref, omit in STRUCTS[type_name]["fields"]]


def go_name(type_name: str) -> str:
    return str(STRUCTS[type_name]["go"])


def short_name(type_name: str) -> str:
    """Go's ``reflect.Type.String()``: ``v1.VirtualMachine``."""
    return type_name[type_name.rfind("/") + 1 :]
