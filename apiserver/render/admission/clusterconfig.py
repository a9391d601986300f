"""The cluster configuration the VM webhook reads (``pkg/virt-config``: ``configuration.go``,
``virt-config.go``, ``feature-gates.go``).

virt-api decodes the KubeVirt CR's ``spec.configuration`` over its built-in defaults: a member given a
non-empty value replaces the default, an omitted or empty one keeps it. The defaults the webhook's rules
depend on are the ones below (``configuration.go``'s ``defaultClusterConfig``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apiserver.render import gojson
from apiserver.render.admission import featuregates as fg
from apiserver.render.config import ClusterConfig, cluster_config

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


_CACHE: dict[int, tuple[Mapping[str, Any] | None, AdmissionConfig]] = {}


def admission_config(kubevirt: Mapping[str, Any] | None) -> AdmissionConfig:
    """Build (once per CR object) the configuration from a KubeVirt CR or a bare KubeVirtConfiguration."""
    key = id(kubevirt)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is kubevirt:
        return hit[1]
    config = _build(kubevirt)
    if len(_CACHE) > 64:
        _CACHE.clear()
    _CACHE[key] = (kubevirt, config)
    return config


def _build(kubevirt: Mapping[str, Any] | None) -> AdmissionConfig:
    render = cluster_config(kubevirt)
    if not kubevirt:
        return AdmissionConfig(render=render)
    is_cr = isinstance(kubevirt.get("spec"), Mapping) or kubevirt.get("kind") == "KubeVirt"
    spec = kubevirt.get("spec")
    raw = ((spec.get("configuration") if isinstance(spec, Mapping) else None) if is_cr else kubevirt) or {}
    conf = gojson.roundtrip(raw, "KubeVirtConfiguration")  # cluster_config above refused a bad one
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
