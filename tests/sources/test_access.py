"""The tenancy model as the renderer's object reads see it (apiserver/sources/access.py, gather.py):
what is reviewed, when (before the read, or after it for revisions), and that a refusal looks the same
whether the object exists or not. The caller's side is a recording stand-in here; the real one (the
cluster's SubjectAccessReviews) is tested in test_auth_http.py and against kube-apiserver in
tests/realk8s/test_tenancy.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver.render.kubernetes.errors import status
from apiserver.render.objects import ObjectRef
from apiserver.sources.access import AccessGate, AccessRefused, Read
from apiserver.sources.folder import FolderSource
from apiserver.sources.gather import Rendered, render_and_record
from apiserver.sources.grant import grant
from apiserver.sources.reads import OutOfScope, Reads
from tests.support.http_helpers import MemorySource

NS = "ns-a"
OTHER = "ns-b"
IT_GROUP = "instancetype.kubevirt.io"
INFER_LABELS = {"instancetype.kubevirt.io/default-instancetype": "top-secret-label-value"}


class Access:
    """A caller whose answers are given by ``allowed`` (resource -> namespaces); records every review."""

    def __init__(self, allowed: Mapping[str, Sequence[str]] | None = None) -> None:
        self.allowed = dict(allowed or {})
        self.asked: list[Read] = []

    async def review(self, read: Read, *, quiet: bool = False) -> Mapping[str, Any] | None:
        self.asked.append(read)
        if read.namespace in self.allowed.get(read.resource, ()):
            return None
        return status(403, "Forbidden", f"{read.resource} {read.name!r} is forbidden for this caller")


def obj(
    kind: str, name: str, ns: str | None = NS, api: str = f"{IT_GROUP}/v1beta1", **rest: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if ns:
        meta["namespace"] = ns
    meta.update(rest.pop("meta", {}))
    return {"apiVersion": api, "kind": kind, "metadata": meta, **rest}


IT = obj("VirtualMachineInstancetype", "it-a", spec={"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}})
CIT = obj(
    "VirtualMachineClusterInstancetype",
    "cit",
    ns=None,
    spec={"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}},
)
PREF = obj("VirtualMachinePreference", "pref-a", spec={"cpu": {"preferredCPUTopology": "cores"}})
# Labelled as KubeVirt's CreateControllerRevision labels it: a status ref to it is read only so.
IT_REVISION = obj(
    "ControllerRevision",
    "vm-it-a-rev",
    api="apps/v1",
    data=IT,
    revision=1,
    meta={"labels": {"instancetype.kubevirt.io/object-name": "it-a"}},
)
STS_REVISION = obj(
    "ControllerRevision",
    "sts-rev-a",
    api="apps/v1",
    revision=1,
    data={
        "spec": {"template": {"spec": {"containers": [{"env": [{"name": "PW", "value": "hunter2-ns-a"}]}]}}}
    },
)
SECRET_PVC = obj("PersistentVolumeClaim", "secret-pvc", ns=OTHER, api="v1", meta={"labels": INFER_LABELS})
PRESET = obj(
    "VirtualMachineInstancePreset",
    "preset",
    api="kubevirt.io/v1",
    spec={
        "selector": {"matchLabels": {"app": "x"}},
        "domain": {"firmware": {"serial": "SECRET-SERIAL-ns-a"}},
    },
)
OBJECTS = [IT, CIT, PREF, IT_REVISION, STS_REVISION, SECRET_PVC, PRESET]


def vm(**spec: Any) -> dict[str, Any]:
    template = spec.pop("template", {"spec": {"domain": {"devices": {}}}})
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": NS},
        "spec": {"template": template, **spec},
    }


def inferring(pvc_namespace: str, pvc_name: str) -> dict[str, Any]:
    machine = vm(
        instancetype={"inferFromVolume": "root"},
        template={
            "spec": {"domain": {"devices": {}}, "volumes": [{"name": "root", "dataVolume": {"name": "dv"}}]}
        },
    )
    source = {"pvc": {"namespace": pvc_namespace, "name": pvc_name}}
    machine["spec"]["dataVolumeTemplates"] = [{"metadata": {"name": "dv"}, "spec": {"source": source}}]
    return machine


@pytest.fixture(params=["folder", "memory"])
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Both kinds of source: one answers from its cache synchronously (peek), one only by awaiting."""
    if request.param == "memory":
        return MemorySource(OBJECTS)
    (tmp_path / "objects.yaml").write_text(yaml.safe_dump_all(OBJECTS))
    return FolderSource(tmp_path, watch=False)


