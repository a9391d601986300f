"""Kubernetes ``Status`` objects for rendering failures.

The renderer reports every failure as a ``Status`` dict because that is what every consumer needs in the
end: the HTTP layer sends it as is, the command line prints it, and the Python API attaches it to
:class:`ExpandError`. The ``message`` is KubeVirt's own error text so that tools matching on it keep
working; ``details.causes`` adds the field paths KubeVirt leaves out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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

VM_GROUP = "kubevirt.io"
VM_KIND = "VirtualMachine"


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
        "message": message,
        "reason": reason,
    }
    if details:
        body["details"] = dict(details)
    body["code"] = code
    return body


def invalid_status(
    message: str,
    causes: Iterable[Cause],
    *,
    name: str = "",
    group: str = VM_GROUP,
    kind: str = VM_KIND,
) -> dict[str, Any]:
    """A 422 Invalid ``Status`` whose details name the object and list the field causes."""
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    details["group"] = group
    details["kind"] = kind
    cause_list = [c.to_dict() for c in causes]
    if cause_list:
        details["causes"] = cause_list
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
