"""Go ``encoding/json`` for KubeVirt's types, on plain Python dicts.

KubeVirt decodes every input into typed Go structs and encodes the result again, so what comes out is
shaped by Go: unknown members vanish, zero values with ``omitempty`` vanish, non-pointer structs and
members without ``omitempty`` appear, quantities are re-rendered, members follow declaration order. This
module reproduces both directions from the generated type graph.

Speed matters (every request decodes and encodes a whole VM), so each struct type gets its decoder and
encoder closure built once at import; a member costs one dict lookup and one small mode dispatch.

The decoded form (what :func:`decode` returns) keeps Go's *presence* semantics with plain values:

* a member is present when Go's value is non-nil (pointers, maps, slices) or non-zero (non-pointer
  scalars); non-pointer structs and custom types are present when the input had them;
* quantities are canonical strings, times are ``YYYY-MM-DDTHH:MM:SSZ`` (the zero time spelled out),
  durations Go's ``String()``, float32 numbers their shortest text;
* ``RawExtension``/``FieldsV1`` values are the input value itself (not copied).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apiserver.render.gojson import goscalars
from apiserver.render.gojson.errors import GoDecodeError
from apiserver.render.gojson.types import INT_RANGES, STRUCTS, go_name, resolve_root, short_name
from apiserver.render.quantity import QuantityError, canonical

__all__ = ["ZERO_TIME", "decode", "encode", "roundtrip"]

ZERO_TIME = "0001-01-01T00:00:00Z"

Decoder = Callable[[Any, bool, Any], Any]
Encoder = Callable[[Any], Any]

_MISSING: Any = object()
_EMPTY: dict[str, Any] = {}


class _Fail(Exception):
    """A decode failure on its way up; the decoders it passes through add the path."""

    def __init__(self, what: str | None, go_type: str = "", message: str | None = None) -> None:
        super().__init__(what)
        self.what = what  # Go's JSON value description ("string", "number 1.5"), for type errors
        self.go_type = go_type
        self.message = message  # a parser's own error text instead
        self.segments: list[str] = []  # innermost first
        self.struct: str | None = None


def _json_type(v: Any) -> str:
    if isinstance(v, str):
        return "string"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    return "null"


def _fold(name: str) -> str:
    """strings.EqualFold's simple folding, enough for ASCII member names (Kelvin sign and long s fold)."""
    return name.lower() if name.isascii() else name.lower().replace("\u017f", "s")


# --- scalar decoders (signature: value, exact_names, into) -------------------------------------------


def _string_decoder(go_type: str) -> Decoder:
    def dec(v: Any, exact: bool, into: Any) -> Any:
        if type(v) is str:
            return v
        raise _Fail(_json_type(v), go_type)

    return dec


def _bool_decoder(go_type: str) -> Decoder:
    def dec(v: Any, exact: bool, into: Any) -> Any:
        if v is True or v is False:
            return v
        raise _Fail(_json_type(v), go_type)

    return dec


def _int_decoder(kind: str, go_type: str) -> Decoder:
    lo, hi = INT_RANGES[kind]

    def dec(v: Any, exact: bool, into: Any) -> Any:
        if type(v) is int:
            if lo <= v <= hi:
                return v
            raise _Fail(f"number {v}", go_type)
        if type(v) is float:
            raise _Fail(f"number {v!r}", go_type)
        raise _Fail(_json_type(v), go_type)

    return dec


def _float32_decoder(go_type: str) -> Decoder:
    def dec(v: Any, exact: bool, into: Any) -> Any:
        if type(v) is int or type(v) is float:
            try:
                return goscalars.float32_value(float(v))
            except (goscalars.ScalarError, OverflowError):
                raise _Fail(f"number {v!r}", go_type) from None
        raise _Fail(_json_type(v), go_type)

    return dec


def _dec_quantity(v: Any, exact: bool, into: Any) -> Any:
    try:
        return canonical(v)  # strings and numbers; anything else is a format error, as in Go
    except QuantityError as err:
        raise _Fail(None, message=str(err)) from None


