"""What Go's ``json.Unmarshal(data, &map[string]interface{}{})`` says of a body before decoding anything:
the syntax check (``checkValid``), then the type error for a top-level value that is not an object.
virt-api's expand-vm-spec handler decodes the body so first and answers 400 ``Can not unmarshal Request
body to struct, error: <this>`` (pkg/virt-api/rest/expand.go, ``ExpandSpecRequestHandler``).

KubeVirt's virt-api is built with Go 1.27, whose encoding/json runs on encoding/json/v2: ``checkValid``
reads the value with jsontext (internal/jsonwire's ``Consume*``, jsontext's ``consumeObject`` and
``consumeArray``) and ``transformSyntacticError`` turns its error into v1's words (``object name`` ->
``object key``, ``at start of value`` -> ``looking for beginning of value``, ``(expecting ...)`` dropped
except in literals). Input that ends inside a value, a number or a literal included, is ``unexpected end
of JSON input``; bytes that are not UTF-8 are allowed in strings (v1's legacy semantics).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

MAX_NESTING: Final = 10000  # jsontext maxNestingDepth
END_OF_INPUT: Final = "unexpected end of JSON input"
_HEX: Final = frozenset(b"0123456789abcdefABCDEF")
_DIGITS: Final = frozenset(b"0123456789")
_SIMPLE_ESCAPES: Final = frozenset(b'"\\/bfnrt')
_STRING_STOP: Final = re.compile(rb'["\\\x00-\x1f]')
_WHITESPACE: Final = re.compile(rb"[ \t\r\n]*")
# A well-formed scalar at once (the byte-wise reader words what is not); bytes that are not UTF-8 are allowed.
_SCALAR: Final = re.compile(
    rb'(?P<string>"(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+")'
    rb"|(?P<number>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    rb"|(?P<literal>true|false|null)"
)
_NAMED: Final = {0x07: "\\a", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x0B: "\\v"}


class _SyntaxError(Exception):
    pass


def _printable(char: str) -> bool:
    """Go's ``unicode.IsPrint``: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    return char == " " or unicodedata.category(char)[0] in "LMNPS"


def _escaped_rune(code: int, quote: str) -> str:
    char = chr(code)
    if char in (quote, "\\"):
        return "\\" + char
    if _printable(char):
        return char
    if code in _NAMED:
        return _NAMED[code]
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _runes(data: bytes) -> list[int | None]:
    """``data`` as Go ranges over it: a code point per UTF-8 sequence, None per byte that is not one."""
    out: list[int | None] = []
    i = 0
    while i < len(data):
        for size in (1, 2, 3, 4):
            try:
                out.append(ord(data[i : i + size].decode("utf-8")))
                i += size
                break
            except UnicodeDecodeError:
                continue
        else:
            out.append(None)
            i += 1
    return out


def quote_rune(data: bytes) -> str:
    """jsonwire's ``QuoteRune`` of the first rune of ``data``: ``'\\xff'`` for a byte that starts no UTF-8
    sequence, else ``strconv.QuoteRune``."""
    first = _runes(data[:4])[0] if data else None
    if first is None:
        return f"'\\x{data[0]:x}'"
    return f"'{_escaped_rune(first, chr(0x27))}'"


def _quote(data: bytes) -> str:
    """``strconv.Quote(string(data))``."""
    parts = [f"\\x{data[i]:02x}" if r is None else _escaped_rune(r, '"') for i, r in enumerate(_runes(data))]
    return '"' + "".join(parts) + '"'


