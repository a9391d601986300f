"""Issue 36 behind the real aggregator: a stored VM is read the way KubeVirt writes it. At the KubeVirt
we match, virt-controller records the revisions it captured only in ``status.instancetypeRef`` /
``status.preferenceRef`` (``controllerRevisionRef.name``, written through the VM's ``/status``) and
leaves ``spec.*.revisionName`` unset (../shared/oracle/kubevirt/README.md). Here the instancetype was
captured at 4 vCPUs / 4Gi and edited to 2 / 2Gi since; every read path of a stored VM must take the
revision (``revisionFinder.Find``): GET expand-spec, the collection (and its ``Stale`` condition), the
change preview and launch-spec. A status ref naming a revision that is gone fails as KubeVirt's finder
fails, and a ``spec.instancetype.revisionName`` a user sets wins over the status ref."""

from __future__ import annotations

import copy
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver import expand_vm, launch_vm
from tests.realk8s.controlplane import ControlPlane, poll
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_resources_cluster import by_name, resources
from tests.support.clusters import apply_as_kubevirt
from tests.support.revisions import captured, status_ref

SUB = "/apis/subresources.kubevirt.io/v1/namespaces"
MATCHER = {"kind": "VirtualMachineInstancetype", "name": "it"}


def instancetype(ns: str, cpus: int, memory: str) -> dict[str, Any]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": "it", "namespace": ns},
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": memory}},
    }


def vm(ns: str, name: str, *, status: dict[str, Any] | None = None, **matcher: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "runStrategy": "Halted",
            "instancetype": {**MATCHER, **matcher},
            "template": {"spec": {"domain": {"devices": {}}}},
        },
    }
    if status is not None:
        doc["status"] = status
    return doc


@dataclass
class Stored:
    ns: str
    revision: str  # the revision captured at 4 vCPUs / 4Gi
    objects: list[dict[str, Any]]  # as kube-apiserver stores them: the live instancetype and the revision

    def read(self, plane: ControlPlane, name: str) -> dict[str, Any]:
        got: dict[str, Any] = plane.get_json("virtualmachine", name, "-n", self.ns)
        return got


@pytest.fixture(scope="module")
def stored(control_plane: ControlPlane, deployed: DeployedServer) -> Stored:
    del deployed
    ns = control_plane.new_namespace("stored-rev")
    control_plane.apply(instancetype(ns, 4, "4Gi"))
    taken = control_plane.get_json("virtualmachineinstancetype", "it", "-n", ns)
    rev = captured("pinned", ns, taken)
    name = rev["metadata"]["name"]
    control_plane.apply(instancetype(ns, 2, "2Gi"))  # edited after the capture
    gone = copy.deepcopy(rev)
    gone["metadata"]["name"] = "gone-" + uuid.uuid4().hex[:6]
    apply_as_kubevirt(
        control_plane,
        rev,
        vm(ns, "pinned", status={"instancetypeRef": status_ref(MATCHER, rev)}),
        vm(ns, "missing", status={"instancetypeRef": status_ref(MATCHER, gone)}),
        # A user's revisionName wins over the status ref (which names the missing one).
        vm(ns, "by-spec", revisionName=name, status={"instancetypeRef": status_ref(MATCHER, gone)}),
        vm(ns, "fresh"),
    )

    # The status writes are events after the VMs' creation: wait until the server's store rendered them
    # (the stored GETs are answered from it), pinned from its revision and missing failing.
    def rendered() -> dict[str, Any]:
        listed = control_plane.get_json("expandedvirtualmachines", "-n", ns)
        return {i["metadata"]["name"]: i for i in listed["items"]}

    def caught_up(items: dict[str, Any]) -> bool:
        pinned, missing = items.get("pinned"), items.get("missing")
        return (
            pinned is not None
            and (pinned["summary"].get("instancetype") or {}).get("revisionName") == name
            and missing is not None
            and conditions(missing)["Rendered"]["status"] == "False"
        )

    poll("the status refs rendered", rendered, caught_up)
    objects = [
        control_plane.get_json("virtualmachineinstancetype", "it", "-n", ns),
        control_plane.get_json("controllerrevision", name, "-n", ns),
    ]
    return Stored(ns, name, objects)


def cpu_and_memory(expanded: dict[str, Any]) -> tuple[Any, Any]:
    domain = expanded["spec"]["template"]["spec"]["domain"]
    return domain["cpu"]["sockets"], domain["memory"]["guest"]


def test_the_status_ref_reaches_the_stored_vm_and_spec_stays_unset(
    control_plane: ControlPlane, stored: Stored
) -> None:
    """The VM as virt-controller leaves it: the revision in status, none in spec."""
    got = stored.read(control_plane, "pinned")
    assert got["status"]["instancetypeRef"]["controllerRevisionRef"] == {"name": stored.revision}
    assert "revisionName" not in got["spec"]["instancetype"]


@pytest.mark.parametrize(
    ("name", "cpu", "memory"), [("pinned", 4, "4Gi"), ("by-spec", 4, "4Gi"), ("fresh", 2, "2Gi")]
)
def test_get_expand_spec_reads_the_captured_revision(
    control_plane: ControlPlane, stored: Stored, name: str, cpu: int, memory: str
) -> None:
    path = f"{SUB}/{stored.ns}/virtualmachines/{name}/expand-spec"
    got = json.loads(control_plane.kubectl("get", "--raw", path).stdout)
    assert cpu_and_memory(got) == (cpu, memory)
    assert got == expand_vm(stored.read(control_plane, name), stored.objects)