def _dec_time(v: Any, exact: bool, into: Any) -> Any:
    if type(v) is str:
        try:
            return goscalars.parse_time(v) or ZERO_TIME
        except goscalars.ScalarError as err:
            raise _Fail(None, message=str(err)) from None
    raise _Fail(None, message=f"json: cannot unmarshal {_json_type(v)} into Go value of type string")


def _dec_duration(v: Any, exact: bool, into: Any) -> Any:
    if type(v) is str or v is None:
        try:
            return goscalars.format_duration(goscalars.parse_duration(v or ""))
        except goscalars.ScalarError as err:
            raise _Fail(None, message=str(err)) from None
    raise _Fail(None, message=f"json: cannot unmarshal {_json_type(v)} into Go value of type string")


def _dec_int_or_string(v: Any, exact: bool, into: Any) -> Any:
    if type(v) is str:
        return v
    if type(v) is int and -(1 << 31) <= v < (1 << 31):
        return v
    what = f"number {v!r}" if type(v) is int or type(v) is float else _json_type(v)
    raise _Fail(None, message=f"json: cannot unmarshal {what} into Go value of type int32")


def _dec_raw(v: Any, exact: bool, into: Any) -> Any:
    return v


_CUSTOM_DECODERS: dict[str, Decoder] = {
    "quantity": _dec_quantity,
    "time": _dec_time,
    "duration": _dec_duration,
    "intorstring": _dec_int_or_string,
    "raw": _dec_raw,
}
_CUSTOM_ZERO_JSON: dict[str, Any] = {
    "quantity": "0",
    "time": None,
    "duration": "0s",
    "intorstring": 0,
    "raw": None,
}


def _enc_quantity(v: Any) -> Any:
    return canonical(v)


def _enc_time(v: Any) -> Any:
    return None if v == ZERO_TIME else v


def _identity(v: Any) -> Any:
    return v


_CUSTOM_ENCODERS: dict[str, Encoder] = {
    "quantity": _enc_quantity,
    "time": _enc_time,
    "duration": _identity,
    "intorstring": _identity,
    "raw": _identity,
}


def _custom_is_zero(kind: str, encoded: Any) -> bool:
    """``IsZero()`` for omitzero (only Quantity and Time have it)."""
    return encoded is None or (kind == "quantity" and encoded == "0")


# --- decode hooks -------------------------------------------------------------------------------------


def _canonical_ips(values: Any) -> Any:
    if type(values) is list:
        return [goscalars.canonical_ip(s) if type(s) is str else s for s in values]
    return values


def _hook_dns(out: dict[str, Any]) -> None:
    dns = out.get("dnsConfig")
    if type(dns) is dict and "nameservers" in dns:
        dns["nameservers"] = _canonical_ips(dns["nameservers"])


def _hook_ntp(out: dict[str, Any]) -> None:
    if "ntpServers" in out:
        out["ntpServers"] = _canonical_ips(out["ntpServers"])


def _hook_cidr(out: dict[str, Any]) -> None:
    cidr = out.get("vmNetworkCIDR")
    if type(cidr) is str:
        out["vmNetworkCIDR"] = goscalars.canonical_cidr(cidr)


_HOOKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "dnsNameservers": _hook_dns,
    "ntpServers": _hook_ntp,
    "vmNetworkCIDR": _hook_cidr,
}


# --- compiling the type graph -------------------------------------------------------------------------

# Decode modes of a struct member.
_D_STR = 0  # non-pointer string: null leaves, "" deletes
_D_PTR_SCALAR = 1  # pointer to a scalar or custom: null deletes, any value kept
_D_SCALAR = 2  # non-pointer bool/number: null leaves, zero deletes
_D_STRUCT = 3  # non-pointer struct: null leaves, decodes into an earlier value (Go merges)
_D_PTR_STRUCT = 4  # pointer to struct, or a map: null deletes, merges
_D_SLICE = 5  # slice: null deletes
_D_CUSTOM = 6  # non-pointer custom type: null leaves
_D_CUSTOM_NULL = 7  # non-pointer custom type whose UnmarshalJSON also sees null (Duration)