async def render(source: Any, machine: dict[str, Any], access: Access, **kw: Any) -> Rendered:
    if isinstance(source, FolderSource) and not source._read:
        await source.start()
        await source.close()
    return await render_and_record(
        source, machine, gate=AccessGate(access, kw.pop("all_references", False)), **kw
    )


def pvc_read(ns: str, name: str) -> Read:
    return Read("get", "", "persistentvolumeclaims", ns, name)


@pytest.mark.parametrize("pinned_by", ["status", "revisionName"])
async def test_instancetypes_preferences_and_their_revisions_need_no_review(
    source: Any, pinned_by: str
) -> None:
    """The revision named as virt-controller names it (the status ref) or as a user may (``revisionName``)."""
    access = Access()
    matcher = {"kind": "VirtualMachineInstancetype", "name": "it-a"}
    machine = vm(
        instancetype=dict(matcher), preference={"kind": "VirtualMachinePreference", "name": "pref-a"}
    )
    if pinned_by == "status":
        machine["status"] = {"instancetypeRef": {**matcher, "controllerRevisionRef": {"name": "vm-it-a-rev"}}}
    else:
        machine["spec"]["instancetype"]["revisionName"] = "vm-it-a-rev"
    rendered = await render(source, machine, access)
    assert rendered.error is None and access.asked == [] and rendered.reviews == ()
    assert rendered.objects[ObjectRef("ControllerRevision", NS, "vm-it-a-rev")] is not None
    rendered = await render(source, vm(instancetype={"name": "cit"}), access)
    assert rendered.error is None and access.asked == []


@pytest.mark.parametrize("name", ["secret-pvc", "etcd-backup2"])
async def test_a_volume_is_read_only_after_the_callers_review_and_refused_looks_like_missing(
    source: Any, name: str
) -> None:
    access = Access()
    with pytest.raises(AccessRefused) as refused:
        await render(source, inferring(OTHER, name), access)
    assert access.asked == [pvc_read(OTHER, name)]
    assert refused.value.status["code"] == 403
    assert refused.value.status["message"] == f"persistentvolumeclaims {name!r} is forbidden for this caller"
    assert "top-secret" not in str(refused.value.status)


async def test_a_volume_the_caller_may_read_is_used_and_missing_is_kubevirts_not_found(source: Any) -> None:
    access = Access({"persistentvolumeclaims": [OTHER]})
    rendered = await render(source, inferring(OTHER, "secret-pvc"), access)
    assert rendered.error is not None  # the label names an instancetype that does not exist
    assert (
        rendered.error.message
        == 'virtualmachineclusterinstancetypes.instancetype.kubevirt.io "top-secret-label-value" not found'
    )
    assert rendered.reviews == (pvc_read(OTHER, "secret-pvc"),)
    rendered = await render(source, inferring(OTHER, "etcd-backup2"), access)
    assert rendered.error is not None
    assert rendered.error.message == 'persistentvolumeclaims "etcd-backup2" not found'


@pytest.mark.parametrize("name", ["sts-rev-a", "no-such-rev"])
async def test_a_revision_holding_no_instancetype_or_missing_is_reviewed(source: Any, name: str) -> None:
    access = Access()
    machine = vm(instancetype={"name": "it-a", "kind": "VirtualMachineInstancetype", "revisionName": name})
    with pytest.raises(AccessRefused) as refused:
        await render(source, machine, access)
    assert access.asked == [Read("get", "apps", "controllerrevisions", NS, name)]
    assert refused.value.status["message"] == f"controllerrevisions {name!r} is forbidden for this caller"


async def test_a_revision_the_caller_may_read_fails_without_quoting_its_data(source: Any) -> None:
    access = Access({"controllerrevisions": [NS]})
    machine = vm(
        instancetype={"name": "it-a", "kind": "VirtualMachineInstancetype", "revisionName": "sts-rev-a"}
    )
    rendered = await render(source, machine, access)
    assert rendered.error is not None
    assert rendered.error.message == (
        "failed to decode object in ControllerRevision: Object 'Kind' is missing in the revision's data"
    )
    assert "hunter2" not in str(rendered.error.status)


