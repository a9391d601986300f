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

    ``unmarshal_message`` is the same failure as ``encoding/json.Unmarshal`` words it in the Go that
    KubeVirt's oracles are built with (go1.27, where ``encoding/json`` runs on ``json/v2``): the struct
    named is the root type, or the alias type of the innermost custom ``UnmarshalJSON`` that decodes its
    own copy (``VMISpecAlias`` for a VM's ``spec.template.spec``), the path runs from there and counts
    array elements (``VMISpecAlias.domain.devices.disks.0.bootOrder``), and a path ending in an index
    drops the words "Go struct field". KubeVirt's VM webhook answers with this text.
    """

    def __init__(self, path: str, message: str, unmarshal_message: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.message = message
        self.unmarshal_message = message if unmarshal_message is None else unmarshal_message


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
