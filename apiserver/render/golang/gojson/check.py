"""A strict schema check of a request body against the Go types.

KubeVirt answers a malformed body with "Object is not a valid VirtualMachine" and nothing more. This
check lists every problem at once, with its path: members the type does not have (exact names only, as
a strict decoder sees them), values of the wrong JSON type or out of range, members the OpenAPI
definitions mark as required, and quantities, times and durations that do not parse.
"""

from __future__ import annotations

import json
from typing import Any

from apiserver.render.golang.gojson import goscalars
from apiserver.render.golang.gojson.errors import (
    INVALID,
    REQUIRED,
    TYPE_INVALID,
    UNKNOWN_FIELD,
    SchemaProblem,
)
from apiserver.render.golang.gojson.types import INT_RANGES, STRUCTS, resolve_root
from apiserver.render.kubernetes.quantity import QuantityError, parse_quantity

__all__ = ["check", "check_first"]

_JSON_TYPE_NAMES = {"string": "string", "bool": "boolean", "float32": "number"}


def _show(value: Any) -> str:
    """A value in a message: JSON text for scalars (shortened), the JSON type for containers."""
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 64 else text[:61] + '..."'


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


class _Checker:
    def __init__(self, limit: int | None = None) -> None:
        self.problems: list[SchemaProblem] = []
        self.limit = limit
        # Problems found beyond ``limit``: counted, not kept.
        self.dropped = 0

    def add(self, path: str, reason: str, message: str) -> None:
        if self.limit is not None and len(self.problems) >= self.limit:
            self.dropped += 1
            return
        self.problems.append(SchemaProblem(path, reason, message))

    def type_error(self, path: str, value: Any, expected: str) -> None:
        self.add(path, TYPE_INVALID, f"Invalid value: {_show(value)}: must be of type {expected}")

    def struct(self, value: Any, type_name: str, path: str) -> None:
        if not isinstance(value, dict):
            self.type_error(path, value, "object")
            return
        info = STRUCTS[type_name]
        fields = {name: ref for name, ref, _omit in info["fields"]}
        for key, item in value.items():
            ref = fields.get(key)
            sub = _join(path, key)
            if ref is None:
                self.add(sub, UNKNOWN_FIELD, f'unknown field "{sub}"')
            elif item is not None:
                self.value(item, ref, sub)
        for name in info.get("required", ()):
            if value.get(name) is None:
                self.add(_join(path, name), REQUIRED, "Required value")

    def value(self, value: Any, ref: dict[str, Any], path: str) -> None:
        kind = ref["k"]
        if kind == "struct":
            self.struct(value, ref["t"], path)
        elif kind == "slice":
            if not isinstance(value, list):
                self.type_error(path, value, "array")
                return
            for i, item in enumerate(value):
                if item is not None:
                    self.value(item, ref["elem"], f"{path}[{i}]")
        elif kind == "map":
            if not isinstance(value, dict):
                self.type_error(path, value, "object")
                return
            for key, item in value.items():
                if item is not None:
                    self.value(item, ref["elem"], f"{path}[{key}]")
        elif kind == "custom":
            self.custom(value, ref["c"], path)
        elif kind == "string":
            if not isinstance(value, str):
                self.type_error(path, value, "string")
        elif kind == "bool":
            if not isinstance(value, bool):
                self.type_error(path, value, "boolean")
        elif kind in INT_RANGES:
            lo, hi = INT_RANGES[kind]
            if type(value) is not int:
                self.type_error(path, value, "integer")
            elif not lo <= value <= hi:
                self.add(path, INVALID, f"Invalid value: {value}: must be in the range of {kind}")
        elif kind == "float32":
            if isinstance(value, bool) or not isinstance(value, int | float):
                self.type_error(path, value, "number")
            else:
                try:
                    goscalars.float32_value(float(value))
                except (goscalars.ScalarError, OverflowError):
                    self.add(path, INVALID, f"Invalid value: {value}: must be in the range of float32")

    def custom(self, value: Any, kind: str, path: str) -> None:
        if kind == "quantity":
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                self.type_error(path, value, "string")
                return
            try:
                parse_quantity(value)
            except QuantityError as err:
                self.add(path, INVALID, f"Invalid value: {_show(value)}: {err}")
        elif kind in ("time", "duration"):
            if not isinstance(value, str):
                self.type_error(path, value, "string")
                return
            try:
                if kind == "time":
                    goscalars.parse_time(value)
                else:
                    goscalars.parse_duration(value)
            except goscalars.ScalarError as err:
                self.add(path, INVALID, f"Invalid value: {_show(value)}: {err}")
        elif kind == "intorstring" and not (
            isinstance(value, str) or (type(value) is int and -(1 << 31) <= value < (1 << 31))
        ):
            self.type_error(path, value, "integer or string")


def check(doc: Any, root: str) -> list[SchemaProblem]:
    """Every schema problem of ``doc`` as the Go type ``root`` (a root key or a full type name)."""
    checker = _Checker()
    checker.struct(doc, resolve_root(root), "")
    return checker.problems


def check_first(doc: Any, root: str, limit: int) -> tuple[list[SchemaProblem], int]:
    """The first ``limit`` problems of :func:`check` and how many there are in all: a body of
    300,000 bad items keeps a hundred in memory, not 600,000."""
    checker = _Checker(limit)
    checker.struct(doc, resolve_root(root), "")
    return checker.problems, len(checker.problems) + checker.dropped