async def test_presets_need_a_list_review(source: Any) -> None:
    machine = vm(instancetype={"name": "cit"})
    machine["spec"]["template"]["metadata"] = {"labels": {"app": "x"}}
    access = Access()
    with pytest.raises(AccessRefused):
        await render(source, machine, access, presets=True)
    assert access.asked == [Read("list", "kubevirt.io", "virtualmachineinstancepresets", NS)]
    access = Access({"virtualmachineinstancepresets": [NS]})
    rendered = await render(source, machine, access, presets=True)
    assert rendered.result is not None
    assert "SECRET-SERIAL-ns-a" in str(rendered.result.vm)
    # Without ?presets=true nothing is listed, nothing reviewed.
    access = Access()
    assert (await render(source, machine, access)).result is not None and access.asked == []


def it_read(name: str) -> Read:
    return Read("get", IT_GROUP, "virtualmachineinstancetypes", NS, name)


@pytest.mark.parametrize(
    "machine",
    [
        vm(instancetype={"kind": "VirtualMachineInstancetype", "name": "it-a"}),
        # A conflict with the forbidden object would tell which fields it sets.
        vm(
            instancetype={"kind": "VirtualMachineInstancetype", "name": "it-a"},
            template={"spec": {"domain": {"devices": {}, "cpu": {"sockets": 2}, "memory": {"guest": "2Gi"}}}},
        ),
    ],
    ids=["ok", "conflict"],
)
async def test_all_references_decides_before_anything_of_the_object_shows(
    source: Any, machine: dict[str, Any]
) -> None:
    access = Access()
    with pytest.raises(AccessRefused):
        await render(source, machine, access, all_references=True)
    assert access.asked == [it_read("it-a")]


async def test_all_references_forbidden_and_missing_are_the_same_403(source: Any) -> None:
    statuses = []
    for name in ("it-a", "nope-it"):
        with pytest.raises(AccessRefused) as refused:
            await render(
                source,
                vm(instancetype={"kind": "VirtualMachineInstancetype", "name": name}),
                Access(),
                all_references=True,
            )
        statuses.append(
            {**refused.value.status, "message": refused.value.status["message"].replace(name, "X")}
        )
    assert statuses[0] == statuses[1]


async def test_all_references_reviews_cluster_kinds_and_every_revision_in_order(source: Any) -> None:
    access = Access(
        {
            "virtualmachineclusterinstancetypes": [""],
            "controllerrevisions": [NS],
            "virtualmachinepreferences": [NS],
        }
    )
    machine = vm(
        instancetype={"name": "cit"},
        preference={"kind": "VirtualMachinePreference", "name": "pref-a", "revisionName": "vm-it-a-rev"},
    )
    rendered = await render(source, machine, access, all_references=True)
    assert rendered.error is not None  # an instancetype revision named as the preference's
    assert rendered.reviews == (
        Read("get", IT_GROUP, "virtualmachineclusterinstancetypes", "", "cit"),
        Read("get", "apps", "controllerrevisions", NS, "vm-it-a-rev"),
    )


# -- the running VM a preview reads (issue 37, finding 6) ---------------------------------------------------

VM_UID = "11111111-2222-3333-4444-555555555555"
START = f"revision-start-vm-{VM_UID}-2"
RUNNING_VM = obj(
    "VirtualMachine",
    "run",
    api="kubevirt.io/v1",
    meta={"uid": VM_UID, "generation": 2},
    spec={"template": {"spec": {"domain": {"devices": {}}}}},
)
OWNER = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachine",
    "name": "run",
    "uid": VM_UID,
    "controller": True,
}


def running_objects(revision_name: str, revision: dict[str, Any] | None) -> list[dict[str, Any]]:
    vmi = obj(
        "VirtualMachineInstance",
        "run",
        api="kubevirt.io/v1",
        status={"virtualMachineRevisionName": revision_name},
    )
    return [RUNNING_VM, vmi, *([revision] if revision is not None else [])]


def start_revision(name: str, *, owner: dict[str, Any] | None = OWNER) -> dict[str, Any]:
    meta = {"ownerReferences": [owner]} if owner is not None else {}
    return obj(
        "ControllerRevision", name, api="apps/v1", revision=2, data={"spec": {"running": True}}, meta=meta
    )


async def running_as(objects: list[dict[str, Any]], access: Access) -> Any:
    scope = grant(
        verb="create",
        group="expand.kubevirt-expand.io",
        resource="virtualmachinechangepreviews",
        namespace=NS,
        name="",
        access=access,
    )
    return await Reads(MemorySource(objects)).within(scope).running_vm("run")


VM_READS = {"virtualmachines": [NS], "virtualmachineinstances": [NS]}
REVISION_READ = Read("get", "apps", "controllerrevisions", NS, START)


