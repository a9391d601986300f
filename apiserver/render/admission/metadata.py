"""Template metadata rules (``vmi-create-admitter.go``: ``ValidateVirtualMachineInstanceMetadata``;
``grace_io_virtualization.go``: ``validateGraceIOVirtualizationAnnotations``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.admission import featuregates as fg
from apiserver.render.admission._go import Causes, invalid, not_supported
from apiserver.render.admission.clusterconfig import AdmissionConfig

RESTRICTED_LABELS = frozenset(
    {
        "kubevirt.io/created-by",
        "kubevirt.io/migrationJobUID",
        "kubevirt.io/nodeName",
        "kubevirt.io/migrationTargetNodeName",
        "kubevirt.io/schedulable",
        "kubevirt.io/install-strategy",
    }
)
IGNITION_ANNOTATION = "kubevirt.io/ignitiondata"
SIDECAR_ANNOTATION = "hooks.kubevirt.io/hookSidecars"


def validate_metadata(
    field: str, metadata: Mapping[str, Any], config: AdmissionConfig, kubevirt_service_account: bool
) -> Causes:
    """``ValidateVirtualMachineInstanceMetadata``: reserved labels, ignition and sidecar annotations."""
    causes: Causes = []
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    if not kubevirt_service_account and any(k in RESTRICTED_LABELS for k in labels):
        causes.append(
            not_supported(
                f"{field}.labels",
                "creation of the following reserved kubevirt.io/ labels on a VMI object is prohibited",
            )
        )
    if annotations.get(IGNITION_ANNOTATION) and not config.enabled(fg.IGNITION):
        causes.append(
            invalid(
                f"{field}.annotations",
                "ExperimentalIgnitionSupport feature gate is not enabled in kubevirt-config, invalid entry "
                f"{field}.annotations.{IGNITION_ANNOTATION}",
            )
        )
    if annotations.get(SIDECAR_ANNOTATION) and not config.enabled(fg.SIDECAR):
        causes.append(
            invalid(
                f"{field}.annotations",
                f"sidecar feature gate is not enabled in kubevirt-config, invalid entry {field}.annotations.{SIDECAR_ANNOTATION}",
            )
        )
    return causes
