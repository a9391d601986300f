"""Kubernetes ``resource.Quantity`` exactly as k8s.io/apimachinery v0.34 parses and prints it.

KubeVirt re-serialises every quantity it touches, and its output is what users compare against, so the
quirks matter: the parser keeps the original text for some spellings (``1e0``, ``05``, ``1.G``), rounds
off-fast-path values up to 1n, caps BinarySI at 2**63-1, and the printer drops the suffix of DecimalSI
values beyond ``E`` (``1000E`` prints as ``1``).

A value is held as ``mantissa * 10**exponent`` (mantissa without trailing zeros) rather than as one big
integer, so a hostile ``1e2000000000`` costs nothing. Next to the value we keep what Go keeps in the struct
(the int64 amount or the fact that the slow ``inf.Dec`` path was taken, the format and the cached text),
because KubeVirt's preset code compares quantities with Go ``!=`` on that representation.

Go's Quantity is mutable and some of its methods change the receiver's form: ``Cmp`` against a value held
as an ``inf.Dec`` calls ``AsDec()`` on the receiver, which moves an int64 amount into an ``inf.Dec`` for
good, and a later ``Value()`` of a value beyond int64 then wraps where the int64 form gave 0. Ours stays
immutable: :meth:`Quantity.as_dec` and :func:`cmp_and_promote` return the quantity as Go holds it
afterwards, and the caller keeps that one where KubeVirt's code reads the same struct field again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "Quantity",
    "QuantityError",
    "QuantityText",
    "canonical",
    "cmp",
    "cmp_and_promote",
    "format_int",
    "parse_quantity",
    "parse_quantity_text",
    "quantity_of",
    "quantity_text",
]

BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"

_FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_NUMERIC = "unable to parse numeric part of quantity"
_SUFFIX = "unable to parse quantity's suffix"

_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)

# Significant digits of the number we accept (Python converts at most 4,300 digits between text and
# int; Go's inf.Dec has no limit, but no real quantity comes near).
MAX_DIGITS = 4000
_TOO_MANY_DIGITS = f"quantities may have at most {MAX_DIGITS} significant digits"

# Quantity.UnmarshalJSON parses the JSON text between the quotes without unescaping it. Characters a
# JSON string must escape (below U+0020), and U+2028/U+2029, which Go's encoder escapes (kubectl and
# the API server write what KubeVirt reads), reach the parser as a backslash sequence and fail it.
_ESCAPED_IN_JSON = re.compile("[\x00-\x1f\u2028\u2029]")

# Go's strings.TrimSpace (unicode.IsSpace); Python's str.strip() also strips U+001C..U+001F.
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)

# parseQuantityString as a regex with possessive quantifiers, so it never splits differently from Go's
# greedy scanner: sign, leading zeros, integer digits, optional "." fraction, then the suffix shape.
_SCAN = re.compile(r"([+-]?+)0*+([0-9]*+)(?:(\.)([0-9]*+))?+([eEinumkKMGTP]*+[-+]?+[0-9]*+)")

_DEC_SUFFIX_EXP = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BIN_SUFFIX_EXP = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC_EXP_SUFFIX = {v: k for k, v in _DEC_SUFFIX_EXP.items()}
_BIN_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
# Largest number of integer digits the BinarySI fast path accepts, per suffix exponent:
# precision = 15 - len(num) - int(exponent*3/10) - 1 >= 0.
_BIN_FAST_DIGITS = {e: 14 - (e * 3) // 10 for e in _BIN_SUFFIX_EXP.values()}


class QuantityError(ValueError):
    """A string that ``resource.ParseQuantity`` rejects; the message is apimachinery's."""


def _strip_tens(m: int) -> tuple[int, int]:
    """Move the factors of ten of ``m`` into an exponent (``m`` non-zero)."""
    times = 0
    while m % 10 == 0:
        m //= 10
        times += 1
    return m, times


def _digits(m: int) -> int:
    return len(str(abs(m)))


