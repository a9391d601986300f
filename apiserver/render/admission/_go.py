"""Reading decoded Go objects the way KubeVirt's validation code reads its structs.

The admission rules work on VMs decoded by :mod:`apiserver.render.gojson`: an absent member is Go's
nil pointer, slice or map, or the zero value of a plain field. These helpers give the zero value where Go
would see one, so each rule reads like its Go counterpart (``spec.Domain.CPU.Cores`` is
``num(cpu, "cores")``), and format values as Go's ``fmt`` would print them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from apiserver.render.errors import Cause
from apiserver.render.quantity import Quantity, QuantityError, parse_quantity

JSON = dict[str, Any]
Causes = list[Cause]

ZERO = Quantity.from_int(0, "DecimalSI")


class KubeVirtPanic(Exception):
    """KubeVirt's code panics on this input: virt-api drops the call, so the VM is not admitted."""


def obj(parent: Mapping[str, Any] | None, *path: str) -> JSON | None:
    """The object at ``path`` or None (a nil pointer anywhere on the way)."""
    cur: Any = parent
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur if isinstance(cur, dict) else None


def items(parent: Mapping[str, Any] | None, key: str) -> list[JSON]:
    """A slice of objects (nil: empty)."""
    value = parent.get(key) if isinstance(parent, Mapping) else None
    return value if isinstance(value, list) else []


def text(parent: Mapping[str, Any] | None, key: str) -> str:
    """A string field ("" when absent)."""
    value = parent.get(key) if isinstance(parent, Mapping) else None
    return value if isinstance(value, str) else ""


def num(parent: Mapping[str, Any] | None, key: str) -> int:
    """An integer field (0 when absent)."""
    value = parent.get(key) if isinstance(parent, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def flag(parent: Mapping[str, Any] | None, key: str) -> bool:
    """A bool field (false when absent)."""
    return bool(parent.get(key)) if isinstance(parent, Mapping) else False


def has(parent: Mapping[str, Any] | None, key: str) -> bool:
    """Whether a pointer, slice or map field is non-nil."""
    return isinstance(parent, Mapping) and parent.get(key) is not None


def quantity(value: Any) -> Quantity:
    """A decoded quantity (its canonical text), or Go's zero Quantity for an absent one."""
    if value is None:
        return ZERO
    try:
        return parse_quantity(value)
    except QuantityError:  # decode already refused these; a zero keeps a rule from crashing
        return ZERO


def resource(spec: Mapping[str, Any], group: str, name: str) -> Quantity:
    """``spec.Domain.Resources.<Requests|Limits>.<Cpu|Memory>()``: the quantity or zero."""
    return quantity((obj(spec, "domain", "resources", group) or {}).get(name))


def qtext(value: Any) -> str:
    """A ``*resource.Quantity`` printed with ``%s`` (``0`` for the zero value)."""
    return quantity(value).canonical() if value is not None else "0"


def golist(values: Iterable[Any]) -> str:
    """A slice printed with ``%v``/``%s``: ``[a b c]``."""
    return "[" + " ".join(str(v) for v in values) + "]"


def invalid(field: str, message: str) -> Cause:
    return Cause(field, message, "FieldValueInvalid")


def required(field: str, message: str) -> Cause:
    return Cause(field, message, "FieldValueRequired")


def not_supported(field: str, message: str) -> Cause:
    return Cause(field, message, "FieldValueNotSupported")


def duplicate(field: str, message: str) -> Cause:
    return Cause(field, message, "FieldValueDuplicate")


def not_found(field: str, message: str) -> Cause:
    return Cause(field, message, "FieldValueNotFound")


def forbidden(field: str, message: str) -> Cause:
    return Cause(field, message, "FieldValueForbidden")