# Encode modes of a struct member.
_E_SCALAR_OMIT = 0  # non-pointer scalar with omitempty
_E_SCALAR = 1  # non-pointer scalar: zero written
_E_PTR_OMIT = 2  # pointer with omitempty, value used as is
_E_PTR_OMIT_FN = 3  # pointer with omitempty, value encoded
_E_PTR = 4  # pointer without omitempty: null when nil
_E_COLL_OMIT = 5  # map/slice with omitempty: dropped when empty
_E_COLL = 6  # map/slice without omitempty: null when nil
_E_STRUCT = 7  # non-pointer struct: always written
_E_CUSTOM = 8  # non-pointer custom type: always written (unless omitzero and zero)

_ZERO_SCALARS: dict[str, Any] = {"string": "", "bool": False, "float32": 0, "float64": 0}


class _Compiler:
    """Builds one decoder and one encoder per type reference, sharing them per struct type."""

    def __init__(self) -> None:
        self.struct_decoders: dict[str, Decoder] = {}
        self.struct_encoders: dict[str, Encoder] = {}
        self._decode_tables: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._encode_plans: dict[str, list[Any]] = {}
        for name in STRUCTS:
            self._declare(name)
        for name in STRUCTS:
            self._fill(name)

    # -- per reference --

    def decoder(self, ref: dict[str, Any]) -> Decoder:
        kind = ref["k"]
        if kind == "struct":
            return self.struct_decoders[ref["t"]]
        if kind == "custom":
            return _CUSTOM_DECODERS[ref["c"]]
        if kind == "string":
            return _string_decoder(ref["g"])
        if kind == "bool":
            return _bool_decoder(ref["g"])
        if kind in INT_RANGES:
            return _int_decoder(kind, ref["g"])
        if kind == "float32":
            return _float32_decoder(ref["g"])
        if kind == "slice":
            return self._slice_decoder(ref)
        if kind == "map":
            return self._map_decoder(ref)
        raise TypeError(f"no decoder for Go kind {kind!r}")

    def zero(self, ref: dict[str, Any]) -> Callable[[], Any]:
        """The decoded form of a Go zero value (for null slice elements and map values)."""
        kind = ref["k"]
        if ref.get("p") or kind in ("slice", "map"):
            raise TypeError("pointer, slice and map elements do not occur in this graph")
        if kind == "struct":
            return dict
        if kind == "custom":
            value = {"quantity": "0", "time": ZERO_TIME, "duration": "0s", "intorstring": 0}.get(ref["c"])
            return lambda: value
        value = _ZERO_SCALARS.get(kind, 0)
        return lambda: value

    def encoder(self, ref: dict[str, Any]) -> Encoder | None:
        """None when the decoded value is already what Go writes."""
        kind = ref["k"]
        if kind == "struct":
            return self.struct_encoders[ref["t"]]
        if kind == "custom":
            enc = _CUSTOM_ENCODERS[ref["c"]]
            return None if enc is _identity else enc
        if kind == "slice":
            item = self.encoder(ref["elem"])
            if item is None:
                return list
            elem: Encoder = item
            return lambda v: [elem(x) for x in v]
        if kind == "map":
            value = self.encoder(ref["elem"])
            if value is None:
                return lambda v: {k: v[k] for k in sorted(v)}
            val: Encoder = value
            return lambda v: {k: val(v[k]) for k in sorted(v)}
        return None

    def _slice_decoder(self, ref: dict[str, Any]) -> Decoder:
        go_type = ref["g"]
        elem_ref = ref["elem"]
        elem = self.decoder(elem_ref)
        zero = self.zero(elem_ref)
        strings = elem_ref["k"] == "string"

        def dec(v: Any, exact: bool, into: Any) -> Any:
            if type(v) is not list:
                raise _Fail(_json_type(v), go_type)
            if strings and all(type(x) is str for x in v):
                return list(v)
            out = []
            for i, x in enumerate(v):
                if x is None:
                    out.append(zero())
                    continue
                try:
                    out.append(elem(x, exact, None))
                except _Fail as fail:
                    fail.segments.append(f"[{i}]")
                    raise
            return out

        return dec

    def _map_decoder(self, ref: dict[str, Any]) -> Decoder:
        go_type = ref["g"]
        elem_ref = ref["elem"]
        elem = self.decoder(elem_ref)
        zero = self.zero(elem_ref)
        merge = elem_ref["k"] == "struct"

        def dec(v: Any, exact: bool, into: Any) -> Any:
            if type(v) is not dict:
                raise _Fail(_json_type(v), go_type)
            out = {} if into is None else into
            for key, x in v.items():
                if x is None:
                    out[key] = zero()
                    continue
                try:
                    out[key] = elem(x, exact, out.get(key) if merge else None)
                except _Fail as fail:
                    fail.segments.append(f"[{key}]")
                    raise
            return out

        return dec

    # -- per struct --

    def _declare(self, type_name: str) -> None:
        table: dict[str, Any] = {}
        folded: dict[str, Any] = {}
        plan: list[Any] = []
        self._decode_tables[type_name] = (table, folded)
        self._encode_plans[type_name] = plan
        info = STRUCTS[type_name]
        struct_go = info["go"]
        struct_type = short_name(type_name)
        hook = _HOOKS.get(info.get("hook", ""))

        def dec(v: Any, exact: bool, into: Any) -> Any:
            if type(v) is not dict:
                raise _Fail(_json_type(v), struct_type)
            out: dict[str, Any] = {} if into is None else into
            for key, x in v.items():
                entry = table.get(key)
                if entry is None:
                    if exact:
                        continue
                    entry = folded.get(_fold(key))
                    if entry is None:
                        continue
                name, mode, fn, go_type = entry
                try:
                    if mode == _D_STR:
                        if type(x) is str:
                            if x:
                                out[name] = x
                            else:
                                out.pop(name, None)
                        elif x is not None:
                            raise _Fail(_json_type(x), go_type)
                    elif mode == _D_PTR_SCALAR:
                        if x is None:
                            out.pop(name, None)
                        else:
                            out[name] = fn(x, exact, None)
                    elif mode == _D_PTR_STRUCT:
                        if x is None:
                            out.pop(name, None)
                        else:
                            out[name] = fn(x, exact, out.get(name))
                    elif mode == _D_SCALAR:
                        if x is not None:
                            y = fn(x, exact, None)
                            if y:
                                out[name] = y
                            else:
                                out.pop(name, None)
                    elif mode == _D_STRUCT:
                        if x is not None:
                            out[name] = fn(x, exact, out.get(name))
                    elif mode == _D_SLICE:
                        if x is None:
                            out.pop(name, None)
                        else:
                            out[name] = fn(x, exact, None)
                    elif x is not None or mode == _D_CUSTOM_NULL:
                        out[name] = fn(x, exact, None)
                except _Fail as fail:
                    fail.segments.append(name)
                    if fail.struct is None:
                        fail.struct = struct_go
                    raise
            if hook is not None:
                hook(out)
            return out

        def enc(d: Any) -> Any:
            out: dict[str, Any] = {}
            get = d.get
            for name, mode, fn, zero in plan:
                v = get(name)
                if mode == _E_SCALAR_OMIT:
                    if v:
                        out[name] = v
                elif mode == _E_PTR_OMIT:
                    if v is not None:
                        out[name] = v
                elif mode == _E_STRUCT:
                    out[name] = fn(_EMPTY if v is None else v)
                elif mode == _E_PTR_OMIT_FN:
                    if v is not None:
                        out[name] = fn(v)
                elif mode == _E_COLL_OMIT:
                    if v:
                        out[name] = fn(v)
                elif mode == _E_SCALAR:
                    out[name] = zero if v is None else v
                elif mode == _E_CUSTOM:
                    if v is None:
                        if zero is not _MISSING:
                            out[name] = zero
                    else:
                        y = v if fn is None else fn(v)
                        if zero is _MISSING and (y is None or y == "0"):
                            continue  # omitzero and IsZero()
                        out[name] = y
                elif v is None:  # _E_PTR, _E_COLL
                    out[name] = None
                else:
                    out[name] = v if fn is None else fn(v)
            return out

        self.struct_decoders[type_name] = dec
        self.struct_encoders[type_name] = enc

    def _fill(self, type_name: str) -> None:
        table, folded = self._decode_tables[type_name]
        plan = self._encode_plans[type_name]
        for name, ref, omit in STRUCTS[type_name]["fields"]:
            omitempty, omitzero = "e" in omit, "z" in omit
            kind, pointer = ref["k"], bool(ref.get("p"))
            fn = self.decoder(ref)
            if kind in ("slice", "map"):
                mode = _D_SLICE if kind == "slice" else _D_PTR_STRUCT
            elif kind == "struct":
                mode = _D_PTR_STRUCT if pointer else _D_STRUCT
            elif pointer:
                mode = _D_PTR_SCALAR
            elif kind == "custom":
                mode = _D_CUSTOM_NULL if ref["c"] == "duration" else _D_CUSTOM
            elif kind == "string":
                mode = _D_STR
            else:
                mode = _D_SCALAR
            entry = (name, mode, fn, ref["g"])
            table[name] = entry
            folded.setdefault(_fold(name), entry)

            enc = self.encoder(ref)
            zero: Any = None
            if pointer:
                emode = _E_PTR if not omitempty else _E_PTR_OMIT if enc is None else _E_PTR_OMIT_FN
            elif kind in ("slice", "map"):
                emode = _E_COLL_OMIT if omitempty else _E_COLL
            elif kind == "struct":
                emode = _E_STRUCT
            elif kind == "custom":
                emode = _E_CUSTOM
                zero = _MISSING if omitzero else _CUSTOM_ZERO_JSON[ref["c"]]
            elif omitempty:
                emode = _E_SCALAR_OMIT
            else:
                emode = _E_SCALAR
                zero = _ZERO_SCALARS.get(kind, 0)
            plan.append((name, emode, enc, zero))


