"""End to end: the real server over HTTPS, reading a fake cluster through the cluster source.

The rendering comparisons run golden-case objects through both sources (cluster and folder) and require
identical answers; they skip while the engine (render/expand.py) is not there yet. The failure-mode
tests need no engine: they fail before rendering.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver.sources.cluster import ClusterSource
from apiserver.sources.folder import FolderSource
from devcluster.patience import patience
from tests.support import shared
from tests.support.conformance import CASES_DIR
from tests.support.fakekube import FakeKube
from tests.support.fakekube.testing import kubeconfig, stored_vm, synced
from tests.support.http_helpers import EXAMPLES, put_path, running_server, vm_path

FAST = {"backoff": (0.02, 0.2), "read_timeout": 0.5}


def answering() -> dict[str, Any]:
    """FAST, with a read timeout a loaded machine (the suite's other workers, real control planes beside
    it) does not reach: for tests that compare answers, not what a slow read does."""
    return {**FAST, "read_timeout": patience(2.0)}


def kubevirt_cr(config: dict[str, Any] | None) -> dict[str, Any] | None:
    if config is None:
        return None
    cr = config if "spec" in config else {"spec": {"configuration": config}}
    arch = ((cr["spec"].get("configuration") or {}).get("architectureConfiguration") or {}).get(
        "defaultArchitecture", "amd64"
    )
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
        "spec": cr["spec"],
        "status": {"phase": "Deployed", "defaultArchitecture": arch, **(cr.get("status") or {})},
    }


@pytest.fixture
async def fake() -> AsyncIterator[FakeKube]:
    async with FakeKube(bookmark_interval=0.1) as f:
        yield f


# ---------------------------------------------------------------------- no engine needed


async def test_readyz_waits_for_the_caches(fake: FakeKube, tmp_path: Path) -> None:
    fake.delay(0.5, verbs=["list"])
    source = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), **FAST)  # type: ignore[arg-type]
    async with running_server(source, tmp_path) as srv:
        early = await srv.get("/readyz?verbose")
        assert early.status != 200
        assert "cache-virtualmachineinstancetypes" in early.body.decode()
        await synced(source, fake)
        ready = await srv.get("/readyz?verbose")
        assert ready.status == 200, ready.body.decode()


async def test_api_server_down_then_back(fake: FakeKube, tmp_path: Path) -> None:
    fake.create(
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": "fedora", "namespace": "default"},
            "spec": {},
        }
    )
    source = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), **FAST)  # type: ignore[arg-type]
    async with running_server(source, tmp_path) as srv:
        await synced(source, fake)
        await fake.stop()
        start = time.monotonic()
        down = await srv.get(vm_path())
        assert down.status == 503 and down.json()["reason"] == "ServiceUnavailable"
        assert int(down.headers["retry-after"]) >= 1
        assert time.monotonic() - start < 1
        await fake.start()
        await synced(source, fake)
        fake.delay(3, verbs=["get"])
        start = time.monotonic()
        slow = await srv.get(vm_path())
        assert slow.status == 504 and slow.json()["reason"] == "Timeout" and "retry-after" in slow.headers
        assert time.monotonic() - start < 1.5
        fake.clear_faults()
        missing = await srv.get(vm_path(name="nope"))
        assert missing.status == 404


# ---------------------------------------------------------------------- rendering, both sources


SERVER_SET = ("uid", "resourceVersion", "generation", "creationTimestamp")


def without_server_fields(body: bytes) -> Any:
    """The stored VM carries what kube-apiserver set on create; the folder's copy does not."""
    doc = json.loads(body)
    for key in SERVER_SET:
        doc.get("metadata", {}).pop(key, None)
    return doc


def sample_cases() -> list[dict[str, Any]]:
    wanted = ("docs-", "lookup-", "revision-", "defaults-0", "presets-00", "legacy-00")
    files = sorted(p for p in CASES_DIR.glob("*.json") if p.name.startswith(wanted))
    return [json.loads(p.read_text()) | {"id": p.stem} for p in files]


