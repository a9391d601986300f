"""KubeVirt's VirtualMachine validating webhook (``VMsAdmitter.Admit`` for a CREATE), pure: ``validate=true``.

Ported from KubeVirt at commit d923fdb815cd2016ddaebdaaa51db04133576d72 so that automation learns before
creating a VM whether KubeVirt would admit it, with KubeVirt's causes in KubeVirt's order. Each module
mirrors the KubeVirt file it is named after in its docstring; each function names its Go counterpart.

======================================================  ==================================================
KubeVirt (package: function)                            here
======================================================  ==================================================
virt-api/.../admitters: ``VMsAdmitter.Admit``           :func:`.pipeline.admit`
util/webhooks: ``ValidateSchema``; util/openapi         :func:`.schema.validate_schema`
admitters: ``json.Unmarshal`` of the VM (bare error)    :func:`refuse_undecodable`
util/webhooks: ``ToAdmissionResponse`` (10 causes)      :func:`denial_status`
instancetype/webhooks/vm: ``ApplyToVM``                 :func:`.pipeline.admit` (stage 3)
instancetype/preference/validation: ``CheckSpread...``  :func:`.instancetype.spread_causes`
instancetype/preference/requirements: ``Check``         :func:`.instancetype.requirement_causes`
defaults: ``SetDefaultVirtualMachineInstanceSpec``      :mod:`apiserver.render.defaults`
virt-config/featuregate: ``ValidateFeatureGates``       :func:`.featuregates.validate_feature_gates`
virt-config/featuregate: ``IsEnabled``, gate states     :func:`.featuregates.is_enabled`, ``GATES``
virt-config: ``ClusterConfig`` getters                  :class:`.clusterconfig.AdmissionConfig`
network/admitter: ``ValidateCreation`` (discontinued)   :func:`.network.validate_creation`
admitters: ``ValidateVirtualMachineSpec``               :func:`.vm_spec.validate_vm_spec`
admitters: ``ValidateVirtualMachineInstanceMetadata``   :func:`.metadata.validate_metadata`
admitters: ``validateGraceIOVirtualization*``           :mod:`.hostdevices`
admitters: ``ValidateVirtualMachineInstanceSpec``       :func:`.vmi_spec.validate_vmi_spec` (call order)
admitters: hostname, subdomain, DNS policy/config       :mod:`.dns`
admitters: memory requests/limits/hugepages/guest       :mod:`.memory`
liveupdate/memory: ``ValidateLiveUpdateMemory``         :func:`.memory.live_update_memory_error`
admitters: CPU requests, pinning, NUMA, realtime, ...   :mod:`.cpu`
admitters: emulated machine, ACPI, firmware, SMM        :mod:`.firmware`
admitters: affinity, topology spread (k8s utils)        :mod:`.scheduling`
network/admitter: ``Validate`` (all of validator.go)    :func:`.network.validate`
dra/admitter: ``ValidateCreation``                      :func:`.dra.validate_creation`
admitters: ``validateBootOrder``                        :func:`.disks.validate_boot_order`
storage/admitters: ``ValidateDisks``, ``ValidatePath``  :func:`.disks.validate_disks`, ``validate_path``
storage/admitters: ``ValidateContainerDisks``           :func:`.disks.validate_container_disks`
storage/admitters: ``ValidateHotplugDiskConfiguration`` :func:`.disks.validate_hotplug_disk`
admitters: ``validateVolumes``                          :func:`.volumes.validate_volumes`
storage/admitters: ``ValidateUtilityVolumesNot...``     :func:`.volumes.validate_utility_volumes_absent`
admitters: filesystems (virtiofs), service account      :mod:`.volumes`
admitters: ``validateProbe`` (+ pod network)            :mod:`.probes`
admitters: ``validateAccessCredentials``                :mod:`.accesscredentials`
admitters: inputs, IO threads, start strategy, ...      :mod:`.devices`
admitters: ``validateLaunchSecurity``; webhooks/amd64   :mod:`.launchsecurity`
admitters: ``validateRunStrategy``                      :func:`.vm_spec.validate_run_strategy`
admitters: ``validateLiveUpdateFeatures``               :func:`.vm_spec.validate_live_update`
storage/admitters: ``ValidateDataVolumeTemplate``       :func:`.vm_spec.validate_data_volume_templates`
storage/admitters: ``Admit`` (template namespaces)      :func:`.vm_spec.validate_data_volume_template_namespaces`
admitters: ``validateVolumeRequests``                   :func:`.volumerequests.validate_volume_requests`
k8s apimachinery validation helpers                     :mod:`.k8svalidation`
======================================================  ==================================================

Cluster state: KubeVirt reads the VM's running VMI (only for a VM with ``status.volumeRequests`` and
``status.ready``); it is asked of the lookup like any other object. DataSources and Namespaces are
handed to the webhook but no rule of a CREATE reads them at this commit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.admission.clusterconfig import AdmissionConfig, admission_config
from apiserver.render.admission.pipeline import Verdict, admit, decode_verdict, schema_verdict
from apiserver.render.kubernetes.errors import ExpandError, invalid_status, status

__all__ = [
    "AdmissionConfig",
    "AdmissionDenied",
    "Verdict",
    "admission_config",
    "admit",
    "check_schema",
    "denial_status",
    "refuse_undecodable",
]

PREFIX = "admission webhook would deny the VirtualMachine: "
# ToAdmissionResponse keeps this many causes and counts the rest in its message.
MAX_WEBHOOK_CAUSES = 10


def webhook_message(verdict: Verdict) -> str:
    """``ToAdmissionResponse``'s message: the first ten messages joined, then ``and N more validation errors``."""
    kept = verdict.causes[:MAX_WEBHOOK_CAUSES]
    message = ", ".join(c.message for c in kept)
    more = len(verdict.causes) - len(kept)
    if more > 0:
        message = f"{message}, and {more} more validation errors"
    return message


