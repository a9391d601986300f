"""KubeVirt's legacy VirtualMachineInstancePresets, applied to an expanded VM's template."""

from apiserver.render.presets.apply import apply_presets
from apiserver.render.presets.report import PresetReport, PresetWarning

__all__ = ["PresetReport", "PresetWarning", "apply_presets"]
