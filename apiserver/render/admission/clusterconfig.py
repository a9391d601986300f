"""The cluster configuration the VM webhook reads (``pkg/virt-config``: ``configuration.go``,
``virt-config.go``, ``feature-gates.go``).

virt-api decodes the KubeVirt CR's ``spec.configuration`` over its built-in defaults: a member given a
non-empty value replaces the default, an omitted or empty one keeps it. The defaults the webhook's rules
depend on are the ones below (``configuration.go``'s ``defaultClusterConfig``). A configuration that
``validateConfig`` refuses is not used at all (``GetConfig`` keeps the default one), for these rules as for
rendering: both read one validated configuration (:func:`apiserver.render.virtconfig.cluster_config`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apiserver.render.admission import featuregates as fg
from apiserver.render.memo import Memo
from apiserver.render.virtconfig import ClusterConfig, cluster_config, decode_configuration

_DEFAULT_EMULATED = {"amd64": ("q35*", "pc-q35*"), "arm64": ("virt*",), "s390x": ("s390-ccw-virtio*",)}


@dataclass(frozen=True, slots=True)
class AdmissionConfig:
    """What the webhook's rules ask ``virtconfig.ClusterConfig`` for."""

    render: ClusterConfig = field(default_factory=ClusterConfig)
    feature_gates: tuple[str, ...] = ()
    disabled_feature_gates: tuple[str, ...] = ()
    vm_rollout_strategy: str | None = "LiveUpdate"
    emulated_machines: tuple[str, ...] | None = None
    arch_emulated_machines: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: dict(_DEFAULT_EMULATED)
    )
    persistent_reservation_enabled: bool | None = None
    permitted_pci_host_devices: tuple[tuple[str, str], ...] = ()

    def enabled(self, gate: str) -> bool:
        """``isFeatureGateEnabled``."""
        return fg.is_enabled(gate, self.feature_gates, self.disabled_feature_gates)

    def live_update_rollout(self) -> bool:
        """``IsVMRolloutStrategyLiveUpdate``."""
        return self.vm_rollout_strategy is None or self.vm_rollout_strategy == "LiveUpdate"

    def emulated_machines_for(self, arch: str) -> tuple[str, ...]:
        """``GetEmulatedMachines``: the deprecated global list, else the architecture's (amd64 for others)."""
        if self.emulated_machines is not None:
            return self.emulated_machines
        if arch in ("arm64", "s390x"):
            return self.arch_emulated_machines.get(arch, ())
        return self.arch_emulated_machines.get("amd64", ())

    def persistent_reservation(self) -> bool:
        """``PersistentReservationEnabled``: the configuration's switch, else the gate listed explicitly."""
        if self.persistent_reservation_enabled is not None:
            return self.persistent_reservation_enabled
        return fg.PERSISTENT_RESERVATION in self.feature_gates

    @property
    def default_architecture(self) -> str:
        return self.render.default_architecture

    def machine_type(self, arch: str) -> str:
        return self.render.machine_type_for(arch)


# Per CR version, as the rendering configuration (apiserver.render.memo): a dict edited in place between
# two Python API calls (a feature gate added) is read afresh.
_CONFIGS: Memo[AdmissionConfig] = Memo(64)


def admission_config(
    kubevirt: Mapping[str, Any] | None, *, fingerprint: bytes | None = None
) -> AdmissionConfig:
    """The configuration from a KubeVirt CR or a bare KubeVirtConfiguration (``fingerprint``: its JSON
    text, when known to be JSON)."""
    if not kubevirt:
        return _DEFAULT
    return _CONFIGS.get(kubevirt, lambda: _build(kubevirt, fingerprint), fingerprint=fingerprint)


def _build(kubevirt: Mapping[str, Any], fingerprint: bytes | None) -> AdmissionConfig:
    # One validation for both: KubeVirt's webhook reads GetConfig() too, so a configuration that fails
    # validateConfig leaves every rule (feature gates included) on the default configuration.
    render = cluster_config(kubevirt, fingerprint=fingerprint)
    if render.invalid:
        return AdmissionConfig(render=render)
    conf = decode_configuration(kubevirt)
    values: dict[str, Any] = {"render": render}
    dev = conf.get("developerConfiguration")
    if dev is not None:
        values["feature_gates"] = tuple(dev.get("featureGates") or ())
        values["disabled_feature_gates"] = tuple(dev.get("disabledFeatureGates") or ())
    if conf.get("vmRolloutStrategy"):
        values["vm_rollout_strategy"] = conf["vmRolloutStrategy"]
    if conf.get("emulatedMachines"):
        values["emulated_machines"] = tuple(conf["emulatedMachines"])
    arch_conf = conf.get("architectureConfiguration") or {}
    machines = dict(_DEFAULT_EMULATED)
    for arch in ("amd64", "arm64", "s390x"):
        given = (arch_conf.get(arch) or {}).get("emulatedMachines")
        if given:
            machines[arch] = tuple(given)
    values["arch_emulated_machines"] = machines
    pr = conf.get("persistentReservationConfiguration") or {}
    if pr.get("enabled") is not None:
        values["persistent_reservation_enabled"] = bool(pr["enabled"])
    pci = (conf.get("permittedHostDevices") or {}).get("pciHostDevices") or ()
    values["permitted_pci_host_devices"] = tuple(
        (d.get("resourceName", ""), d.get("pciVendorSelector", "")) for d in pci
    )
    return AdmissionConfig(**values)


_DEFAULT = AdmissionConfig()