def denial_status(verdict: Verdict, name: str = "") -> dict[str, Any]:
    """The Status for a refusal: 422 with the webhook's message and its (at most ten) causes; for a bare
    error (``ToAdmissionResponseError``), 400 with its message and no causes."""
    if verdict.error:
        details = {"name": name} if name else {}
        return status(
            400,
            "BadRequest",
            PREFIX + verdict.error,
            details={**details, "group": "kubevirt.io", "kind": "VirtualMachine"},
        )
    if verdict.panic:
        message = f"{PREFIX}KubeVirt's webhook panics on this VirtualMachine ({verdict.panic}); virt-api drops the request"
        details = {"name": name} if name else {}
        return status(
            422, "Invalid", message, details={**details, "group": "kubevirt.io", "kind": "VirtualMachine"}
        )
    kept = verdict.causes[:MAX_WEBHOOK_CAUSES]
    return invalid_status(PREFIX + webhook_message(verdict), kept, name=name, total=len(kept))


class AdmissionDenied(ExpandError):
    """KubeVirt's webhook would refuse the VM; ``verdict`` holds every cause and the stage that refused."""

    def __init__(self, verdict: Verdict, name: str = "") -> None:
        super().__init__(denial_status(verdict, name))
        self.verdict = verdict


def check_schema(raw_vm: Mapping[str, Any], name: str = "") -> None:
    """The webhook's first stage alone (the OpenAPI schema check of the VM as sent): raises
    :class:`AdmissionDenied` when it refuses. Run before anything decodes the VM, as virt-api runs it."""
    verdict = schema_verdict(raw_vm)
    if verdict is not None:
        raise AdmissionDenied(verdict, name if isinstance(name, str) else "")


def refuse_undecodable(unmarshal_error: str, name: str = "") -> AdmissionDenied:
    """The refusal when the webhook's ``json.Unmarshal`` of the VM fails (after the schema check, before
    anything else): 400 with Go's error text, no causes."""
    return AdmissionDenied(decode_verdict(unmarshal_error), name)
