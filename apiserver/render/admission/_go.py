"""Reading decoded Go objects the way KubeVirt's validation code reads its structs.

The admission rules work on VMs decoded by :mod:`apiserver.render.golang.gojson`: an absent member is Go's
nil pointer, slice or map, or the zero value of a plain field. These helpers give the zero value where Go
would see one, so each rule reads like its Go counterpart (``spec.Domain.CPU.Cores`` is
``num(cpu, "cores")``), and format values as Go's ``fmt`` would print them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from apiserver.render.kubernetes.errors import Cause
from apiserver.render.kubernetes.quantity import Quantity, QuantityError, quantity_of

JSON = dict[str, Any]
Causes = list[Cause]

ZERO = Quantity.from_int(0, "DecimalSI")


class KubeVirtPanic(Exception):
    """KubeVirt's code panics on this input: virt-api drops the call, so the VM is not admitted."""


# Decoded objects are plain dicts: ``type(x) is dict`` costs a tenth of an isinstance check against the
# Mapping ABC, and these helpers run tens of thousands of times per VM.


def obj(parent: Mapping[str, Any] | None, *path: str) -> JSON | None:
    """The object at ``path`` or None (a nil pointer anywhere on the way)."""
    cur: Any = parent
    for key in path:
        if type(cur) is not dict:
            return None
        cur = cur.get(key)
    return cur if type(cur) is dict else None


def items(parent: Mapping[str, Any] | None, key: str) -> list[JSON]:
    """A slice of objects (nil: empty)."""
    value = parent.get(key) if type(parent) is dict else None
    return value if type(value) is list else []


def text(parent: Mapping[str, Any] | None, key: str) -> str:
    """A string field ("" when absent)."""
    value = parent.get(key) if type(parent) is dict else None
    return value if type(value) is str else ""


def num(parent: Mapping[str, Any] | None, key: str) -> int:
    """An integer field (0 when absent)."""
    value = parent.get(key) if type(parent) is dict else None
    return value if type(value) is int else 0


def flag(parent: Mapping[str, Any] | None, key: str) -> bool:
    """A bool field (false when absent)."""
    return bool(parent.get(key)) if type(parent) is dict else False


def has(parent: Mapping[str, Any] | None, key: str) -> bool:
    """Whether a pointer, slice or map field is non-nil."""
    return type(parent) is dict and parent.get(key) is not None


def go_member(value: Any, name: str) -> Any:
    """``value[name]`` of a JSON object as Go's decoder finds a struct member: the exact name, else one
    equal under case folding (None when absent or ``value`` is not an object)."""
    if not isinstance(value, Mapping):
        return None
    if name in value:
        return value[name]
    folded = name.lower()
    for key, item in value.items():
        if isinstance(key, str) and key.lower() == folded:
            return item
    return None


def quantity(value: Any) -> Quantity:
    """A decoded quantity as Go parsed it (not its canonical text read back: ``1e30`` prints as ``1``),
    or Go's zero Quantity for an absent one."""
    if value is None:
        return ZERO
    try:
        return quantity_of(value)
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