@shared.needs_shared(CASES_DIR)
async def test_same_answers_as_the_folder_source(tmp_path: Path) -> None:
    mismatches = []
    cases = sample_cases()
    assert len(cases) > 50
    for case in cases:
        vm = case["input"]["vm"]
        objects = [*case["input"].get("objects", ()), vm]
        cr = kubevirt_cr(case["input"].get("kubevirt"))
        if cr:
            objects.append(cr)
        folder = tmp_path / case["id"]
        folder.mkdir()
        (folder / "objects.json").write_text(
            json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        )
        flags = "?presets=true" if case["id"].startswith("presets") else ""
        answers = []
        async with FakeKube(bookmark_interval=0.1) as fake:
            for o in objects:
                if o is vm:  # its status (captured revisions) through /status, as virt-controller writes it
                    stored_vm(fake, o)
                else:
                    fake.create(o)
            cluster = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), **answering())
            for source in (cluster, FolderSource(folder, watch=False)):
                async with running_server(source, tmp_path / f"{case['id']}-srv") as srv:
                    if source is cluster:
                        await synced(cluster, fake)
                    ns, name = vm["metadata"]["namespace"], vm["metadata"]["name"]
                    got = await srv.get(vm_path(ns, name) + flags)
                    put = await srv.put(put_path(ns) + flags, json_body=vm)
                    answers.append((got.status, without_server_fields(got.body), put.status, put.body))
        if answers[0] != answers[1]:
            (cluster_get, _, cluster_put, _), (folder_get, _, folder_put, _) = answers
            mismatches.append(f"{case['id']}: GET {cluster_get}/{folder_get}, PUT {cluster_put}/{folder_put}")
    assert mismatches == []


async def test_warm_requests_make_no_upstream_call_and_bursts_share_reads(
    fake: FakeKube, tmp_path: Path
) -> None:
    # The user guide's VM and what it references (examples/: no ../shared needed).
    objects = [
        doc
        for name in ("instancetypes.yaml", "preferences.yaml")
        for doc in yaml.safe_load_all((EXAMPLES / name).read_text())
        if doc
    ]
    for o in objects:
        fake.create(o)
    vm = yaml.safe_load((EXAMPLES / "vm-fedora.yaml").read_text())
    ns = vm["metadata"]["namespace"]
    # One event loop runs the server, 50 TLS clients and the fake: allow the shared read some slack.
    source = ClusterSource(
        kubeconfig=kubeconfig(fake, tmp_path / "kc"), backoff=(0.02, 0.2), read_timeout=5.0
    )
    async with running_server(source, tmp_path) as srv:
        await synced(source, fake)
        first = await srv.put(put_path(ns), json_body=vm)
        assert first.status == 200, first.body
        fake.reset_log()
        again = await srv.put(put_path(ns), json_body=vm)
        assert again.body == first.body
        assert fake.log == []
        # A revision nobody has read yet: 50 concurrent requests, one upstream GET.
        matcher = vm["spec"]["instancetype"]
        [it] = [
            o for o in objects if (o["kind"], o["metadata"]["name"]) == (matcher["kind"], matcher["name"])
        ]
        rev = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {"name": "burst", "namespace": ns},
            "data": {k: it[k] for k in ("apiVersion", "kind", "metadata", "spec")},
            "revision": 1,
        }
        fake.create(rev)
        burst_vm = json.loads(json.dumps(vm))
        burst_vm["spec"]["instancetype"]["revisionName"] = "burst"
        fake.delay(0.1, verbs=["get"])
        replies = await asyncio.gather(*(srv.put(put_path(ns), json_body=burst_vm) for _ in range(50)))
        assert {r.status for r in replies} == {200}
        assert {r.body for r in replies} == {first.body}
        assert fake.count("get", resource="controllerrevisions") == 1


