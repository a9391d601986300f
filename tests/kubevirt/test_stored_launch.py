"""``GET .../launch-spec`` against what KubeVirt's own control plane creates: the VMs below are stored in a
kube-apiserver beside virt-api's webhooks and virt-controller (devcluster/kubevirt.py), and ours, deployed
with the own-group overlay, must give the VMI and the virt-launcher Pod virt-controller created, as stored:
the VMI's spec exactly, its deterministic metadata and status (docs/cost.md names the fields left out),
and each container's and init container's requests and limits, in order, after kube-apiserver's
defaulting. A VMI created on its own through virt-api is compared with PUT launch-vmi-spec the same way.

The session's control plane with KubeVirt and ours beside it (tests/kubevirt/conftest.py): skipped with
the reason where KubeVirt's binaries or the control plane are missing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devcluster import kubevirt
from devcluster.controlplane import ControlPlane, poll
from devcluster.deployed import DeployedServer
from devcluster.paths import REPO
from tests.support.shared import SHARED, needs_shared
from tests.virtapi.sides import OURS, Answer, Kube

CATALOG = SHARED / "catalogs" / "common-instancetypes" / "v1.7.0"
OWN_GROUP = REPO / "apiservice" / "overlays" / "own-group"
VMS_PATH = "/apis/kubevirt.io/v1/namespaces/{ns}/virtualmachines"

pytestmark = [needs_shared(CATALOG)]

# What no renderer can know (uids, times, the pod's uid, the nodes' TSC frequency, the image), left out.
STATUS_LEFT_OUT = (
    "activePods",
    "conditions",
    "phaseTransitionTimestamps",
    "launcherContainerImageVersion",
    "topologyHints",
)
METADATA_LEFT_OUT = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


@pytest.fixture(scope="module")
def cluster(kv_cluster: ControlPlane) -> ControlPlane:
    """The session's control plane with KubeVirt (tests/kubevirt/conftest.py), as this module names it."""
    return kv_cluster


@pytest.fixture(scope="module")
def kubevirt_plane(plane: kubevirt.KubeVirtPlane, ours: DeployedServer) -> kubevirt.KubeVirtPlane:
    """KubeVirt's control plane, with ours deployed beside it (the session's, from conftest.py)."""
    return plane


def _vm(name: str, ns: str, spec: dict[str, Any], template: dict[str, Any]) -> dict[str, Any]:
    volumes = [{"name": "containerdisk", "containerDisk": {"image": "quay.io/containerdisks/fedora:41"}}]
    volumes += template.pop("volumes", [])
    template.setdefault("domain", {}).setdefault("devices", {})
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "runStrategy": "Always",
            **spec,
            "template": {"metadata": {"labels": {"app": name}}, "spec": {**template, "volumes": volumes}},
        },
    }


