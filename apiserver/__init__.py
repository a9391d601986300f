"""kubevirt-expand-apiserver: render KubeVirt VirtualMachines with instancetypes and preferences applied."""

from apiserver.api import (
    Expanded,
    Expander,
    ExpandWarning,
    expand,
    expand_json,
    expand_vm,
    launch_vm,
    launch_vmi,
    preview_change,
)
from apiserver.documents.manifests import ManifestError, parse_manifests, read_manifest_paths
from apiserver.render.admission import AdmissionDenied
from apiserver.render.kubernetes.errors import ExpandError

__all__ = [
    "AdmissionDenied",
    "ExpandError",
    "ExpandWarning",
    "Expanded",
    "Expander",
    "ManifestError",
    "expand",
    "expand_json",
    "expand_vm",
    "launch_vm",
    "launch_vmi",
    "parse_manifests",
    "preview_change",
    "read_manifest_paths",
]
