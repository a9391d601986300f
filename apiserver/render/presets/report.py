"""What applying presets reports: per-preset warnings (KubeVirt logs them) and the admission warning."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from apiserver.render.golang.gotext import aggregate

EXCLUDE_ANNOTATION = "virtualmachineinstancepresets.admission.kubevirt.io/exclude"
ANNOTATION_PREFIX = "virtualmachinepreset.kubevirt.io/"
ANNOTATION_VALUE = "kubevirt.io/v1"
# virt-api's VMI mutating webhook warns whenever an annotation key contains this text.
DEPRECATION_MARKER = "virtualmachinepreset"
DEPRECATION_WARNING = (
    "kubevirt.io/v1 VirtualMachineInstancePresets is now deprecated and will be removed in v2."
)


@dataclass(frozen=True, slots=True)
class PresetWarning:
    """One matching preset KubeVirt logs a warning for.

    ``applied`` is true when the preset was applied (and annotated) but ``fields`` conflicted and kept
    the VM's values; false when nothing of it was applied (``fields`` empty when nothing conflicted
    but nothing could be merged either). ``message`` starts with KubeVirt's log text.
    """

    preset: str
    applied: bool
    fields: list[str]
    message: str


@dataclass(slots=True)
class PresetReport:
    """The outcome of :func:`apply_presets` besides the modified VM."""

    matched: list[str] = field(default_factory=list)
    excluded: bool = False
    warnings: list[PresetWarning] = field(default_factory=list)
    admission_warnings: list[str] = field(default_factory=list)

    def warning_texts(self) -> list[str]:
        """One line per warning, for HTTP ``Warning`` headers: preset warnings, then admission ones."""
        return [w.message for w in self.warnings] + list(self.admission_warnings)


def admission_warnings(annotation_keys: Iterable[str]) -> list[str]:
    """The webhook's response warnings for a VMI carrying these annotation keys."""
    if any(DEPRECATION_MARKER in key for key in annotation_keys):
        return [DEPRECATION_WARNING]
    return []


def warning_for(preset: str, applied: bool, conflicts: list[tuple[str, str]]) -> PresetWarning | None:
    """KubeVirt's log line for one preset, or None when it logs nothing at warning level.

    ``conflicts`` are (field, text) pairs; their texts are aggregated as ``utilerrors`` prints them.
    """
    fields = [f for f, _ in conflicts]
    detail = aggregate(text for _, text in conflicts) if conflicts else "<nil>"
    if applied:
        if not conflicts:
            return None
        message = f"Some settings were not applied for VirtualMachineInstancePreset '{preset}': {detail}"
    else:
        message = f"Unable to apply VirtualMachineInstancePreset '{preset}': {detail}"
    return PresetWarning(preset, applied, fields, message)
