"""Issue 26 behind the real aggregator: ``kubectl create -f preview.yaml -o yaml`` previews a change to a
running VM, against the server as deployed.

The running VM is one of the oracle corpus (tests/render/vmcontroller/corpus): its VMI was made by
KubeVirt's own ``startVMI`` and VMI webhook, and is written here as virt-controller writes it, with the
start revision ``revision-start-vm-<uid>-<generation>`` virt-controller stores. ../shared's CRDs have no
VirtualMachineInstance: this module installs one (an open schema, as KubeVirt's stores these objects)
and removes it at the end.

Callers (kubectl ``--as``): ``reader`` may create previews and get VMs, VMIs and ControllerRevisions in
the namespace; ``norev`` the same but ControllerRevisions; ``alice`` may only create previews. The VM
carries a mark that must not reach alice. ``vm-foreign`` runs with a VMI whose status names a
StatefulSet's revision holding a password (issue 37, finding 6).
"""

from __future__ import annotations

import copy
import gzip
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver.render.golang import gojson
from apiserver.render.vmcontroller.revision import revision_data
from tests.realk8s.controlplane import ControlPlane, poll
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_auth import binding, user
from tests.realk8s.test_tenancy import crd
from tests.support.clusters import apply_as_kubevirt

CORPUS = Path(__file__).resolve().parents[1] / "render" / "vmcontroller" / "corpus"
CASE = "u1.medium -> u1.xlarge (LiveUpdate)"
GROUP = "expand.kubevirt-expand.io"
PASSWORD = "sts-password-4f1c"
RBAC = "rbac.authorization.k8s.io"


