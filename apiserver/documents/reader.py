"""One hardened way to turn bytes into JSON values: PUT bodies, the command line and the folder source.

JSON is tried first (orjson, then the standard library for what orjson cannot keep exactly); anything
else is YAML, read the way ``kubectl`` and kube-apiserver read it (``sigs.k8s.io/yaml``, i.e. go-yaml
v2) and built straight from libyaml's events, so that no document can cost more than its size:

- **Values are JSON's.** Plain scalars resolve as go-yaml v2 resolves them: ``y``/``yes``/``on`` and
  ``n``/``no``/``off`` are booleans, ``1e3`` is a number, ``0x1F``/``0o17``/``017``/``0b1`` are
  integers, timestamps and sexagesimal numbers (``52:54:00:12:34:56``) stay text, integers beyond
  64 bits become floats and numbers beyond a float's range stay text. ``!!binary`` is decoded to text,
  ``!!set`` is a mapping of nulls, other tags on collections are ignored and unknown tags on scalars
  leave the text. ``.nan`` and ``.inf`` are refused (JSON has no such number).
- **Keys are strings.** Scalar keys become strings as ``sigs.k8s.io/yaml`` makes them (``1`` ->
  ``"1"``, ``true`` -> ``"true"``, ``1e3`` -> ``"1000"``); a null key or a collection as a key is refused.
- **Nesting** deeper than :data:`MAX_DEPTH` levels is refused (JSON and YAML alike).
- **Aliases** may repeat at most as much as the input holds (:func:`alias_budget`: the input's length,
  at least 64 KiB, counted as one per value plus the characters of each string); a recursive anchor,
  an undefined alias and more than that are refused. Kubernetes' YAML reader has a similar rule
  ("excessive aliasing"). What an alias stands for is copied, so no two places share one object.
- **Duplicate keys** are not an error here: the last one wins, as in Go, and each is reported as a
  :class:`Duplicate` (its field path) for the caller's field-validation policy to judge.
- **Numbers in JSON** must be within a float's range (KubeVirt's PUT refuses others); integers are kept
  exactly, so a big integer in ``metadata.managedFields[].fieldsV1`` comes back as it was written.
- **Cost** stays proportional to the size: JSON is checked without a walk when it cannot nest too deep
  and keys are counted rather than compared; text that starts like JSON but is not JSON is read as
  flow-style YAML only up to :data:`FLOW_YAML_LIMIT`.

Every refusal is a :class:`DocumentError` naming the document, the line (YAML) and the field path.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import orjson
import yaml
from yaml import events as ev

from apiserver.render.golang.values import MAX_DEPTH

try:  # libyaml's parser; the pure-Python one has the same events
    from yaml._yaml import CParser as _Parser
except ImportError:  # pragma: no cover - PyYAML built without libyaml

    class _Parser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):  # type: ignore[no-redef]
        def __init__(self, stream: Any) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)


__all__ = [
    "FLOW_YAML_LIMIT",
    "MAX_DEPTH",
    "Document",
    "DocumentError",
    "Duplicate",
    "KubeDumper",
    "alias_budget",
    "looks_like_json",
    "read_documents",
    "reads_back_as_text",
]

MIN_ALIAS_BUDGET: Final = 64 * 1024
FLOW_YAML_LIMIT: Final = 256 * 1024


def alias_budget(size: int) -> int:
    """How much the aliases of an input of ``size`` bytes may repeat in all."""
    return max(size, MIN_ALIAS_BUDGET)


class DocumentError(ValueError):
    """Bytes that are no acceptable JSON/YAML document; ``str()`` says where and why.

    ``document`` is 1-based (None for JSON text, which has one), ``line`` 1-based when known, ``path``
    the field path within the document when known.
    """

    def __init__(
        self,
        problem: str,
        *,
        document: int | None = None,
        line: int | None = None,
        path: str = "",
        syntax: str | None = None,
    ) -> None:
        self.problem = problem
        self.document = document
        self.line = line
        self.path = path
        self.syntax = syntax  # "JSON" or "YAML" when the text is not that; None for a refused value
        super().__init__(self.describe())

    def where(self) -> str:
        parts = [f"document {self.document}"] if self.document is not None else []
        if self.line is not None:
            parts.append(f"line {self.line}")
        return ", ".join(parts)

    def describe(self) -> str:
        where = self.where()
        path = self.path if len(self.path) <= 160 else self.path[:157] + "..."
        what = f"{path}: {self.problem}" if path else self.problem
        return f"{where}: {what}" if where else what


@dataclass(frozen=True, slots=True)
class Duplicate:
    """A key given twice in one mapping (the last value was kept)."""

    path: str
    line: int | None = None

    @property
    def message(self) -> str:
        """kube-apiserver's wording for it."""
        return f'duplicate field "{self.path}"'


