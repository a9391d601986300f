"""Message formatting (area ``format``, no module of its own in ``apiserver/render/admission``): values
KubeVirt prints with %q, %s, %v, field.Error (JSON for named types), in every kind of message."""

from __future__ import annotations

from hack.oracle.admission.base import add_disk, add_iface, cpu, devices, domain, sweep, tspec
from hack.oracle.admission.network import set_ports
from hack.oracle.admission.scheduling import node_affinity, node_term, pod_term, spread_constraint
from hack.oracle.admission.vm_spec import STORAGE, add_dvt, set_run
from hack.oracle.admission.volumerequests import ADD_OPTIONS

SPECIAL = [
    "<b>&",
    "\u00e9",
    "\x01",
    'a"b',
    "\u2028",
    "\x7f",
    "tab\t",
    "new\nline",
    "\\",
    "\u65e5\u672c",
    "a'b",
    " ",
    "%s",
    "\ufffd",
    "a\u200bb",
    "x" * 300,
]


def variants() -> None:
    sweep(
        "format",
        "whenUnsatisfiable={}",
        SPECIAL,
        lambda vm, v: tspec(vm).__setitem__(
            "topologySpreadConstraints", [spread_constraint(whenUnsatisfiable=v)]
        ),
    )
    sweep(
        "format",
        "topologyKey={}",
        SPECIAL,
        lambda vm, v: tspec(vm).__setitem__("topologySpreadConstraints", [spread_constraint(topologyKey=v)]),
    )
    sweep(
        "format",
        "labelSelector operator={}",
        SPECIAL,
        lambda vm, v: tspec(vm).__setitem__(
            "topologySpreadConstraints",
            [
                spread_constraint(
                    labelSelector={"matchExpressions": [{"key": "k", "operator": v, "values": ["a"]}]}
                )
            ],
        ),
    )
    sweep(
        "format",
        "labelSelector matchLabels value={}",
        SPECIAL,
        lambda vm, v: tspec(vm).__setitem__(
            "topologySpreadConstraints", [spread_constraint(labelSelector={"matchLabels": {"k": v}})]
        ),
    )
    sweep(
        "format",
        "labelSelector matchLabels key={}",
        SPECIAL,
        lambda vm, v: tspec(vm).__setitem__(
            "topologySpreadConstraints", [spread_constraint(labelSelector={"matchLabels": {v: "a"}})]
        ),
    )
    sweep(
        "format",
        "labelSelector expression value={}",
        SPECIAL,
        lambda vm, v: tspec(vm).__setitem__(
            "topologySpreadConstraints",
            [
                spread_constraint(
                    labelSelector={"matchExpressions": [{"key": "k", "operator": "In", "values": [v]}]}
                )
            ],
        ),
    )
    sweep(
        "format",
        "podAffinity namespace={}",
        SPECIAL,
        lambda vm, v: tspec(vm).__setitem__(
            "affinity",
            {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [pod_term(namespaces=[v])]}},
        ),
    )
    sweep(
        "format",
        "matchFields value={}",
        SPECIAL,
        lambda vm, v: node_affinity(
            vm,
            requiredDuringSchedulingIgnoredDuringExecution={
                "nodeSelectorTerms": [
                    node_term(fields=[{"key": "metadata.name", "operator": "In", "values": [v]}])
                ]
            },
        ),
    )
    sweep(
        "format",
        "matchFields key={}",
        SPECIAL,
        lambda vm, v: node_affinity(
            vm,
            requiredDuringSchedulingIgnoredDuringExecution={
                "nodeSelectorTerms": [node_term(fields=[{"key": v, "operator": "In", "values": ["n"]}])]
            },
        ),
    )
    sweep(
        "format",
        "interface name={} state absent",
        SPECIAL,
        lambda vm, v: add_iface(vm, {"name": v, "masquerade": {}, "state": "absent"}),
    )
    sweep(
        "format",
        "interface state={}",
        SPECIAL,
        lambda vm, v: add_iface(vm, {"name": "s", "bridge": {}, "state": v}),
    )
    sweep(
        "format",
        "interface model={}",
        SPECIAL,
        lambda vm, v: add_iface(vm, {"name": "s", "bridge": {}, "model": v}),
    )
    sweep(
        "format",
        "interface mac={}",
        SPECIAL,
        lambda vm, v: add_iface(vm, {"name": "s", "bridge": {}, "macAddress": v}),
    )
    sweep(
        "format",
        "port name={}",
        SPECIAL,
        lambda vm, v: set_ports(vm, [{"port": 80, "name": v}, {"port": 81, "name": v}]),
    )
    sweep(
        "format",
        "cpu feature name={} bad policy",
        SPECIAL,
        lambda vm, v: cpu(vm).__setitem__("features", [{"name": v, "policy": v}]),
    )
    sweep("format", "disk bus={}", SPECIAL, lambda vm, v: add_disk(vm, "fb", {"disk": {"bus": v}}))
    sweep("format", "disk cache={}", SPECIAL, lambda vm, v: add_disk(vm, "fc", {"cache": v}))
    sweep("format", "disk errorPolicy={}", SPECIAL, lambda vm, v: add_disk(vm, "fe", {"errorPolicy": v}))
    sweep("format", "disk name={}", SPECIAL, lambda vm, v: add_disk(vm, v))
    sweep("format", "disk serial={}", SPECIAL, lambda vm, v: add_disk(vm, "fs", {"serial": v}))
    sweep(
        "format",
        "hostDisk type={}",
        SPECIAL,
        lambda vm, v: add_disk(vm, "fh", {}, {"hostDisk": {"path": "/x", "type": v}}),
        gates=("HostDisk",),
    )
    sweep("format", "machine type={}", SPECIAL, lambda vm, v: domain(vm).__setitem__("machine", {"type": v}))
    sweep(
        "format",
        "nameservers=[{}]x4",
        SPECIAL,
        lambda vm, v: tspec(vm).update({"dnsPolicy": "None", "dnsConfig": {"nameservers": [v] * 4}}),
    )
    sweep("format", "search={}", SPECIAL, lambda vm, v: tspec(vm).update({"dnsConfig": {"searches": [v]}}))
    sweep("format", "hostname={}", SPECIAL, lambda vm, v: tspec(vm).__setitem__("hostname", v))
    sweep("format", "subdomain={}", SPECIAL, lambda vm, v: tspec(vm).__setitem__("subdomain", v))
    sweep(
        "format",
        "serviceAccountName={}",
        SPECIAL,
        lambda vm, v: tspec(vm).__setitem__("serviceAccountName", v),
    )
    sweep("format", "startStrategy={}", SPECIAL, lambda vm, v: tspec(vm).__setitem__("startStrategy", v))
    sweep(
        "format", "evictionStrategy={}", SPECIAL, lambda vm, v: tspec(vm).__setitem__("evictionStrategy", v)
    )
    sweep("format", "ioThreadsPolicy={}", SPECIAL, lambda vm, v: domain(vm).__setitem__("ioThreadsPolicy", v))
    sweep("format", "runStrategy={}", SPECIAL, lambda vm, v: set_run(vm, "-", v))
    sweep(
        "format",
        "panic model={}",
        SPECIAL,
        lambda vm, v: devices(vm).__setitem__("panicDevices", [{"model": v}]),
    )
    sweep(
        "format",
        "resourceClaim name={}",
        SPECIAL,
        lambda vm, v: tspec(vm).__setitem__("resourceClaims", [{"name": v, "resourceClaimName": v}]),
    )
    sweep(
        "format",
        "pciAddress={}",
        SPECIAL,
        lambda vm, v: add_iface(vm, {"name": "s", "bridge": {}, "pciAddress": v}),
    )
    sweep(
        "format",
        "dvt namespace={}",
        SPECIAL,
        lambda vm, v: add_dvt(
            vm,
            {
                "metadata": {"name": "t1", "namespace": v},
                "spec": {"storage": STORAGE, "source": {"blank": {}}},
            },
        ),
    )
    sweep(
        "format",
        "volume request name={}",
        SPECIAL,
        lambda vm, v: vm.__setitem__(
            "status",
            {"volumeRequests": [{"addVolumeOptions": {**ADD_OPTIONS, "name": v, "disk": {"cdrom": {}}}}]},
        ),
    )
    sweep(
        "format",
        "input bus={} type",
        SPECIAL,
        lambda vm, v: devices(vm).__setitem__("inputs", [{"name": "i", "bus": v, "type": v}]),
    )
    sweep(
        "format",
        "sound model={}",
        SPECIAL,
        lambda vm, v: devices(vm).__setitem__("sound", {"name": "s", "model": v}),
    )
    sweep(
        "format",
        "ntp server={}",
        SPECIAL,
        lambda vm, v: add_iface(vm, {"name": "s", "bridge": {}, "dhcpOptions": {"ntpServers": [v]}}),
    )
    sweep("format", "video type={}", SPECIAL, lambda vm, v: devices(vm).__setitem__("video", {"type": v}))
