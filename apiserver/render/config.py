"""The parts of KubeVirt's cluster configuration that expand depends on.

virt-api builds its configuration by encoding the KubeVirt CR's ``spec.configuration`` with Go's
``encoding/json`` (so zero values are dropped by ``omitempty``) and decoding that over the built-in
defaults: a field given a non-empty value overrides the default, an empty one does not. The default
architecture comes from the CR's ``status.defaultArchitecture``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apiserver.render import gojson
from apiserver.render.errors import Cause, ExpandError
from apiserver.render.quantity import QuantityError, canonical, parse_quantity

DEFAULT_CPU_REQUEST = "100m"


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    default_network_interface: str = "bridge"
    permit_bridge_interface_on_pod_network: bool = True
    machine_type: str = ""
    amd64_machine_type: str = "q35"
    arm64_machine_type: str = "virt"
    s390x_machine_type: str = "s390-ccw-virtio"
    default_architecture: str = "amd64"
    cpu_request: str = DEFAULT_CPU_REQUEST
    # Whether cpu_request differs numerically from the built-in 100m (only then is it written).
    cpu_request_is_custom: bool = False
    eviction_strategy: str | None = "None"

    def machine_type_for(self, arch: str) -> str:
        """KubeVirt's GetMachineType: a global override, else per architecture (amd64 for the rest)."""
        if self.machine_type:
            return self.machine_type
        if arch == "arm64":
            return self.arm64_machine_type
        if arch == "s390x":
            return self.s390x_machine_type
        return self.amd64_machine_type


DEFAULT_CONFIG = ClusterConfig()


def _dig(doc: Mapping[str, Any], *path: str) -> Any:
    cur: Any = doc
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def cluster_config(kubevirt: Mapping[str, Any] | None) -> ClusterConfig:
    """Build the configuration from a KubeVirt CR (it has a ``spec``) or a bare KubeVirtConfiguration."""
    if not kubevirt:
        return DEFAULT_CONFIG
    is_cr = isinstance(kubevirt.get("spec"), Mapping) or kubevirt.get("kind") == "KubeVirt"
    raw_conf = _dig(kubevirt, "spec", "configuration") if is_cr else kubevirt
    try:
        conf = gojson.roundtrip(raw_conf or {}, "KubeVirtConfiguration")
    except gojson.GoDecodeError as err:
        prefix = "spec.configuration." if is_cr else ""
        raise ExpandError.invalid(
            f"invalid KubeVirt configuration: {err}",
            Cause(prefix + err.path, str(err)),
        ) from None

    values: dict[str, Any] = {}
    network = conf.get("network") or {}
    if network.get("defaultNetworkInterface"):
        values["default_network_interface"] = network["defaultNetworkInterface"]
    if network.get("permitBridgeInterfaceOnPodNetwork") is not None:
        values["permit_bridge_interface_on_pod_network"] = network["permitBridgeInterfaceOnPodNetwork"]
    if conf.get("machineType"):
        values["machine_type"] = conf["machineType"]
    arch_conf = conf.get("architectureConfiguration") or {}
    for arch in ("amd64", "arm64", "s390x"):
        machine = _dig(arch_conf, arch, "machineType")
        if machine:
            values[f"{arch}_machine_type"] = machine
    if conf.get("cpuRequest") is not None:
        request = conf["cpuRequest"]
        try:
            custom = parse_quantity(request) != parse_quantity(DEFAULT_CPU_REQUEST)
        except QuantityError as err:  # pragma: no cover - decode already canonicalised it
            raise ExpandError.invalid(str(err), Cause("spec.configuration.cpuRequest", str(err))) from None
        values["cpu_request"] = canonical(request)
        values["cpu_request_is_custom"] = custom
    if conf.get("evictionStrategy") is not None:
        values["eviction_strategy"] = conf["evictionStrategy"]

    # virt-operator publishes the default architecture in the CR status: the configured one, else its
    # own build architecture (amd64 on every supported install of this server).
    status_arch = _dig(kubevirt, "status", "defaultArchitecture") if is_cr else None
    configured_arch = arch_conf.get("defaultArchitecture")
    values["default_architecture"] = status_arch or configured_arch or "amd64"
    return ClusterConfig(**values)