async def test_the_start_revision_is_reviewed_before_it_is_read_and_used_when_the_vm_owns_it() -> None:
    access = Access({**VM_READS, "controllerrevisions": [NS]})
    found = await running_as(running_objects(START, start_revision(START)), access)
    assert found.start_revision is not None and found.start_revision["metadata"]["name"] == START
    assert access.asked[-1] == REVISION_READ


@pytest.mark.parametrize("present", [True, False])
async def test_a_caller_who_may_not_get_the_revision_gets_its_403_whether_it_exists_or_not(
    present: bool,
) -> None:
    access = Access(VM_READS)
    with pytest.raises(AccessRefused) as refused:
        await running_as(running_objects(START, start_revision(START) if present else None), access)
    assert refused.value.read == REVISION_READ and refused.value.status["code"] == 403


@pytest.mark.parametrize(
    "name, revision",
    [
        ("sts-rev-a", STS_REVISION),  # a StatefulSet's revision, named by a VMI's status
        (START, start_revision(START, owner=None)),  # the right name, owned by nothing
        (START, start_revision(START, owner={**OWNER, "uid": "another-vm"})),  # another VM's
        (START, start_revision(START, owner={**OWNER, "kind": "StatefulSet"})),
        (f"revision-start-vm-{VM_UID}-x", start_revision(f"revision-start-vm-{VM_UID}-x")),  # no generation
    ],
)
async def test_a_revision_the_vm_does_not_own_is_no_start_revision(
    name: str, revision: dict[str, Any]
) -> None:
    """virt-controller finds start revisions by the VM's uid among their owners (its informer's ``vm``
    index) and by name: any other revision is none, and nothing of it reaches the answer."""
    access = Access({**VM_READS, "controllerrevisions": [NS]})
    found = await running_as(running_objects(name, revision), access)
    assert found.vmi is not None and found.start_revision is None
    assert access.asked[-1] == Read("get", "apps", "controllerrevisions", NS, name)


# -- every other read on a caller's behalf (docs/security.md, "Reads on a caller's behalf") -----------------


def scope_of_request(resource: str, name: str = "", namespace: str = NS, access: Access | None = None) -> Any:
    return grant(
        verb="get",
        group="subresources.kubevirt.io",
        resource=resource,
        namespace=namespace,
        name=name,
        access=access if access is not None else Access(),
    )


