"""Shared pieces of the spec models: the base class, Go scalar types and the decoding context.

Two ways in, told apart by the validation context:

* **clean** (``CLEAN``): the dict already went through :func:`apiserver.render.golang.gojson.decode`, so types
  are right, quantities canonical and nested Go structs trimmed. Nothing is re-checked.
* **raw** (``raw_context(strict=...)``): a document as stored (old API versions). Keys are matched
  case-sensitively (``sigs.k8s.io/json``), ``null`` leaves the Go zero value, scalar types are checked
  the way ``encoding/json`` checks them, quantities are parsed and canonicalised, and every field that
  holds a KubeVirt core type is run through ``gojson.decode``. ``strict`` adds what
  ``json.UnmarshalStrict`` rejects: unknown (including case-mismatched) members at any depth.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationInfo,
    model_validator,
)

from apiserver.render.golang import gojson
from apiserver.render.instancetype.models._json import Number, go_json_kind
from apiserver.render.instancetype.models._strict import check_strict
from apiserver.render.kubernetes import quantity

CORE = "kubevirt.io/api/core/v1."

# Validation contexts. ``CLEAN`` is shared; a raw context is a fresh dict per decode.
CLEAN: Mapping[str, Any] = {"clean": True}


def raw_context(*, strict: bool) -> dict[str, Any]:
    return {"clean": False, "strict": strict}


def _is_raw(info: ValidationInfo) -> bool:
    ctx = info.context
    return ctx is not None and not ctx.get("clean", True)


def _is_strict(info: ValidationInfo) -> bool:
    ctx = info.context
    return ctx is not None and bool(ctx.get("strict"))


_JSON_NAMES: dict[type[BaseModel], frozenset[str]] = {}


class GoModel(BaseModel):
    """A Go struct: attributes are snake_case, JSON names are the aliases; ``None`` is a nil pointer."""

    model_config = ConfigDict(
        populate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
        frozen=True,
        strict=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _go_object(cls, data: Any, info: ValidationInfo) -> Any:
        """Raw input: only a JSON object decodes into a struct; ``null`` members keep the zero value."""
        if not _is_raw(info):
            return data
        if not isinstance(data, Mapping):
            raise GoTypeError(data, cls.go_name())
        known = cls._json_names()
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                if _is_strict(info):
                    raise ValueError(f'unknown field "{key}"')
                continue
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def go_name(cls) -> str:
        """The Go struct's name (what Go's decode errors call it)."""
        return cls._go_name or cls.__name__

    @classmethod
    def _json_names(cls) -> frozenset[str]:
        names = _JSON_NAMES.get(cls)
        if names is None:
            names = _JSON_NAMES[cls] = frozenset(f.alias or n for n, f in cls.model_fields.items())
        return names

    # Attributes whose JSON member has no omitempty (written even when zero).
    _always: ClassVar[frozenset[str]] = frozenset()
    # The Go struct name, when the class name differs.
    _go_name: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        """What Go's ``json.Marshal`` writes: nil and omitempty-zero members dropped, set pointers kept."""
        out: dict[str, Any] = {}
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, GoModel):
                out[field.alias or name] = value.to_json()
                continue
            if (
                name not in self._always
                and not value
                and (field.default is not None or name in _collections(type(self)))
            ):
                continue  # omitempty: a plain "", 0, false, or an empty map or slice
            out[field.alias or name] = value
        return out


class GoTypeError(ValueError):
    """A JSON value of the wrong kind for a Go type (Go's ``UnmarshalTypeError``)."""

    def __init__(self, value: Any, go_type: str) -> None:
        super().__init__(f"cannot unmarshal {go_json_kind(value)} into Go value of type {go_type}")
        self.value = value
        self.go_type = go_type


class NestedDecodeError(ValueError):
    """Go's decode of a core-typed member failed; ``path`` is relative to that member."""

    def __init__(self, err: gojson.GoDecodeError) -> None:
        super().__init__(err.message)
        self.path = err.path
        self.message = err.message


def _quantity(value: Any, info: ValidationInfo) -> Any:
    """Clean input holds :class:`~apiserver.render.kubernetes.quantity.QuantityText` already (kept as it is: a
    plain ``str`` field would turn it into its bare text); raw input is parsed into one."""
    if not _is_raw(info):
        return value
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"cannot unmarshal {go_json_kind(value)} into a Quantity")
    return quantity.quantity_text(value.text if isinstance(value, Number) else value)