class Document(NamedTuple):
    """One document of the input: its 1-based number, its value (None when empty) and its duplicates."""

    number: int
    value: Any
    duplicates: tuple[Duplicate, ...] = ()


_JSON_START = re.compile(rb"[ \t\r\n]*[\[{]")
_JSON_START_TEXT = re.compile(r"[ \t\r\n]*[\[{]")


def looks_like_json(data: bytes | str) -> bool:
    """Whether the text starts like a JSON object or array (YAML flow collections do too)."""
    if data[:1] in ("{", b"{"):
        return True
    if isinstance(data, bytes):
        return _JSON_START.match(data) is not None
    return _JSON_START_TEXT.match(data) is not None


def _short(text: str, limit: int = 64) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _join(path: str, key: str) -> str:
    key = _short(key)
    return f"{path}.{key}" if path else key


def read_documents(data: bytes | str, *, duplicates: bool = True) -> list[Document]:
    """Every document of ``data`` (JSON, a stream of JSON values, or YAML), empty ones as None.

    Text that starts like JSON and is neither JSON nor YAML reports the JSON error, anything else the
    YAML error, whatever a caller was told the text is. Text that starts like JSON is read as YAML (a
    flow collection, ``{a: 1}``) only up to :data:`FLOW_YAML_LIMIT`, so that broken JSON of the body
    limit's size costs about what valid JSON does. Raises :class:`DocumentError`.

    ``duplicates=False``: a caller that will not judge keys given twice (field validation ``Ignore``)
    spares JSON text the search for them (a dump and three scans, ~10% of a warm render); the last
    value still wins, and a document may then report none of its duplicates.
    """
    if isinstance(data, bytes) and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    elif isinstance(data, str) and data.startswith("\ufeff"):
        data = data[1:]
    if looks_like_json(data):
        try:
            return _json_documents(data, duplicates)
        except DocumentError as json_err:
            if json_err.syntax != "JSON" or len(data) > FLOW_YAML_LIMIT:
                raise
            try:  # flow-style YAML ({a: 1}) starts like JSON too
                return _yaml_documents(data)
            except DocumentError:
                raise json_err from None
    return _yaml_documents(data)


# --- JSON --------------------------------------------------------------------------------------------

_BIG_FLOAT: Final = float(1 << 63)


class _TooDeep(Exception):
    def __init__(self) -> None:
        self.segments: list[str] = []


def _scan_json(value: Any, depth: int, flags: list[bool]) -> int:
    """Keys in ``value``; raises _TooDeep past MAX_DEPTH; flags[0] set for floats that may be integers
    orjson could not keep (beyond 64 bits)."""
    if depth > MAX_DEPTH:
        raise _TooDeep
    keys = 0
    if type(value) is dict:
        keys = len(value)
        items: Any = value.items()
    else:
        items = enumerate(value)
    for key, item in items:
        t = type(item)
        if t is dict or t is list:
            try:
                keys += _scan_json(item, depth + 1, flags)
            except _TooDeep as deep:
                deep.segments.append(key if type(key) is str else f"[{key}]")
                raise
        elif t is float and (item >= _BIG_FLOAT or item <= -_BIG_FLOAT):
            flags[0] = True
    return keys


def _segments_path(segments: list[str]) -> str:
    path = ""
    for seg in reversed(segments):
        path = path + seg if seg.startswith("[") else _join(path, seg)
    return path


_SPACED_KEY = re.compile(rb'"[ \t\r\n]+:')


def _may_have_duplicates(data: bytes, keys: int) -> bool:
    """False when the text provably names no key twice: every key ends in ``":`` (no whitespace before
    the colon) and those, less the escaped quotes inside strings, number exactly the parsed keys."""
    ends = data.count(b'":')
    if ends != keys:
        escaped = data.count(b'\\":')
        if not escaped or b'\\\\":' in data:
            return True
        ends -= escaped
        if ends != keys:
            return True
    return _SPACED_KEY.search(data) is not None


