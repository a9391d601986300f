"""What a VirtualMachine must be before it is expanded, and kube-apiserver's ``fieldValidation`` levels.

One policy for the server's PUT, the command line and the Python API, so the three answer the same
input with the same Status:

- always refused, at every level: a VM that is not an object (400), a ``kind`` other than
  ``VirtualMachine`` (an absent kind is fine), no ``spec`` or a ``spec`` that is not an object (422);
- the level then governs what Go's lenient decoder would let through (unknown fields, member names
  that match only case-insensitively, duplicate fields, missing required members): ``Strict`` refuses
  the VM with 422 Invalid and one cause per problem (every schema problem, type errors included),
  ``Warn`` expands it and returns one warning per finding in kube-apiserver's words
  (``unknown field "spec.x"``, ``duplicate field "spec.running"``), ``Ignore`` says nothing (what
  KubeVirt's own expand does, and what the golden cases record).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from apiserver.render.golang import gojson
from apiserver.render.kubernetes.errors import (
    CAUSE_DUPLICATE,
    CAUSE_NOT_SUPPORTED,
    CAUSE_REQUIRED,
    CAUSE_TYPE_INVALID,
    CAUSE_UNKNOWN_FIELD,
    MAX_CAUSE_TEXT,
    MAX_CAUSES,
    MAX_MESSAGE,
    VM_KIND,
    Cause,
    ExpandError,
    invalid_status,
    more_text,
    shorten,
    status,
)
from apiserver.render.memo import Memo

STRICT: Final = "Strict"
WARN: Final = "Warn"
IGNORE: Final = "Ignore"
LEVELS: Final = (STRICT, WARN, IGNORE)
DEFAULT: Final = STRICT

# What a level decides about; other schema problems are errors Go's decoder reports as well.
_GOVERNED: Final = frozenset({CAUSE_UNKNOWN_FIELD, CAUSE_DUPLICATE, CAUSE_REQUIRED})


class FieldValidationError(ExpandError):
    """The VM is not a valid VirtualMachine (its shape, or a ``Strict`` finding), before any expanding.

    The server's ``--kubevirt-error-codes`` answers these as virt-api answers a schema error.
    """


def invalid_message(name: str, causes: Sequence[Cause], total: int | None = None) -> str:
    """kube-apiserver's text for a 422: ``VirtualMachine.kubevirt.io "x" is invalid: spec: ...``;
    at most :data:`MAX_CAUSES` of them, then ``and N more`` (``total``: how many causes there are in
    all when ``causes`` holds only the first)."""
    total = len(causes) if total is None else max(total, len(causes))
    parts = [
        shorten(f"{c.field}: {c.message}" if c.field else c.message, MAX_CAUSE_TEXT)
        for c in causes[:MAX_CAUSES]
    ]
    if total > len(parts):
        parts.append(more_text(total - len(parts)))
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return shorten(f'VirtualMachine.kubevirt.io "{name}" is invalid: {joined}', MAX_MESSAGE)


def vm_name(vm: Mapping[str, Any]) -> str:
    meta = vm.get("metadata")
    name = meta.get("name") if type(meta) is dict or isinstance(meta, Mapping) else None
    return name if type(name) is str or isinstance(name, str) else ""


def _refuse(name: str, *causes: Cause) -> FieldValidationError:
    return FieldValidationError(invalid_status(invalid_message(name, causes), causes, name=name))


def _show(value: Any) -> str:
    if isinstance(value, Mapping):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 64 else text[:61] + '..."'


_TYPE_NAMES: Final = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}


def check_shape(vm: Any) -> None:
    """The always-refused cases: raise :class:`FieldValidationError`, else return."""
    if type(vm) is not dict and not isinstance(vm, Mapping):  # type() first: the ABC check is slow
        kind = _TYPE_NAMES.get(type(vm), "a number" if isinstance(vm, int | float) else type(vm).__name__)
        raise FieldValidationError(status(400, "BadRequest", f"expected a VirtualMachine object, got {kind}"))
    name = vm_name(vm)
    kind_value = vm.get("kind")
    if kind_value is not None and kind_value != VM_KIND:
        message = f'Unsupported value: {_show(kind_value)}: supported values: "{VM_KIND}"'
        raise _refuse(name, Cause("kind", message, CAUSE_NOT_SUPPORTED))
    spec = vm.get("spec")
    if spec is None:
        raise _refuse(name, Cause("spec", "Required value", CAUSE_REQUIRED))
    if type(spec) is not dict and not isinstance(spec, Mapping):
        raise _refuse(
            name, Cause("spec", f"Invalid value: {_show(spec)}: must be of type object", CAUSE_TYPE_INVALID)
        )


def findings(vm: Mapping[str, Any], duplicates: Sequence[str] = ()) -> list[Cause]:
    """Every schema problem of ``vm`` as a cause: the duplicate fields (paths a reader found), then
    what the strict schema check finds."""
    causes = [Cause(path, f'duplicate field "{path}"', CAUSE_DUPLICATE) for path in duplicates]
    causes += [Cause(p.path, p.message, p.reason) for p in gojson.check(vm, "VirtualMachine")]
    return causes


def first_findings(vm: Mapping[str, Any], duplicates: Sequence[str] = ()) -> tuple[list[Cause], int]:
    """The first :data:`MAX_CAUSES` of :func:`findings` and how many there are in all (a Status
    lists no more, so a body with 300,000 bad items costs no more memory than one with 100)."""
    causes = [Cause(path, f'duplicate field "{path}"', CAUSE_DUPLICATE) for path in duplicates[:MAX_CAUSES]]
    problems, found = gojson.check_first(vm, "VirtualMachine", MAX_CAUSES - len(causes))
    causes += [Cause(p.path, p.message, p.reason) for p in problems]
    return causes, len(duplicates) + found


def warning_text(cause: Cause) -> str:
    """A finding as kube-apiserver words its ``Warning`` (unknown and duplicate fields say their path)."""
    if cause.reason in (CAUSE_UNKNOWN_FIELD, CAUSE_DUPLICATE) or not cause.field:
        return cause.message
    return f"{cause.field}: {cause.message}"


# Findings per VM version: the schema walk costs about what a warm render does, and the Python API
# sees the same VM again (apiserver.render.memo).
_FINDINGS: Memo[tuple[tuple[Cause, ...], int]] = Memo(256)


def _findings_kept(vm: Mapping[str, Any]) -> tuple[tuple[Cause, ...], int]:
    causes, total = first_findings(vm)
    return tuple(causes), total


def admit(
    vm: Any, level: str = IGNORE, duplicates: Sequence[str] = (), *, fingerprint: bytes | None = None
) -> list[str]:
    """Judge ``vm`` before expanding it: raise :class:`FieldValidationError`, or return the warnings.

    ``duplicates`` are the paths of fields the body gave twice (the reader found them; a parsed
    mapping no longer shows them). ``fingerprint``: the VM's JSON text, when known to be JSON.
    """
    check_shape(vm)
    if level == IGNORE:
        return []
    if duplicates:
        causes, total = first_findings(vm, duplicates)
    else:
        kept, total = _FINDINGS.get(vm, lambda: _findings_kept(vm), fingerprint=fingerprint)
        causes = list(kept)
    if not causes:
        return []
    if level == STRICT:
        name = vm_name(vm)
        raise FieldValidationError(
            invalid_status(invalid_message(name, causes, total), causes, name=name, total=total)
        )
    if level != WARN:
        raise ValueError(f"field validation level {level!r} is not one of {', '.join(LEVELS)}")
    warnings = [warning_text(c) for c in causes if c.reason in _GOVERNED]
    if total > len(causes):
        warnings.append(more_text(total - len(causes)))
    return warnings
