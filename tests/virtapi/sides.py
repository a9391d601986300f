"""Both servers behind one kube-apiserver, asked the same thing: ours under expand.kubevirt-expand.io (the
own-group overlay), KubeVirt's virt-api under subresources.kubevirt.io, each through the aggregator as the
cluster admin. Cases are stored in the cluster first, each in namespaces of its own.
"""

from __future__ import annotations

import copy
import http.client
import json
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from devcluster.controlplane import ControlPlane

OURS = "/apis/expand.kubevirt-expand.io/v1"
VIRT_API = "/apis/subresources.kubevirt.io/v1"

# kind -> (API path prefix, plural, namespaced): the kinds the golden cases and the examples store.
KINDS: Mapping[str, tuple[str, str, bool]] = {
    "VirtualMachine": ("/apis/kubevirt.io/v1", "virtualmachines", True),
    "VirtualMachineInstancePreset": ("/apis/kubevirt.io/v1", "virtualmachineinstancepresets", True),
    "VirtualMachineInstancetype": (
        "/apis/instancetype.kubevirt.io/v1beta1",
        "virtualmachineinstancetypes",
        True,
    ),
    "VirtualMachinePreference": ("/apis/instancetype.kubevirt.io/v1beta1", "virtualmachinepreferences", True),
    "VirtualMachineClusterInstancetype": (
        "/apis/instancetype.kubevirt.io/v1beta1",
        "virtualmachineclusterinstancetypes",
        False,
    ),
    "VirtualMachineClusterPreference": (
        "/apis/instancetype.kubevirt.io/v1beta1",
        "virtualmachineclusterpreferences",
        False,
    ),
    "ControllerRevision": ("/apis/apps/v1", "controllerrevisions", True),
}
# Golden cases compared, by outcome: "equal", or the known differences' reasons (printed at the end).
TALLY: Counter[str] = Counter()
SERVER_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields")
NAME_LABEL = "instancetype.kubevirt.io/object-name"


@dataclass(frozen=True)
class Answer:
    """What a caller sees of one answer: the status, the media type, the body parsed (or its text)."""

    status: int
    content_type: str
    body: Any

    def shown(self) -> str:
        return f"{self.status} {self.content_type} {json.dumps(self.body, sort_keys=True)[:1500]}"


class Unstorable(Exception):
    """kube-apiserver refuses the object (422): an input no cluster can hold."""


