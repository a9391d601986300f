"""Networks and interfaces: pod and Multus networks, bindings, states, MACs, PCI addresses, ports, port
ranges, DHCP options, DRA networks, discontinued bindings (KubeVirt's pkg/network/admitter;
``apiserver/render/admission/network.py``)."""

from __future__ import annotations

import copy
from typing import Any

from hack.oracle.admission.base import (
    DUP,
    INV,
    JSON,
    NF,
    NO_BETA,
    NS,
    PORTS,
    REQ,
    add_disk,
    add_iface,
    append,
    check,
    devices,
    drop_networks,
    go_file,
    sweep,
    tspec,
    variant,
)

_BINDINGS: list[JSON] = [
    {},
    {"bridge": {}},
    {"masquerade": {}},
    {"sriov": {}},
    {"passtBinding": {}},
    {"binding": {"name": "plug"}},
    {"bridge": {}, "masquerade": {}},
    {"sriov": {}, "binding": {"name": "p"}},
    {"slirp": {}},
    {"macvtap": {}},
    {"passt": {}},
    {"passt": {}, "macvtap": {}, "slirp": {}},
]


def set_ports(vm: JSON, ports: Any, binding: str = "masquerade") -> None:
    """The pod network alone, its interface (``binding``) forwarding ``ports``."""
    drop_networks(vm)
    add_iface(vm, {"name": "default", binding: {}, "ports": ports}, {"pod": {}})


def _ranges(vm: JSON, ranges: Any, binding: str = "masquerade", ports: Any = None) -> None:
    drop_networks(vm)
    iface: JSON = {"name": "default", binding: {}, "portRanges": ranges}
    if ports is not None:
        iface["ports"] = ports
    add_iface(vm, iface, {"pod": {}})


_RANGE_SETS: list[Any] = [
    [{"protocol": "TCP", "start": 1000, "end": 2000}],
    [{"protocol": "UDP", "start": 1, "end": 65535}],
    [{"protocol": "tcp", "start": 1000, "end": 2000}],
    [{"protocol": "", "start": 1000, "end": 2000}],
    [{"protocol": "TCP", "start": 0, "end": 2000}],
    [{"protocol": "TCP", "start": 65536, "end": 2000}],
    [{"protocol": "TCP", "start": 10, "end": 0}],
    [{"protocol": "TCP", "start": 10, "end": 70000}],
    [{"protocol": "TCP", "start": 2000, "end": 1000}],
    [{"protocol": "TCP", "start": 1000, "end": 1000}],
    [{"protocol": "TCP", "start": 1000, "end": 2000}, {"protocol": "TCP", "start": 2000, "end": 3000}],
    [{"protocol": "TCP", "start": 1000, "end": 2000}, {"protocol": "TCP", "start": 2001, "end": 3000}],
    [{"protocol": "TCP", "start": 1000, "end": 2000}, {"protocol": "UDP", "start": 1000, "end": 2000}],
    [
        {"protocol": "TCP", "start": 5, "end": 50},
        {"protocol": "TCP", "start": 1, "end": 10},
        {"protocol": "TCP", "start": 8, "end": 9},
    ],
    [{"protocol": "TCP", "start": i * 10 + 1, "end": i * 10 + 5} for i in range(10)],
    [{"protocol": "TCP", "start": i * 10 + 1, "end": i * 10 + 5} for i in range(11)],
    [
        {"protocol": "UDP", "start": 1, "end": 5},
        {"protocol": "UDP", "start": 3, "end": 9},
        {"protocol": "TCP", "start": 7, "end": 0},
    ],
    [],
]
_RC = [{"name": "claim", "resourceClaimName": "rc"}]


