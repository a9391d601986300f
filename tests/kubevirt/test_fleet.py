"""Ours against a running KubeVirt on a live fleet (tests/kubevirt/fleet.py: 240 VMs, seed 36): every VM is asked
of ours first (``PUT expand-vm-spec?validate=true``) and then written to kube-apiserver, where KubeVirt's own
webhooks admit or refuse it and virt-controller captures its revisions and starts it (VMI and virt-launcher
Pod). Then, VM by VM:

1. the webhooks' verdict and message equal ours;
2. GET expand-spec of every stored VM from ours equals virt-api's;
3. launch-spec of every running VM equals the VMI and the Pod virt-controller created (containers and init
   containers in order, requests and limits as kube-apiserver stored them).

Each test collects every difference and fails with all of them; the terminal summary gives the counts.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from devcluster.controlplane import ControlPlane
from devcluster.deployed import DeployedServer
from devcluster.kubevirt import KubeVirtPlane
from devcluster.patience import patience
from tests.kubevirt import fleet as fleet_module
from tests.virtapi.sides import OURS, Answer, Kube, Sides

TALLY: Counter[str] = Counter()
VM_PATH = "/apis/kubevirt.io/v1/namespaces/{ns}/virtualmachines"


@dataclass
class Stored:
    """One VM of the fleet: what ours said before it was written, what kube-apiserver (KubeVirt's webhooks)
    answered the write, and the stored VM when it was admitted."""

    vm: dict[str, Any]
    ours: Answer
    kubevirt: Answer
    stored: dict[str, Any] | None = None

    @property
    def ns(self) -> str:
        return str(self.vm["metadata"]["namespace"])

    @property
    def name(self) -> str:
        return str(self.vm["metadata"]["name"])

    @property
    def running(self) -> bool:
        return self.stored is not None and self.vm["spec"].get("runStrategy") == "Always" and not self.failed

    @property
    def failed(self) -> bool:
        """virt-controller will not start it (see :func:`_failure`)."""
        return self.stored is not None and _failure(self.stored) is not None


@dataclass
class Fleet:
    vms: list[Stored] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def _settled(kube: Kube, item: Stored) -> bool:
    """Whether virt-controller has done what it does for this VM: its revisions captured into status and,
    for a running VM, its VMI and Pod created."""
    vm = kube.call("GET", f"{VM_PATH.format(ns=item.ns)}/{item.name}").body
    status = vm.get("status") or {}
    if _failure(vm):
        item.stored = vm
        return True
    for matcher, ref in (("instancetype", "instancetypeRef"), ("preference", "preferenceRef")):
        if item.vm["spec"].get(matcher) and not ((status.get(ref) or {}).get("controllerRevisionRef")):
            return False
    if item.running:
        if (
            kube.call(
                "GET", f"/apis/kubevirt.io/v1/namespaces/{item.ns}/virtualmachineinstances/{item.name}"
            ).status
            != 200
        ):
            return False
        if not _pod(kube, item):
            return False
    item.stored = vm
    return True


def _failure(vm: dict[str, Any]) -> str | None:
    """Why virt-controller will not start the VM, as it says in the VM's status (a missing claim, a failed
    lookup of its instancetype), or None."""
    status = vm.get("status") or {}
    if str(status.get("printableStatus", "")).startswith("Error"):
        return str(status["printableStatus"])
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Failure" and condition.get("status") == "True":
            return f"{condition.get('reason')}: {condition.get('message')}"
    return None


def _pod(kube: Kube, item: Stored) -> dict[str, Any] | None:
    pods = kube.call(
        "GET", f"/api/v1/namespaces/{item.ns}/pods?labelSelector=vm.kubevirt.io/name%3D{item.name}"
    ).body
    items = pods.get("items") or []
    return items[0] if items else None


@pytest.fixture(scope="module")
def fleet(
    kv_cluster: ControlPlane, plane: KubeVirtPlane, ours: DeployedServer, kube: Kube
) -> Iterator[Fleet]:
    began = time.monotonic()
    out = Fleet()
    kv_cluster.kubectl("apply", "-f", str(fleet_module.CATALOG))
    namespaces = [f"fleet-{letter}" for letter in "abcd"[: fleet_module.NAMESPACES]]
    for ns in namespaces:
        plane.prepare_namespace(ns)
    made = fleet_module.make(namespaces)
    kv_cluster.apply(*made.team_objects)
    # No provisioner binds a claim here: each is marked Bound as a provisioner would (virt-controller waits
    # for that before it creates the pod).
    for obj in made.team_objects:
        if obj["kind"] == "PersistentVolumeClaim":
            bound = {
                "status": {
                    "phase": "Bound",
                    "accessModes": ["ReadWriteOnce"],
                    "capacity": {"storage": "10Gi"},
                }
            }
            kv_cluster.kubectl(
                "patch",
                "pvc",
                obj["metadata"]["name"],
                "-n",
                obj["metadata"]["namespace"],
                "--subresource=status",
                "--type=merge",
                "-p",
                json.dumps(bound),
            )
    out.seconds["setup"] = time.monotonic() - began
    began = time.monotonic()
    for vm in made.vms:
        ns = vm["metadata"]["namespace"]
        body = json.dumps(vm).encode()
        answer = kube.call(
            "PUT", f"{OURS}/namespaces/{ns}/expand-vm-spec?validate=true", body, "application/json"
        )
        written = kube.call("POST", VM_PATH.format(ns=ns), body, "application/json")
        out.vms.append(Stored(vm, answer, written, written.body if written.status == 201 else None))
    out.seconds["create"] = time.monotonic() - began
    began = time.monotonic()
    waiting = [item for item in out.vms if item.stored is not None]
    deadline = time.monotonic() + patience(180)
    while waiting and time.monotonic() < deadline:
        waiting = [item for item in waiting if not _settled(kube, item)]
        if waiting:
            time.sleep(1)
    out.seconds["settle"] = time.monotonic() - began
    out.seconds["unsettled"] = len(waiting)
    yield out


def _message(answer: Answer) -> str:
    body = answer.body if isinstance(answer.body, dict) else {}
    return str(body.get("message", answer.body))


def _causes(answer: Answer) -> list[tuple[str, str]]:
    body = answer.body if isinstance(answer.body, dict) else {}
    causes = (body.get("details") or {}).get("causes") or []
    return sorted((str(c.get("field", "")), str(c.get("message", ""))) for c in causes)


def _not_found(answer: Answer) -> bool:
    causes = _causes(answer)
    return (
        answer.status == 422
        and bool(causes)
        and all(
            f in ("spec.instancetype.name", "spec.preference.name") and m.endswith("not found")
            for f, m in causes
        )
    )


WEBHOOK_PREFIX = 'admission webhook "virtualmachine-validator.kubevirt.io" denied the request: '


def test_kubevirts_webhooks_admit_and_refuse_as_validate_true(fleet: Fleet) -> None:
    differences = []
    for item in fleet.vms:
        admitted = item.kubevirt.status == 201
        if item.ours.status == 200 and admitted:
            TALLY["admission: both admit"] += 1
            continue
        if item.ours.status != 200 and not admitted:
            theirs = _message(item.kubevirt).removeprefix(WEBHOOK_PREFIX)
            if (item.ours.status, _causes(item.ours)) == (item.kubevirt.status, _causes(item.kubevirt)):
                TALLY["admission: both refuse, same causes"] += 1
                continue
            differences.append(
                f"{item.name}: both refuse, differently\n  ours:     {item.ours.shown()}\n  kubevirt: {item.kubevirt.status} {theirs}\n  kubevirt: {item.kubevirt.shown()}"
            )
            continue
        if admitted and _not_found(item.ours):
            # KubeVirt's webhook ignores a failed lookup of the instancetype or preference (ApplyToVM logs it
            # and admits; virt-controller then reports FailedFindInstancetype); expand-vm-spec cannot expand
            # such a VM and answers 422 on the matcher, as the API contract says virt-api's expand does.
            TALLY["admission: KubeVirt admits a VM whose instancetype is missing, ours cannot expand it"] += 1
            continue
        differences.append(
            f"{item.name}: {'KubeVirt' if admitted else 'ours'} admits\n  ours:     {item.ours.shown()}\n  kubevirt: {item.kubevirt.shown()}"
        )
    TALLY["admission: differ"] += len(differences)
    assert not differences, f"{len(differences)} of {len(fleet.vms)} differ:\n" + "\n".join(differences)


def test_expand_spec_of_every_stored_vm_equals_virt_apis(fleet: Fleet, kube: Kube) -> None:
    sides = Sides(kube)
    differences = []
    stored = [item for item in fleet.vms if item.stored is not None]
    for item in stored:
        got, theirs = sides.get(item.ns, item.name)
        if got == theirs:
            TALLY["expand-spec: equal"] += 1
            continue
        if (
            _not_found(got)
            and theirs.status == 500
            and theirs.body.get("message") == f"Internal error occurred: {got.body.get('message')}"
        ):
            # The API contract's 422 on the matcher for a missing instancetype or preference, where virt-api
            # answers 500 with the same message (--kubevirt-error-codes gives virt-api's: tests/virtapi).
            TALLY["expand-spec: missing instancetype, the contract's 422 for virt-api's 500"] += 1
            continue
        differences.append(f"{item.name}\n  ours:     {got.shown()}\n  virt-api: {theirs.shown()}")
    TALLY["expand-spec: differ"] += len(differences)
    assert stored
    assert not differences, f"{len(differences)} of {len(stored)} differ:\n" + "\n".join(differences)


def _resources(containers: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(c["name"], c.get("resources") or {}) for c in containers]


def test_launch_spec_of_every_running_vm_equals_its_vmi_and_pod(fleet: Fleet, kube: Kube) -> None:
    differences = []
    running = [
        item
        for item in fleet.vms
        if item.running or (item.failed and item.vm["spec"].get("runStrategy") == "Always")
    ]
    for item in running:
        answer = kube.call("GET", f"{OURS}/namespaces/{item.ns}/virtualmachines/{item.name}/launch-spec")
        failure = _failure(item.stored or {})
        if failure is not None:
            if answer.status == 200:
                differences.append(
                    f"{item.name}: KubeVirt will not start it ({failure}); ours: {answer.shown()[:300]}"
                )
            else:
                TALLY["launch-spec: neither starts it"] += 1
            continue
        pod = _pod(kube, item)
        vmi = kube.call(
            "GET", f"/apis/kubevirt.io/v1/namespaces/{item.ns}/virtualmachineinstances/{item.name}"
        )
        if pod is None or vmi.status != 200:
            differences.append(
                f"{item.name}: KubeVirt made no {'pod' if pod is None else 'VMI'}; ours: {answer.shown()}"
            )
            continue
        if answer.status != 200:
            differences.append(f"{item.name}: ours {answer.shown()}")
            continue
        ours_pod = answer.body["pod"]
        found = []
        for part in ("containers", "initContainers"):
            if _resources(ours_pod.get(part) or []) != _resources(pod["spec"].get(part) or []):
                found.append(
                    f"  {part}: ours {_resources(ours_pod.get(part) or [])}\n  {part}: pod  {_resources(pod['spec'].get(part) or [])}"
                )
        if answer.body["vmi"]["spec"] != vmi.body["spec"]:
            found.append(
                f"  vmi.spec: ours {json.dumps(answer.body['vmi']['spec'], sort_keys=True)[:1500]}\n  vmi.spec: real {json.dumps(vmi.body['spec'], sort_keys=True)[:1500]}"
            )
        if found:
            differences.append(f"{item.name}\n" + "\n".join(found))
        else:
            TALLY["launch-spec: equal"] += 1
    TALLY["launch-spec: differ"] += len(differences)
    assert running
    assert not differences, f"{len(differences)} of {len(running)} differ:\n" + "\n".join(differences)


# -- 4. captured revisions and drift --------------------------------------------------------------------------

EVM_PATH = "/apis/expand.kubevirt-expand.io/v1/namespaces/{ns}/expandedvirtualmachines/{name}"


def _item(kube: Kube, ns: str, name: str) -> dict[str, Any]:
    answer = kube.call("GET", EVM_PATH.format(ns=ns, name=name))
    assert answer.status == 200, answer.shown()
    return dict(answer.body)


def _captured(vm: dict[str, Any], ref: str) -> str | None:
    name = ((vm.get("status") or {}).get(ref) or {}).get("controllerRevisionRef", {}).get("name")
    return str(name) if name is not None else None


def _uses(item: Stored, kind: str, name: str) -> bool:
    matcher = item.vm["spec"].get("instancetype") or {}
    return matcher.get("kind") == kind and matcher.get("name") == name


def test_the_collection_follows_the_revisions_virt_controller_captured(
    fleet: Fleet, kube: Kube, kv_cluster: ControlPlane
) -> None:
    """Every stored VM's item names the revisions virt-controller recorded in its status; after an edit of a
    team's instancetype, exactly the VMs that captured it become Stale, and KubeVirt keeps their revisions."""
    with_matchers = [
        i
        for i in fleet.vms
        if i.stored is not None and (i.vm["spec"].get("instancetype") or i.vm["spec"].get("preference"))
    ]
    differences = []
    for item in with_matchers:
        vm = kube.call("GET", f"{VM_PATH.format(ns=item.ns)}/{item.name}").body
        summary = _item(kube, item.ns, item.name).get("summary") or {}
        for matcher, ref in (("instancetype", "instancetypeRef"), ("preference", "preferenceRef")):
            if not item.vm["spec"].get(matcher):
                continue
            theirs = _captured(vm, ref)
            got = (summary.get(matcher) or {}).get("revisionName")
            if theirs is not None and got != theirs:
                differences.append(
                    f"{item.name} {matcher}: item says {got}, virt-controller captured {theirs}"
                )
            elif theirs is not None:
                TALLY["revisions: item names the captured one"] += 1
    # An edit of one team's instancetype: only the VMs that captured it lag behind.
    ns = fleet.vms[0].ns
    users = [i for i in with_matchers if i.ns == ns and _uses(i, "VirtualMachineInstancetype", "team-small")]
    before = {
        i.name: _captured(kube.call("GET", f"{VM_PATH.format(ns=ns)}/{i.name}").body, "instancetypeRef")
        for i in users
    }
    kv_cluster.kubectl(
        "patch",
        "virtualmachineinstancetype",
        "team-small",
        "-n",
        ns,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"cpu": {"guest": 2}}}),
    )
    in_ns = [i for i in with_matchers if i.ns == ns]
    deadline = time.monotonic() + patience(20)
    while True:
        stale = {
            i.name
            for i in in_ns
            if ((_item(kube, ns, i.name).get("summary") or {}).get("instancetype") or {}).get("stale")
        }
        if stale == set(before) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    after = {
        i.name: _captured(kube.call("GET", f"{VM_PATH.format(ns=ns)}/{i.name}").body, "instancetypeRef")
        for i in users
    }
    kv_cluster.kubectl(
        "patch",
        "virtualmachineinstancetype",
        "team-small",
        "-n",
        ns,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"cpu": {"guest": 1}}}),
    )
    if stale != set(before):
        differences.append(
            f"after the edit, Stale: {sorted(stale)}; the VMs that captured team-small: {sorted(before)}"
        )
    if after != before:
        differences.append(f"KubeVirt changed captured revisions: {before} -> {after}")
    TALLY["drift: VMs stale after an edit of their instancetype"] += len(stale & set(before))
    TALLY["revisions: differ"] += len(differences)
    assert users, "the fleet has no VM on team-small in the first namespace"
    assert not differences, "\n".join(differences)


