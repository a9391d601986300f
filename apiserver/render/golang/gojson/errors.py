"""What the Go JSON codec reports: a decode failure, or the problems a strict check finds."""

from __future__ import annotations

from dataclasses import dataclass

# Kubernetes StatusCause types (k8s.io/apimachinery/pkg/apis/meta/v1/types.go).
UNKNOWN_FIELD = "FieldValueUnknownField"
TYPE_INVALID = "FieldValueTypeInvalid"
REQUIRED = "FieldValueRequired"
INVALID = "FieldValueInvalid"


class GoDecodeError(ValueError):
    """``json.Unmarshal`` into the Go type failed.

    ``path`` is where (``spec.template.spec.domain.devices.disks[0].name``; ``""`` for the document
    itself); ``message`` is modelled on Go's text, e.g. ``json: cannot unmarshal string into Go struct
    field CPU.spec.template.spec.domain.cpu.cores of type uint32``, or a parser's own error (quantities,
    times, durations) as Go returns it.
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """One problem a strict check found, shaped like a Kubernetes ``StatusCause``."""

    path: str
    reason: str
    message: str

    @property
    def field(self) -> str:
        """The StatusCause name for ``path``."""
        return self.path

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.path}