_COMPILED = _Compiler()


def _path(segments: list[str]) -> str:
    out = ""
    for seg in reversed(segments):
        out += seg if seg.startswith("[") or not out else "." + seg
    return out


def _error(fail: _Fail, root_type: str) -> GoDecodeError:
    path = _path(fail.segments)
    if fail.message is not None:
        return GoDecodeError(path, fail.message)
    if fail.struct is None:
        return GoDecodeError(path, f"json: cannot unmarshal {fail.what} into Go value of type {fail.go_type}")
    go_path = ".".join(s for s in reversed(fail.segments) if not s.startswith("["))
    field = f"{fail.struct}.{go_path}"
    return GoDecodeError(
        path, f"json: cannot unmarshal {fail.what} into Go struct field {field} of type {fail.go_type}"
    )


def decode(doc: Any, root: str, *, exact_names: bool = False) -> Any:
    """What ``json.Unmarshal`` into the Go type keeps, as plain values (see the module docstring).

    ``exact_names`` matches member names case-sensitively, as apimachinery's decoder does for objects
    read from the API server; otherwise a case-insensitive match is the fallback, as in ``encoding/json``.
    Raises :class:`GoDecodeError` where Go's decode fails.
    """
    type_name = resolve_root(root)
    try:
        return _COMPILED.struct_decoders[type_name](doc, exact_names, None)
    except _Fail as fail:
        raise _error(fail, type_name) from None


def encode(doc: Any, root: str) -> Any:
    """What ``json.Marshal`` writes for a decoded value: members in Go order, omitempty applied,
    always-written members added, map keys sorted. Assumes ``doc`` came from :func:`decode`."""
    return _COMPILED.struct_encoders[resolve_root(root)](doc)


def roundtrip(doc: Any, root: str, *, exact_names: bool = False) -> Any:
    """``encode(decode(doc))``: the document after Go's unmarshal/marshal round trip."""
    type_name = resolve_root(root)
    try:
        decoded = _COMPILED.struct_decoders[type_name](doc, exact_names, None)
    except _Fail as fail:
        raise _error(fail, type_name) from None
    return _COMPILED.struct_encoders[type_name](decoded)


def struct_go_name(root: str) -> str:
    return go_name(resolve_root(root))
