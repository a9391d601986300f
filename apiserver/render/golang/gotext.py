"""Go's text renderings that appear in messages KubeVirt users match on, and Go's case mapping.

Kept separate because several messages must be byte-equal to what Go prints (``%q``, ``json.Marshal``,
``utilerrors.NewAggregate``), and each of those has small rules that are easy to get wrong inline.
Case mapping is Go's too: KubeVirt lower-cases matcher kinds with ``strings.ToLower`` and
``encoding/json`` matches member names with its fold, and both differ from Python's ``str.lower``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

_SHORT_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(text: str) -> str:
    """``strconv.Quote``: Go's ``%q`` for a string."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def go_json(value: object) -> str:
    """``json.Marshal`` output (compact, HTML characters and U+2028/U+2029 escaped)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def aggregate(messages: Iterable[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message as itself, several as ``[a, b]`` without
    duplicates."""
    seen: list[str] = []
    for message in messages:
        if message not in seen:
            seen.append(message)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


# unicode.ToLower, where Python's str.lower() differs: Python applies the full (SpecialCasing)
# mapping, U+0130 -> "i" + U+0307, and lower-cases a final sigma to U+03C2 in context; Go maps rune by
# rune with the simple mapping. Among all runes, U+0130 and the Kelvin sign U+212A are the only
# non-ASCII ones Go (Unicode 17) lower-cases into ASCII; Python agrees on the Kelvin sign.
_GO_LOWER_SPECIAL = {"\u0130": "i"}


def go_lower(text: str) -> str:
    """``strings.ToLower``: each rune's simple lower-case mapping.

    Exact wherever the result can equal an ASCII name (what KubeVirt compares it with). A letter
    newer than the running Python's Unicode tables is left as it is, where Go lower-cases it to
    another non-ASCII letter: such a result equals no ASCII name either way.
    """
    if text.isascii():
        return text.lower()
    return "".join(_GO_LOWER_SPECIAL.get(ch) or ch.lower() for ch in text)


def fold_name(name: str) -> str:
    """A key for ``encoding/json``'s case-insensitive member match (``bytes.EqualFold``), for names
    compared with ASCII member names: the long s U+017F and the Kelvin sign U+212A are the only
    non-ASCII runes that fold onto ASCII letters (s and k), and no other rune lower-cases to ASCII
    alone in Python (U+0130 gives "i" + U+0307, which matches no member name)."""
    return name.lower() if name.isascii() else name.lower().replace("\u017f", "s")
