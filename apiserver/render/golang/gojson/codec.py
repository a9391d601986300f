"""Go ``encoding/json`` for KubeVirt's types, on plain Python dicts.

KubeVirt decodes every input into typed Go structs and encodes the result again, so what comes out is
shaped by Go: unknown members vanish, zero values with ``omitempty`` vanish, non-pointer structs and
members without ``omitempty`` appear, quantities are re-rendered, members follow declaration order. This
module reproduces both directions from the generated type graph.

Speed matters (every request decodes and encodes a whole VM): each struct type gets a decoder closure
built at import (the complete semantics, a member costs one dict lookup and a small mode dispatch), plus
a generated fast-path decoder and a generated encoder, both compiled on first use (see below).

The decoded form (what :func:`decode` returns) keeps Go's *presence* semantics with plain values:

* a member is present when Go's value is non-nil (pointers, maps, slices) or non-zero (non-pointer
  scalars); non-pointer structs and custom types are present when the input had them;
* quantities are canonical strings (:class:`~apiserver.render.kubernetes.quantity.QuantityText`, which also
  carries the quantity Go parsed), times are ``YYYY-MM-DDTHH:MM:SSZ`` (the zero time spelled out),
  durations Go's ``String()``, float32 numbers their shortest text;
* ``RawExtension``/``FieldsV1`` values are the input value itself (not copied).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from apiserver.render.golang.gojson import goscalars
from apiserver.render.golang.gojson.errors import GoDecodeError
from apiserver.render.golang.gojson.types import INT_RANGES, STRUCTS, go_name, resolve_root, short_name
from apiserver.render.golang.gotext import fold_name
from apiserver.render.kubernetes.quantity import QuantityError, canonical, quantity_text

__all__ = ["ZERO_TIME", "decode", "encode", "roundtrip"]

ZERO_TIME = "0001-01-01T00:00:00Z"

Decoder = Callable[[Any, bool, Any], Any]
Encoder = Callable[[Any], Any]


class _Fail(Exception):
    """A decode failure on its way up; the decoders it passes through add the path."""

    def __init__(self, what: str | None, go_type: str = "", message: str | None = None) -> None:
        super().__init__(what)
        self.what = what  # Go's JSON value description ("string", "number 1.5"), for type errors
        self.go_type = go_type
        self.message = message  # a parser's own error text instead
        self.segments: list[str] = []  # innermost first
        self.struct: str | None = None
        # The alias type of the innermost custom UnmarshalJSON the failure passed through, and how many
        # of the segments lie inside it (see _unmarshal_message); the alias's Go type when the value
        # given for the struct itself is wrong (no segment inside).
        self.alias: str | None = None
        self.alias_depth = 0
        self.alias_type = ""


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


_fold = fold_name


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
        return quantity_text(v)  # strings and numbers; anything else is a format error, as in Go
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


def _enc_time(v: Any) -> Any:
    return None if v == ZERO_TIME else v


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

# The hooks are KubeVirt's UnmarshalJSON methods (VirtualMachineInstanceSpec, DHCPOptions, PodNetwork); each
# decodes its bytes into a local alias type with a json.Unmarshal of its own, whose error comes back
# verbatim, so the error names the alias type as its root. That json.Unmarshal is encoding/json's, which
# matches member names case-insensitively even where the caller's decoder (apimachinery's, for a VM read
# from kube-apiserver) matches them exactly: below such a type, ``exact_names`` no longer holds (virt-api
# takes a stored VM's ``spec.template.spec.domain.cpu.dedicatedCPUPlacement`` as ``dedicatedCpuPlacement``).
_HOOK_ALIASES: dict[str, str] = {
    "dnsNameservers": "VMISpecAlias",
    "ntpServers": "DHCPOptionsAlias",
    "vmNetworkCIDR": "PodNetworkAlias",
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

_ZERO_SCALARS: dict[str, Any] = {"string": "", "bool": False, "float32": 0, "float64": 0}


class _Compiler:
    """Builds one decoder per type reference, sharing them per struct type."""

    def __init__(self) -> None:
        self.struct_decoders: dict[str, Decoder] = {}
        self._decode_tables: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
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
        strings = elem_ref["k"] == "string"

        def dec(v: Any, exact: bool, into: Any) -> Any:
            if type(v) is not dict:
                raise _Fail(_json_type(v), go_type)
            if strings and all(type(x) is str for x in v.values()):  # labels, annotations, selectors
                if into is None:
                    return dict(v)
                into.update(v)
                return into
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
        self._decode_tables[type_name] = (table, folded)
        info = STRUCTS[type_name]
        struct_go = info["go"]
        struct_type = short_name(type_name)
        hook = _HOOKS.get(info.get("hook", ""))
        alias = _HOOK_ALIASES.get(info.get("hook", ""))
        alias_type = f"{struct_type.rpartition('.')[0]}.{alias}"

        def dec(v: Any, exact: bool, into: Any) -> Any:
            if type(v) is not dict:
                fail = _Fail(_json_type(v), struct_type)
                if alias is not None:
                    fail.alias, fail.alias_type = alias, alias_type
                raise fail
            if alias is not None:  # KubeVirt's UnmarshalJSON: encoding/json from here down (_HOOK_ALIASES)
                exact = False
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
                    if alias is not None and fail.alias is None:
                        fail.alias, fail.alias_depth = alias, len(fail.segments)
                    raise
            if hook is not None:
                hook(out)
            return out

        self.struct_decoders[type_name] = dec

    def fields(self, type_name: str) -> list[tuple[str, int, Decoder, str]]:
        """(name, mode, decoder, Go type) per member, in declaration order."""
        table = self._decode_tables[type_name][0]
        return [table[name] for name, _ref, _omit in STRUCTS[type_name]["fields"]]

    def _fill(self, type_name: str) -> None:
        table, folded = self._decode_tables[type_name]
        for name, ref, _omit in STRUCTS[type_name]["fields"]:
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


# --- generated encoders -----------------------------------------------------------------------------------
#
# Encoding visits every declared member of every struct present (Go writes members that are absent from
# the input), so it is the hot loop. Each struct gets a straight-line function generated from its member
# plan: one membership test per optional member (cheaper than a ``get`` call, and most are absent), no
# dispatch, C-level loops (``map``, ``sorted``) for lists and maps, and an empty struct answered with its
# precomputed zero encoding. A struct with many members counts the keys it has left and returns once all
# are written (when no later member must be written anyway); member structs with few members are encoded
# inline, without a call. Struct encoders call each other by global name in one shared namespace, so
# recursive types work.


# A Go type's name as a Python identifier: every character that is not a letter or digit becomes "_".
_NOT_ALNUM = re.compile(r"[\W_]")


def _identifier(type_name: str) -> str:
    return _NOT_ALNUM.sub("_", type_name)


def _encoder_name(type_name: str) -> str:
    return "enc_" + _identifier(type_name)


def _value_expr(ref: dict[str, Any], var: str, depth: int = 0) -> str:
    """A Python expression for what Go writes for the non-nil decoded value ``var``."""
    kind = ref["k"]
    if kind == "struct":
        if depth == 0:  # a member: an empty struct (common: ``pod: {}``) is its literal, no call
            return f"({_encoder_name(ref['t'])}({var}) if {var} else {_zero_json(ref['t'])!r})"
        return f"{_encoder_name(ref['t'])}({var})"
    if kind == "custom":
        return {"quantity": f"Q({var})", "time": f"T({var})"}.get(ref["c"], var)
    item = f"x{depth}"
    if kind == "slice":
        elem = _value_expr(ref["elem"], item, depth + 1)
        if elem == item:
            return f"list({var})"
        if elem.endswith(f"({item})") and elem.count("(") == 1:  # one function call per element
            return f"list(map({elem[: -len(item) - 2]}, {var}))"
        return f"[{elem} for {item} in {var}]"
    if kind == "map":
        value = f"v{depth}"
        elem = _value_expr(ref["elem"], value, depth + 1)
        if elem == value:
            return f"dict(sorted({var}.items()))"
        return f"{{{item}: {elem} for {item}, {value} in sorted({var}.items())}}"
    return var


def _zero_json(type_name: str) -> dict[str, Any]:
    """What Go writes for the zero value of a struct (what its encoder returns for ``{}``)."""
    out: dict[str, Any] = {}
    for name, ref, omit in STRUCTS[type_name]["fields"]:
        kind, pointer = ref["k"], bool(ref.get("p"))
        if pointer or kind in ("slice", "map"):
            if "e" not in omit:
                out[name] = None
        elif kind == "struct":
            out[name] = _zero_json(ref["t"])
        elif kind == "custom":
            if "z" not in omit:
                out[name] = _CUSTOM_ZERO_JSON[ref["c"]]
        elif "e" not in omit:
            out[name] = _ZERO_SCALARS.get(kind, 0)
    return out


def _optional(ref: dict[str, Any], omit: str) -> bool:
    """Whether Go leaves the member out when the decoded value is absent (an omitempty non-struct)."""
    return "e" in omit and (bool(ref.get("p")) or ref["k"] not in ("struct", "custom"))


# Structs with at least this many members count the keys they have left and return once none is left
# (a VM's structs hold ~70 of the ~280 members declared on them, e.g. one source of a Volume's 17).
_EARLY_EXIT_MEMBERS = 5
# Member structs this small are encoded inline (no call), two levels deep at most.
_INLINE_MEMBERS = 10


def _inlined(ref: dict[str, Any], enclosing: frozenset[str], depth: int) -> bool:
    return (
        ref["k"] == "struct"
        and depth < 2
        and ref["t"] not in enclosing
        and len(STRUCTS[ref["t"]]["fields"]) <= _INLINE_MEMBERS
    )


def _struct_lines(type_name: str, d: str, out: str, depth: int, enclosing: frozenset[str]) -> list[str]:
    """Statements writing into ``out`` (a new dict) what Go writes for the non-empty decoded ``d``."""
    fields = STRUCTS[type_name]["fields"]
    optional = [_optional(ref, omit) for _name, ref, omit in fields]
    # Member i may end the function when every later member is optional: nothing else is written.
    can_exit = [all(optional[i + 1 :]) and i + 1 < len(fields) for i in range(len(fields))]
    counting = depth == 0 and len(fields) >= _EARLY_EXIT_MEMBERS and any(can_exit)
    last_exit = max((i for i, flag in enumerate(can_exit) if flag), default=-1) if counting else -1
    v = "v" if depth == 0 else f"w{depth}"
    y = "y" if depth == 0 else f"y{depth}"
    get = "get" if depth == 0 else f"{d}.get"
    inner = enclosing | {type_name}
    lines = ["n = len(d)"] if counting else []
    for i, (name, ref, omit) in enumerate(fields):
        omitzero = "z" in omit
        kind, pointer = ref["k"], bool(ref.get("p"))
        key = repr(name)
        if _inlined(ref, inner, depth):
            sub = f"o{depth + 1}"
            body = _struct_lines(ref["t"], v, sub, depth + 1, inner)
            assign = [
                f"if {v}:",
                f"    {sub} = {{}}",
                *(f"    {line}" for line in body),
                f"    {out}[{key}] = {sub}",
                f"else: {out}[{key}] = {_zero_json(ref['t'])!r}",
            ]
        else:
            assign = [f"{out}[{key}] = {_value_expr(ref, v)}"]
        if optional[i]:
            # Optional member: usually absent, so test membership before fetching.
            test = f"{v} is not None" if pointer else v
            lines.append(f"if {key} in {d}:")
            lines.append(f"    {v} = {d}[{key}]")
            lines.append(f"    if {test}:")
            lines += [f"        {line}" for line in assign]
            if counting and i <= last_exit:
                lines.append("    n -= 1")
                if can_exit[i]:
                    lines.append(f"    if not n: return {out}")
            continue
        counted = counting and i <= last_exit
        if counted:
            # A written member before an exit point: counted only when present.
            lines.append(f"if {key} in {d}:")
            lines.append("    n -= 1")
            lines.append(f"    {v} = {d}[{key}]")
            lines.append(f"else: {v} = None")
        else:
            lines.append(f"{v} = {get}({key})")
        if pointer or kind in ("slice", "map"):
            lines.append(f"if {v} is None: {out}[{key}] = None")
            lines.append("else:")
            lines += [f"    {line}" for line in assign]
        elif kind == "struct":
            lines += assign  # an absent struct is empty: its zero encoding
        elif kind == "custom":
            expr = _value_expr(ref, v)
            if omitzero:
                lines.append(f"if {v} is not None:")
                lines.append(f"    {y} = {expr}")
                lines.append(f"    if {y} is not None and {y} != '0': {out}[{key}] = {y}")
            else:
                zero = _CUSTOM_ZERO_JSON[ref["c"]]
                lines.append(f"{out}[{key}] = {zero!r} if {v} is None else {expr}")
        else:
            zero = _ZERO_SCALARS.get(kind, 0)
            lines.append(f"{out}[{key}] = {zero!r} if {v} is None else {v}")
        if counted and can_exit[i]:
            lines.append(f"if not n: return {out}")
    return lines


def _encoder_source(type_name: str) -> str:
    # The zero encoding is a literal, so each call builds fresh containers (callers may edit the result).
    body = _struct_lines(type_name, "d", "out", 0, frozenset())
    lines = [f"def {_encoder_name(type_name)}(d):", f"    if not d: return {_zero_json(type_name)!r}"]
    lines.append("    out = {}")
    gets = sum(line.startswith("v = get(") for line in body)
    if gets == 1:  # binding the method costs more than it saves for one call
        body = [line.replace("v = get(", "v = d.get(", 1) for line in body]
    elif gets:
        lines.append("    get = d.get")
    lines += [f"    {line}" for line in body]
    lines.append("    return out")
    return "\n".join(lines)


_NAMESPACE: dict[str, Any] = {"Q": canonical, "T": _enc_time}
_ENCODERS: dict[str, Encoder] = {}


def _lazy_encoder(type_name: str) -> Encoder:
    """A stand-in that compiles the real encoder on first use (compiling all 277 up front costs ~100ms
    of start-up; a VM touches a few dozen) and then replaces itself everywhere."""
    function_name = _encoder_name(type_name)

    def first_call(d: Any) -> Any:
        done = _ENCODERS[type_name]
        if done is not first_call:  # compiled already; a caller kept this stand-in (a list's elements)
            return done(d)
        source = _encoder_source(type_name)
        exec(compile(source, f"<gojson encoder {type_name}>", "exec"), _NAMESPACE)
        real: Encoder = _NAMESPACE[function_name]
        _ENCODERS[type_name] = real
        return real(d)

    return first_call


for _name in STRUCTS:
    _ENCODERS[_name] = _NAMESPACE[_encoder_name(_name)] = _lazy_encoder(_name)


_COMPILED = _Compiler()


# --- generated fast-path decoders ----------------------------------------------------------------------
#
# The closures above handle everything Go's decoder does (case-folded names, merging duplicates, nulls
# in lists, error paths), one dispatch per member. Most documents need none of that: every member name
# is an exact declared one and every value has the right type. For those, each struct gets a generated
# straight-line decoder: one membership test per declared member, scalar checks inlined, nested structs
# decoded by their own fast decoders. Anything unusual (an unknown or case-folded name hands that struct
# to its closure; a wrong type or a null list element raises _Retry) falls back, and on any failure the
# whole document is decoded again by the closures, so errors are reported exactly as before.


class _Retry(Exception):
    """The fast path met something it does not handle; decode the document with the closures."""


def _fast_name(type_name: str) -> str:
    return "fdec_" + _identifier(type_name)


_FAST_NS: dict[str, Any] = {"RETRY": _Retry, "HOOKS": _HOOKS}
_FAST: dict[str, Callable[[Any, bool], Any]] = {}


def _ns_ref(value: Any) -> str:
    """A namespace name for an object the generated code calls."""
    name = f"F{id(value)}"
    _FAST_NS[name] = value
    return name


def _fast_member_lines(ref: dict[str, Any], mode: int, fn: Decoder, key: str) -> list[str]:
    """Statements decoding ``x`` (the member's present value) into ``out[key]``."""
    kind, pointer = ref["k"], bool(ref.get("p"))
    if kind == "struct":
        return ["if x is not None:", f"    out[{key}] = {_fast_name(ref['t'])}(x, exact)"]
    if kind == "slice" and ref["elem"]["k"] == "struct":
        elem = _fast_name(ref["elem"]["t"])
        return [
            "if type(x) is list:",
            f"    out[{key}] = [{elem}(e, exact) for e in x]",
            "elif x is not None: raise RETRY",
        ]
    if kind == "string":
        keep = "" if pointer else "if x: "
        return ["if type(x) is str:", f"    {keep}out[{key}] = x", "elif x is not None: raise RETRY"]
    if kind == "bool":
        test = "x is True or x is False" if pointer else "x is True"
        skip = "x is not None" if pointer else "x is not False and x is not None"
        return [f"if {test}: out[{key}] = x", f"elif {skip}: raise RETRY"]
    if kind in INT_RANGES:
        lo, hi = INT_RANGES[kind]
        keep = "" if pointer else "if x: "
        return [
            f"if type(x) is int and {lo} <= x <= {hi}:",
            f"    {keep}out[{key}] = x",
            "elif x is not None: raise RETRY",
        ]
    # Everything else (maps, other slices, custom types, float32) goes through its closure with the
    # struct decoder's semantics for the mode (into a fresh struct: "pop" is "do not set").
    call = f"{_ns_ref(fn)}(x, exact, None)"
    if mode == _D_CUSTOM_NULL:
        return [f"out[{key}] = {call}"]
    if mode == _D_SCALAR:
        return ["if x is not None:", f"    y = {call}", f"    if y: out[{key}] = y"]
    return ["if x is not None:", f"    out[{key}] = {call}"]


def _fast_decoder_source(type_name: str) -> str:
    # Declared members are tested in order, counting the input's keys: once every key is decoded the
    # rest are skipped, and keys left over at the end (unknown or case-folded names) hand the struct to
    # its closure. A membership test costs a fraction of a per-key lookup and dispatch.
    fields = _COMPILED.fields(type_name)
    slow = _ns_ref(_COMPILED.struct_decoders[type_name])
    hook = STRUCTS[type_name].get("hook")
    done = [f"HOOKS[{hook!r}](out)", "return out"] if hook else ["return out"]
    lines = [
        f"def {_fast_name(type_name)}(v, exact):",
        "    if type(v) is not dict:",
        f"        return {slow}(v, exact, None)",
        *(["    exact = False"] if hook else []),  # see _HOOK_ALIASES
        "    out = {}",
        "    n = len(v)",
        "    if not n:",
        *(f"        {line}" for line in done),
    ]
    refs = {name: ref for name, ref, _omit in STRUCTS[type_name]["fields"]}
    for name, mode, fn, _go in fields:
        key = repr(name)
        lines.append(f"    if {key} in v:")
        lines.append(f"        x = v[{key}]")
        lines += [f"        {line}" for line in _fast_member_lines(refs[name], mode, fn, key)]
        lines.append("        n -= 1")
        lines.append("        if not n:")
        lines += [f"            {line}" for line in done]
    lines.append("    # unknown or case-folded names: the closure decodes this struct")
    lines.append(f"    return {slow}(v, exact, None)")
    return "\n".join(lines)


# Uses of a struct type decoded by its closure before its fast decoder is compiled: compiling costs more
# than decoding one document (a command-line run on one VM decodes most types once, and compiling its
# decoders took about 40% of the run), and the closure gives the same values (it is what the fast path
# falls back to). Only the order of a decoded struct's members differs (the input's, where the generated
# decoder writes Go's declaration order), which nothing reads: the encoder writes declaration order, and
# the tests of render/, cli/ and http/ (golden corpora and the oracle's diff included) pass with the
# closures alone (this set to 10**9).
_CLOSURE_USES = 1


def _lazy_fast_decoder(type_name: str) -> Callable[[Any, bool], Any]:
    """Decodes with the closure the first ``_CLOSURE_USES`` times, then compiles the fast decoder and
    replaces itself (as the encoders do)."""
    function_name = _fast_name(type_name)
    uses = 0

    def first_call(v: Any, exact: bool) -> Any:
        nonlocal uses
        done = _FAST[type_name]
        if done is not first_call:  # compiled already; a caller kept this stand-in
            return done(v, exact)
        if uses < _CLOSURE_USES:
            uses += 1
            return _COMPILED.struct_decoders[type_name](v, exact, None)
        source = _fast_decoder_source(type_name)
        exec(compile(source, f"<gojson decoder {type_name}>", "exec"), _FAST_NS)
        real: Callable[[Any, bool], Any] = _FAST_NS[function_name]
        _FAST[type_name] = real
        return real(v, exact)

    return first_call


for _name in STRUCTS:
    _FAST[_name] = _FAST_NS[_fast_name(_name)] = _lazy_fast_decoder(_name)


def _decode(doc: Any, type_name: str, exact_names: bool) -> Any:
    try:
        return _FAST[type_name](doc, exact_names)
    except (_Retry, _Fail):
        pass
    try:
        return _COMPILED.struct_decoders[type_name](doc, exact_names, None)
    except _Fail as fail:
        raise _error(fail, type_name) from None


def _path(segments: list[str]) -> str:
    out = ""
    for seg in reversed(segments):
        out += seg if seg.startswith("[") or not out else "." + seg
    return out


def _error(fail: _Fail, root_type: str) -> GoDecodeError:
    path = _path(fail.segments)
    if fail.message is not None:
        return GoDecodeError(path, fail.message)
    unmarshal = _unmarshal_message(fail, root_type)
    if fail.struct is None:
        message = f"json: cannot unmarshal {fail.what} into Go value of type {fail.go_type}"
        return GoDecodeError(path, message, unmarshal)
    go_path = ".".join(s for s in reversed(fail.segments) if not s.startswith("["))
    field = f"{fail.struct}.{go_path}"
    message = f"json: cannot unmarshal {fail.what} into Go struct field {field} of type {fail.go_type}"
    return GoDecodeError(path, message, unmarshal)


def _unmarshal_message(fail: _Fail, root_type: str) -> str:
    """A type error as go1.27's ``encoding/json`` words it (``transformUnmarshalError``): the root type's
    name (or the alias an UnmarshalJSON decodes into), then the JSON pointer from there with ``.`` for
    ``/``; "Go struct field " is left out when the last token is an array index."""
    segments = list(reversed(fail.segments))
    root = short_name(root_type).rpartition(".")[2]
    if fail.alias is not None:
        segments, root = segments[len(segments) - fail.alias_depth :], fail.alias
    if not segments:
        return f"json: cannot unmarshal {fail.what} into Go value of type {fail.alias_type or fail.go_type}"
    tokens = [_pointer_token(s[1:-1] if s.startswith("[") else s) for s in segments]
    into = "" if tokens[-1].isdigit() and tokens[-1].isascii() else "Go struct field "
    field = ".".join(tokens)
    return f"json: cannot unmarshal {fail.what} into {into}{root}.{field} of type {fail.go_type}"


def _pointer_token(name: str) -> str:
    """A JSON pointer reference token (RFC 6901 escapes, which Go keeps in the error's path)."""
    return name.replace("~", "~0").replace("/", "~1")


def decode(doc: Any, root: str, *, exact_names: bool = False) -> Any:
    """What ``json.Unmarshal`` into the Go type keeps, as plain values (see the module docstring).

    ``exact_names`` matches member names case-sensitively, as apimachinery's decoder does for objects
    read from the API server; otherwise a case-insensitive match is the fallback, as in ``encoding/json``.
    Raises :class:`GoDecodeError` where Go's decode fails.
    """
    return _decode(doc, resolve_root(root), exact_names)


def encode(doc: Any, root: str) -> Any:
    """What ``json.Marshal`` writes for a decoded value: members in Go order, omitempty applied,
    always-written members added, map keys sorted. Assumes ``doc`` came from :func:`decode`."""
    return _ENCODERS[resolve_root(root)](doc)


def roundtrip(doc: Any, root: str, *, exact_names: bool = False) -> Any:
    """``encode(decode(doc))``: the document after Go's unmarshal/marshal round trip."""
    type_name = resolve_root(root)
    return _ENCODERS[type_name](_decode(doc, type_name, exact_names))


def struct_go_name(root: str) -> str:
    return go_name(resolve_root(root))
