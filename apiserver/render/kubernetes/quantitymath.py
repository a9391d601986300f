"""Go ``resource.Quantity`` arithmetic as KubeVirt's resource code uses it: ``Add``, ``Sub``,
``NewQuantity``, ``NewScaledQuantity``, ``MustParse``, ``Value`` and ``ResourceList``'s ``Memory()`` /
``Cpu()``.

apimachinery's ``Add`` and ``Sub`` clear the cached text and keep the receiver's format, unless the
receiver is zero, which takes the argument's (``overhead := NewScaledQuantity(0, Kilo)`` stays DecimalSI
after adding ``25Mi``; a zero BinarySI request takes DecimalSI from ``NewScaledQuantity``). Values are
exact here; Go's int64 amounts would only differ beyond int64, which no pod resource reaches.
"""

from __future__ import annotations

from functools import lru_cache

from apiserver.render.kubernetes.quantity import (
    BINARY_SI,
    DECIMAL_SI,
    Quantity,
    parse_quantity,
    parse_quantity_text,
    quantity_of,
)

__all__ = [
    "ResourceList",
    "add",
    "cpu_of",
    "memory_of",
    "must_parse",
    "new_quantity",
    "new_scaled",
    "readable_bytes",
    "resource_list",
    "resource_text",
    "sub",
    "total",
    "value",
    "zero",
]

ResourceList = dict[str, Quantity]

_INT64_MAX = (1 << 63) - 1


def _strip(m: int, e: int) -> tuple[int, int]:
    if m == 0:
        return 0, 0
    while m % 10 == 0:
        m //= 10
        e += 1
    return m, e


def _make(m: int, e: int, fmt: str) -> Quantity:
    m, e = _strip(m, e)
    internal = (m, e) if -_INT64_MAX <= m <= _INT64_MAX and -18 <= e <= 18 else None
    return Quantity(m, e, fmt, None, internal)


def _combine(q: Quantity, y: Quantity, sign: int) -> Quantity:
    fmt = y.format if q.is_zero() else q.format
    e = min(q.exponent, y.exponent)
    m = q.mantissa * 10 ** (q.exponent - e) + sign * y.mantissa * 10 ** (y.exponent - e)
    return _make(m, e, fmt)


def add(q: Quantity, y: Quantity) -> Quantity:
    """``q.Add(y)``: the sum, in ``q``'s format (``y``'s when ``q`` is zero), text recomputed."""
    return _combine(q, y, 1)


def sub(q: Quantity, y: Quantity) -> Quantity:
    """``q.Sub(y)``."""
    return _combine(q, y, -1)


def new_quantity(value: int, fmt: str) -> Quantity:
    """``resource.NewQuantity(value, format)``."""
    return Quantity.from_int(value, fmt)


def new_scaled(value: int, scale: int) -> Quantity:
    """``resource.NewScaledQuantity(value, scale)``: DecimalSI."""
    if value == 0:
        return _ZEROS[DECIMAL_SI]
    return _make(value, scale, DECIMAL_SI)


_ZEROS = {fmt: Quantity(0, 0, fmt, None, (0, 0)) for fmt in (DECIMAL_SI, BINARY_SI, "DecimalExponent")}


def zero(fmt: str = DECIMAL_SI) -> Quantity:
    """A zero ``Quantity{Format: fmt}`` (Go's zero value has no format; it prints ``0`` either way)."""
    return _ZEROS.get(fmt) or Quantity(0, 0, fmt, None, (0, 0))


def total(start: Quantity, addends: list[Quantity]) -> Quantity:
    """``start.Add(a)`` for each addend in turn, computed once: the exact sum, in the format the last
    ``Add`` onto a zero running total gave it."""
    fmt = start.format
    e = min([start.exponent, *(a.exponent for a in addends)])
    m = start.mantissa * 10 ** (start.exponent - e)
    for a in addends:
        if m == 0:
            fmt = a.format
        m += a.mantissa * 10 ** (a.exponent - e)
    return _make(m, e, fmt)


@lru_cache(maxsize=1024)
def must_parse(text: str) -> Quantity:
    """``resource.MustParse`` of a constant or computed text (immutable results, so cached)."""
    return parse_quantity_text(text)


def value(q: Quantity) -> int:
    """``q.Value()``: rounded up to an integer."""
    return q.value_ceil()


def memory_of(resources: ResourceList | None) -> Quantity:
    """``ResourceList.Memory()``: the memory quantity, or a zero BinarySI one."""
    got = (resources or {}).get("memory")
    return got if got is not None else zero(BINARY_SI)


def cpu_of(resources: ResourceList | None) -> Quantity:
    """``ResourceList.Cpu()``: the CPU quantity, or a zero DecimalSI one."""
    got = (resources or {}).get("cpu")
    return got if got is not None else zero(DECIMAL_SI)


@lru_cache(maxsize=4096)
def _reparsed(text: str) -> Quantity:
    """The quantity Go holds after encoding a quantity to ``text`` and decoding it again."""
    return parse_quantity(text)


def resource_list(raw: object) -> ResourceList:
    """A decoded ``ResourceList`` (JSON object of quantities) as Go holds it after decoding; members
    that are not quantities are left out (the decoder upstream has refused them already)."""
    out: ResourceList = {}
    if isinstance(raw, dict):
        for name, val in raw.items():
            if isinstance(val, str | int | float) and not isinstance(val, bool):
                out[name] = _reparsed(quantity_of(val).canonical())
    return out


def resource_text(resources: ResourceList) -> dict[str, str]:
    """The JSON a ``ResourceList`` encodes to: keys sorted as Go's encoder sorts map keys."""
    return {name: resources[name].canonical() for name in sorted(resources)}


_BINARY_UNITS = (
    ("Ei", 1 << 60),
    ("Pi", 1 << 50),
    ("Ti", 1 << 40),
    ("Gi", 1 << 30),
    ("Mi", 1 << 20),
    ("Ki", 1 << 10),
)


def readable_bytes(text: str) -> str:
    """A memory quantity as people read one, for a table: the largest binary unit it is a whole number
    of (``4Gi``, ``444Mi``), else rounded up to whole ``Mi`` (``1410731712`` -> ``1346Mi``), below one Mi
    to whole ``Ki``. Kubernetes' own text (``1410731712``, the overhead added to a BinarySI request) stays
    in the JSON; a text that is no quantity is given back as it is."""
    try:
        value = parse_quantity(text).value_ceil()
    except ValueError:
        return text
    if value <= 0:
        return str(value)
    for unit, size in _BINARY_UNITS:
        if value % size == 0:
            return f"{value // size}{unit}"
    if value >= 1 << 20:
        return f"{-(-value // (1 << 20))}Mi"
    if value >= 1 << 10:
        return f"{-(-value // (1 << 10))}Ki"
    return str(value)