async def test_infer_from_volume_reads_the_pvc_labels(fake: FakeKube, tmp_path: Path) -> None:
    labels = {
        "instancetype.kubevirt.io/default-instancetype": "small",
        "instancetype.kubevirt.io/default-instancetype-kind": "VirtualMachineInstancetype",
    }
    fake.create(
        {
            "apiVersion": "instancetype.kubevirt.io/v1beta1",
            "kind": "VirtualMachineInstancetype",
            "metadata": {"name": "small", "namespace": "default"},
            "spec": {"cpu": {"guest": 3}, "memory": {"guest": "3Gi"}},
        }
    )
    fake.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "root", "namespace": "default", "labels": labels},
            "spec": {},
        }
    )
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "inferred", "namespace": "default"},
        "spec": {
            "instancetype": {"inferFromVolume": "disk"},
            "template": {
                "spec": {
                    "domain": {"devices": {}},
                    "volumes": [{"name": "disk", "persistentVolumeClaim": {"claimName": "root"}}],
                }
            },
        },
    }
    source = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), **FAST)  # type: ignore[arg-type]
    async with running_server(source, tmp_path) as srv:
        await synced(source, fake)
        fake.reset_log()
        reply = await srv.put(put_path(), json_body=vm)
        assert reply.status == 200, reply.body
        domain = reply.json()["spec"]["template"]["spec"]["domain"]
        assert domain["cpu"]["sockets"] * domain["cpu"]["cores"] * domain["cpu"]["threads"] == 3
        assert domain["memory"]["guest"] == "3Gi"
        assert [(r.verb, r.resource) for r in fake.log] == [("get", "persistentvolumeclaims")]
        fake.delete("v1", "PersistentVolumeClaim", "root", "default")
        gone = await srv.put(put_path(), json_body=vm)
        assert gone.status == 422
        assert gone.json()["message"] == 'persistentvolumeclaims "root" not found'
        assert gone.json()["details"]["causes"][0]["field"] == "spec.instancetype.inferFromVolume"


async def test_validate_reads_the_running_vmi_of_a_ready_vm_with_volume_requests(
    fake: FakeKube, tmp_path: Path
) -> None:
    """KubeVirt's webhook checks a ready VM's volume requests against its running VMI: so does validate=true,
    reading the VMI by name, and only for such a VM."""
    spec = {
        "domain": {
            "resources": {"requests": {"memory": "1Gi"}},
            "devices": {
                "disks": [{"name": "root", "disk": {}}],
                "interfaces": [{"name": "default", "masquerade": {}}],
            },
        },
        "networks": [{"name": "default", "pod": {}}],
        "volumes": [{"name": "root", "containerDisk": {"image": "quay.io/containerdisks/fedora:42"}}],
    }
    fake.create(
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstance",
            "metadata": {"name": "hot", "namespace": "default"},
            "spec": {
                **spec,
                "volumes": [*spec["volumes"], {"name": "hp", "persistentVolumeClaim": {"claimName": "x"}}],
            },
        }
    )
    request = {
        "addVolumeOptions": {
            "name": "hp",
            "disk": {"name": "hp", "disk": {"bus": "scsi"}},
            "volumeSource": {"persistentVolumeClaim": {"claimName": "hp"}},
        }
    }
    vm: dict[str, Any] = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "hot", "namespace": "default"},
        "spec": {"runStrategy": "Always", "template": {"spec": spec}},
        "status": {"ready": True, "volumeRequests": [request]},
    }
    source = ClusterSource(kubeconfig=kubeconfig(fake, tmp_path / "kc"), **FAST)  # type: ignore[arg-type]
    async with running_server(source, tmp_path) as srv:
        await synced(source, fake)
        fake.reset_log()
        refused = await srv.put(put_path() + "?validate=true", json_body=vm)
        assert refused.status == 422, refused.body
        assert refused.json()["details"]["causes"][0]["message"] == (
            "AddVolume request for [hp] conflicts with an existing volume of the same name on currently running vmi"
        )
        assert [(r.verb, r.resource) for r in fake.log] == [("get", "virtualmachineinstances")]
        fake.reset_log()
        vm["status"]["ready"] = False
        admitted = await srv.put(put_path() + "?validate=true", json_body=vm)
        assert admitted.status == 200, admitted.body
        assert [(r.verb, r.resource) for r in fake.log] == []
