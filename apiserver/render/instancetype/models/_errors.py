"""Go-style text for a failed raw decode (``json: cannot unmarshal ... into Go struct field ...``)."""

from __future__ import annotations

from typing import Annotated, Any, get_args, get_origin

from pydantic import ValidationError
from pydantic.fields import FieldInfo

from apiserver.render.instancetype.models._base import GoModel, GoTypeError, NestedDecodeError
from apiserver.render.instancetype.models._json import go_json_kind


def describe(err: ValidationError, model: type[GoModel], root_struct: str, root_path: str = "spec") -> str:
    """Describe the first problem as Go's decoder would.

    ``model`` was validated as the member ``root_path`` of the Go struct ``root_struct``; Go names the
    innermost struct holding the failing member and the member's full path (without list indices).
    """
    first = err.errors(include_url=False)[0]
    names = [str(p) for p in first["loc"] if not isinstance(p, int)]
    path = ".".join([root_path, *names])
    struct, go_type = _locate(model, names, root_struct)
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, NestedDecodeError):
        inner = f"{path}.{cause.path}" if cause.path else path
        return (
            cause.message.replace(f".{cause.path} of type", f".{inner} of type", 1)
            if cause.path
            else cause.message
        )
    if isinstance(cause, GoTypeError):
        return f"json: cannot unmarshal {go_json_kind(cause.value)} into Go struct field {struct}.{path} of type {cause.go_type}"
    if isinstance(cause, ValueError):
        return str(cause)  # e.g. a quantity's own parse error, which Go returns as it is
    value = first.get("input")
    what = go_json_kind(value)
    if what == "number" and first["type"] in {"greater_than_equal", "less_than_equal", "int_from_float"}:
        what = f"number {value}"
    return f"json: cannot unmarshal {what} into Go struct field {struct}.{path} of type {go_type}"


def _locate(model: type[GoModel], names: list[str], root_struct: str) -> tuple[str, str]:
    """(name of the struct holding the last member, Go type of that member)."""
    struct, go_type = root_struct, model.go_name()
    current: type[GoModel] | None = model
    for name in names:
        if current is None:
            break
        field = _field(current, name)
        if field is None:
            break
        struct = current.go_name()
        go_type, current = _go_type(field.annotation, field)
    return struct, go_type


def _field(model: type[GoModel], json_name: str) -> FieldInfo | None:
    for attr, field in model.model_fields.items():
        if (field.alias or attr) == json_name:
            return field
    return None


def _go_type(annotation: Any, field: FieldInfo) -> tuple[str, type[GoModel] | None]:
    args = (
        [a for a in get_args(annotation) if a is not type(None)]
        if get_origin(annotation) is not Annotated
        else []
    )
    if args:  # Optional[X]
        annotation = args[0]
    metadata = list(field.metadata)
    if get_origin(annotation) is Annotated:
        annotation, *extra = get_args(annotation)
        metadata += extra
    if isinstance(annotation, type) and issubclass(annotation, GoModel):
        return annotation.go_name(), annotation
    if annotation is bool:
        return "bool", None
    if annotation is str:
        return "string", None
    if annotation is int:
        flat = [x for m in metadata for x in (m.metadata if isinstance(m, FieldInfo) else [m])]
        upper = [getattr(m, "le", None) for m in flat if getattr(m, "le", None) is not None]
        return ("uint32" if upper and upper[0] == (1 << 32) - 1 else "int64"), None
    return str(annotation), None
