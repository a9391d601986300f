"""Go's own text forms for the scalar types KubeVirt's JSON goes through.

``metav1.Time`` (RFC 3339, whole seconds, UTC), ``metav1.Duration`` (``time.ParseDuration`` and
``Duration.String``), ``float32`` (shortest text), and ``net.IP.String`` for the decode hooks. Each function
mirrors the Go code it is named after, because the output is compared byte for byte with Go's.
"""

from __future__ import annotations

import ipaddress
import re
import struct

__all__ = [
    "ScalarError",
    "canonical_cidr",
    "canonical_ip",
    "float32_value",
    "format_duration",
    "parse_duration",
    "parse_time",
]


class ScalarError(ValueError):
    """A value Go's parser for the type rejects; the message is Go's (or close to it)."""


# --- metav1.Time --------------------------------------------------------------------------------------

_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:[.,][0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})"
)
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_ZERO_TIME_SECONDS = -62135596800  # 0001-01-01T00:00:00Z relative to the Unix epoch


def _is_leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, including 0)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


def parse_time(text: str) -> str | None:
    """metav1.Time decode then encode: RFC 3339 in, UTC whole seconds out; ``None`` for the zero time."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ScalarError(f'parsing time "{text}" as "2006-01-02T15:04:05Z07:00": cannot parse "{text}"')
    y, mo, d, h, mi, s = (int(match.group(i)) for i in range(1, 7))
    zone = match.group(7)
    days_in_month = 29 if mo == 2 and _is_leap(y) else _DAYS_IN_MONTH[mo - 1] if 1 <= mo <= 12 else 0
    if not (1 <= mo <= 12 and 1 <= d <= days_in_month and h < 24 and mi < 60 and s < 60):
        raise ScalarError(f'parsing time "{text}": value out of range')
    offset = 0
    if zone != "Z":
        oh, om = int(zone[1:3]), int(zone[4:6])
        if oh >= 24 or om >= 60:
            raise ScalarError(f'parsing time "{text}": time zone offset out of range')
        offset = (oh * 3600 + om * 60) * (-1 if zone[0] == "-" else 1)
    seconds = _days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset
    fraction = text[19 : match.start(7)]
    if seconds == _ZERO_TIME_SECONDS and not fraction.strip(".,0"):
        return None
    days, rest = divmod(seconds, 86400)
    y, mo, d = _civil_from_days(days)
    return f"{y:04d}-{mo:02d}-{d:02d}T{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}Z"


# --- metav1.Duration ----------------------------------------------------------------------------------

_UNITS = {
    "ns": 1,
    "us": 1000,
    "\u00b5s": 1000,
    "\u03bcs": 1000,
    "ms": 1000_000,
    "s": 1000_000_000,
    "m": 60 * 1000_000_000,
    "h": 3600 * 1000_000_000,
}
_MAX = 1 << 63


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def parse_duration(text: str) -> int:
    """``time.ParseDuration``: nanoseconds."""
    invalid = ScalarError("time: invalid duration " + _quote(text))
    s = text
    neg = False
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise invalid
    total = 0
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            raise invalid
        i = 0
        v = 0
        while i < len(s) and "0" <= s[i] <= "9":
            if v > _MAX // 10:
                raise invalid
            v = v * 10 + ord(s[i]) - 48
            if v > _MAX:
                raise invalid
            i += 1
        pre = i > 0
        s = s[i:]
        f, scale, post = 0, 1.0, False
        if s and s[0] == ".":
            s = s[1:]
            i = 0
            overflow = False
            while i < len(s) and "0" <= s[i] <= "9":
                if not overflow:
                    if f > (_MAX - 1) // 10:
                        overflow = True
                    else:
                        y = f * 10 + ord(s[i]) - 48
                        if y > _MAX:
                            overflow = True
                        else:
                            f = y
                            scale *= 10
                i += 1
            post = i > 0
            s = s[i:]
        if not pre and not post:
            raise invalid
        i = 0
        while i < len(s) and not (s[i] == "." or "0" <= s[i] <= "9"):
            i += 1
        if i == 0:
            raise ScalarError("time: missing unit in duration " + _quote(text))
        unit_text, s = s[:i], s[i:]
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise ScalarError(f"time: unknown unit {_quote(unit_text)} in duration {_quote(text)}")
        if v > _MAX // unit:
            raise invalid
        v *= unit
        if f > 0:
            v += int(float(f) * (float(unit) / scale))
            if v > _MAX:
                raise invalid
        total += v
        if total > _MAX:
            raise invalid
    if neg:
        return -total
    if total > _MAX - 1:
        raise invalid
    return total


def _frac(v: int, prec: int) -> tuple[str, int]:
    digits = ""
    printed = False
    for _ in range(prec):
        digit = v % 10
        printed = printed or digit != 0
        if printed:
            digits = str(digit) + digits
        v //= 10
    return ("." + digits if printed else ""), v


def format_duration(ns: int) -> str:
    """``time.Duration.String``: ``1h0m0s``, ``1.5ms``, ``1µs``, ``0s``."""
    neg = ns < 0
    u = -ns if neg else ns
    if u < 1000_000_000:
        if u == 0:
            return "0s"
        if u < 1000:
            text = f"{u}ns"
        elif u < 1000_000:
            frac, whole = _frac(u, 3)
            text = f"{whole}{frac}\u00b5s"
        else:
            frac, whole = _frac(u, 6)
            text = f"{whole}{frac}ms"
    else:
        frac, u = _frac(u, 9)
        text = f"{u % 60}{frac}s"
        u //= 60
        if u > 0:
            text = f"{u % 60}m{text}"
            u //= 60
            if u > 0:
                text = f"{u}h{text}"
    return "-" + text if neg else text


# --- float32 ------------------------------------------------------------------------------------------

_F32 = struct.Struct("<f")
_F32_MAX = 3.4028234663852886e38


def float32_value(x: float) -> float | int:
    """The number Go's ``float32`` holds and writes for a JSON number, as a Python value that prints the
    same way (shortest float32 digits; whole numbers below 1e21 as ints, like Go's ``'f'`` format)."""
    if x != x or abs(x) > _F32_MAX * (1 + 2**-25):
        raise ScalarError("out of range")
    f = _F32.unpack(_F32.pack(x))[0]
    if f in (float("inf"), float("-inf")):
        raise ScalarError("out of range")
    text = repr(f)
    for precision in range(1, 10):
        text = f"{f:.{precision}g}"
        if _F32.unpack(_F32.pack(float(text)))[0] == f:
            break
    value = float(text)
    if value == int(value) and abs(value) < 1e21:
        return int(value)
    return value


# --- net.IP (decode hooks) ------------------------------------------------------------------------------


def _ipv4_sloppy(s: str) -> str | None:
    """Go 1.16 ``parseIPv4`` (netutils.ParseIPSloppy): leading zeros allowed and read as decimal."""
    parts = s.split(".")
    if len(parts) != 4:
        return None
    octets = []
    for part in parts:
        if not part or not part.isascii() or not part.isdigit() or int(part) > 255:
            return None
        octets.append(str(int(part)))
    return ".".join(octets)


def _parse_ip(s: str) -> tuple[str, int] | None:
    """(``net.IP.String()``, bit length) of ``netutils.ParseIPSloppy(s)``, or None."""
    if ":" not in s:
        v4 = _ipv4_sloppy(s)
        return (v4, 32) if v4 is not None else None
    if "%" in s or not s.isascii():
        return None
    head, _, tail = s.rpartition(":")
    if "." in tail:
        v4 = _ipv4_sloppy(tail)
        if v4 is None:
            return None
        s = f"{head}:{v4}"
    try:
        address = ipaddress.IPv6Address(s)
    except ValueError:
        return None
    mapped = address.ipv4_mapped
    return (str(mapped) if mapped is not None else address.compressed), 128


def canonical_ip(s: str) -> str:
    """A decode hook: the IP in Go's canonical text, or the input unchanged when it is not an IP."""
    parsed = _parse_ip(s)
    return parsed[0] if parsed is not None else s


def canonical_cidr(s: str) -> str:
    """PodNetwork.vmNetworkCIDR hook: ``<address as written, canonical>/<prefix>`` if it parses as a CIDR."""
    address, slash, prefix = s.partition("/")
    if not slash or not prefix or not prefix.isascii() or not prefix.isdigit():
        return s
    parsed = _parse_ip(address)
    if parsed is None or int(prefix) > parsed[1]:
        return s
    return f"{parsed[0]}/{int(prefix)}"