def _case() -> dict[str, Any]:
    with gzip.open(CORPUS / "instancetype-switch.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record["name"] == CASE:
                return record["input"]  # type: ignore[no-any-return]
    raise AssertionError(CASE)


def vmi_crd() -> dict[str, Any]:
    doc = crd("kubevirt.io", "VirtualMachineInstance", "virtualmachineinstances")
    doc["spec"]["versions"][0]["name"] = "v1"
    return doc


@dataclass
class Running:
    ns: str
    suffix: str
    reader: str
    alice: str
    norev: str
    mark: str
    bigger: str  # a cluster instancetype beyond the VMI's maxSockets
    within: dict[str, str]  # the corpus case's bigger instancetype, within maxSockets
    preference: str


def _names(inp: dict[str, Any], suffix: str) -> dict[str, Any]:
    """The case with its cluster-scoped names made unique to this run (the control plane is shared)."""
    text = json.dumps(inp)
    for name in ("u1.medium", "u1.xlarge"):
        text = text.replace(f'"{name}', f'"{name}-{suffix}').replace(f"-{name}-", f"-{name}-{suffix}-")
    return json.loads(text)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def running(control_plane: ControlPlane, deployed: DeployedServer) -> Iterator[Running]:
    del deployed
    control_plane.apply(vmi_crd())
    control_plane.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", "crd/virtualmachineinstances.kubevirt.io"
    )
    suffix = uuid.uuid4().hex[:8]
    ns = control_plane.new_namespace("preview")
    inp = _names(_case(), suffix)
    r = Running(
        ns=ns,
        suffix=suffix,
        reader=f"reader-{suffix}",
        alice=f"alice-{suffix}",
        norev=f"norev-{suffix}",
        mark=f"MARK-{suffix}",
        bigger=f"u1.8xlarge-{suffix}",
        within=inp["vm"]["spec"]["instancetype"],
        preference=f"p-clock-{suffix}",
    )
    objects = []
    for obj in inp["objects"]:
        obj = copy.deepcopy(obj)
        if obj["kind"] in ("VirtualMachineInstancetype", "VirtualMachinePreference", "ControllerRevision"):
            obj["metadata"]["namespace"] = ns
        objects.append(obj)
    bigger = {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": r.bigger},
        "spec": {"cpu": {"guest": 32}, "memory": {"guest": "128Gi"}},
    }
    preference = {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterPreference",
        "metadata": {"name": r.preference},
        "spec": {"clock": {"preferredClockOffset": {"utc": {}}}},
    }
    vm = copy.deepcopy(inp["startVM"])
    vm["metadata"] = {"name": "vm-switch", "namespace": ns, "labels": {"mark": r.mark}}
    # The VM's status (its captured revision) through /status, as virt-controller writes it.
    apply_as_kubevirt(control_plane, *objects, bigger, preference, vm)
    stored = control_plane.get_json("virtualmachine", "vm-switch", "-n", ns)
    uid, generation = stored["metadata"]["uid"], stored["metadata"]["generation"]
    revision_name = f"revision-start-vm-{uid}-{generation}"
    started = copy.deepcopy(vm)
    started["metadata"].update(uid=uid, generation=generation)
    owner = {  # as virt-controller's createVMRevision writes it (metav1.NewControllerRef)
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "name": "vm-switch",
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    revision = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": revision_name, "namespace": ns, "ownerReferences": [owner]},
        "data": revision_data(gojson.decode(started, "VirtualMachine")),
        "revision": generation,
    }
    vmi = copy.deepcopy(inp["vmi"])
    vmi["metadata"] = {
        "name": "vm-switch",
        "namespace": ns,
        "ownerReferences": [
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachine",
                "name": "vm-switch",
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    vmi["status"]["virtualMachineRevisionName"] = revision_name
    rules = [
        {"apiGroups": [GROUP], "resources": ["virtualmachinechangepreviews"], "verbs": ["create"]},
    ]
    reads = [
        {
            "apiGroups": ["kubevirt.io"],
            "resources": ["virtualmachines", "virtualmachineinstances"],
            "verbs": ["get"],
        }
    ]
    revisions = [{"apiGroups": ["apps"], "resources": ["controllerrevisions"], "verbs": ["get"]}]
    # vm-foreign: the same VM, running with a VMI that names a StatefulSet's revision.
    foreign_vm = copy.deepcopy(vm)
    foreign_vm["metadata"]["name"] = "vm-foreign"
    control_plane.apply(foreign_vm)
    foreign_uid = control_plane.get_json("virtualmachine", "vm-foreign", "-n", ns)["metadata"]["uid"]
    sts_revision = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "web-7d9f", "namespace": ns},
        "data": {
            "spec": {
                "template": {
                    "spec": {
                        "domain": {"devices": {}},
                        "volumes": [{"name": "c", "cloudInitNoCloud": {"userData": f"pw: {PASSWORD}"}}],
                    }
                }
            }
        },
        "revision": 1,
    }
    foreign_vmi = copy.deepcopy(vmi)
    foreign_vmi["metadata"]["name"] = "vm-foreign"
    foreign_vmi["metadata"]["ownerReferences"][0].update(name="vm-foreign", uid=foreign_uid)
    foreign_vmi["status"]["virtualMachineRevisionName"] = "web-7d9f"

    def role(name: str, rs: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "apiVersion": f"{RBAC}/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": ns},
            "rules": rs,
        }

    control_plane.apply(
        revision,
        vmi,
        sts_revision,
        foreign_vmi,
        role("previewer", rules),
        role("vm-reader", reads),
        role("revision-reader", revisions),
        binding(
            ns,
            "previewers",
            {"kind": "Role", "name": "previewer"},
            user(r.reader),
            user(r.alice),
            user(r.norev),
        ),
        binding(ns, "vm-readers", {"kind": "Role", "name": "vm-reader"}, user(r.reader), user(r.norev)),
        binding(ns, "revision-readers", {"kind": "Role", "name": "revision-reader"}, user(r.reader)),
    )
    for who in (r.reader, r.alice, r.norev):
        poll(
            f"RBAC for {who} in effect",
            lambda w=who: control_plane.kubectl(  # type: ignore[misc]
                "auth",
                "can-i",
                "create",
                f"virtualmachinechangepreviews.{GROUP}",
                "-n",
                ns,
                f"--as={w}",
                check=False,
            ).stdout.strip(),
            lambda answer: answer == "yes",
        )
    try:
        yield r
    finally:
        for kind, name in (
            ("virtualmachineclusterinstancetypes", r.bigger),
            ("virtualmachineclusterpreferences", r.preference),
        ):
            control_plane.kubectl(
                "delete", f"{kind}.instancetype.kubevirt.io", name, "--ignore-not-found", check=False
            )
        for obj in inp["objects"]:
            if obj["kind"].startswith("VirtualMachineCluster"):
                plural = obj["kind"].lower() + "s"
                control_plane.kubectl(
                    "delete",
                    f"{plural}.instancetype.kubevirt.io",
                    obj["metadata"]["name"],
                    "--ignore-not-found",
                    check=False,
                )
        control_plane.kubectl(
            "delete", "crd", "virtualmachineinstances.kubevirt.io", "--wait=true", check=False
        )