def variants() -> None:
    """Networks, interfaces (pkg/network/admitter)."""
    variant(
        "networks",
        "two pod networks",
        lambda vm: add_iface(vm, {"name": "pod2", "masquerade": {}}, {"pod": {}}),
    )
    variant(
        "networks",
        "two multus default networks",
        lambda vm: (
            add_iface(vm, {"name": "m1", "bridge": {}}, {"multus": {"networkName": "a", "default": True}}),
            add_iface(vm, {"name": "m2", "bridge": {}}, {"multus": {"networkName": "b", "default": True}}),
        ),
    )
    variant(
        "networks",
        "multus default beside pod",
        lambda vm: add_iface(
            vm, {"name": "m1", "bridge": {}}, {"multus": {"networkName": "a", "default": True}}
        ),
    )
    variant(
        "networks",
        "multus default replacing pod",
        lambda vm: (
            drop_networks(vm),
            add_iface(vm, {"name": "m1", "bridge": {}}, {"multus": {"networkName": "a", "default": True}}),
        ),
    )
    sweep(
        "networks",
        "network source={}",
        [
            {},
            {"pod": {}, "multus": {"networkName": "x"}},
            {"multus": {}},
            {"multus": {"networkName": ""}},
            {"multus": {"networkName": "ns/x"}},
            {"resourceClaim": {"claimName": "c", "requestName": "r"}},
        ],
        lambda vm, v: add_iface(vm, {"name": "extra", "bridge": {}}, v),
        gates=("NetworkDevicesWithDRA",),
    )
    variant(
        "networks",
        "two multus without networkName",
        lambda vm: (
            add_iface(vm, {"name": "e1", "bridge": {}}, {"multus": {}}),
            add_iface(vm, {"name": "e2", "bridge": {}}, {"multus": {}}),
        ),
    )
    variant(
        "networks",
        "duplicate network name",
        lambda vm: append(tspec(vm), "networks", {"name": "default", "multus": {"networkName": "x"}}),
    )
    variant(
        "networks",
        "network without interface",
        lambda vm: append(tspec(vm), "networks", {"name": "lonely", "multus": {"networkName": "x"}}),
    )
    variant(
        "interfaces",
        "interface without network",
        lambda vm: add_iface(vm, {"name": "lonely", "bridge": {}}, {}),
    )
    variant(
        "interfaces",
        "duplicate interface name",
        lambda vm: append(devices(vm), "interfaces", {"name": "default", "masquerade": {}}),
    )
    variant("interfaces", "drop all networks keep interfaces", lambda vm: tspec(vm).pop("networks", None))
    variant("interfaces", "drop all interfaces keep networks", lambda vm: devices(vm).pop("interfaces", None))
    sweep(
        "interfaces",
        "state={} on bridge secondary",
        ["", "absent", "down", "up", "Absent", "bogus"],
        lambda vm, v: add_iface(vm, {"name": "sec", "bridge": {}, "state": v}),
    )
    sweep(
        "interfaces",
        "state={} on masquerade pod",
        ["absent", "down", "up", "bogus"],
        lambda vm, v: (
            drop_networks(vm),
            add_iface(vm, {"name": "default", "masquerade": {}, "state": v}, {"pod": {}}),
        ),
    )
    sweep(
        "interfaces",
        "state={} on bridge pod (default network)",
        ["absent", "down"],
        lambda vm, v: (
            drop_networks(vm),
            add_iface(vm, {"name": "default", "bridge": {}, "state": v}, {"pod": {}}),
        ),
    )
    sweep(
        "interfaces",
        "state={} on bridge multus default",
        ["absent", "up"],
        lambda vm, v: (
            drop_networks(vm),
            add_iface(
                vm, {"name": "d", "bridge": {}, "state": v}, {"multus": {"networkName": "n", "default": True}}
            ),
        ),
    )
    sweep(
        "interfaces",
        "state={} on sriov",
        ["down", "up", "absent", ""],
        lambda vm, v: add_iface(vm, {"name": "vf", "sriov": {}, "state": v}),
    )
    sweep(
        "interfaces",
        "binding={} on secondary multus",
        _BINDINGS,
        lambda vm, v: add_iface(vm, {"name": "sec", **v}),
        gates=("PasstBinding",),
    )
    sweep(
        "interfaces",
        "binding={} on pod",
        _BINDINGS,
        lambda vm, v: (drop_networks(vm), add_iface(vm, {"name": "default", **v}, {"pod": {}})),
        gates=("PasstBinding",),
        configs=({"network": {"permitBridgeInterfaceOnPodNetwork": False}},),
    )
    sweep(
        "interfaces",
        "masquerade macAddress={}",
        [
            "02:00:00:00:00:00",
            "02:00:00:00:00:01",
            "02-00-00-00-00-00",
            "02:00:00:00:00:0",
            "0200.0000.0000",
            "02:00:00:00:00:00:00:00",
            "zz:00:00:00:00:00",
            "",
            "02:00:00:00:00:00 ",
            "AA:BB:CC:DD:EE:FF",
            "aa:bb:cc:dd:ee:ff:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd",
        ],
        lambda vm, v: (
            drop_networks(vm),
            add_iface(vm, {"name": "default", "masquerade": {}, "macAddress": v}, {"pod": {}}),
        ),
    )
    sweep(
        "interfaces",
        "interface name={}",
        ["ok_name-1", "bad name", "bad.name", "", "x" * 100, "\u00fcber", "a/b"],
        lambda vm, v: add_iface(vm, {"name": v, "bridge": {}}),
    )
    sweep(
        "interfaces",
        "model={}",
        ["virtio", "e1000", "e1000e", "igb", "ne2k_pci", "pcnet", "rtl8139", "VIRTIO", "bogus", ""],
        lambda vm, v: add_iface(vm, {"name": "sec", "bridge": {}, "model": v}),
    )
    sweep(
        "interfaces",
        "pciAddress={}",
        [
            "0000:81:00.1",
            "81:00.1",
            "0000:81:00.10",
            "0000:81:00",
            "zzzz:00:00.0",
            "0000:ff:1f.7",
            "0000:ff:20.0",
            "0000:00:00.8",
            "",
            "0000:81:00.1 ",
        ],
        lambda vm, v: add_iface(vm, {"name": "sec", "bridge": {}, "pciAddress": v}),
    )
    sweep("interfaces", "port={}", PORTS, lambda vm, v: set_ports(vm, [{"port": v}]))
    sweep(
        "interfaces",
        "port protocol={}",
        ["TCP", "UDP", "tcp", "SCTP", "", "bogus"],
        lambda vm, v: set_ports(vm, [{"port": 80, "protocol": v}]),
    )
    sweep(
        "interfaces",
        "port name={}",
        ["http", "", "HTTP", "a" * 15, "a" * 16, "1234", "a--b", "-a", "web_1", "h\u00e9"],
        lambda vm, v: set_ports(vm, [{"port": 80, "name": v}]),
    )
    variant(
        "interfaces",
        "ports duplicate names",
        lambda vm: set_ports(
            vm, [{"port": 80, "name": "web"}, {"port": 81, "name": "web"}, {"port": 82, "name": "web"}]
        ),
    )
    variant(
        "interfaces",
        "ports duplicate bad names",
        lambda vm: set_ports(vm, [{"port": 80, "name": "Bad Name"}, {"port": 81, "name": "Bad Name"}]),
    )
    variant(
        "interfaces",
        "ports on bridge pod",
        lambda vm: set_ports(vm, [{"port": 0, "protocol": "x"}], binding="bridge"),
        configs=({"network": {"permitBridgeInterfaceOnPodNetwork": True}},),
    )
    variant(
        "interfaces",
        "ports on multus (ignored)",
        lambda vm: add_iface(vm, {"name": "sec", "bridge": {}, "ports": [{"port": 0}]}),
    )
    variant("interfaces", "ports empty list", lambda vm: set_ports(vm, []))
    variant(
        "interfaces",
        "passtBinding on pod, Beta gates disabled",
        lambda vm: (drop_networks(vm), add_iface(vm, {"name": "default", "passtBinding": {}}, {"pod": {}})),
        configs=(NO_BETA,),
    )
    variant(
        "interfaces",
        "passtBinding on multus, Beta gates disabled",
        lambda vm: add_iface(vm, {"name": "p", "passtBinding": {}}),
        configs=(NO_BETA,),
    )
    sweep("interfaces", "portRanges={}", _RANGE_SETS, lambda vm, v: _ranges(vm, v), gates=("PortRangesSpec",))
    variant(
        "interfaces",
        "portRanges and ports",
        lambda vm: _ranges(vm, _RANGE_SETS[0], ports=[{"port": 80}]),
        gates=("PortRangesSpec",),
    )
    variant(
        "interfaces",
        "portRanges on bridge pod",
        lambda vm: _ranges(vm, _RANGE_SETS[0], binding="bridge"),
        gates=("PortRangesSpec",),
    )
    variant(
        "interfaces",
        "portRanges on multus secondary",
        lambda vm: add_iface(
            vm, {"name": "sec", "bridge": {}, "portRanges": [{"protocol": "x", "start": 0, "end": 0}]}
        ),
        gates=("PortRangesSpec",),
    )
    sweep(
        "interfaces",
        "dhcp privateOptions={}",
        [
            [{"option": 224, "value": "a"}],
            [{"option": 223, "value": "a"}],
            [{"option": 254, "value": "a"}],
            [{"option": 255, "value": "a"}],
            [{"option": 240, "value": "a"}, {"option": 240, "value": "b"}],
            [{"option": 1, "value": "a"}, {"option": 1, "value": "b"}],
            [],
        ],
        lambda vm, v: add_iface(vm, {"name": "sec", "bridge": {}, "dhcpOptions": {"privateOptions": v}}),
    )
    sweep(
        "interfaces",
        "dhcp ntpServers={}",
        [["10.0.0.1"], ["::1"], ["bogus"], ["10.0.0.1", "256.0.0.1"], ["::ffff:10.0.0.1"], [""], ["1.2.3"]],
        lambda vm, v: add_iface(vm, {"name": "sec", "bridge": {}, "dhcpOptions": {"ntpServers": v}}),
    )
    variant(
        "interfaces",
        "dhcp options on two interfaces, both bad",
        lambda vm: (
            add_iface(
                vm,
                {
                    "name": "s1",
                    "bridge": {},
                    "dhcpOptions": {"privateOptions": [{"option": 1}], "ntpServers": ["x"]},
                },
            ),
            add_iface(
                vm,
                {
                    "name": "s2",
                    "bridge": {},
                    "dhcpOptions": {"privateOptions": [{"option": 2}, {"option": 2}]},
                },
            ),
        ),
    )
    sweep(
        "interfaces",
        "bootOrder={} on interface",
        [0, 1, 2, -1],
        lambda vm, v: add_iface(vm, {"name": "sec", "bridge": {}, "bootOrder": v}),
    )
    variant(
        "interfaces",
        "interface bootOrder equal to a disk's",
        lambda vm: (
            add_disk(vm, "bd", {"bootOrder": 7}),
            add_iface(vm, {"name": "sec", "bridge": {}, "bootOrder": 7}),
        ),
    )
    variant(
        "interfaces",
        "two interfaces same bootOrder",
        lambda vm: (
            add_iface(vm, {"name": "s1", "bridge": {}, "bootOrder": 5}),
            add_iface(vm, {"name": "s2", "bridge": {}, "bootOrder": 5}),
        ),
    )


