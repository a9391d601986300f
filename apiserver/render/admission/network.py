"""Network rules (``pkg/network/admitter``: ``validator.go`` ``Validate``/``ValidateCreation``,
``netsource.go``, ``admit.go``, ``binding.go``, ``passt.go``, ``netiface.go``, ``dra.go``,
``discontinued.go``)."""

from __future__ import annotations

import ipaddress
import itertools
import re
from collections.abc import Mapping
from typing import Any

from apiserver.render.admission import featuregates as fg
from apiserver.render.admission._go import (
    Causes,
    duplicate,
    has,
    invalid,
    items,
    not_found,
    not_supported,
    num,
    obj,
    required,
    text,
)
from apiserver.render.admission.clusterconfig import AdmissionConfig
from apiserver.render.admission.disks import PCI_ADDRESS
from apiserver.render.admission.k8svalidation import is_valid_port_name
from apiserver.render.golang.gotext import go_quote

_NAME = re.compile(r"[A-Za-z0-9-_]+")
_MODELS = ("e1000", "e1000e", "igb", "ne2k_pci", "pcnet", "rtl8139", "virtio")
_RESERVED_MAC = "02:00:00:00:00:00"
_MAC = re.compile(
    r"(?:[0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}|(?:[0-9A-Fa-f]{2}[:-]){7}[0-9A-Fa-f]{2}|"
    r"(?:[0-9A-Fa-f]{2}[:-]){19}[0-9A-Fa-f]{2}|(?:[0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}|"
    r"(?:[0-9A-Fa-f]{4}\.){3}[0-9A-Fa-f]{4}|(?:[0-9A-Fa-f]{4}\.){9}[0-9A-Fa-f]{4}"
)