def _escape_error(what: bytes) -> _SyntaxError:
    """``NewInvalidEscapeSequenceError``: the escape in backquotes, or quoted where it holds a backquote, a
    space, or anything not printable."""
    runes = _runes(what)
    plain = all(
        r is not None and chr(r) != "`" and not chr(r).isspace() and _printable(chr(r)) for r in runes
    )
    shown = f"`{what.decode()}`" if plain else _quote(what)
    return _SyntaxError(f"invalid escape sequence {shown} in string")


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.size = len(data)

    def fail(self, at: int, where: str) -> _SyntaxError:
        return _SyntaxError(f"invalid character {quote_rune(self.data[at : at + 4])} {where}")

    def space(self, i: int) -> int:
        i = _WHITESPACE.match(self.data, i).end()  # type: ignore[union-attr]  # matches the empty string too
        if i >= self.size:
            raise _SyntaxError(END_OF_INPUT)
        return i

    def scalar(self, i: int) -> int:
        """A string, number or literal from ``i`` (its first byte), quickly where it is well formed; else
        through the byte-wise reader, which words the error."""
        found = _SCALAR.match(self.data, i)
        if found is not None:
            end = found.end()
            if found.lastgroup != "number" or end >= self.size or self.data[end] not in b".eE":
                return end
        c = self.data[i]
        if c == 0x22:
            return self.string(i)
        if c == 0x2D or c in _DIGITS:
            return self.number(i)
        if c in b"tfn":
            return self.literal(i, b"true" if c == 0x74 else b"false" if c == 0x66 else b"null")
        raise self.fail(i, "looking for beginning of value")

    def string(self, i: int) -> int:
        """``ConsumeString`` from the opening quote at ``i``; the position after the closing one."""
        data, size = self.data, self.size
        i += 1
        while True:
            found = _STRING_STOP.search(data, i)  # skip the plain bytes at once
            if found is None:
                raise _SyntaxError(END_OF_INPUT)
            i = found.start()
            c = data[i]
            if c == 0x22:
                return i + 1
            if c == 0x5C:
                if i + 2 > size:
                    raise _SyntaxError(END_OF_INPUT)
                e = data[i + 1]
                if e in _SIMPLE_ESCAPES:
                    i += 2
                elif e == 0x75:  # u
                    if i + 6 > size:
                        if all(b in _HEX for b in data[i + 2 :]):
                            raise _SyntaxError(END_OF_INPUT)
                        raise _escape_error(data[i:])
                    if not all(b in _HEX for b in data[i + 2 : i + 6]):
                        raise _escape_error(data[i : i + 6])
                    i += 6
                else:
                    raise _escape_error(data[i : i + 2])
            elif c < 0x20:
                raise self.fail(i, "in string")
            else:
                i += 1

    def digits(self, i: int, *, one: bool) -> int:
        data, size = self.data, self.size
        if one:
            if i >= size:
                raise _SyntaxError(END_OF_INPUT)
            if data[i] not in _DIGITS:
                raise self.fail(i, "in numeric literal")
        while i < size and data[i] in _DIGITS:
            i += 1
        return i

    def number(self, i: int) -> int:
        """``ConsumeNumber``: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?"""
        data, size = self.data, self.size
        if data[i] == 0x2D:
            i += 1
        if i < size and data[i] == 0x30:
            i += 1
        else:
            i = self.digits(i, one=True)
        if i < size and data[i] == 0x2E:
            i = self.digits(i + 1, one=True)
        if i < size and data[i] in b"eE":
            i += 1
            if i < size and data[i] in b"+-":
                i += 1
            i = self.digits(i, one=True)
        return i

    def literal(self, i: int, word: bytes) -> int:
        for k, expected in enumerate(word):
            if i + k >= self.size:
                raise _SyntaxError(END_OF_INPUT)
            if self.data[i + k] != expected:
                raise self.fail(
                    i + k, f"in literal {word.decode()} (expecting {quote_rune(bytes([expected]))})"
                )
        return i + len(word)

    def value(self) -> None:
        """``ReadValue`` then ``CheckEOF``; raises the error, if any."""
        data, size = self.data, self.size
        stack: list[bool] = []  # True for an object
        i = self.space(0)
        while True:
            # at the start of a value
            c = data[i]
            opened = c in b"{["
            if opened:
                if len(stack) >= MAX_NESTING:
                    raise _SyntaxError("exceeded max depth")
                stack.append(c == 0x7B)
                i = self.space(i + 1)
                closer = 0x7D if stack[-1] else 0x5D
                if data[i] == closer:
                    stack.pop()
                    i += 1
                elif stack[-1]:
                    i = self.member_name(i)
                    continue
                else:
                    continue
            else:
                i = self.scalar(i)
            # after a value: close what ends here, find the next value
            while True:
                if not stack:
                    i = _WHITESPACE.match(data, i).end()  # type: ignore[union-attr]
                    if i < size:
                        raise self.fail(i, "after top-level value")
                    return
                i = self.space(i)
                c = data[i]
                if c == 0x2C:  # ,
                    i = self.space(i + 1)
                    if stack[-1]:
                        i = self.member_name(i)
                    break
                if c == (0x7D if stack[-1] else 0x5D):
                    stack.pop()
                    i += 1
                    continue
                raise self.fail(i, "after object key:value pair" if stack[-1] else "after array element")

    def member_name(self, i: int) -> int:
        """A member's name and its colon from ``i``; the position of its value."""
        if self.data[i] != 0x22:
            raise self.fail(i, "looking for beginning of object key string")
        i = self.space(self.scalar(i))
        if self.data[i] != 0x3A:  # :
            raise self.fail(i, "after object key")
        return self.space(i + 1)


def syntax_error(data: bytes) -> str | None:
    """``checkValid``'s error for ``data``, or None when it is one JSON value."""
    try:
        _Reader(data).value()
    except _SyntaxError as err:
        return str(err)
    return None


_TOP_LEVEL_TYPES: Final = {0x5B: "array", 0x22: "string", 0x74: "bool", 0x66: "bool"}


def unmarshal_error(data: bytes) -> str | None:
    """``json.Unmarshal(data, &map[string]interface{}{})``'s error, or None where it decodes (an object,
    or ``null``)."""
    problem = syntax_error(data)
    if problem is not None:
        return problem
    first = data.lstrip(b" \t\r\n")[:1]
    if first in (b"{", b"n"):
        return None
    kind = _TOP_LEVEL_TYPES.get(first[0], "number")
    return f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