def dra_variants() -> None:
    """DRA networks (validateNetworkDevicesWithDRA)."""
    sweep(
        "networks",
        "DRA network {}",
        [
            {"iface": {"sriov": {}}, "rc": {"claimName": "claim", "requestName": "r"}},
            {"iface": {"binding": {"name": "p"}}, "rc": {"claimName": "claim", "requestName": "r"}},
            {"iface": {"bridge": {}}, "rc": {"claimName": "claim", "requestName": "r"}},
            {"iface": {"sriov": {}}, "rc": {"claimName": "", "requestName": ""}},
            {"iface": {"sriov": {}}, "rc": {"claimName": "other", "requestName": "r"}},
            {"iface": {"sriov": {}}, "rc": {"requestName": "r"}},
            {"iface": None, "rc": {"claimName": "claim", "requestName": "r"}},
        ],
        lambda vm, v: (
            tspec(vm).__setitem__("resourceClaims", copy.deepcopy(_RC)),
            add_iface(vm, {"name": "dra", **v["iface"]}, {"resourceClaim": v["rc"]})
            if v["iface"] is not None
            else append(tspec(vm), "networks", {"name": "dra", "resourceClaim": v["rc"]}),
        ),
        gates=("NetworkDevicesWithDRA",),
    )
    variant(
        "networks",
        "DRA networks duplicate claim/request, no multus",
        lambda vm: (
            drop_networks(vm),
            tspec(vm).__setitem__("resourceClaims", copy.deepcopy(_RC)),
            add_iface(
                vm, {"name": "d1", "sriov": {}}, {"resourceClaim": {"claimName": "claim", "requestName": "r"}}
            ),
            add_iface(
                vm, {"name": "d2", "sriov": {}}, {"resourceClaim": {"claimName": "claim", "requestName": "r"}}
            ),
            add_iface(
                vm, {"name": "d3", "sriov": {}}, {"resourceClaim": {"claimName": "claim", "requestName": "r"}}
            ),
        ),
        gates=("NetworkDevicesWithDRA",),
    )
    variant(
        "networks",
        "DRA network only (pod dropped)",
        lambda vm: (
            drop_networks(vm),
            tspec(vm).__setitem__("resourceClaims", copy.deepcopy(_RC)),
            add_iface(
                vm, {"name": "d1", "sriov": {}}, {"resourceClaim": {"claimName": "claim", "requestName": "r"}}
            ),
        ),
        gates=("NetworkDevicesWithDRA",),
    )


