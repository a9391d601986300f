"""Kubernetes ``Status`` objects for rendering failures.

The renderer reports every failure as a ``Status`` dict because that is what every consumer needs in the
end: the HTTP layer sends it as is, the command line prints it, and the Python API attaches it to
:class:`ExpandError`. The ``message`` is KubeVirt's own error text so that tools matching on it keep
working; ``details.causes`` adds the field paths KubeVirt leaves out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# StatusCause types used by Kubernetes (k8s.io/apimachinery/pkg/apis/meta/v1/types.go).
CAUSE_NOT_FOUND = "FieldValueNotFound"
CAUSE_REQUIRED = "FieldValueRequired"
CAUSE_DUPLICATE = "FieldValueDuplicate"
CAUSE_INVALID = "FieldValueInvalid"
CAUSE_NOT_SUPPORTED = "FieldValueNotSupported"
CAUSE_FORBIDDEN = "FieldValueForbidden"
CAUSE_TYPE_INVALID = "FieldValueTypeInvalid"
CAUSE_UNKNOWN_FIELD = "FieldValueUnknownField"
# Ours: the last cause of a capped list, saying how many were left out (``and 599900 more``).
CAUSE_TOO_MANY = "TooManyCauses"

VM_GROUP = "kubevirt.io"
VM_KIND = "VirtualMachine"

# Bounds on every Status, so that no answer is much larger than its request: a body of 300,000 bad
# items would otherwise list each twice (in ``causes`` and in the message), 40 times its own size.
MAX_CAUSES = 100
# One cause's message and field, in UTF-8 bytes.
MAX_CAUSE_TEXT = 1024
# A Status message, in UTF-8 bytes.
MAX_MESSAGE = 32 * 1024
_ELLIPSIS = "..."


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (ending in ``...`` when cut)."""
    if len(text) * 4 <= limit:  # short enough whatever its characters
        return text
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text
    cut = raw[: max(0, limit - len(_ELLIPSIS))].decode("utf-8", "ignore")
    return cut + _ELLIPSIS


def more_text(count: int) -> str:
    """What stands for ``count`` causes or warnings left out."""
    return f"and {count} more"


def bounded_causes(causes: Sequence[Mapping[str, Any]], total: int | None = None) -> list[dict[str, Any]]:
    """The first :data:`MAX_CAUSES` causes, their texts shortened, then one cause saying how many more.

    ``total``: how many causes there were when ``causes`` is already a prefix of them.
    """
    total = len(causes) if total is None else max(total, len(causes))
    kept: list[dict[str, Any]] = []
    for cause in causes[:MAX_CAUSES]:
        item = dict(cause)
        for key in ("message", "field"):
            value = item.get(key)
            if isinstance(value, str):
                item[key] = shorten(value, MAX_CAUSE_TEXT)
        kept.append(item)
    if total > len(kept):
        kept.append({"reason": CAUSE_TOO_MANY, "message": more_text(total - len(kept))})
    return kept


def bound_status(body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` with its message and causes within the bounds above (the same dict when they are)."""
    out = body if isinstance(body, dict) else dict(body)
    message = out.get("message")
    details = out.get("details")
    causes = details.get("causes") if isinstance(details, Mapping) else None
    long_message = isinstance(message, str) and len(message) > MAX_MESSAGE // 4
    if not long_message and not (isinstance(causes, list) and causes and _unbounded(causes)):
        return out
    out = dict(out)
    if isinstance(message, str):
        out["message"] = shorten(message, MAX_MESSAGE)
    if isinstance(causes, list) and isinstance(details, Mapping):
        out["details"] = {**details, "causes": bounded_causes(causes)}
    return out


def _unbounded(causes: list[Any]) -> bool:
    if len(causes) > MAX_CAUSES:
        last = causes[-1]
        capped = isinstance(last, Mapping) and last.get("reason") == CAUSE_TOO_MANY
        if len(causes) > MAX_CAUSES + 1 or not capped:
            return True
    return any(
        isinstance(text, str) and len(text) * 4 > MAX_CAUSE_TEXT
        for cause in causes
        if isinstance(cause, Mapping)
        for text in (cause.get("message"), cause.get("field"))
    )


@dataclass(frozen=True, slots=True)
class Cause:
    """One problem with one field, as a Kubernetes ``StatusCause``."""

    field: str
    message: str
    reason: str = CAUSE_INVALID

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


def status(
    code: int,
    reason: str,
    message: str,
    *,
    details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Build a failure ``Status`` (apiVersion v1) in the member order kube-apiserver writes."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": shorten(message, MAX_MESSAGE),
        "reason": reason,
    }
    if details:
        body["details"] = dict(details)
        causes = details.get("causes")
        if isinstance(causes, list) and _unbounded(causes):
            body["details"]["causes"] = bounded_causes(causes)
    body["code"] = code
    return body


def invalid_status(
    message: str,
    causes: Iterable[Cause],
    *,
    name: str = "",
    group: str = VM_GROUP,
    kind: str = VM_KIND,
    total: int | None = None,
) -> dict[str, Any]:
    """A 422 Invalid ``Status`` whose details name the object and list the field causes (the first
    :data:`MAX_CAUSES`, then ``and N more``; ``total``: the number of causes when ``causes`` holds
    only the first of them)."""
    details: dict[str, Any] = {}
    if name:
        details["name"] = shorten(name, MAX_CAUSE_TEXT)
    details["group"] = group
    details["kind"] = kind
    every = causes if isinstance(causes, Sequence) else list(causes)
    if every:
        details["causes"] = bounded_causes(
            [c.to_dict() for c in every[:MAX_CAUSES]], len(every) if total is None else total
        )
    return status(422, "Invalid", message, details=details)


class ExpandError(Exception):
    """Rendering failed; ``status`` is the Kubernetes ``Status`` the server would send."""

    def __init__(self, status_body: Mapping[str, Any]) -> None:
        self.status: dict[str, Any] = dict(status_body)
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return str(self.status.get("message", ""))

    @property
    def code(self) -> int:
        return int(self.status.get("code", 500))

    @property
    def reason(self) -> str:
        return str(self.status.get("reason", ""))

    @property
    def causes(self) -> list[dict[str, Any]]:
        details = self.status.get("details") or {}
        return list(details.get("causes") or [])

    @classmethod
    def invalid(cls, message: str, *causes: Cause, name: str = "") -> ExpandError:
        return cls(invalid_status(message, causes, name=name))

    @classmethod
    def bad_request(cls, message: str) -> ExpandError:
        return cls(status(400, "BadRequest", message))
