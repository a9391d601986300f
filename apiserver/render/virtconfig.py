"""The parts of KubeVirt's cluster configuration that expand depends on.

virt-api builds its configuration by encoding the KubeVirt CR's ``spec.configuration`` with Go's
``encoding/json`` (so zero values are dropped by ``omitempty``) and decoding that over the built-in
defaults: a field given a non-empty value overrides the default, an empty one does not. The default
architecture comes from the CR's ``status.defaultArchitecture``. The result is then validated
(``validateConfig``); a configuration that fails is not used at all: KubeVirt logs the error and keeps
its last valid configuration, which for a virt-api that never saw a valid one is the whole default
configuration. Neither the CRD's schema nor virt-operator refuses such a CR, so it can exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from apiserver.render.golang import gojson
from apiserver.render.kubernetes.errors import Cause, ExpandError
from apiserver.render.kubernetes.quantity import QuantityError, canonical, parse_quantity
from apiserver.render.memo import Memo

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
    # Why KubeVirt would refuse the given configuration (validateConfig's error), when it would: the
    # values above are then the defaults.
    invalid: str = ""

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


# The defaults validateConfig can see through (virt-config's DefaultMemoryOvercommit,
# DefaultCPUAllocationRatio, DefaultLessPVCSpaceToleration, DefaultNetworkInterface).
_DEFAULT_MEMORY_OVERCOMMIT = 100
_DEFAULT_CPU_ALLOCATION_RATIO = 10
_DEFAULT_PVC_TOLERATION = 10
_PULL_POLICIES = ("Always", "Never", "IfNotPresent")
_DEFAULT_INTERFACES = ("bridge", "slirp", "masquerade")


def validate_config(conf: Mapping[str, Any]) -> str:
    """``validateConfig`` of the configuration ``conf`` (Go-encoded) merged over the defaults: its
    error text, or "" when KubeVirt accepts it. Every rule, in KubeVirt's order."""
    policy = conf.get("imagePullPolicy", "")
    if policy and policy not in _PULL_POLICIES:
        return f"invalid dev.imagePullPolicy in config: {policy}"
    developer = conf.get("developerConfiguration") or {}
    overcommit = developer.get("memoryOvercommit", _DEFAULT_MEMORY_OVERCOMMIT)
    if overcommit <= 0:
        return f"invalid memoryOvercommit in ConfigMap: {overcommit}"
    ratio = developer.get("cpuAllocationRatio", _DEFAULT_CPU_ALLOCATION_RATIO)
    if ratio <= 0:
        return f"invalid cpu allocation ratio in ConfigMap: {ratio}"
    toleration = developer.get("pvcTolerateLessSpaceUpToPercent", _DEFAULT_PVC_TOLERATION)
    if toleration < 0 or toleration > 100:
        return f"invalid lessPVCSpaceToleration in ConfigMap: {toleration}"
    interface = (conf.get("network") or {}).get("defaultNetworkInterface", "")
    if interface and interface not in _DEFAULT_INTERFACES:
        return f"invalid default-network-interface in config: {interface}"
    return ""


# Configurations per CR version (apiserver.render.memo): a server renders every VM with one CR.
_CONFIGS: Memo[ClusterConfig] = Memo(64)


def cluster_config(kubevirt: Mapping[str, Any] | None, *, fingerprint: bytes | None = None) -> ClusterConfig:
    """Build the configuration from a KubeVirt CR (it has a ``spec``) or a bare KubeVirtConfiguration.

    ``fingerprint``: the CR's JSON text, when known to be JSON; results are reused per CR version."""
    if not kubevirt:
        return DEFAULT_CONFIG
    return _CONFIGS.get(kubevirt, lambda: _build(kubevirt), fingerprint=fingerprint)


def decode_configuration(kubevirt: Mapping[str, Any]) -> dict[str, Any]:
    """The CR's ``spec.configuration`` (or a bare configuration) as virt-api decodes it, Go-encoded.

    Case-sensitive member names: virt-api reads the CR through client-go. A value of the wrong type is
    a 422 naming the field (a real API server's schema refuses it before KubeVirt could see it).
    """
    is_cr = isinstance(kubevirt.get("spec"), Mapping) or kubevirt.get("kind") == "KubeVirt"
    raw_conf = _dig(kubevirt, "spec", "configuration") if is_cr else kubevirt
    try:
        conf: dict[str, Any] = gojson.roundtrip(raw_conf or {}, "KubeVirtConfiguration", exact_names=True)
    except gojson.GoDecodeError as err:
        prefix = "spec.configuration." if is_cr else ""
        raise ExpandError.invalid(
            f"invalid KubeVirt configuration: {err}",
            Cause(prefix + err.path, str(err)),
        ) from None
    return conf


def _build(kubevirt: Mapping[str, Any]) -> ClusterConfig:
    conf = decode_configuration(kubevirt)
    invalid = validate_config(conf)
    if invalid:
        return replace(DEFAULT_CONFIG, invalid=invalid)

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

    values["default_architecture"] = _default_architecture(kubevirt, arch_conf)
    return ClusterConfig(**values)


def _default_architecture(kubevirt: Mapping[str, Any], arch_conf: Mapping[str, Any]) -> str:
    """KubeVirt's setConfigFromKubeVirt: the CR's ``status.defaultArchitecture``, as it is. virt-api reads
    only a CR with a ``status.phase`` (GetConfigFromKubeVirtCR); virt-operator fills the architecture in
    once it deploys, so a CR with a phase and no architecture yet gives none (the VM gets no
    ``architecture`` and the amd64 machine type). A bare configuration or a CR written by hand without a
    status (the folder source, the command line) is read as virt-operator would publish it: the
    configured architecture, else amd64 (virt-operator's build architecture on every supported install)."""
    is_cr = isinstance(kubevirt.get("spec"), Mapping) or kubevirt.get("kind") == "KubeVirt"
    status = kubevirt.get("status") if is_cr else None
    if isinstance(status, Mapping) and status.get("phase"):
        arch = status.get("defaultArchitecture")
        return arch if isinstance(arch, str) else ""
    status_arch = _dig(kubevirt, "status", "defaultArchitecture") if is_cr else None
    return status_arch or arch_conf.get("defaultArchitecture") or "amd64"