def discontinued_binding_checks() -> None:
    go_file("pkg/network/admitter/discontinued.go", "interfaces")
    check(
        "bindings.slirp", "validateDiscontinuedBindings", INV, "Slirp interface support has been discontinued"
    )
    check(
        "bindings.passt", "validateDiscontinuedBindings", INV, "Passt network binding has been discontinued"
    )
    check(
        "bindings.macvtap",
        "validateDiscontinuedBindings",
        INV,
        "Macvtap network binding has been discontinued",
    )


def checks() -> None:
    """pkg/network/admitter Validate, file by file."""
    go_file("pkg/network/admitter/netsource.go", "networks")
    check(
        "net.two-pod",
        "validateSinglePodNetwork",
        DUP,
        "more than one interface is connected to a pod network",
    )
    check(
        "net.two-multus-default",
        "validateSinglePodNetwork",
        INV,
        "Multus CNI should only have one default network",
    )
    check(
        "net.pod-and-multus-default",
        "validateSinglePodNetwork",
        INV,
        "Pod network cannot be defined when Multus default network is defined",
    )
    check("net.no-source", "validateSingleNetworkSource", REQ, "should have a network type")
    check("net.two-sources", "validateSingleNetworkSource", REQ, "should have only one network type")
    check(
        "net.multus-name", "validateMultusNetworkSource", REQ, "CNI delegating plugin must have a networkName"
    )
    go_file("pkg/network/admitter/admit.go", "interfaces")
    check("iface.state", "validateInterfaceStateValue", INV, "interface state value is unsupported")
    check("iface.state-sriov", "validateInterfaceStateValue", INV, "is not supported for SR-IOV NICs")
    check(
        "iface.state-absent-bridge",
        "validateInterfaceStateValue",
        INV,
        "is supported only for bridge binding",
    )
    check(
        "iface.state-absent-default",
        "validateInterfaceStateValue",
        INV,
        "is not supported on default networks",
    )
    go_file("pkg/network/admitter/binding.go", "interfaces")
    check(
        "iface.one-binding",
        "validateInterfaceBindingExists",
        INV,
        "must have exactly one binding method or binding plugin",
    )
    check(
        "iface.masquerade-pod",
        "validateMasqueradeBinding",
        INV,
        "Masquerade interface only implemented with pod network",
    )
    check(
        "iface.masquerade-mac",
        "validateMasqueradeBinding",
        INV,
        "The requested MAC address is reserved for the in-pod bridge",
    )
    check(
        "iface.bridge-pod",
        "validateBridgeBinding",
        INV,
        "Bridge on pod network configuration is not enabled",
        gate="network.permitBridgeInterfaceOnPodNetwork",
    )
    go_file("pkg/network/admitter/passt.go", "interfaces")
    check(
        "iface.passt-gate",
        "validatePasstBinding",
        INV,
        "PasstBinding feature gate is not enabled",
        gate="PasstBinding",
    )
    check(
        "iface.passt-pod",
        "validatePasstBinding",
        INV,
        "PasstBinding interface only implemented with pod network",
    )
    go_file("pkg/network/admitter/netiface.go", "networks")
    check("net.name-unique", "validateNetworkNameUnique", DUP, "every network must have a unique name")
    go_file("pkg/network/admitter/dra.go", "networks")
    check(
        "net.dra-gate",
        "validateNetworkDevicesWithDRA",
        INV,
        "contains DRA networks but NetworkDevicesWithDRA feature gate is not enabled",
        gate="NetworkDevicesWithDRA",
    )
    check(
        "net.dra-multus", "validateNetworkDevicesWithDRA", INV, "mixing Multus and DRA resourceClaim networks"
    )
    check(
        "net.dra-binding",
        "validateDRANetworkInterfaceBinding",
        INV,
        "requires an SR-IOV or binding plugin interface",
    )
    check(
        "net.dra-claim-name", "validateDRAClaimAndRequestNames", REQ, "claimName is required for DRA network"
    )
    check(
        "net.dra-request-name",
        "validateDRAClaimAndRequestNames",
        REQ,
        "requestName is required for DRA network",
    )
    check(
        "net.dra-claim-ref",
        "validateDRANetworkClaimReference",
        NF,
        "which is not defined in spec.resourceClaims",
    )
    check(
        "net.dra-duplicate",
        "validateDRAClaimRequestUniqueness",
        DUP,
        "duplicate claimName/requestName combination",
    )
    go_file("pkg/network/admitter/netiface.go", "interfaces")
    check("net.no-interface", "validateNetworksAssignedToInterfaces", REQ, "not found.", field="networks[")
    check(
        "iface.name-unique",
        "validateInterfaceNameUnique",
        DUP,
        "Only one interface can be connected to one specific network",
    )
    check("iface.no-network", "validateInterfacesAssignedToNetworks", INV, "not found.", field="interfaces[")
    check("iface.name-format", "validateInterfaceNameFormat", INV, "Network interface name can only contain")
    check("iface.model", "validateInterfaceModel", NS, "that is not supported.", field="model")
    check(
        "iface.mac",
        "validateMacAddress",
        INV,
        "interface spec.template.spec.domain.devices.interfaces",
        field="macAddress",
    )
    check("iface.pci", "validatePciAddress", INV, "has malformed PCI address", field="interfaces")
    check("iface.port-name-duplicate", "validateForwardPortsName", DUP, "Duplicate name of the port")
    check("iface.port-name", "validateForwardPortsName", INV, "Invalid name of the port")
    check("iface.port-required", "validateForwardPortNonZero", REQ, "Port field is mandatory.")
    check("iface.port-range", "validateForwardPortInRange", INV, "Port field must be in range 0 < x < 65536.")
    check(
        "iface.port-protocol",
        "validateForwardPortProtocol",
        INV,
        "Unknown protocol, only TCP or UDP allowed",
        field="ports[",
    )
    check(
        "iface.port-ranges-gate",
        "validatePortRangesConfiguration",
        INV,
        "the PortRangesSpec feature gate is not enabled",
        gate="PortRangesSpec",
    )
    check(
        "iface.port-ranges-and-ports",
        "validatePortRangeMutualExclusivity",
        INV,
        "Cannot define both ports and portRanges",
    )
    check(
        "iface.port-ranges-masquerade",
        "validatePortRangeMasqueradeOnly",
        INV,
        "portRanges are only supported on masquerade interfaces",
    )
    check(
        "iface.port-ranges-count", "validateForwardPortRanges", INV, "No more than 10 portRanges are allowed"
    )
    check(
        "iface.port-ranges-protocol",
        "validateForwardPortRanges",
        INV,
        "Unknown protocol, only TCP or UDP allowed",
        field="portRanges[",
    )
    check("iface.port-ranges-start", "validateForwardPortRanges", INV, "Start must be a valid port number")
    check("iface.port-ranges-end", "validateForwardPortRanges", INV, "End must be a valid port number")
    check(
        "iface.port-ranges-order", "validateForwardPortRanges", INV, "Start must be less than or equal to end"
    )
    check("iface.port-ranges-overlap", "validateForwardPortRangesOverlaps", INV, "overlap")
    check(
        "iface.dhcp-duplicates",
        "validateDHCPExtraOptions",
        INV,
        "you have provided duplicate DHCPPrivateOptions",
    )
    check("iface.dhcp-range", "validateDHCPPrivateOptionsWithinRange", INV, "must be in range 224 to 254")
    check(
        "iface.dhcp-ntp",
        "validateDHCPNTPServersAreValidIPv4Addresses",
        INV,
        "NTP servers must be a list of valid IPv4 addresses.",
    )