def create(
    cluster: ControlPlane, r: Running, who: str, spec: dict[str, Any], tmp_path: Path
) -> tuple[int, str]:
    """``kubectl create -f preview.yaml -o yaml`` as ``who``."""
    doc = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "VirtualMachineChangePreview",
        "metadata": {"name": "p"},
        "spec": spec,
    }
    path = tmp_path / "preview.yaml"
    path.write_text(yaml.safe_dump(doc))
    # A cache of its own: kubectl validates against the OpenAPI document it cached, and a cache shared with
    # runs of another server (same address) would not know the resource.
    cache = f"--cache-dir={tmp_path / 'kubectl-cache'}"
    caller = [f"--as={who}", "--validate=false"] if who else []
    done = cluster.kubectl("create", "-f", str(path), "-n", r.ns, "-o", "yaml", *caller, cache, check=False)
    return done.returncode, done.stdout + done.stderr


def test_kubectl_create_as_the_admin_validates_and_answers(
    control_plane: ControlPlane, running: Running, tmp_path: Path
) -> None:
    code, out = create(control_plane, running, None, {"vmName": "vm-switch"}, tmp_path)
    assert code == 0, out
    doc = yaml.safe_load(out)
    assert doc["kind"] == "VirtualMachineChangePreview"
    assert doc["status"]["verdict"] == "live" and doc["status"]["patch"] == []


def test_a_bigger_instancetype_within_max_sockets_is_live(
    control_plane: ControlPlane, running: Running, tmp_path: Path
) -> None:
    code, out = create(
        control_plane,
        running,
        running.reader,
        {"vmName": "vm-switch", "instancetype": running.within},
        tmp_path,
    )
    assert code == 0, out
    status = yaml.safe_load(out)["status"]
    assert status["verdict"] == "live", out
    assert {"path": "/spec/domain/cpu/sockets", "value": 4} in status["liveUpdates"]


def test_beyond_max_sockets_says_restart_with_kubevirts_message(
    control_plane: ControlPlane, running: Running, tmp_path: Path
) -> None:
    target = {"name": running.bigger, "kind": "VirtualMachineClusterInstancetype"}
    code, out = create(
        control_plane, running, running.reader, {"vmName": "vm-switch", "instancetype": target}, tmp_path
    )
    assert code == 0, out
    status = yaml.safe_load(out)["status"]
    assert status["verdict"] == "restart", out
    assert status["message"] == "CPU sockets updated in template spec to a value higher than what's available"


def test_a_preference_switch_says_restart(
    control_plane: ControlPlane, running: Running, tmp_path: Path
) -> None:
    target = {"name": running.preference, "kind": "VirtualMachineClusterPreference"}
    code, out = create(
        control_plane, running, running.reader, {"vmName": "vm-switch", "preference": target}, tmp_path
    )
    assert code == 0, out
    status = yaml.safe_load(out)["status"]
    assert status["verdict"] == "restart", out
    assert status["message"] == "a non-live-updatable field was changed in the template spec"
    assert {"path": "/spec/template/spec/domain/clock/utc", "new": {}} in status["changes"]


def test_a_tenant_sees_nothing_of_what_they_may_not_read(
    control_plane: ControlPlane, running: Running, tmp_path: Path
) -> None:
    code, out = create(
        control_plane,
        running,
        running.alice,
        {"vmName": "vm-switch", "instancetype": running.within},
        tmp_path,
    )
    assert code != 0
    assert "forbidden" in out.lower() and "virtualmachines" in out, out
    assert running.mark not in out
    # A VM that does not exist is refused the same way: existence does not show either.
    code, missing = create(control_plane, running, running.alice, {"vmName": "no-such-vm"}, tmp_path)
    assert code != 0 and "forbidden" in missing.lower(), missing


def test_the_start_revision_is_the_callers_read_and_the_vms_own(
    control_plane: ControlPlane, running: Running, tmp_path: Path
) -> None:
    """Issue 37, finding 6. norev may get the VM and its VMI but not ControllerRevisions: the preview of a
    running VM is kube-apiserver's 403 for the start revision's read, whether it is the VM's own
    (vm-switch) or a StatefulSet's (vm-foreign). reader may get them: vm-foreign's VMI names a revision
    the VM does not own, which virt-controller never takes for its start revision, so the preview is
    that of a VM without one, and the StatefulSet's password is nowhere in it."""
    target = {"vmName": "vm-foreign", "instancetype": running.within}
    for name in ("vm-switch", "vm-foreign"):
        code, out = create(control_plane, running, running.norev, {**target, "vmName": name}, tmp_path)
        assert code != 0, out
        assert "forbidden" in out.lower() and "controllerrevisions" in out, out
        assert PASSWORD not in out
    code, out = create(control_plane, running, running.reader, target, tmp_path)
    assert code == 0, out
    assert PASSWORD not in out
    status = yaml.safe_load(out)["status"]
    assert status["verdict"] == "live", out