def _cases(ns: str) -> list[dict[str, Any]]:
    cloud_init = {"name": "cloudinit", "cloudInitNoCloud": {"userData": "#cloud-config\npassword: x\n"}}
    return [
        # catalog instancetypes and preferences: Hyper-V features and their dependencies, timers, inputs
        _vm("windows", ns, {"instancetype": {"name": "u1.large"}, "preference": {"name": "windows.10"}}, {}),
        _vm(
            "fedora",
            ns,
            {"instancetype": {"name": "o1.medium"}, "preference": {"name": "fedora"}},
            {"volumes": [cloud_init]},
        ),
        _vm("cx", ns, {"instancetype": {"name": "cx1.large"}}, {}),
        # a preferred input bus: the VM controller applies it to the input it attaches
        _vm(
            "winvirtio",
            ns,
            {"instancetype": {"name": "u1.large"}, "preference": {"name": "windows.10.virtio"}},
            {},
        ),
        # namespaced ones, a PVC and masquerade
        _vm(
            "team",
            ns,
            {
                "instancetype": {"kind": "VirtualMachineInstancetype", "name": "team"},
                "preference": {"kind": "VirtualMachinePreference", "name": "team"},
            },
            {
                "domain": {"devices": {"interfaces": [{"name": "default", "masquerade": {}}]}},
                "networks": [{"name": "default", "pod": {}}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
            },
        ),
        # plain: requests and limits, a CD-ROM, an input, a probe, Hyper-V dependencies
        _vm(
            "plain",
            ns,
            {},
            {
                "domain": {
                    "cpu": {"cores": 2},
                    "memory": {"guest": "1Gi"},
                    "resources": {
                        "requests": {"memory": "1Gi", "cpu": "500m"},
                        "limits": {"cpu": "2", "memory": "4Gi"},
                    },
                    "devices": {
                        "disks": [{"name": "cloudinit", "cdrom": {}}],
                        "inputs": [{"name": "tablet", "type": "tablet"}],
                    },
                    "features": {"smm": {}, "hyperv": {"synictimer": {}}},
                },
                "readinessProbe": {"tcpSocket": {"port": 22}},
                "volumes": [cloud_init],
            },
        ),
        _vm(
            "nonet",
            ns,
            {},
            {"domain": {"memory": {"guest": "512Mi"}, "devices": {"autoattachPodInterface": False}}},
        ),
        # dedicated CPUs: a Guaranteed pod
        _vm(
            "pinned",
            ns,
            {},
            {"domain": {"cpu": {"cores": 2, "dedicatedCpuPlacement": True}, "memory": {"guest": "2Gi"}}},
        ),
    ]


def _team_objects(ns: str) -> list[dict[str, Any]]:
    it = "instancetype.kubevirt.io/v1beta1"
    return [
        {
            "apiVersion": it,
            "kind": "VirtualMachineInstancetype",
            "metadata": {"name": "team", "namespace": ns},
            "spec": {"cpu": {"guest": 2}, "memory": {"guest": "2Gi", "overcommitPercent": 25}},
        },
        {
            "apiVersion": it,
            "kind": "VirtualMachinePreference",
            "metadata": {"name": "team", "namespace": ns},
            "spec": {"devices": {"preferredDiskBus": "virtio"}, "cpu": {"preferredCPUTopology": "cores"}},
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": ns},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    ]


def _scheduling(answer: Answer) -> bool:
    """The VMI is Scheduling and has its QoS class (copied from the pod on the controller's next pass)."""
    status = answer.body.get("status") or {} if answer.status == 200 else {}
    return status.get("phase") == "Scheduling" and bool(status.get("qosClass"))


@pytest.fixture(scope="module")
def started(cluster: ControlPlane, kubevirt_plane: kubevirt.KubeVirtPlane, kube: Kube) -> dict[str, Any]:
    """The cases stored and started: each VM's name to our answer, the VMI and the pod KubeVirt made."""
    for name in ("clusterinstancetypes.yaml", "clusterpreferences.yaml"):
        cluster.kubectl("apply", "-f", str(CATALOG / name))
    ns = kubevirt_plane.new_namespace("stored")
    cluster.apply(*_team_objects(ns))
    # No provisioner binds the claim here: it is marked Bound as one would (virt-controller waits for it).
    bound = {"status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}}
    cluster.kubectl(
        "patch", "pvc", "data", "-n", ns, "--subresource=status", "--type=merge", "-p", json.dumps(bound)
    )
    out: dict[str, Any] = {}
    for vm in _cases(ns):
        written = kube.call("POST", VMS_PATH.format(ns=ns), json.dumps(vm).encode(), "application/json")
        assert written.status == 201, written.shown()
    for vm in _cases(ns):
        name = vm["metadata"]["name"]
        pod_path = f"/api/v1/namespaces/{ns}/pods?labelSelector=vm.kubevirt.io/name%3D{name}"
        vmi_path = f"/apis/kubevirt.io/v1/namespaces/{ns}/virtualmachineinstances/{name}"
        pods = poll(
            f"the virt-launcher pod of {name}",
            lambda: kube.call("GET", pod_path),  # noqa: B023 (called within the iteration)
            lambda a: a.status == 200 and bool(a.body.get("items")),
            timeout=60,
        )
        vmi = poll(
            f"the VMI of {name} Scheduling, with its QoS class",
            lambda: kube.call("GET", vmi_path),  # noqa: B023 (called within the iteration)
            _scheduling,
            timeout=60,
        )
        ours = kube.call("GET", f"{OURS}/namespaces/{ns}/virtualmachines/{name}/launch-spec")
        assert ours.status == 200, ours.shown()
        out[name] = (ours.body, vmi.body, pods.body["items"][0])
    return out


NAMES = ["windows", "winvirtio", "fedora", "cx", "team", "plain", "nonet", "pinned"]


def _resources(containers: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(c["name"], c.get("resources") or {}) for c in containers]


@pytest.mark.parametrize("name", NAMES)
def test_the_pods_containers_are_the_ones_kube_apiserver_stored(started: dict[str, Any], name: str) -> None:
    ours, _, pod = started[name]
    assert _resources(ours["pod"]["containers"]) == _resources(pod["spec"]["containers"])
    assert _resources(ours["pod"]["initContainers"]) == _resources(pod["spec"].get("initContainers") or [])


@pytest.mark.parametrize("name", NAMES)
def test_the_vmi_is_the_one_virt_controller_created(started: dict[str, Any], name: str) -> None:
    ours, vmi, pod = started[name]
    assert ours["vmi"]["spec"] == vmi["spec"]
    left = {k: v for k, v in vmi["status"].items() if k not in STATUS_LEFT_OUT}
    assert ours["vmi"]["status"] == left
    assert ours["vmi"]["status"]["qosClass"] == pod["status"]["qosClass"]
    meta = {k: v for k, v in vmi["metadata"].items() if k not in METADATA_LEFT_OUT}
    assert ours["vmi"]["metadata"] == meta


def test_the_auto_attached_input_takes_the_preferred_bus(started: dict[str, Any]) -> None:
    # ApplyToVMI applies the preference again after AutoAttachInputDevice: its input is on virtio
    ours, vmi, _ = started["winvirtio"]
    assert vmi["spec"]["domain"]["devices"]["inputs"] == [
        {"bus": "virtio", "name": "default-0", "type": "tablet"}
    ]
    assert ours["vmi"]["spec"]["domain"]["devices"]["inputs"] == vmi["spec"]["domain"]["devices"]["inputs"]


def _lone_vmi(ns: str) -> dict[str, Any]:
    """A VMI a user creates, no VM owning it: the webhook gives it the pod network and a bus for its disk."""
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "lone", "namespace": ns, "labels": {"app": "lone"}},
        "spec": {
            "domain": {
                "cpu": {"cores": 2},
                "memory": {"guest": "1Gi"},
                "devices": {"disks": [{"name": "containerdisk", "disk": {}}]},
            },
            "volumes": [
                {"name": "containerdisk", "containerDisk": {"image": "quay.io/containerdisks/fedora:41"}}
            ],
        },
    }


@pytest.fixture(scope="module")
def lone(cluster: ControlPlane, kubevirt_plane: kubevirt.KubeVirtPlane, kube: Kube) -> tuple[Any, ...]:
    """A standalone VMI created through virt-api's webhooks: our answer, the VMI and the pod KubeVirt made."""
    ns = kubevirt_plane.new_namespace("lone")
    vmi = _lone_vmi(ns)
    path = f"/apis/kubevirt.io/v1/namespaces/{ns}/virtualmachineinstances"
    written = kube.call("POST", path, json.dumps(vmi).encode(), "application/json")
    assert written.status == 201, written.shown()
    pods = poll(
        "the virt-launcher pod of lone",
        lambda: kube.call("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector=vm.kubevirt.io/name%3Dlone"),
        lambda a: a.status == 200 and bool(a.body.get("items")),
        timeout=60,
    )
    stored = poll(
        "the VMI lone Scheduling, with its QoS class",
        lambda: kube.call("GET", f"{path}/lone"),
        _scheduling,
        timeout=60,
    )
    ours = kube.call(
        "PUT", f"{OURS}/namespaces/{ns}/launch-vmi-spec", json.dumps(vmi).encode(), "application/json"
    )
    assert ours.status == 200, ours.shown()
    return ours.body, stored.body, pods.body["items"][0]


def test_a_standalone_vmi_and_its_pod_are_the_ones_kubevirt_stored(lone: tuple[Any, ...]) -> None:
    """PUT launch-vmi-spec against a VMI no VM owns, created through virt-api: the same pod resources, and
    the VMI as stored less what only the cluster knows and the firmware UUID virt-api draws at random."""
    ours, vmi, pod = lone
    assert _resources(ours["pod"]["containers"]) == _resources(pod["spec"]["containers"])
    assert _resources(ours["pod"]["initContainers"]) == _resources(pod["spec"].get("initContainers") or [])
    drawn = vmi["spec"]["domain"]["firmware"].pop("uuid")
    assert drawn and "uuid" not in ours["vmi"]["spec"]["domain"]["firmware"]
    assert ours["vmi"]["spec"] == vmi["spec"]
    left = {k: v for k, v in vmi["status"].items() if k not in STATUS_LEFT_OUT}
    assert ours["vmi"]["status"] == left and "virtualMachineRevisionName" not in left
    meta = {k: v for k, v in vmi["metadata"].items() if k not in METADATA_LEFT_OUT}
    assert ours["vmi"]["metadata"] == meta