def _core(go_type: str) -> BeforeValidator:
    """A member holding a KubeVirt core struct (``[]T`` for a slice), kept as Go's decode leaves it."""
    element = go_type.removeprefix("[]")

    def one(value: Any, strict: bool) -> Any:
        if value is None:  # a null slice element is the zero struct
            value = {}
        if strict:
            check_strict(value, element)
        try:
            return gojson.decode(value, element, exact_names=True)
        except gojson.GoDecodeError as err:
            raise NestedDecodeError(err) from None

    def check(value: Any, info: ValidationInfo) -> Any:
        if not _is_raw(info):
            return value
        strict = _is_strict(info)
        if element == go_type:
            return one(value, strict)
        if not isinstance(value, list):
            raise GoTypeError(value, go_type.replace(CORE, "v1."))
        return [one(item, strict) for item in value]

    return BeforeValidator(check)


def _string_map(value: Any, info: ValidationInfo) -> Any:
    """``map[string]string``: null values decode to ""."""
    if not _is_raw(info) or not isinstance(value, Mapping):
        return value
    return {k: "" if v is None else v for k, v in value.items()}


class _Collection:
    """Marks a Go map or slice member: ``omitempty`` drops it when empty (a struct pointer stays)."""

    def __repr__(self) -> str:
        return "COLLECTION"


COLLECTION = _Collection()
_COLLECTIONS: dict[type[BaseModel], frozenset[str]] = {}


def _marked(annotation: Any) -> bool:
    if get_origin(annotation) is Annotated:
        return COLLECTION in get_args(annotation)[1:]
    return any(_marked(arg) for arg in get_args(annotation))


def _collections(cls: type[BaseModel]) -> frozenset[str]:
    names = _COLLECTIONS.get(cls)
    if names is None:
        names = _COLLECTIONS[cls] = frozenset(
            n for n, f in cls.model_fields.items() if COLLECTION in f.metadata or _marked(f.annotation)
        )
    return names


def _uint(bits: int) -> Any:
    return Field(ge=0, le=(1 << bits) - 1)


Quantity = Annotated[str, PlainValidator(_quantity)]
Uint32 = Annotated[int, _uint(32)]
Int64 = Annotated[int, Field(ge=-(1 << 63), le=(1 << 63) - 1)]
Int = Int64

# Core types copied verbatim into the VM (JSON as Go's decode leaves it).
NUMA = Annotated[dict[str, Any], _core(CORE + "NUMA")]
Realtime = Annotated[dict[str, Any], _core(CORE + "Realtime")]
Hugepages = Annotated[dict[str, Any], _core(CORE + "Hugepages")]
GPUs = Annotated[list[dict[str, Any]], _core("[]" + CORE + "GPU"), COLLECTION]
HostDevices = Annotated[list[dict[str, Any]], _core("[]" + CORE + "HostDevice"), COLLECTION]
IOThreadsPolicy = str
DiskIOThreads = Annotated[dict[str, Any], _core(CORE + "DiskIOThreads")]
LaunchSecurity = Annotated[dict[str, Any], _core(CORE + "LaunchSecurity")]
VGPUOptions = Annotated[dict[str, Any], _core(CORE + "VGPUOptions")]
BlockSize = Annotated[dict[str, Any], _core(CORE + "BlockSize")]
Rng = Annotated[dict[str, Any], _core(CORE + "Rng")]
TPMDevice = Annotated[dict[str, Any], _core(CORE + "TPMDevice")]
InterfaceMasquerade = Annotated[dict[str, Any], _core(CORE + "InterfaceMasquerade")]
FeatureState = Annotated[dict[str, Any], _core(CORE + "FeatureState")]
FeatureAPIC = Annotated[dict[str, Any], _core(CORE + "FeatureAPIC")]
FeatureHyperv = Annotated[dict[str, Any], _core(CORE + "FeatureHyperv")]
FeatureKVM = Annotated[dict[str, Any], _core(CORE + "FeatureKVM")]
ClockOffset = Annotated[dict[str, Any], _core(CORE + "ClockOffset")]
Timer = Annotated[dict[str, Any], _core(CORE + "Timer")]
EFI = Annotated[dict[str, Any], _core(CORE + "EFI")]
CPUFeatures = Annotated[list[dict[str, Any]], _core("[]" + CORE + "CPUFeature"), COLLECTION]
StringMap = Annotated[dict[str, str], BeforeValidator(_string_map), COLLECTION]
