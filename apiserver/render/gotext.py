"""Go's text renderings that appear in messages KubeVirt users match on.

Kept separate because several messages must be byte-equal to what Go prints (``%q``, ``json.Marshal``,
``utilerrors.NewAggregate``), and each of those has small rules that are easy to get wrong inline.
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