def _json_error(err: json.JSONDecodeError | orjson.JSONDecodeError) -> DocumentError:
    msg = getattr(err, "msg", str(err))
    lineno = getattr(err, "lineno", None)
    if msg.startswith("number is infinity"):  # orjson's words for a number beyond a float's range
        return DocumentError("number out of range", line=lineno)
    if msg.startswith("depth limit exceeded"):
        return DocumentError(f"nested deeper than {MAX_DEPTH} levels", line=lineno)
    lineno = getattr(err, "lineno", None)
    colno = getattr(err, "colno", None)
    problem = msg + (f" (column {colno})" if colno else "")
    return DocumentError(problem, line=lineno, syntax="JSON")


# The text's shape in one pass: digits as 0, openers as {, everything else a space.
_SHAPE = bytes(
    ord("0") if chr(c).isdigit() and c < 128 else ord("{") if c in b"{[" else ord(" ") for c in range(256)
)
_LONG_NUMBER = b"0" * 20  # 20 digits in a row: maybe an integer beyond 64 bits (orjson makes it a float)


def _key_count(out: bytes) -> int | None:
    """Keys in orjson's output of a value: each key ends in ``":``, quotes inside strings are escaped
    (``\\":``); None when a key ends in a backslash and the count would be ambiguous."""
    escaped = out.count(b'\\":')
    if escaped and b'\\\\":' in out:
        return None
    return out.count(b'":') - escaped


def _json_documents(data: bytes | str, duplicates: bool = True) -> list[Document]:
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        if err.msg.startswith("trailing characters") or err.msg.startswith("unexpected content after"):
            return _json_stream(raw)
        raise _json_error(err) from None
    if type(doc) is not dict and type(doc) is not list:
        return [Document(1, doc)]
    shape = raw.translate(_SHAPE)
    if shape.count(b"{") > MAX_DEPTH or _LONG_NUMBER in shape:
        # Maybe too deep, or an integer orjson could not keep: walk it.
        flags = [False]
        try:
            keys: int | None = _scan_json(doc, 1, flags)
        except _TooDeep as deep:
            path = _segments_path(deep.segments)
            raise DocumentError(f"nested deeper than {MAX_DEPTH} levels", path=path) from None
        exact = flags[0]
        if not exact and not duplicates:
            return [Document(1, doc)]
    elif not duplicates:  # the usual small body, its duplicates not wanted: as orjson read it
        return [Document(1, doc)]
    else:  # the usual small body: at most 100 openers, so at most 100 levels
        keys, exact = _key_count(orjson.dumps(doc)), False
    if exact or keys is None or (keys and _may_have_duplicates(raw, keys)):
        docs = _json_stream(raw)
        if len(docs) == 1:
            return [Document(1, docs[0].value, docs[0].duplicates)]
        return docs  # pragma: no cover - orjson read one value
    return [Document(1, doc)]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _json_stream(raw: bytes) -> list[Document]:
    """The exact reader: a stream of JSON values, integers kept exactly, duplicate keys reported."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DocumentError(f"not UTF-8 text (byte {err.start})", syntax="JSON") from None
    dup_keys: dict[int, list[str]] = {}

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):
            seen: set[str] = set()
            dups: list[str] = []
            for key, _ in pairs:
                if key in seen and key not in dups:
                    dups.append(key)
                seen.add(key)
            dup_keys[id(out)] = dups
        return out

    decoder = json.JSONDecoder(object_pairs_hook=pairs_hook, parse_constant=_reject_constant)
    values: list[Any] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end:
            break
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise _json_error(err) from None
        except RecursionError:
            raise DocumentError(f"nested deeper than {MAX_DEPTH} levels") from None
        except ValueError as err:  # NaN/Infinity, or an integer of more digits than Python converts
            raise DocumentError(str(err), syntax="JSON") from None
        values.append(value)
    docs = []
    for number, value in enumerate(values, start=1):
        flags = [False]
        try:
            if type(value) is dict or type(value) is list:
                _scan_json(value, 1, flags)
        except _TooDeep as deep:
            document = number if len(values) > 1 else None
            path = _segments_path(deep.segments)
            raise DocumentError(
                f"nested deeper than {MAX_DEPTH} levels", document=document, path=path
            ) from None
        _check_json_numbers(value, "")
        duplicates = tuple(_locate_duplicates(value, dup_keys)) if dup_keys else ()
        docs.append(Document(number, value, duplicates))
    return docs


_FLOAT_MAX: Final = 1.7976931348623157e308


def _check_json_numbers(value: Any, path: str) -> None:
    """Integers beyond a float's range are refused, as Go's decoding into interface{} refuses them."""
    if type(value) is dict:
        for key, item in value.items():
            _check_json_numbers(item, _join(path, key))
    elif type(value) is list:
        for i, item in enumerate(value):
            _check_json_numbers(item, f"{path}[{i}]")
    elif type(value) is int and value.bit_length() > 1024:
        raise DocumentError("number out of range", path=path)


def _locate_duplicates(root: Any, dup_keys: dict[int, list[str]]) -> list[Duplicate]:
    found: list[Duplicate] = []

    def walk(value: Any, path: str) -> None:
        if type(value) is dict:
            for key in dup_keys.get(id(value), ()):
                found.append(Duplicate(_join(path, key)))
            for key, item in value.items():
                if type(item) is dict or type(item) is list:
                    walk(item, _join(path, key))
        else:
            for i, item in enumerate(value):
                if type(item) is dict or type(item) is list:
                    walk(item, f"{path}[{i}]")

    if type(root) is dict or type(root) is list:
        walk(root, "")
    return found


# --- YAML scalars, as go-yaml v2 resolves them --------------------------------------------------------

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = _TAG + "str", _TAG + "int", _TAG + "float", _TAG + "bool", _TAG + "null"
_BINARY, _TIMESTAMP, _MERGE = _TAG + "binary", _TAG + "timestamp", _TAG + "merge"


class _Special:
    """A resolved plain scalar that is no JSON value (.inf, .nan, the merge key)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