class Counting(MemorySource):
    """A memory source that records what it was asked to read."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        super().__init__(objects)
        self.read: list[Any] = []

    async def get(self, ref: Any) -> Any:
        self.read.append(ref)
        return await super().get(ref)


async def test_get_reads_only_the_vm_its_scope_names_and_renders_only_vms_of_its_namespace() -> None:
    """GET expand-spec and launch-spec read the VM their path names, as authorized, nothing else."""
    source = Counting([RUNNING_VM])
    found = await Reads(source).within(scope_of_request("virtualmachines/expand-spec", "run")).get_vm()
    assert found is not None and source.read == [ObjectRef("VirtualMachine", NS, "run")]
    with pytest.raises(OutOfScope):  # a collection's scope names no VM
        await Reads(source).within(scope_of_request("virtualmachines/expand-spec")).get_vm()
    with pytest.raises(OutOfScope):  # a VM of another namespace is not rendered in this one's scope
        await (
            Reads(source)
            .within(scope_of_request("expand-vm-spec"))
            .render({**vm(), "metadata": {"name": "x", "namespace": OTHER}})
        )
    assert source.read == [ObjectRef("VirtualMachine", NS, "run")]


LOOKUP_KINDS = [
    ("PersistentVolumeClaim", "", "persistentvolumeclaims"),  # launch: the claims a VMI's volumes name
    ("DataVolume", "cdi.kubevirt.io", "datavolumes"),
    ("DataSource", "cdi.kubevirt.io", "datasources"),
    ("VolumeSnapshot", "snapshot.storage.k8s.io", "volumesnapshots"),
    ("VirtualMachineInstance", "kubevirt.io", "virtualmachineinstances"),  # ?validate=true: the running VMI
]


@pytest.mark.parametrize("kind, group, resource", LOOKUP_KINDS)
async def test_what_a_preview_or_launch_looks_up_is_reviewed_before_it_is_read(
    kind: str, group: str, resource: str
) -> None:
    """ScopedReads.evaluate (the preview's and launch's lookups) reads through the caller's gate: any kind
    but the instancetype kinds and revisions is reviewed first, and a refusal reads nothing."""
    target = obj(kind, "x", api="v1")
    ref = ObjectRef(kind, NS, "x")

    def work(lookup: Any, kubevirt: Any) -> Any:
        return lookup.get(ref)

    source = Counting([target])
    refused_access = Access()
    with pytest.raises(AccessRefused) as refused:
        await Reads(source).within(scope_of_request("launch-vm-spec", access=refused_access)).evaluate(work)
    assert refused.value.read == Read("get", group, resource, NS, "x") and source.read == []
    allowed = Access({resource: [NS]})
    found = await Reads(source).within(scope_of_request("launch-vm-spec", access=allowed)).evaluate(work)
    assert found is not None and found["metadata"]["name"] == "x" and source.read == [ref]


async def test_launch_reads_the_namespace_and_its_quotas_only_after_their_reviews(tmp_path: Path) -> None:
    namespace = obj("Namespace", NS, ns=None, api="v1", meta={"labels": {"mark": "ns-label"}})
    quota = obj("ResourceQuota", "q", api="v1", spec={"hard": {"requests.memory": "1Gi"}})
    (tmp_path / "objects.yaml").write_text(yaml.safe_dump_all([namespace, quota]))
    source = FolderSource(tmp_path, watch=False)
    await source.start()
    try:
        # the Namespace as kube-apiserver authorizes GET /api/v1/namespaces/NS: namespace NS, name NS
        for allowed, refused_read in (
            ({}, Read("get", "", "namespaces", NS, NS)),
            ({"namespaces": [NS]}, Read("list", "", "resourcequotas", NS)),
        ):
            access = Access(allowed)
            with pytest.raises(AccessRefused) as refused:
                await Reads(source).within(scope_of_request("launch-vm-spec", access=access)).launch_objects()
            assert refused.value.read == refused_read
        access = Access({"namespaces": [NS], "resourcequotas": [NS]})
        found, quotas, known = (
            await Reads(source).within(scope_of_request("launch-vm-spec", access=access)).launch_objects()
        )
        assert known and found is not None and [q["metadata"]["name"] for q in quotas] == ["q"]
        assert access.asked == [Read("get", "", "namespaces", NS, NS), Read("list", "", "resourcequotas", NS)]
    finally:
        await source.close()


async def test_the_fleet_is_read_per_namespace_the_caller_may_list_vms_in(tmp_path: Path) -> None:
    """ScopedReads.fleet (the catalog change preview's): each namespace holding a VM is reviewed (``list
    virtualmachines``); the VMs and namespaced instancetypes of the others are not handed out, only a
    count of their VMs that name a cluster-wide object the change touches. A namespace asked for by name
    is reviewed first and its refusal is the answer; only the cluster scope reads the fleet."""
    cluster_vm = vm(instancetype={"kind": "VirtualMachineClusterInstancetype", "name": "cit"})
    theirs = {**cluster_vm, "metadata": {"name": "theirs", "namespace": OTHER}}
    their_it = obj("VirtualMachineInstancetype", "it-b", ns=OTHER, spec={"cpu": {"guest": 1}})
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all([cluster_vm, theirs, IT, CIT, their_it]))
    source = FolderSource(tmp_path, watch=False)
    await source.start()
    try:
        access = Access({"virtualmachines": [NS]})
        scope = grant(
            verb="create",
            group="expand.kubevirt-expand.io",
            resource="catalogchangepreviews",
            namespace="",
            name="",
            access=access,
        )
        fleet = await Reads(source).within(scope).fleet()
        assert list(fleet.vms) == [(NS, "vm")] and fleet.readable == frozenset({NS})
        assert sorted(o["metadata"]["name"] for o in fleet.catalog) == ["cit", "it-a"]
        assert fleet.hidden([ObjectRef("VirtualMachineClusterInstancetype", "", "cit")]) == 1
        assert fleet.hidden([ObjectRef("VirtualMachineInstancetype", OTHER, "it-b")]) == 0
        assert access.asked == [
            Read("list", "kubevirt.io", "virtualmachines", ""),
            Read("list", "kubevirt.io", "virtualmachines", NS),
            Read("list", "kubevirt.io", "virtualmachines", OTHER),
        ]
        for asked in ({"namespaces": [OTHER]}, {"named": [OTHER]}):
            with pytest.raises(AccessRefused) as refused:
                await Reads(source).within(scope).fleet(**asked)  # type: ignore[arg-type]
            assert refused.value.read == Read("list", "kubevirt.io", "virtualmachines", OTHER)
        with pytest.raises(OutOfScope):
            await Reads(source).within(scope_of_request("catalogchangepreviews", access=access)).fleet()
        assert await Reads(source).within(scope).quotas(NS) is None  # list resourcequotas refused: unread
    finally:
        await source.close()