def test_a_status_ref_to_a_missing_revision_is_an_error_not_the_live_object(
    control_plane: ControlPlane, stored: Stored
) -> None:
    """KubeVirt's finder fails on a named revision it cannot get; it never falls back to the live one."""
    answer = control_plane.request(f"{SUB}/{stored.ns}/virtualmachines/missing/expand-spec")
    body = answer.json()
    assert (answer.status, body["kind"], body["reason"]) == (422, "Status", "Invalid"), body
    [cause] = body["details"]["causes"]
    assert cause["field"] == "status.instancetypeRef.controllerRevisionRef.name"
    assert "not found" in cause["message"] and "controllerrevisions" in cause["message"]


def conditions(doc: dict[str, Any]) -> dict[str, Any]:
    return {c["type"]: c for c in doc["status"]["conditions"]}


def test_the_collection_renders_from_the_revision_and_marks_it_stale(
    control_plane: ControlPlane, stored: Stored
) -> None:
    def item(name: str) -> dict[str, Any]:
        # The store renders what its watch delivers: wait for the VM to be there.
        done = poll(
            f"expandedvirtualmachine {name}",
            lambda: control_plane.kubectl(
                "get", "expandedvirtualmachines", name, "-n", stored.ns, "-o", "json", check=False
            ),
            lambda answer: answer.returncode == 0,
        )
        got: dict[str, Any] = json.loads(done.stdout)
        return got

    pinned = item("pinned")
    assert pinned["summary"]["cpu"]["vcpus"] == 4
    assert pinned["summary"]["instancetype"]["revisionName"] == stored.revision
    stale = conditions(pinned)["Stale"]
    assert (stale["status"], stale["reason"]) == ("True", "RevisionOutdated")
    fresh = conditions(item("fresh"))["Stale"]
    assert (fresh["status"], fresh["reason"]) == ("False", "NoRevision")
    missing = item("missing")
    assert conditions(missing)["Rendered"]["status"] == "False"
    gone = conditions(missing)["Stale"]
    assert (gone["status"], gone["reason"]) == ("False", "NotComparable") and "not found" in gone["message"]


def test_the_upgrade_preview_goes_from_the_revision_to_the_live_object(
    control_plane: ControlPlane, stored: Stored, tmp_path: Path
) -> None:
    doc = {
        "apiVersion": "expand.kubevirt-expand.io/v1",
        "kind": "VirtualMachineChangePreview",
        "metadata": {"name": "p"},
        "spec": {"vmName": "pinned", "upgrade": True},
    }
    path = tmp_path / "preview.yaml"
    path.write_text(yaml.safe_dump(doc))
    cache = f"--cache-dir={tmp_path / 'kubectl-cache'}"
    done = control_plane.kubectl("create", "-f", str(path), "-n", stored.ns, "-o", "yaml", cache)
    status = yaml.safe_load(done.stdout)["status"]
    assert status["verdict"] == "stopped", status
    changes = {c["path"]: (c.get("old"), c.get("new")) for c in status["changes"]}
    assert changes["/spec/template/spec/domain/cpu/sockets"] == (4, 2)
    assert changes["/spec/template/spec/domain/memory/guest"] == ("4Gi", "2Gi")


def test_launch_spec_prices_the_revision(control_plane: ControlPlane, stored: Stored) -> None:
    def pod(name: str) -> dict[str, Any]:
        path = f"{SUB}/{stored.ns}/virtualmachines/{name}/launch-spec"
        got: dict[str, Any] = json.loads(control_plane.kubectl("get", "--raw", path).stdout)["pod"]
        return got

    ns = control_plane.get_json("namespace", stored.ns)
    pinned, fresh = pod("pinned"), pod("fresh")
    assert pinned == launch_vm(stored.read(control_plane, "pinned"), [*stored.objects, ns])["pod"]
    assert pinned != fresh
    assert fresh == launch_vm(stored.read(control_plane, "fresh"), [*stored.objects, ns])["pod"]


def test_resources_cluster_prices_the_revision_as_launch_spec_does(
    control_plane: ControlPlane, stored: Stored
) -> None:
    """``kubevirt-expand resources --cluster`` reads the revisions the status refs name, as the server."""
    kubeconfig = str(control_plane.admin_kubeconfig)
    done = resources(control_plane, "--cluster", "-n", stored.ns, "--kubeconfig", kubeconfig, "-o", "jsonl")
    # Was: exit 2, "ControllerRevision ... is defined twice" (read once per VM naming it). The VM whose
    # revision is gone is unresolved (exit 3, as expand says it), not a quota failure.
    assert "defined twice" not in done.stderr and done.returncode == 3, done.stderr
    vms = by_name(done.stdout)
    assert vms["missing"].get("unresolved") is True
    refused = vms["missing"]["status"]
    assert (refused["code"], refused["details"]["causes"][0]["field"]) == (
        422,
        "status.instancetypeRef.controllerRevisionRef.name",
    )
    for name in ("pinned", "by-spec", "fresh"):
        path = f"{SUB}/{stored.ns}/virtualmachines/{name}/launch-spec"
        served = json.loads(control_plane.kubectl("get", "--raw", path).stdout)["pod"]
        assert vms[name]["pod"] == served, name