_NAN, _INF, _MERGE_KEY = _Special(".nan"), _Special(".inf"), _Special("<<")

_WORDS: dict[str, Any] = {}
for _words, _value in (
    (("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    (("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    (("", "~", "null", "Null", "NULL"), None),
    ((".nan", ".NaN", ".NAN"), _NAN),
    ((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"), _INF),
    (("<<",), _MERGE_KEY),
):
    for _word in _words:
        _WORDS[_word] = _value

# go-yaml v2's first-character hints: S sign, D digit, M in the word table, . float.
_F32 = struct.Struct("f")

_HINT: dict[str, str] = {"+": "S", "-": "S", ".": ".", "<": "M"}
_HINT.update(dict.fromkeys("0123456789", "D"))
_HINT.update(dict.fromkeys("yYnNtTfFoO~", "M"))

_GO_INT = re.compile(r"([-+]?)(0[bB][01]+|0[oO][0-7]+|0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_YAML_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9]+(?:[eE][-+]?[0-9]+)?")
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1
# Digits a 64-bit integer can have per base (leading zeros aside).
_MAX_DIGITS = {2: 64, 8: 22, 10: 20, 16: 16}


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64), then ParseUint: the integer, or None when neither accepts it."""
    if len(text) < 19 and text.isdigit() and text.isascii() and (text[0] != "0" or len(text) == 1):
        return int(text)  # the usual decimal
    match = _GO_INT.fullmatch(text)
    if match is None:
        return None
    sign, body = match.groups()
    if len(body) > 1 and body[1] in "bBoOxX":
        base = {"b": 2, "o": 8, "x": 16}[body[1].lower()]
        digits = body[2:]
    elif body.startswith("0"):
        base, digits = 8, body[1:] or "0"
    else:
        base, digits = 10, body
    digits = digits.lstrip("0") or "0"
    if len(digits) > _MAX_DIGITS[base]:
        return None
    number = int(digits, base)
    value = -number if sign == "-" else number
    if _INT64_MIN <= value <= _INT64_MAX:
        return value
    if not sign and value <= _UINT64_MAX:
        return value
    return None


def _go_float(text: str) -> float | None:
    """strconv.ParseFloat for go-yaml's float syntax; None when out of range (Go's ErrRange)."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        return None
    return value


def _resolve_plain(text: str) -> Any:
    """A plain scalar's value, as go-yaml v2 resolves it (the caller handles .inf/.nan/<<)."""
    hint = _HINT.get(text[:1]) if text else "M"
    if hint is None:
        return text
    word = _WORDS.get(text, text)
    if word is not text:
        return word
    if hint == "M":
        return text
    if hint == ".":
        if _DOT_FLOAT.fullmatch(text):
            number = _go_float(text)
            return text if number is None else number
        return text
    plain = text.replace("_", "") if "_" in text else text
    integer = _go_int(plain)
    if integer is not None:
        return integer
    if _YAML_FLOAT.fullmatch(plain):
        number = _go_float(plain)
        if number is not None:
            return number
    return text


def _float_key(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 32), as sigs.k8s.io/yaml turns a float key into a string."""
    if value != value:
        return ".nan"
    if value in (float("inf"), float("-inf")):
        return ".inf" if value > 0 else "-.inf"
    if abs(value) > 3.4028235677973366e38:
        return "+Inf" if value > 0 else "-Inf"  # what Go prints for a float32 overflow
    f32 = _F32.unpack(_F32.pack(value))[0]
    if f32 == 0:
        return "0"
    text = ""
    for precision in range(1, 10):
        text = f"{f32:.{precision - 1}e}"
        if _F32.unpack(_F32.pack(float(text)))[0] == f32:
            break
    mantissa, exp_text = text.split("e")
    exponent = int(exp_text)
    digits = mantissa.replace(".", "").replace("-", "").rstrip("0") or "0"
    sign = "-" if f32 < 0 else ""
    if exponent < -4 or exponent >= 6:  # 'g' with the shortest digits decides at precision 6
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent >= 0:
        whole = digits[: exponent + 1].ljust(exponent + 1, "0")
        frac = digits[exponent + 1 :]
        return f"{sign}{whole}" + (f".{frac}" if frac else "")
    return f"{sign}0.{'0' * (-exponent - 1)}{digits}"


# --- YAML documents --------------------------------------------------------------------------------


class _Frame:
    """An open mapping or sequence: the container, where it sits, and what it waits for."""

    __slots__ = ("anchor", "container", "explicit", "is_map", "key", "segment")

    def __init__(self, container: Any, is_map: bool, segment: str, anchor: str | None) -> None:
        self.container = container
        self.is_map = is_map
        self.segment = segment  # its key or [index] in the parent ("" at the root)
        self.anchor = anchor
        self.key: Any = _NO_KEY  # a mapping's pending key
        self.explicit: set[str] | None = None  # the keys written out, once a merge added others


_NO_KEY: Final = object()


def _copy(value: Any) -> tuple[Any, int, int]:
    """A deep copy of a JSON value, its size (one per value plus string lengths) and its height."""
    t = type(value)
    if t is dict:
        out: dict[str, Any] = {}
        size, height = 1, 0
        for key, item in value.items():
            out[key], s, h = _copy(item)
            size += s + len(key)
            height = max(height, h)
        return out, size, height + 1
    if t is list:
        items = []
        size, height = 1, 0
        for item in value:
            copied, s, h = _copy(item)
            items.append(copied)
            size += s
            height = max(height, h)
        return items, size, height + 1
    if t is str:
        return value, 1 + len(value), 0
    return value, 1, 0


def _stack_path(stack: list[_Frame], extra: str = "") -> str:
    path = ""
    for frame in stack[1:]:
        seg = frame.segment
        path = path + seg if seg.startswith("[") else _join(path, seg)
    if extra:
        path = path + extra if extra.startswith("[") else _join(path, extra)
    return path


def _pending(stack: list[_Frame]) -> str:
    """The path segment of the value about to be added to the innermost open collection."""
    if not stack:
        return ""
    top = stack[-1]
    if top.is_map:
        return top.key if type(top.key) is str else ""
    return f"[{len(top.container)}]"


class _YAMLBuilder:
    """Values from the events of one YAML stream (see the module docstring for the rules)."""

    def __init__(self, data: bytes | str, budget: int) -> None:
        self.parser = _Parser(data)
        self.budget = budget
        self.number = 0

    def fail(self, problem: str, event: Any, stack: list[_Frame], extra: str = "") -> DocumentError:
        line = event.start_mark.line + 1 if event is not None and event.start_mark is not None else None
        return DocumentError(problem, document=self.number, line=line, path=_stack_path(stack, extra))

    def documents(self) -> list[Document]:
        get = self.parser.get_event
        docs: list[Document] = []
        while True:
            event = get()
            kind = type(event)
            if kind is ev.DocumentStartEvent:
                self.number += 1
                value, duplicates = self.document(get)
                docs.append(Document(self.number, value, tuple(duplicates)))
            elif kind is ev.StreamEndEvent:
                return docs

    def scalar(self, event: Any, stack: list[_Frame]) -> Any:
        """A scalar's value; .inf, .nan and the merge key come back as _Special for the caller."""
        text: str = event.value
        tag = event.tag
        if tag is None:
            return _resolve_plain(text) if event.implicit[0] else text
        if tag in ("!", _STR, _TIMESTAMP):
            return text
        if tag == _BINARY:
            try:
                return base64.b64decode("".join(text.split()), validate=True).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                raise self.fail(
                    "!!binary value contains invalid base64 data", event, stack, _pending(stack)
                ) from None
        want = _TYPED.get(tag)
        if want is None:
            return text  # an unknown tag on a scalar leaves its text (go-yaml v2)
        value = _resolve_plain(text)
        if type(value) not in want:
            short = "!!" + tag[len(_TAG) :]
            raise self.fail(f"cannot decode `{_short(text)}` as a {short}", event, stack, _pending(stack))
        return float(value) if tag == _FLOAT else value

    def key_of(self, value: Any, text: str, event: Any, stack: list[_Frame]) -> Any:
        """A mapping key as sigs.k8s.io/yaml spells it."""
        t = type(value)
        if t is str or value is _MERGE_KEY:
            return value
        if t is bool:
            return "true" if value else "false"
        if t is int:
            return str(value)
        if t is float:
            return _float_key(value)
        if t is _Special:
            return ".nan" if value is _NAN else ("-.inf" if text.startswith("-") else ".inf")
        raise self.fail("a null mapping key is not supported", event, stack)

    def document(self, get: Callable[[], Any]) -> tuple[Any, list[Duplicate]]:
        stack: list[_Frame] = []
        anchors: dict[str, Any] = {}
        open_anchors: set[str] = set()
        duplicates: list[Duplicate] = []
        cache: dict[str, Any] = {}  # plain scalars already resolved
        root: Any = None
        scalar_event, mapping_start, mapping_end = ev.ScalarEvent, ev.MappingStartEvent, ev.MappingEndEvent
        sequence_start, sequence_end, alias_event = ev.SequenceStartEvent, ev.SequenceEndEvent, ev.AliasEvent
        while True:
            event = get()
            kind = type(event)
            if kind is scalar_event:
                if event.tag is None:
                    text = event.value
                    if event.implicit[0]:
                        value = cache.get(text, _NO_KEY)
                        if value is _NO_KEY:
                            value = _resolve_plain(text)
                            if len(text) <= 32:
                                cache[text] = value
                    else:
                        value = text
                else:
                    value = self.scalar(event, stack)
                if event.anchor is not None:
                    anchors[event.anchor] = value
            elif kind is mapping_start or kind is sequence_start:
                if len(stack) >= MAX_DEPTH:
                    raise self.fail(f"nested deeper than {MAX_DEPTH} levels", event, stack, _pending(stack))
                segment = ""
                if stack:
                    top = stack[-1]
                    if not top.is_map:
                        segment = f"[{len(top.container)}]"
                    elif top.key is _NO_KEY:
                        raise self.fail("a mapping key must be a scalar, not a collection", event, stack)
                    elif type(top.key) is str:
                        segment = top.key
                    else:
                        segment = "<<"
                anchor = event.anchor
                if anchor is not None:
                    open_anchors.add(anchor)
                stack.append(
                    _Frame({} if kind is mapping_start else [], kind is mapping_start, segment, anchor)
                )
                continue
            elif kind is mapping_end or kind is sequence_end:
                frame = stack.pop()
                value = frame.container
                if frame.anchor is not None:
                    open_anchors.discard(frame.anchor)
                    anchors[frame.anchor] = value
            elif kind is alias_event:
                name = event.anchor
                if name in open_anchors:
                    raise self.fail(
                        f'anchor "{_short(name)}" value contains itself', event, stack, _pending(stack)
                    )
                if name not in anchors:
                    raise self.fail(
                        f'unknown anchor "{_short(name)}" referenced', event, stack, _pending(stack)
                    )
                value, size, height = _copy(anchors[name])
                self.budget -= size
                if self.budget < 0:
                    raise self.fail(
                        "too much aliasing: the aliases repeat more than the input holds",
                        event,
                        stack,
                        _pending(stack),
                    )
                if len(stack) + height > MAX_DEPTH:
                    raise self.fail(f"nested deeper than {MAX_DEPTH} levels", event, stack, _pending(stack))
            elif kind is ev.DocumentEndEvent:
                if type(root) is _Special:
                    root = self.special_value(root, None, stack)
                return root, duplicates
            else:  # pragma: no cover - the parser sends nothing else inside a document
                continue
            if not stack:
                root = value
                continue
            top = stack[-1]
            if not top.is_map:
                if type(value) is _Special:
                    value = self.special_value(value, event, stack)
                top.container.append(value)
            elif top.key is _NO_KEY:
                key = self.key_of(value, event.value if kind is scalar_event else "", event, stack)
                if key is not _MERGE_KEY:
                    explicit = top.explicit
                    if key in (top.container if explicit is None else explicit):
                        path = _stack_path(stack, key)
                        duplicates.append(Duplicate(path, event.start_mark.line + 1))
                    elif explicit is not None:
                        explicit.add(key)
                top.key = key
            else:
                key = top.key
                top.key = _NO_KEY
                if key is _MERGE_KEY:
                    self.merge(top, value, event, stack)
                else:
                    if type(value) is _Special:
                        value = self.special_value(value, event, stack, key)
                    top.container[key] = value

    def special_value(self, value: Any, event: Any, stack: list[_Frame], extra: str = "") -> Any:
        if value is _MERGE_KEY:
            return "<<"
        raise self.fail(f"{value.name} is not a JSON number", event, stack, extra or _pending(stack))

    def merge(self, frame: _Frame, value: Any, event: Any, stack: list[_Frame]) -> None:
        """``<<: *map`` or ``<<: [*a, *b]``: go-yaml v2 sets the merged keys there (earlier maps win)."""
        sources = list(reversed(value)) if type(value) is list else [value]
        if frame.explicit is None:
            frame.explicit = set(frame.container)
        for source in sources:
            if type(source) is not dict:
                raise self.fail(
                    "map merge requires a map or a sequence of maps as the value", event, stack, "<<"
                )
            frame.container.update(source)


_TYPED: Final[dict[str, tuple[type, ...]]] = {
    _INT: (int,),
    _FLOAT: (float, int),
    _BOOL: (bool,),
    _NULL: (type(None),),
}


def _yaml_documents(data: bytes | str) -> list[Document]:
    builder = _YAMLBuilder(data, alias_budget(len(data)))
    try:
        return builder.documents()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "invalid YAML"
        if problem.startswith("exceeded maximum nesting depth"):
            # libyaml 0.2.5+ (PyYAML >= 6.0.3 wheels) stops at its own depth limit (1000) before our
            # builder sees the event; the user is told the same limit whichever counted first.
            problem = f"nested deeper than {MAX_DEPTH} levels"
        elif err.context and err.problem:
            context_line = f", line {err.context_mark.line + 1}" if err.context_mark else ""
            problem = f"{err.problem} ({err.context}{context_line})"
        document = max(builder.number, 1)
        line = mark.line + 1 if mark else None
        raise DocumentError(problem, document=document, line=line, syntax="YAML") from None
    except yaml.reader.ReaderError as err:
        # Bad encoding or control characters: the reader knows a character position, not a line.
        first = str(err).split("\n", 1)[0]
        raise DocumentError(
            f"{first} (character {err.position})", document=max(builder.number, 1), syntax="YAML"
        ) from None
    except yaml.YAMLError as err:  # pragma: no cover - every PyYAML error is one of the above
        raise DocumentError(str(err), document=max(builder.number, 1), syntax="YAML") from None


# --- writing YAML that reads back the same ----------------------------------------------------------


def reads_back_as_text(text: str) -> bool:
    """Whether ``text`` written as a plain YAML scalar reads back as this string (not ``y`` -> true)."""
    return type(_resolve_plain(text)) is str


class KubeDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, quoting every string that go-yaml v2 (kubectl, kube-apiserver) would read
    as something else when plain: ``y``, ``n``, ``1e3``, ``0o17``, ``.5``... (PyYAML's YAML 1.1
    resolver leaves those plain)."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = None if reads_back_as_text(value) else "'"
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


KubeDumper.add_representer(str, _represent_str)