def _interfaces(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    return items(obj(spec, "domain", "devices"), "interfaces")


def _networks_by_name(spec: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {text(n, "name"): n for n in items(spec, "networks")}


def _iface(field: str, idx: int) -> str:
    return f"{field}.domain.devices.interfaces[{idx}]"


def validate(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``Validator.Validate``, in its order."""
    causes: Causes = []
    causes += _single_pod_network(field, spec)
    causes += _single_network_source(field, spec)
    causes += _multus_network_source(field, spec)
    causes += _interface_state(field, spec)
    causes += _interface_binding(field, spec, config)
    causes += _network_name_unique(field, spec)
    causes += _network_devices_with_dra(field, spec, config)
    causes += _networks_assigned_to_interfaces(field, spec)
    causes += _interface_name_unique(field, spec)
    causes += _interfaces_assigned_to_networks(field, spec)
    causes += _interfaces_fields(field, spec, config)
    return causes


def validate_creation(field: str, spec: Mapping[str, Any]) -> Causes:
    """``Validator.ValidateCreation``: ``validateDiscontinuedBindings``."""
    causes: Causes = []
    for idx, iface in enumerate(_interfaces(spec)):
        if has(iface, "slirp"):
            causes.append(
                invalid(
                    f"{_iface(field, idx)}.slirp", "Slirp interface support has been discontinued since v1.3"
                )
            )
        if has(iface, "passt"):
            causes.append(
                invalid(
                    f"{_iface(field, idx)}.passt", "Passt network binding has been discontinued since v1.3"
                )
            )
        if has(iface, "macvtap"):
            causes.append(
                invalid(
                    f"{_iface(field, idx)}.macvtap",
                    "Macvtap network binding has been discontinued since v1.3",
                )
            )
    return causes


def _single_pod_network(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateSinglePodNetwork``."""
    networks = items(spec, "networks")
    pods = [n for n in networks if has(n, "pod")]
    defaults = [n for n in networks if has(n, "multus") and n["multus"].get("default")]
    causes: Causes = []
    if len(pods) > 1:
        causes.append(
            duplicate(
                f"{field}.interfaces",
                f"more than one interface is connected to a pod network in {field}.interfaces",
            )
        )
    if len(defaults) > 1:
        causes.append(invalid(f"{field}.networks", "Multus CNI should only have one default network"))
    if pods and defaults:
        causes.append(
            invalid(
                f"{field}.networks", "Pod network cannot be defined when Multus default network is defined"
            )
        )
    return causes


def _single_network_source(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateSingleNetworkSource``."""
    causes: Causes = []
    for idx, net in enumerate(items(spec, "networks")):
        count = sum(has(net, k) for k in ("pod", "multus", "resourceClaim"))
        if count == 0:
            causes.append(required(f"{field}.networks[{idx}]", "should have a network type"))
        elif count > 1:
            causes.append(required(f"{field}.networks[{idx}]", "should have only one network type"))
    return causes


def _multus_network_source(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateMultusNetworkSource``: the first multus network without a networkName."""
    for idx, net in enumerate(items(spec, "networks")):
        if has(net, "multus") and not text(net["multus"], "networkName"):
            return [required(f"{field}.networks[{idx}]", "CNI delegating plugin must have a networkName")]
    return []


def _default_network(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``vmispec.LookUpDefaultNetwork``."""
    for net in items(spec, "networks"):
        if has(net, "pod") or (has(net, "multus") and net["multus"].get("default")):
            return net
    return None


def _interface_state(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateInterfaceStateValue``."""
    causes: Causes = []
    default = _default_network(spec)
    for idx, iface in enumerate(_interfaces(spec)):
        name, state = text(iface, "name"), text(iface, "state")
        path = f"{_iface(field, idx)}.state"
        if state not in ("", "absent", "down", "up"):
            causes.append(invalid(path, f"logical {name} interface state value is unsupported: {state}"))
        if has(iface, "sriov") and state in ("down", "up"):
            causes.append(
                invalid(
                    path,
                    f"{go_quote(name)} interface's state {go_quote(state)} is not supported for SR-IOV NICs",
                )
            )
        if state == "absent" and not has(iface, "bridge"):
            causes.append(
                invalid(
                    path,
                    f"{go_quote(name)} interface's state {go_quote(state)} is supported only for bridge binding",
                )
            )
        if state == "absent" and default is not None and text(default, "name") == name:
            causes.append(
                invalid(
                    path,
                    f"{go_quote(name)} interface's state {go_quote(state)} is not supported on default networks",
                )
            )
    return causes


def _interface_binding(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateInterfaceBinding``: one binding, then the masquerade, bridge and passt rules."""
    causes: Causes = []
    networks = _networks_by_name(spec)
    bridge_on_pod = config.render.permit_bridge_interface_on_pod_network
    for idx, iface in enumerate(_interfaces(spec)):
        net = networks.get(text(iface, "name")) or {}
        path = _iface(field, idx)
        count = sum(has(iface, k) for k in ("bridge", "masquerade", "sriov", "passtBinding", "binding"))
        if count != 1:
            causes.append(
                invalid(
                    path,
                    f"logical {text(iface, 'name')} interface must have exactly one binding method or binding plugin",
                )
            )
        if has(iface, "masquerade"):
            if not has(net, "pod"):
                causes.append(
                    invalid(f"{path}.name", "Masquerade interface only implemented with pod network")
                )
            if text(iface, "macAddress") == _RESERVED_MAC:
                causes.append(
                    invalid(
                        f"{path}.macAddress",
                        "The requested MAC address is reserved for the in-pod bridge. Please choose another one.",
                    )
                )
        if has(iface, "bridge") and has(net, "pod") and not bridge_on_pod:
            causes.append(
                invalid(
                    f"{path}.name", "Bridge on pod network configuration is not enabled under kubevirt-config"
                )
            )
        if has(iface, "passtBinding"):
            if not config.enabled(fg.PASST_BINDING):
                causes.append(invalid(f"{path}.name", "PasstBinding feature gate is not enabled"))
            if not has(net, "pod"):
                causes.append(
                    invalid(f"{path}.name", "PasstBinding interface only implemented with pod network")
                )
    return causes


def _network_name_unique(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateNetworkNameUnique``."""
    causes: Causes = []
    seen: set[str] = set()
    for idx, net in enumerate(items(spec, "networks")):
        name = text(net, "name")
        if name in seen:
            causes.append(
                duplicate(
                    f"{field}.networks[{idx}].name",
                    f"Network with name {go_quote(name)} already exists, every network must have a unique name",
                )
            )
        seen.add(name)
    return causes


def dra_network_tuples(spec: Mapping[str, Any]) -> dict[str, int]:
    """``vmispec.ExtractDRANetworkClaimRequestTuples``: the first network index of each claim/request."""
    first: dict[str, int] = {}
    for idx, net in enumerate(items(spec, "networks")):
        claim = obj(net, "resourceClaim")
        if claim is None or not text(claim, "claimName") or not text(claim, "requestName"):
            continue
        first.setdefault(f"{text(claim, 'claimName')}/{text(claim, 'requestName')}", idx)
    return first


def _network_devices_with_dra(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateNetworkDevicesWithDRA``."""
    networks = items(spec, "networks")
    if not any(has(n, "resourceClaim") for n in networks):
        return []
    if not config.enabled(fg.NETWORK_DEVICES_WITH_DRA):
        return [
            invalid(
                f"{field}.networks",
                "vmi.spec.networks contains DRA networks but NetworkDevicesWithDRA feature gate is not enabled",
            )
        ]
    if any(has(n, "multus") for n in networks):
        return [
            invalid(
                f"{field}.networks",
                "mixing Multus and DRA resourceClaim networks in the same VMI is not supported",
            )
        ]
    causes: Causes = []
    first = dra_network_tuples(spec)
    claims = {text(c, "name") for c in items(spec, "resourceClaims")}
    for idx, net in enumerate(networks):
        claim = obj(net, "resourceClaim")
        if claim is None:
            continue
        name = text(net, "name")
        iface = next((i for i in _interfaces(spec) if text(i, "name") == name), None)
        if iface is not None and not has(iface, "sriov") and not has(iface, "binding"):
            causes.append(
                invalid(
                    f"{field}.domain.devices.interfaces",
                    f"DRA network {go_quote(name)} requires an SR-IOV or binding plugin interface",
                )
            )
        claim_name, request_name = text(claim, "claimName"), text(claim, "requestName")
        if not claim_name:
            causes.append(
                required(
                    f"{field}.networks[{idx}].resourceClaim.claimName",
                    "claimName is required for DRA network",
                )
            )
        if not request_name:
            causes.append(
                required(
                    f"{field}.networks[{idx}].resourceClaim.requestName",
                    "requestName is required for DRA network",
                )
            )
        if not claim_name or not request_name:
            continue
        if claim_name not in claims:
            causes.append(
                not_found(
                    f"{field}.networks[{idx}].resourceClaim.claimName",
                    f"network references resourceClaim {go_quote(claim_name)} which is not defined in spec.resourceClaims",
                )
            )
        key = f"{claim_name}/{request_name}"
        if first.get(key, idx) != idx:
            causes.append(
                duplicate(
                    f"{field}.networks[{idx}]", f"duplicate claimName/requestName combination {go_quote(key)}"
                )
            )
    return causes


def _networks_assigned_to_interfaces(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateNetworksAssignedToInterfaces``."""
    names = {text(i, "name") for i in _interfaces(spec)}
    causes: Causes = []
    for idx, net in enumerate(items(spec, "networks")):
        if text(net, "name") not in names:
            path = f"{field}.networks[{idx}].name"
            causes.append(required(path, f"{path} '{text(net, 'name')}' not found."))
    return causes


def _interface_name_unique(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateInterfaceNameUnique``."""
    causes: Causes = []
    seen: set[str] = set()
    for idx, iface in enumerate(_interfaces(spec)):
        name = text(iface, "name")
        if name in seen:
            causes.append(
                duplicate(
                    f"{_iface(field, idx)}.name",
                    "Only one interface can be connected to one specific network",
                )
            )
        seen.add(name)
    return causes


def _interfaces_assigned_to_networks(field: str, spec: Mapping[str, Any]) -> Causes:
    """``validateInterfacesAssignedToNetworks``."""
    networks = _networks_by_name(spec)
    causes: Causes = []
    for idx, iface in enumerate(_interfaces(spec)):
        if text(iface, "name") not in networks:
            path = f"{_iface(field, idx)}.name"
            causes.append(invalid(path, f"{path} '{text(iface, 'name')}' not found."))
    return causes


def _interfaces_fields(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``validateInterfacesFields``: per interface, in KubeVirt's order."""
    causes: Causes = []
    networks = _networks_by_name(spec)
    for idx, iface in enumerate(_interfaces(spec)):
        net = networks.get(text(iface, "name")) or {}
        path = _iface(field, idx)
        if not _NAME.fullmatch(text(iface, "name")):
            causes.append(
                invalid(
                    f"{path}.name",
                    "Network interface name can only contain alphabetical characters, numbers, dashes (-) or underscores (_)",
                )
            )
        model = text(iface, "model")
        if model and model not in _MODELS:
            causes.append(
                not_supported(
                    f"{path}.model", f"interface {path}.name uses model {model} that is not supported."
                )
            )
        mac_error = _mac_error(text(iface, "macAddress"))
        if mac_error:
            causes.append(invalid(f"{path}.macAddress", f"interface {path}.name has {mac_error}."))
        pci = text(iface, "pciAddress")
        if pci and not PCI_ADDRESS.fullmatch(pci):
            causes.append(
                invalid(f"{path}.pciAddress", f"interface {path}.name has malformed PCI address ({pci}).")
            )
        causes += _ports(path, iface, net)
        causes += _port_ranges(path, iface, net, config)
        causes += _dhcp(field, path, iface)
    return causes


def _mac_error(mac: str) -> str:
    """``link.ValidateMacAddress`` over Go's ``net.ParseMAC`` (6, 8 or 20 octets)."""
    if not mac:
        return ""
    if not _MAC.fullmatch(mac) or (len(mac) > 4 and mac[2] in ":-" and len(set(mac[2::3])) != 1):
        return f"malformed MAC address ({mac})"
    octets = len(bytes.fromhex(mac.replace(":", "").replace("-", "").replace(".", "")))
    if octets > 6:
        return f"too long MAC address ({mac})"
    return ""


def _ports(path: str, iface: Mapping[str, Any], net: Mapping[str, Any]) -> Causes:
    """``validatePortConfiguration``."""
    ports = iface.get("ports")
    if not has(net, "pod") or ports is None:
        return []
    causes: Causes = []
    seen: set[str] = set()
    for idx, port in enumerate(ports):
        name = text(port, "name")
        if not name:
            continue
        if name in seen:
            causes.append(duplicate(f"{path}.ports[{idx}].name", f"Duplicate name of the port: {name}"))
        if is_valid_port_name(name):
            causes.append(invalid(f"{path}.ports[{idx}].name", f"Invalid name of the port: {name}"))
        seen.add(name)
    for idx, port in enumerate(ports):
        number = num(port, "port")
        if number == 0:
            causes.append(required(f"{path}.ports[{idx}].port", "Port field is mandatory."))
        if number < 0 or number >= 65536:
            causes.append(invalid(f"{path}.ports[{idx}].port", "Port field must be in range 0 < x < 65536."))
        protocol = text(port, "protocol")
        if protocol not in ("", "TCP", "UDP"):
            causes.append(
                invalid(f"{path}.ports[{idx}].protocol", "Unknown protocol, only TCP or UDP allowed")
            )
    return causes


def _port_ranges(
    path: str, iface: Mapping[str, Any], net: Mapping[str, Any], config: AdmissionConfig
) -> Causes:
    """``validatePortRangesConfiguration``."""
    ranges = iface.get("portRanges")
    if not config.enabled(fg.PORT_RANGES_SPEC):
        if ranges is not None:
            return [
                invalid(
                    f"{path}.name",
                    "portRanges is specified on interface but the PortRangesSpec feature gate is not enabled",
                )
            ]
        return []
    if not has(net, "pod") or ranges is None:
        return []
    causes: Causes = []
    if iface.get("ports") is not None:
        causes.append(invalid(f"{path}.name", "Cannot define both ports and portRanges on interface"))
    if not has(iface, "masquerade"):
        causes.append(invalid(f"{path}.name", "portRanges are only supported on masquerade interfaces"))
    if len(ranges) > 10:
        return [*causes, invalid(f"{path}.portRanges", "No more than 10 portRanges are allowed")]
    by_protocol: dict[str, list[tuple[int, int]]] = {}
    for idx, port_range in enumerate(ranges):
        protocol, start, end = text(port_range, "protocol"), num(port_range, "start"), num(port_range, "end")
        at = f"{path}.portRanges[{idx}]"
        if protocol not in ("TCP", "UDP"):
            causes.append(invalid(f"{at}.protocol", "Unknown protocol, only TCP or UDP allowed"))
        elif start <= 0 or start >= 65536:
            causes.append(invalid(f"{at}.start", "Start must be a valid port number, 0 < x < 65536"))
        elif end <= 0 or end >= 65536:
            causes.append(invalid(f"{at}.end", "End must be a valid port number, 0 < x < 65536"))
        elif start > end:
            causes.append(invalid(f"{at}.start", "Start must be less than or equal to end"))
        else:
            by_protocol.setdefault(protocol, []).append((start, end))
    # KubeVirt walks a Go map here (no fixed order between protocols); TCP first, then UDP.
    for protocol in sorted(by_protocol):
        intervals = sorted(by_protocol[protocol])
        for prev, cur in itertools.pairwise(intervals):
            if cur[0] <= prev[1]:
                causes.append(
                    invalid(
                        f"{path}.portRanges",
                        f"{protocol} portRanges [{prev[0]}-{prev[1]}] and [{cur[0]}-{cur[1]}] overlap",
                    )
                )
    return causes


def _dhcp(field: str, path: str, iface: Mapping[str, Any]) -> Causes:
    """``validateDHCPOptions`` (the private-option causes name the spec's field, as KubeVirt's do)."""
    dhcp = obj(iface, "dhcpOptions")
    if dhcp is None:
        return []
    causes: Causes = []
    private = items(dhcp, "privateOptions")
    if len({num(o, "option") for o in private}) < len(private):
        causes.append(invalid(field, "Found Duplicates: you have provided duplicate DHCPPrivateOptions"))
    for option in private:
        if not 224 <= num(option, "option") <= 254:
            causes.append(
                invalid(field, "provided DHCPPrivateOptions are out of range, must be in range 224 to 254")
            )
    for idx, server in enumerate(dhcp.get("ntpServers") or []):
        if not _is_ipv4(server):
            causes.append(
                invalid(
                    f"{path}.dhcpOptions.ntpServers[{idx}]",
                    "NTP servers must be a list of valid IPv4 addresses.",
                )
            )
    return causes


def _is_ipv4(value: Any) -> bool:
    """``net.ParseIP(ip).To4() != nil``: IPv4, or IPv6 that maps an IPv4 address."""
    if not isinstance(value, str) or "%" in value:
        return False
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return True
    return address.ipv4_mapped is not None
