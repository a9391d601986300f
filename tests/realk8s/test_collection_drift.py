"""Issue 26's done-when for the collection, behind the real aggregator with kubectl as the client: VMs on
instancetype A and on B, each with the ControllerRevision KubeVirt's controller stores and the status
ref pointing at it (tests/support/revisions.py); A is edited, and within a second the collection marks
exactly A's VMs Stale: ``kubectl get expandedvirtualmachines --field-selector status.stale=true`` lists
them and nothing else, a watch with that selector gets them ADDED, an unfiltered watch MODIFIED, and the
Table shows STALE and UPGRADE. The same behaviour over the fake: tests/http/endpoints/test_expandedvms_drift.py."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from typing import Any

from tests.realk8s.controlplane import KUBECTL, ControlPlane, poll
from tests.realk8s.deployed import DeployedServer
from tests.support.clusters import apply_as_kubevirt
from tests.support.patience import patience
from tests.support.revisions import captured, status_ref

RESOURCE = "expandedvirtualmachines"
A_VMS = ["a-0", "a-1", "a-2"]
B_VMS = ["b-0", "b-1"]


def instancetype(namespace: str, name: str, cpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": "2Gi"}},
    }


def vm(namespace: str, name: str, it: str, revision: dict[str, Any] | None) -> dict[str, Any]:
    matcher = {"kind": "VirtualMachineInstancetype", "name": it}
    doc: dict[str, Any] = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "runStrategy": "Always",
            "instancetype": matcher,
            "template": {"spec": {"domain": {"devices": {}}}},
        },
    }
    if revision is not None:
        doc["status"] = {"instancetypeRef": status_ref(matcher, revision)}
    return doc


def populate(cluster: ControlPlane, namespace: str) -> None:
    """A ("it-a") with A_VMS pinned to revisions of it, B ("it-b") with B_VMS, and "fresh" on A with no
    revision yet (it renders from the live object)."""
    cluster.apply(instancetype(namespace, "it-a", 2), instancetype(namespace, "it-b", 2))
    objects: list[dict[str, Any]] = []
    for it, names in (("it-a", A_VMS), ("it-b", B_VMS)):
        stored = cluster.get_json("virtualmachineinstancetype", it, "-n", namespace)
        for name in names:
            revision = captured(name, namespace, stored)
            objects += [revision, vm(namespace, name, it, revision)]
    # Each VM's status ref through /status, as virt-controller writes it (KubeVirt's VM CRD here).
    apply_as_kubevirt(cluster, *objects, vm(namespace, "fresh", "it-a", None))


class Lines:
    """A process's stdout lines, read in a thread, so a wait for them can have a deadline."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put((time.monotonic(), line))

    def until(self, accept: Any, seconds: float) -> list[tuple[float, list[str]]]:
        """Lines (time read, words) until ``accept`` takes those read so far, or ``seconds`` pass."""
        seen: list[tuple[float, list[str]]] = []
        deadline = time.monotonic() + seconds
        while not accept(seen):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                at, line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            seen.append((at, line.split()))
        return seen


def watch(cluster: ControlPlane, namespace: str, *args: str) -> subprocess.Popen[str]:
    assert KUBECTL is not None
    return subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(cluster.admin_kubeconfig),
            "get",
            RESOURCE,
            "-n",
            namespace,
            "-w",
            "--output-watch-events",
            "--no-headers",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stale_names(cluster: ControlPlane, namespace: str) -> list[str]:
    out = cluster.kubectl(
        "get", RESOURCE, "-n", namespace, "--field-selector", "status.stale=true", "-o", "name"
    )
    return sorted(line.rpartition("/")[2] for line in out.stdout.split())