@dataclass(frozen=True, slots=True, eq=False)
class Quantity:
    """An immutable quantity: exact value plus the Go-side representation details.

    ``mantissa * 10**exponent`` is the value (mantissa has no trailing zeros; zero is ``0, 0``).
    ``internal`` is Go's ``int64Amount`` ``(value, scale)`` when the parser's fast path produced it, or
    ``None`` when the value lives in an ``inf.Dec`` pointer (slow path, or promoted: see ``dec``). ``kept``
    is the text Go caches and writes back verbatim.

    ``==``/``<``/hash compare the value only (``Cmp``); :meth:`go_equal` models Go struct ``!=``.
    """

    mantissa: int
    exponent: int
    format: str
    kept: str | None = None
    internal: tuple[int, int] | None = None
    # A slow-path BinarySI value beyond int64, capped at +-(2**63-1): Go's Dec then has scale 0, not 9.
    capped: bool = False
    # The inf.Dec's (unscaled, scale) of an int64 amount promoted by AsDec (see as_dec); None otherwise
    # (a parsed slow-path Dec holds the value at scale 9, or capped at scale 0).
    dec: tuple[int, int] | None = None

    # --- value ---------------------------------------------------------------------------------------

    @property
    def value(self) -> Fraction:
        """The exact value (do not use on absurd exponents such as ``1e2000000000``)."""
        if self.exponent >= 0:
            return Fraction(self.mantissa * 10**self.exponent)
        return Fraction(self.mantissa, 10**-self.exponent)

    def is_zero(self) -> bool:
        return self.mantissa == 0

    def sign(self) -> int:
        return (self.mantissa > 0) - (self.mantissa < 0)

    def scaled_value(self, scale: int) -> int:
        """Go ``ScaledValue(scale)``: the value in units of ``10**scale`` as apimachinery computes it.

        In range that is the value rounded away from zero (int64 amounts) or truncated then plus one
        when inexact (``inf.Dec``, so ``-1n`` gives 1). Out of int64's range Go's arithmetic wraps or
        gives 0, depending on the path, and KubeVirt uses whatever comes out (``1e19`` CPUs is 0
        sockets): see :func:`_amount_scaled` and :func:`_dec_scaled`.
        """
        if self.internal is not None:
            return _amount_scaled(self.internal[0], self.internal[1], scale)
        if self.dec is not None:
            return _scaled_value(self.dec[0], self.dec[1], -scale)
        if self.capped:
            return _capped_scaled(self.mantissa, scale)
        return _dec_scaled(self.mantissa, self.exponent, scale)

    def value_ceil(self) -> int:
        """Go ``Value()``: ``ScaledValue(0)``."""
        return self.scaled_value(0)

    def milli_value_ceil(self) -> int:
        """Go ``MilliValue()``: ``ScaledValue(-3)``."""
        return self.scaled_value(-3)

    def as_dec(self) -> Quantity:
        """This quantity as Go holds it after ``q.AsDec()`` (or ``ToDec()``): an int64 amount ``(v, s)``
        becomes the ``inf.Dec`` with unscaled ``v`` and scale ``-s``; a Dec stays as it is.

        The value, format and cached text do not change, so neither does ``String()``; ``ScaledValue``
        does where the int64 form overflowed: ``10E`` (``10 * 10**18``) gives 0 as an int64 amount and
        the wrapped ``10**19 - 2**64`` as a Dec, and ``-1500m`` gives -2 and 0 (apimachinery's Dec path
        adds one to any inexact quotient, negative or not).
        """
        if self.internal is None:
            return self
        value, scale = self.internal
        return replace(self, internal=None, dec=(value, -scale))

    # --- text ------------------------------------------------------------------------------------------

    def canonical(self) -> str:
        """Go ``String()`` / ``MarshalJSON``: the kept text if any, else the canonical rendering."""
        if self.kept is not None:
            return self.kept
        return _render(self.mantissa, self.exponent, self.format)

    def __str__(self) -> str:
        return self.canonical()

    # --- comparison ------------------------------------------------------------------------------------

    def go_equal(self, other: Quantity) -> bool:
        """Go struct equality (``q1 != q2``) of two parsed Quantities.

        Go compares the int64 amount (value and scale), the ``*inf.Dec`` pointer, the cached string and
        the format. Two slow-path values hold distinct pointers, so they are never equal, even when
        parsed from the same text; fast-path values are equal when value, scale, format and kept text all
        agree (``8192Mi`` equals ``8Gi``, ``1024Mi`` does not equal ``1Gi``, which keeps its text).
        """
        return (
            self.internal is not None
            and self.internal == other.internal
            and self.format == other.format
            and self.kept == other.kept
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.mantissa == other.mantissa and self.exponent == other.exponent

    def __hash__(self) -> int:
        return hash((self.mantissa, self.exponent))

    def __lt__(self, other: Quantity) -> bool:
        return cmp(self, other) < 0

    def __le__(self, other: Quantity) -> bool:
        return cmp(self, other) <= 0

    def __gt__(self, other: Quantity) -> bool:
        return cmp(self, other) > 0

    def __ge__(self, other: Quantity) -> bool:
        return cmp(self, other) >= 0

    @classmethod
    def from_int(cls, value: int, fmt: str) -> Quantity:
        """Go ``resource.NewQuantity(value, format)`` (no kept text)."""
        if value == 0:
            return cls(0, 0, fmt, None, (0, 0))
        m, e = _strip_tens(value)
        return cls(m, e, fmt, None, (value, 0))


def cmp(a: Quantity, b: Quantity) -> int:
    """Go ``a.Cmp(b)``: -1, 0 or 1 by value."""
    sa, sb = a.sign(), b.sign()
    if sa != sb:
        return -1 if sa < sb else 1
    if sa == 0:
        return 0
    # Same sign, both non-zero: the order of magnitude decides unless equal; then align cheaply.
    ma, mb = abs(a.mantissa), abs(b.mantissa)
    ka, kb = _digits(ma) + a.exponent, _digits(mb) + b.exponent
    if ka != kb:
        r = 1 if ka > kb else -1
    else:
        e = min(a.exponent, b.exponent)
        va, vb = ma * 10 ** (a.exponent - e), mb * 10 ** (b.exponent - e)
        r = (va > vb) - (va < vb)
    return r if sa > 0 else -r


def cmp_and_promote(q: Quantity, y: Quantity) -> tuple[int, Quantity]:
    """Go ``q.Cmp(y)`` with its side effect: the result, and ``q`` as Go leaves it.

    Two int64 amounts compare as they are; otherwise Go compares ``q.AsDec()`` with ``y.AsDec()``, which
    promotes the receiver ``q`` in place (:meth:`Quantity.as_dec`; ``y`` is passed by value, so only a copy
    of it changes). Callers store the returned quantity where KubeVirt reads the same field again.
    """
    result = cmp(q, y)
    if q.internal is not None and y.internal is not None:
        return result, q
    return result, q.as_dec()


_MASK64 = (1 << 64) - 1
# The int64Amount multiplications apimachinery writes out (scale 1, 2, 3, 6, 9) return the wrapped
# product on overflow; the loop it uses for other scales returns 0.
_UNROLLED_SCALES = frozenset({1, 2, 3, 6, 9})


def _wrap64(value: int) -> int:
    """Go's int64 of an integer: its low 64 bits, signed (big.Int.Int64 and overflowing arithmetic)."""
    value &= _MASK64
    return value - (1 << 64) if value >> 63 else value


def _wrap_scaled(m: int, tens: int) -> int:
    """``_wrap64(m * 10**tens)`` without building a huge number (``tens`` >= 0)."""
    return _wrap64((m & _MASK64) * pow(10, tens, 1 << 64))


def _trunc_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero); ``b`` > 0."""
    q = abs(a) // b
    return q if a >= 0 else -q


def _amount_scaled(value: int, own: int, scale: int) -> int:
    """``int64Amount{value, own}.AsScaledInt64(scale)``, result kept whatever ``ok`` says (ScaledValue)."""
    if own < scale:
        # negativeScaleInt64: divide by ten, remembering a lost fraction; round away from zero.
        v, fraction = value, False
        for _ in range(scale - own):
            fraction = fraction or v % 10 != 0
            v = _trunc_div(v, 10)
            if v == 0:
                return (1 if value > 0 else -1) if fraction else 0
        if fraction:
            v += 1 if value > 0 else -1
        return v
    shift = own - scale
    if shift == 0 or value == 0:
        return value
    if shift in _UNROLLED_SCALES:
        if value == 1:
            return int(10**shift)
        return 0 if value == _INT64_MIN else _wrap64(value * 10**shift)
    if _digits(value) + shift > 20:
        return 0
    product = value * 10**shift
    return product if _INT64_MIN <= product <= _INT64_MAX else 0


def _scaled_value(unscaled: int, scale: int, new_scale: int) -> int:
    """apimachinery's ``scaledValue(unscaled, scale, newScale)`` for an ``inf.Dec`` with a small unscaled
    value (a promoted int64 amount): rescaled, rounded up by one when inexact, wrapped to int64 as Go's
    arithmetic wraps."""
    dif = scale - new_scale
    if dif == 0:
        return _wrap64(unscaled)
    if dif < 0:
        # unscaled.Int64() * int64(math.Pow10(-dif)); the conversion of 1e19 and beyond gives MinInt64
        power = 10**-dif if -dif <= 18 else _INT64_MIN
        return _wrap64(_wrap64(unscaled) * power)
    if unscaled < _INT64_MAX and dif < 19:
        u = _wrap64(unscaled)
        divisor = 10**dif
        q = _trunc_div(u, divisor)
        return q + 1 if u - q * divisor else q
    # big.Int DivMod (floor for a positive divisor), then Int64() and a wrapping + 1.
    q, r = divmod(unscaled, 10**dif)
    return _wrap64(q + 1) if r else _wrap64(q)


def _capped_scaled(m: int, scale: int) -> int:
    """``scaledValue`` of the capped Dec ``m`` (+-(2**63-1)) at scale 0."""
    if scale <= 0:
        # unscaled.Int64() * int64(math.Pow10(-scale)), wrapping (scale 0: the value itself)
        power = 10**-scale if -scale <= 18 else _INT64_MIN
        return _wrap64(m * power)
    return _trunc_div(m, 10**scale) + (1 if m % 10**scale else 0) if scale < 19 else (1 if m > 0 else 0)


def _dec_scaled(m: int, e: int, scale: int) -> int:
    """``scaledValue`` of a slow-path quantity ``m * 10**e``.

    Go holds it as an ``inf.Dec`` rounded to scale 9 (unscaled ``u = m * 10**(e + 9)``, ``e >= -9``);
    capped values are :func:`_capped_scaled`'s. Small ``u`` go through int64
    arithmetic (``u`` wraps first), large ones through big.Int division, then ``Int64()`` wraps.
    """
    if m == 0:
        return 0
    tens = e + 9  # u = m * 10**tens, tens >= 0
    dif = 9 + scale  # the Dec's scale minus the requested one
    if dif == 0:
        return _wrap_scaled(m, tens)
    if dif < 0:
        # unscaled.Int64() * int64(math.Pow10(-dif)); the conversion of 1e19 and beyond gives MinInt64
        power = 10**-dif if -dif <= 18 else _INT64_MIN
        return _wrap64(_wrap_scaled(m, tens) * power)
    small = m < 0 or _digits(m) + tens < 19 or (_digits(m) + tens == 19 and m * 10**tens < _INT64_MAX)
    if small and dif < 19:
        u = _wrap_scaled(m, tens)
        divisor = 10**dif
        q = _trunc_div(u, divisor)
        return q + 1 if u - q * divisor else q
    # big.Int DivMod (floor for a positive divisor), then Int64() and a wrapping + 1.
    if tens >= dif:
        q, r = _wrap_scaled(m, tens - dif), 0
    else:
        q, r = divmod(m, 10 ** (dif - tens))
        q = _wrap64(q)
    return _wrap64(q + 1) if r else q


def _render(m: int, e: int, fmt: str) -> str:
    """CanonicalizeBytes for a value without kept text."""
    if m == 0:
        return "0"
    if fmt == BINARY_SI:
        # |v| < 1024 or a fraction prints as DecimalSI; otherwise m' * 1024**k, k as large as possible.
        if e >= 0 and _digits(m) + e >= 4:
            v = m * 10**e
            if v >= 1024 or v <= -1024:
                a = abs(v)
                k = 0
                while a >= 1024 and a % 1024 == 0:
                    a >>= 10
                    k += 1
                suffix = _BIN_SUFFIXES[k] if k < len(_BIN_SUFFIXES) else ""
                return f"{a if v > 0 else -a}{suffix}"
        fmt = DECIMAL_SI
    elif fmt != DECIMAL_SI:
        fmt = DECIMAL_EXPONENT
    # m has no trailing zeros; lower e to a multiple of three.
    r = e % 3
    if r:
        m *= 10**r
        e -= r
    if fmt == DECIMAL_SI:
        # Beyond n..E there is no suffix and Go writes none: 1000E prints as "1" (apimachinery bug).
        return f"{m}{_DEC_EXP_SUFFIX.get(e, '')}"
    return f"{m}e{e}" if e else str(m)


def _go_text(value: str | int | float) -> str:
    """The text Go's ``UnmarshalJSON`` would parse for a JSON value."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise QuantityError(_FORMAT_WRONG)
    if isinstance(value, int) and value.bit_length() > MAX_DIGITS * 3:  # ~0.3 decimal digits per bit
        stripped = abs(value)
        while stripped % 10**100 == 0:
            stripped //= 10**100
        if stripped.bit_length() > MAX_DIGITS * 3:
            raise QuantityError(_TOO_MANY_DIGITS)
        zeros = 0
        while value % 10 ** (zeros + 100) == 0:
            zeros += 100
        return str(value // 10**zeros) + "0" * zeros  # the digits Go reads, without one big conversion
    return repr(value)


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Quantity:
    if _ESCAPED_IN_JSON.search(text):
        raise QuantityError(_FORMAT_WRONG)  # "\t1Gi" is parsed as the six characters \t1Gi
    s = text.strip(_GO_SPACE)
    if not s:
        raise QuantityError(_FORMAT_WRONG)
    if s == "0":
        return Quantity(0, 0, DECIMAL_SI, "0", (0, 0))
    match = _SCAN.fullmatch(s)
    if match is None:
        raise QuantityError(_FORMAT_WRONG)
    sign, num, _dot, denom, suffix = match.groups()
    negative = sign == "-"
    if not num:
        num = "0"
    denom = denom or ""

    # quantitySuffixer.interpret
    base = 10
    exp = _DEC_SUFFIX_EXP.get(suffix)
    if exp is not None:
        fmt = DECIMAL_SI
    else:
        exp = _BIN_SUFFIX_EXP.get(suffix)
        if exp is not None:
            fmt, base = BINARY_SI, 2
        elif len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
            if len(suffix[1:].lstrip("+-").lstrip("0")) > 19:
                raise QuantityError(_SUFFIX)  # beyond int64, as below, without converting the digits
            parsed = int(suffix[1:])
            if not _INT64_MIN <= parsed <= _INT64_MAX:
                raise QuantityError(_SUFFIX)
            exp = (parsed + (1 << 31)) % (1 << 32) - (1 << 31)  # Go's int32(parsed) wraps
            fmt = DECIMAL_EXPONENT
        else:
            raise QuantityError(_SUFFIX)

    # The int64 fast path: value and scale kept as Go's int64Amount, text kept if it looks canonical.
    if base == 10:
        scale = exp - len(denom)
        if len(num) + len(denom) <= 18 and scale >= -9:
            shifted = num + denom
            value = int(shifted)
            result = -value if negative else value
            keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
            return _fast(result, scale, fmt, s if keep else None)
    elif not denom and len(num) <= _BIN_FAST_DIGITS[exp]:
        value = int(num)
        result = (-value if negative else value) << exp
        return _fast(result, 0, fmt, s if value & 7 else None)

    # The inf.Dec slow path: round away from zero to 1n, cap BinarySI at 2**63-1.
    if not (match.group(2) or denom or "0" in s[len(sign) : match.start(2)]):
        raise QuantityError(_NUMERIC)  # inf.Dec.SetString found no digit
    # Trailing zeros go into the exponent before the digits are converted: 1 followed by 5,000 zeros
    # is 1e5000, not a 5,001-digit integer.
    digits = (num + denom).lstrip("0")
    significant = digits.rstrip("0")
    if len(significant) > MAX_DIGITS:
        raise QuantityError(_TOO_MANY_DIGITS)
    m = int(significant or "0")
    e = -len(denom) + (len(digits) - len(significant))
    if base == 2:
        m <<= exp
    else:
        e += exp
    if m:
        m, t = _strip_tens(m)
        e += t
        if e < -9:
            over = -9 - e
            if _digits(m) <= over:
                m, e = 1, -9
            else:
                q, r = divmod(m, 10**over)
                m, e = q + (1 if r else 0), -9
            m, t = _strip_tens(m)
            e += t
        if fmt == BINARY_SI:
            if _digits(m) + e >= 19 and (m * 10**e if e >= 0 else m) > _INT64_MAX * 10 ** max(0, -e):
                # The cap applies to fractions too; Go's Dec then holds 2**63-1 at scale 0.
                return Quantity(-_INT64_MAX if negative else _INT64_MAX, 0, fmt, None, None, capped=True)
            if e < 0 and _digits(m) + e <= 0:
                fmt = DECIMAL_SI  # 0 < v < 1
    else:
        e = 0
    return Quantity(-m if negative else m, e, fmt, None, None)


def _fast(result: int, scale: int, fmt: str, kept: str | None) -> Quantity:
    if result == 0:
        return Quantity(0, 0, fmt, kept, (0, scale))
    m, t = _strip_tens(result)
    return Quantity(m, scale + t, fmt, kept, (result, scale))


def parse_quantity_text(text: str) -> Quantity:
    """``resource.ParseQuantity(text)`` itself, which, unlike ``UnmarshalJSON``, trims no spaces."""
    if text != text.strip(_GO_SPACE):
        raise QuantityError(_FORMAT_WRONG)
    return _parse_text(text)


def parse_quantity(value: str | int | float) -> Quantity:
    """``resource.ParseQuantity`` of a string, or of the JSON text of a number (``1.5`` -> ``1500m``).

    A JSON number reaches Python as an int or float; its original spelling (``1E3``) is lost, so it is
    parsed from Python's spelling, which has the same value.
    """
    return _parse_text(_go_text(value))


@lru_cache(maxsize=8192, typed=True)
def _canonical_cached(value: str | int | float) -> str:
    return _parse_text(_go_text(value)).canonical()


def canonical(value: str | int | float) -> str:
    """The text Go writes for a quantity given as ``value`` (parse then ``String()``); cached."""
    if type(value) is str:
        return _canonical_cached(value)
    if type(value) is QuantityText:
        return value.text
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise QuantityError(_FORMAT_WRONG)
    return _canonical_cached(value)


class QuantityText(str):
    """A decoded quantity: the text Go writes for it, carrying the quantity Go parsed from the input.

    The text alone does not give the parsed quantity back, and KubeVirt computes with the parsed one:
    ``1.2Gi`` prints as ``1288490188800m``, which reads back as DecimalSI, while a request computed
    from it keeps the guest's BinarySI (``1006633Ki``); ``10000000000000000000`` prints as ``10E``,
    whose int64 form gives another ``Value()`` than the original's ``inf.Dec``. Being a ``str``, it
    compares, hashes and serialises as its text; :func:`quantity_of` reads the quantity.
    """

    __slots__ = ("quantity", "text")
    quantity: Quantity
    text: str  # the same text as a plain str, for output

    def __new__(cls, quantity: Quantity) -> QuantityText:
        text = quantity.canonical()
        obj = super().__new__(cls, text)
        obj.quantity = quantity
        obj.text = text
        return obj


@lru_cache(maxsize=8192, typed=True)
def _quantity_text_cached(value: str | int | float) -> QuantityText:
    return QuantityText(_parse_text(_go_text(value)))


def quantity_text(value: str | int | float) -> QuantityText:
    """What Go's ``UnmarshalJSON`` makes of a JSON value, as :class:`QuantityText`; cached."""
    if type(value) is QuantityText:
        return value
    if type(value) is not str and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise QuantityError(_FORMAT_WRONG)
    return _quantity_text_cached(value)


def quantity_of(value: str | int | float) -> Quantity:
    """The quantity Go holds for a decoded value: a :class:`QuantityText`'s own, else its text parsed."""
    if type(value) is QuantityText:
        return value.quantity
    return parse_quantity(value)


def new_quantity(value: int, fmt: str) -> QuantityText:
    """``resource.NewQuantity(value, fmt)`` as the renderer writes it into a VM: the text carrying the
    quantity, so encoding keeps the format (``144918000`` BinarySI; its text alone reads back as
    DecimalSI and would print as ``144918k``)."""
    m, e = _strip_tens(value) if value else (0, 0)
    text = format_int(value, fmt)
    # format_int spells MinInt64 BinarySI as Go does; keep that text rather than render it again
    kept = text if text != _render(m, e, fmt) else None
    return QuantityText(Quantity(m, e, fmt, kept=kept, internal=(value, 0)))


def format_int(value: int, fmt: str) -> str:
    """Canonical text of ``resource.NewQuantity(value, fmt)``: ``805306368`` BinarySI -> ``768Mi``."""
    if value == 0:
        return "0"
    if value == _INT64_MIN and fmt == BINARY_SI:
        return str(value)  # removeInt64Factors negates MinInt64 into itself and removes nothing
    m, e = _strip_tens(value)
    return _render(m, e, fmt)