class Kube:
    """Keep-alive HTTPS to kube-apiserver as the cluster admin (kubectl costs ~0.2 s a call; thousands of
    objects are stored here)."""

    def __init__(self, cluster: ControlPlane) -> None:
        self.cluster = cluster
        self._conn: http.client.HTTPSConnection | None = None

    def _connection(self) -> http.client.HTTPSConnection:
        if self._conn is None:
            self._conn = http.client.HTTPSConnection(
                "127.0.0.1", self.cluster.port, context=self.cluster.admin_ssl(), timeout=60
            )
        return self._conn

    def call(self, method: str, path: str, body: bytes | None = None, content_type: str = "") -> Answer:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self._conn = None
                if attempt == 2:
                    raise
        media = (resp.getheader("Content-Type") or "").split(";")[0].strip()
        try:
            parsed: Any = json.loads(data)
        except ValueError:
            parsed = data.decode(errors="replace")
        return Answer(resp.status, media, parsed)

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """POST ``obj``; the object as stored (with the server's fields: uid, managedFields, ...)."""
        prefix, plural, namespaced = KINDS[str(obj["kind"])]
        ns = obj["metadata"].get("namespace")
        path = f"{prefix}/namespaces/{ns}/{plural}" if namespaced else f"{prefix}/{plural}"
        answer = self.call("POST", path, json.dumps(obj).encode(), "application/json")
        if answer.status == 422:
            raise Unstorable(f"{obj['kind']} {obj['metadata'].get('name')}: {answer.body.get('message')}")
        if answer.status != 201:
            raise AssertionError(f"creating {obj['kind']} {obj['metadata'].get('name')}: {answer.shown()}")
        created: dict[str, Any] = answer.body
        return created

    def namespace(self, name: str) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        answer = self.call("POST", "/api/v1/namespaces", json.dumps(body).encode(), "application/json")
        if answer.status not in (201, 409):
            raise AssertionError(f"creating namespace {name}: {answer.shown()}")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class Sides:
    """Ours and virt-api through the aggregator, the same request to each."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def get(self, namespace: str, name: str) -> tuple[Answer, Answer]:
        tail = f"/namespaces/{namespace}/virtualmachines/{name}/expand-spec"
        return self.kube.call("GET", OURS + tail), self.kube.call("GET", VIRT_API + tail)

    def put(
        self, namespace: str, body: bytes, content_type: str = "application/json"
    ) -> tuple[Answer, Answer]:
        tail = f"/namespaces/{namespace}/expand-vm-spec"
        return (
            self.kube.call("PUT", OURS + tail, body, content_type),
            self.kube.call("PUT", VIRT_API + tail, body, content_type),
        )


def _refers_to_cluster_kind(matcher: Mapping[str, Any]) -> bool:
    """Whether a matcher names a cluster kind (empty kind = the cluster kind; any spelling KubeVirt takes)."""
    kind = str(matcher.get("kind") or "VirtualMachineCluster").lower()
    return kind.startswith("virtualmachinecluster")


@dataclass
class Placed:
    """A case's VM and objects moved into namespaces of their own, cluster-scoped names suffixed."""

    vm: dict[str, Any]
    objects: list[dict[str, Any]]
    namespaces: list[str]

    @property
    def namespace(self) -> str:
        return str(self.vm["metadata"]["namespace"])

    @property
    def name(self) -> str:
        return str(self.vm["metadata"]["name"])


def place(vm: Mapping[str, Any], objects: Iterable[Mapping[str, Any]], prefix: str) -> Placed:
    """``vm`` and ``objects`` moved so that no other case's share a name: the VM's namespace becomes
    ``<prefix>-<random>``, any other namespace that plus its own name, and cluster-scoped objects (and the
    matchers and revision labels naming them) get the random part as a suffix."""
    suffix = uuid.uuid4().hex[:6]
    home = f"{prefix}-{suffix}"[:63]
    vm_ns = str(vm["metadata"].get("namespace") or "default")
    copies = [copy.deepcopy(dict(o)) for o in objects]
    cluster_names = {o["metadata"]["name"] for o in copies if not KINDS[o["kind"]][2]}
    namespaces = {home}

    def moved(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        for name in SERVER_FIELDS:
            meta.pop(name, None)
        if not KINDS[obj["kind"]][2]:
            meta["name"] = f"{meta['name']}-{suffix}"
            meta.pop("namespace", None)
            return obj
        ns = str(meta.get("namespace") or vm_ns)
        meta["namespace"] = home if ns == vm_ns else f"{home}-{ns}"[:63]
        namespaces.add(meta["namespace"])
        labels = meta.get("labels") or {}
        if labels.get(NAME_LABEL) in cluster_names:
            labels[NAME_LABEL] = f"{labels[NAME_LABEL]}-{suffix}"
        return obj

    placed_objects = [moved(o) for o in copies]
    placed_vm = moved(copy.deepcopy(dict(vm)))
    for key in ("instancetype", "preference"):
        matcher = (placed_vm.get("spec") or {}).get(key)
        if matcher and _refers_to_cluster_kind(matcher) and matcher.get("name") in cluster_names:
            matcher["name"] = f"{matcher['name']}-{suffix}"
    return Placed(placed_vm, placed_objects, sorted(namespaces))


def store(kube: Kube, placed: Placed) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Create the namespaces, objects and VM; the VM and the objects as kube-apiserver stores them (uid,
    managedFields and all)."""
    for ns in placed.namespaces:
        kube.namespace(ns)
    objects = [kube.create(obj) for obj in placed.objects]
    return kube.create(placed.vm), objects