# -- 5. previews of edits of running VMs, asked before the edit, against what virt-controller did --------------

PREVIEWS = "/apis/expand.kubevirt-expand.io/v1/namespaces/{ns}/virtualmachinechangepreviews"
VMI_PATH = "/apis/kubevirt.io/v1/namespaces/{ns}/virtualmachineinstances/{name}"


def _template(vm: dict[str, Any]) -> dict[str, Any]:
    return dict(vm["spec"]["template"]["spec"])


def _edit_sockets(vm: dict[str, Any], sockets: int) -> None:
    vm["spec"]["template"]["spec"]["domain"].setdefault("cpu", {})["sockets"] = sockets


def _edit_memory(vm: dict[str, Any]) -> None:
    vm["spec"]["template"]["spec"]["domain"]["memory"]["guest"] = "3Gi"


def _edit_node_selector(vm: dict[str, Any]) -> None:
    vm["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "ssd"}


def _remove_node_selector(vm: dict[str, Any]) -> None:
    vm["spec"]["template"]["spec"].pop("nodeSelector", None)


def _edit_tolerations(vm: dict[str, Any]) -> None:
    vm["spec"]["template"]["spec"]["tolerations"] = [
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


def _edit_affinity(vm: dict[str, Any]) -> None:
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
    vm["spec"]["template"]["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }


def _edit_labels(vm: dict[str, Any]) -> None:
    vm["spec"]["template"].setdefault("metadata", {}).setdefault("labels", {})["tier"] = "gold"


def _add_volume(vm: dict[str, Any]) -> None:
    vm["spec"]["template"]["spec"]["volumes"].append(
        {"name": "extra", "containerDisk": {"image": "quay.io/containerdisks/cirros:0.6"}}
    )


def _plug_interface(vm: dict[str, Any]) -> None:
    spec = vm["spec"]["template"]["spec"]
    spec["domain"]["devices"].setdefault("interfaces", []).append({"name": "hot1", "bridge": {}})
    spec.setdefault("networks", []).append({"name": "hot1", "multus": {"networkName": "nad-hot"}})


def _unplug_interface(vm: dict[str, Any]) -> None:
    for iface in vm["spec"]["template"]["spec"]["domain"]["devices"].get("interfaces") or []:
        if iface["name"] == "net1":
            iface["state"] = "absent"


def _switch_instancetype(vm: dict[str, Any]) -> None:
    vm["spec"]["instancetype"] = {
        "name": "u1.large" if vm["spec"]["instancetype"].get("name") != "u1.large" else "u1.xlarge"
    }


def _switch_preference(vm: dict[str, Any]) -> None:
    vm["spec"]["preference"] = {
        "name": "rhel.9" if (vm["spec"].get("preference") or {}).get("name") != "rhel.9" else "fedora"
    }


def _plain(item: Stored) -> bool:
    return not item.vm["spec"].get("instancetype")


def _multus(item: Stored) -> bool:
    return any(n.get("multus") for n in _template(item.vm).get("networks") or [])


# family -> (which running VMs, the edit, how many at most)
FAMILIES: dict[str, tuple[Any, Any, int]] = {
    "sockets within maxSockets": (_plain, lambda vm: _edit_sockets(vm, 2), 4),
    "sockets beyond maxSockets": (_plain, lambda vm: _edit_sockets(vm, 24), 3),
    "memory": (_plain, _edit_memory, 3),
    "instancetype switch": (
        lambda i: (i.vm["spec"].get("instancetype") or {}).get("kind") is None and not _plain(i),
        _switch_instancetype,
        4,
    ),
    "preference switch": (lambda i: bool(i.vm["spec"].get("preference")), _switch_preference, 3),
    "nodeSelector": (lambda i: True, _edit_node_selector, 3),
    "tolerations": (lambda i: True, _edit_tolerations, 3),
    "affinity": (lambda i: True, _edit_affinity, 3),
    "labels only": (lambda i: True, _edit_labels, 3),
    "volume added": (lambda i: True, _add_volume, 3),
    "interface plugged": (lambda i: not i.vm["spec"].get("preference"), _plug_interface, 3),
    "interface plugged, with a preference": (
        lambda i: bool(i.vm["spec"].get("preference")),
        _plug_interface,
        3,
    ),
    "interface unplugged": (_multus, _unplug_interface, 3),
}


def _at(obj: Any, pointer: str) -> Any:
    for part in pointer.lstrip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(obj, list):
            obj = obj[int(part)] if part.isdigit() and int(part) < len(obj) else None
        elif isinstance(obj, dict):
            obj = obj.get(part)
        else:
            return None
    return obj


def _restart_required(vm: dict[str, Any]) -> dict[str, Any] | None:
    for condition in (vm.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "RestartRequired" and condition.get("status") == "True":
            return dict(condition)
    return None


def _apply_edit(kube: Kube, item: Stored, edit: Any) -> tuple[dict[str, Any], Answer]:
    """The edited VM previewed first, then written (retried on a conflict with virt-controller's writes)."""
    for _ in range(10):
        vm = kube.call("GET", f"{VM_PATH.format(ns=item.ns)}/{item.name}").body
        edited = json.loads(json.dumps(vm))
        edit(edited)
        edited.pop("status", None)
        preview = {
            "apiVersion": "expand.kubevirt-expand.io/v1",
            "kind": "VirtualMachineChangePreview",
            "spec": {"vmName": item.name, "virtualMachine": edited},
        }
        answer = kube.call(
            "POST", PREVIEWS.format(ns=item.ns), json.dumps(preview).encode(), "application/json"
        )
        written = kube.call(
            "PUT",
            f"{VM_PATH.format(ns=item.ns)}/{item.name}",
            json.dumps(edited).encode(),
            "application/json",
        )
        if written.status != 409:
            return written.body if isinstance(written.body, dict) else {}, answer
        time.sleep(0.2)
    raise AssertionError(f"{item.name}: the edit kept conflicting")


def _quiet(kube: Kube, item: Stored, seconds: float = 2.0) -> dict[str, Any]:
    """The VM once virt-controller has synced its generation and neither it nor its VMI changed for a while
    (the sync passes an update triggers included)."""
    deadline = time.monotonic() + patience(30)
    last: tuple[str, str] | None = None
    since = time.monotonic()
    while True:
        vm = kube.call("GET", f"{VM_PATH.format(ns=item.ns)}/{item.name}").body
        vmi = kube.call("GET", VMI_PATH.format(ns=item.ns, name=item.name)).body
        now = (vm["metadata"]["resourceVersion"], (vmi.get("metadata") or {}).get("resourceVersion", ""))
        # desiredGeneration: the generation virt-controller last synced (observedGeneration follows only
        # what reached the VMI, so it lags behind forever after a change that needs a restart)
        observed = (vm.get("status") or {}).get("desiredGeneration") == vm["metadata"]["generation"]
        if time.monotonic() > deadline:
            return dict(vm)
        if now != last or not observed:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= seconds:
            return dict(vm)
        time.sleep(0.2)


def test_previews_asked_before_an_edit_equal_what_virt_controller_then_did(fleet: Fleet, kube: Kube) -> None:
    running = [i for i in fleet.vms if i.running]
    used: set[str] = set()
    differences = []
    asked = Counter[str]()
    for family, (which, edit, most) in FAMILIES.items():
        chosen = [i for i in running if i.name not in used and which(i)][:most]
        used.update(i.name for i in chosen)
        edits = [(item, *_apply_edit(kube, item, edit)) for item in chosen]
        for item, written, preview in edits:
            asked[family] += 1
            if preview.status != 201:
                differences.append(f"{family} {item.name}: preview {preview.shown()}")
                continue
            status = preview.body["status"]
            if not written.get("metadata"):
                if status["verdict"] == "refused":
                    TALLY["previews: equal"] += 1
                else:
                    differences.append(
                        f"{family} {item.name}: KubeVirt refused the edit ({written}), preview said {status['verdict']}"
                    )
                continue
            vm = _quiet(kube, item)
            restart = _restart_required(vm)
            if status["verdict"] == "restart":
                if restart is None or restart.get("message") != status.get("message"):
                    differences.append(
                        f"{family} {item.name}: preview restart ({status.get('message')}), KubeVirt: {restart}"
                    )
                    continue
            elif status["verdict"] == "live":
                if restart is not None:
                    differences.append(
                        f"{family} {item.name}: preview live {status.get('liveUpdates')}, KubeVirt: {restart}"
                    )
                    continue
                vmi = kube.call("GET", VMI_PATH.format(ns=item.ns, name=item.name)).body
                wrong = [u for u in status.get("liveUpdates") or [] if _at(vmi, u["path"]) != u.get("value")]
                if wrong:
                    differences.append(
                        f"{family} {item.name}: the VMI does not hold {wrong}: {json.dumps(vmi.get('spec'))[:800]}"
                    )
                    continue
            else:
                differences.append(
                    f"{family} {item.name}: preview {status['verdict']}: {json.dumps(status)[:600]}"
                )
                continue
            TALLY["previews: equal"] += 1
    TALLY["previews: differ"] += len(differences)
    for family, count in sorted(asked.items()):
        TALLY[f"previews asked: {family}"] += count
    assert sum(asked.values()) >= 30, asked
    assert not differences, f"{len(differences)} of {sum(asked.values())} differ:\n" + "\n".join(differences)