def test_an_edited_instancetype_marks_exactly_its_vms_stale_within_a_second(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    populate(control_plane, namespace)
    # 6 items, the 5 pinned rendered from their revisions (their status refs are writes after their
    # creation: the store renders them once its watch delivered them).
    poll(
        "6 items, 5 pinned to a revision",
        lambda: json.loads(
            control_plane.kubectl(
                "get", RESOURCE, "-n", namespace, "--field-selector", "status.stale=false", "-o", "json"
            ).stdout
        )["items"],
        lambda items: (
            len(items) == 6
            and sum(1 for i in items if (i["summary"].get("instancetype") or {}).get("revisionName")) == 5
        ),
        timeout=30,
    )
    assert stale_names(control_plane, namespace) == []
    by_name = control_plane.kubectl(
        "get", RESOURCE, "-n", namespace, "--field-selector", "spec.instancetype.name=it-b", "-o", "name"
    ).stdout.split()
    assert sorted(n.rpartition("/")[2] for n in by_name) == B_VMS

    selected = Lines(watch(control_plane, namespace, "--field-selector", "status.stale=true"))
    everything = Lines(watch(control_plane, namespace))
    try:
        listed = everything.until(lambda seen: len(seen) >= 6, patience(30))  # the list first
        assert len(listed) == 6
        # The selector's watch lists nothing; give it the time to have started, then edit A.
        time.sleep(0.5)  # nothing comes on the selected watch before the edit: nothing to wait for
        assert selected.lines.empty()

        control_plane.apply(instancetype(namespace, "it-a", 4))
        edited = time.monotonic()
        added = selected.until(lambda seen: len(seen) >= len(A_VMS), patience(10))
        seen_at = max(at for at, _ in added) - edited if added else float("inf")
        listed_at = poll(
            "kubectl lists exactly A's VMs stale",
            lambda: (stale_names(control_plane, namespace), time.monotonic() - edited),
            lambda found: found[0] == A_VMS,
            timeout=patience(10),
        )[1]
        print(
            f"\nstale seen on the watch {seen_at * 1000:.0f} ms after kubectl apply returned; "
            f"listed by --field-selector status.stale=true after {listed_at * 1000:.0f} ms"
        )
        assert sorted((words[0], words[1]) for _, words in added) == [("ADDED", n) for n in A_VMS]
        assert seen_at <= patience(1.0), f"the watch saw them stale after {seen_at:.2f}s"
        assert listed_at <= patience(1.0) + 1.0, (
            f"kubectl listed them after {listed_at:.2f}s"
        )  # kubectl's own start

        modified = everything.until(lambda seen: len(seen) >= len(A_VMS) + 1, patience(10))
        assert sorted(words[1] for _, words in modified if words[0] == "MODIFIED") == sorted(
            [*A_VMS, "fresh"]
        )

        header, *rows = (
            line.split()
            for line in control_plane.kubectl("get", RESOURCE, "-n", namespace).stdout.splitlines()
        )
        stale_at, upgrade_at = header.index("STALE"), header.index("UPGRADE")
        table = {row[0]: (row[stale_at], row[upgrade_at]) for row in rows if row[0] in A_VMS}
        assert table == dict.fromkeys(A_VMS, ("true", "live"))
        doc = control_plane.get_json(RESOURCE, "a-0", "-n", namespace)
        condition = {c["type"]: c for c in doc["status"]["conditions"]}["Stale"]
        assert (condition["status"], condition["reason"]) == ("True", "RevisionOutdated")
        assert (
            f"VirtualMachineInstancetype {namespace}/it-a changed since ControllerRevision"
            in condition["message"]
        )
        assert doc["summary"]["cpu"]["vcpus"] == 2  # still rendered from the revision
    finally:
        for lines in (selected, everything):
            lines.process.terminate()
            lines.process.wait(10)


def test_bad_field_selector_names_the_supported_fields(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    refused = control_plane.kubectl(
        "get", RESOURCE, "-n", namespace, "--field-selector", "spec.runStrategy=Always", check=False
    )
    assert refused.returncode == 1
    assert '"spec.runStrategy" is not a known field selector' in refused.stderr
    assert '"status.stale"' in refused.stderr and '"spec.preference.kind"' in refused.stderr
