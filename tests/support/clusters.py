"""One interface over the fake API server (tests/fakekube) and a real kube-apiserver, so that a test of the
cluster source runs on both and a difference between them fails it.

:class:`Cluster` is what a test gets from the ``cluster`` fixture (tests/parity/conftest.py): write objects
(``create``, ``replace``, ``delete``), a kubeconfig for the cluster source (the admin's, or a user's that
RBAC allows only some rules), a fresh namespace, and ``unique`` names for cluster-scoped objects (the real
control plane is shared by the whole session). The real one is the session's single control plane
(:func:`shared_control_plane`, shared with tests/realk8s), skipped with the reason where its binaries are
absent.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from tests.realk8s.controlplane import CRDS_FILE, ControlPlane, kubeconfig, unavailable
from tests.support.fakekube import DEFAULT_RESOURCES, FLAVOR_RESOURCES, FakeKube, ResourceType
from tests.support.fakekube import testing as fake_testing
from tests.support.patience import patience

JSON = dict[str, Any]
Rules = Iterable[tuple[str, str, Iterable[str]]]  # (api group, resource, verbs)

# What the real control plane serves of what the cluster source reads: core and apps, and the KubeVirt
# CRDs of ../shared/k8s/kubevirt-crds.yaml; no CDI, no volume snapshots, no legacy flavors. The fake
# serves the same, so a kind that is not installed is missing on both.
REAL_GROUPS = frozenset({"", "apps", "kubevirt.io", "instancetype.kubevirt.io"})
RESOURCES: tuple[ResourceType, ...] = tuple(rt for rt in DEFAULT_RESOURCES if rt.group in REAL_GROUPS)
# A kind nobody else writes, for what kube-apiserver does on a quiet kind (tests/parity/test_fake_fidelity.py).
LIMIT_RANGES = ResourceType("", "v1", "limitranges", "LimitRange", True, ("limits",))
_BY_KIND = {(rt.group_version, rt.kind): rt for rt in (*DEFAULT_RESOURCES, *FLAVOR_RESOURCES, LIMIT_RANGES)}


def resource_of(api_version: str, kind: str) -> ResourceType:
    return _BY_KIND[(api_version, kind)]


class Cluster:
    """What a parity test may do with a cluster, the same on the fake and the real one."""

    name: str  # "fake" or "real"
    namespace: str
    kubeconfig: str

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.suffix = uuid.uuid4().hex[:8]

    def unique(self, name: str) -> str:
        """A name of this test's own for a cluster-scoped object."""
        return f"{name}-{self.suffix}"

    async def create(self, obj: Mapping[str, Any]) -> JSON:
        raise NotImplementedError

    async def replace(self, obj: Mapping[str, Any]) -> JSON:
        """Update an existing object to ``obj`` (no resourceVersion needed)."""
        raise NotImplementedError

    async def replace_status(self, obj: Mapping[str, Any]) -> JSON:
        """PUT ``obj`` to its ``/status`` subresource (a VM's, as virt-controller writes it)."""
        raise NotImplementedError

    async def delete(self, api_version: str, kind: str, name: str, namespace: str = "") -> None:
        raise NotImplementedError

    async def kubeconfig_for(self, user: str, rules: Rules) -> str:
        """A kubeconfig of a user that RBAC allows exactly ``rules`` (in every namespace)."""
        raise NotImplementedError

    async def install(self, rt: ResourceType) -> None:
        """Install a custom resource type (a CRD, Established), as KubeVirt's installation would."""
        raise NotImplementedError

    async def uninstall(self, rt: ResourceType) -> None:
        """Remove a custom resource type and its objects; its watches end."""
        raise NotImplementedError

    async def close(self) -> None:
        pass


class FakeCluster(Cluster):
    name = "fake"

    def __init__(self, workdir: Path, fake: FakeKube) -> None:
        super().__init__(workdir)
        self.fake = fake
        self.namespace = f"t-{self.suffix}"
        self.kubeconfig = fake_testing.kubeconfig(fake, workdir / "fake.kubeconfig")

    async def create(self, obj: Mapping[str, Any]) -> JSON:
        return self.fake.create(obj)

    async def replace(self, obj: Mapping[str, Any]) -> JSON:
        return self.fake.update(obj)

    async def replace_status(self, obj: Mapping[str, Any]) -> JSON:
        return self.fake.update_status(obj)

    async def delete(self, api_version: str, kind: str, name: str, namespace: str = "") -> None:
        self.fake.delete(api_version, kind, name, namespace)

    async def kubeconfig_for(self, user: str, rules: Rules) -> str:
        token = f"token-{user}"
        self.fake.grant(token, user, rules)
        return fake_testing.kubeconfig(self.fake, self.workdir / f"{user}.kubeconfig", token=token)

    async def install(self, rt: ResourceType) -> None:
        self.fake.add_resource(rt)

    async def uninstall(self, rt: ResourceType) -> None:
        self.fake.remove_resource(rt.plural, rt.group)

    async def close(self) -> None:
        await self.fake.stop()


class RealCluster(Cluster):
    """Writes go through kube-apiserver's REST API as the cluster admin (kubectl would cost a process
    per call)."""

    name = "real"

    def __init__(self, workdir: Path, plane: ControlPlane) -> None:
        super().__init__(workdir)
        self.plane = plane
        self.namespace = f"t-{self.suffix}"
        self.kubeconfig = str(plane.admin_kubeconfig)
        self._http: aiohttp.ClientSession | None = None
        self._cleanup: list[tuple[str, str]] = []  # cluster-scoped objects to delete at the end

    @property
    def http(self) -> aiohttp.ClientSession:
        if self._http is None:
            ctx = self.plane.ssl_for()
            self._http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx))
        return self._http

    async def start(self) -> None:
        await self.request("POST", "/api/v1/namespaces", {"metadata": {"name": self.namespace}})

    async def request(self, method: str, path: str, body: Any = None, *, ok: Iterable[int] = ()) -> JSON:
        """One call as the admin; an unexpected status fails the test with kube-apiserver's message."""
        async with self.http.request(method, self.plane.url + path, json=body) as resp:
            data = await resp.read()
            if resp.status >= 300 and resp.status not in set(ok):
                raise AssertionError(f"{method} {path}: {resp.status} {data[:500]!r}")
            return json.loads(data) if data and resp.content_type == "application/json" else {}

    @staticmethod
    def path(rt: ResourceType, namespace: str = "", name: str = "") -> str:
        parts = [f"/apis/{rt.group}/{rt.version}" if rt.group else "/api/v1"]
        if rt.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(rt.plural)
        if name:
            parts.append(name)
        return "/".join(parts)

    def _where(self, obj: Mapping[str, Any]) -> tuple[ResourceType, str, str]:
        rt = resource_of(obj["apiVersion"], obj["kind"])
        meta = obj.get("metadata") or {}
        return rt, str(meta.get("namespace") or "") if rt.namespaced else "", str(meta["name"])

    async def create(self, obj: Mapping[str, Any]) -> JSON:
        rt, namespace, name = self._where(obj)
        if rt.namespaced and not namespace:
            raise ValueError(f"{rt.kind} {name} needs metadata.namespace")
        if not rt.namespaced:
            self._cleanup.append((self.path(rt), name))
        return await self.request("POST", self.path(rt, namespace), obj)

    async def replace(self, obj: Mapping[str, Any]) -> JSON:
        rt, namespace, name = self._where(obj)
        current = await self.request("GET", self.path(rt, namespace, name))
        body = json.loads(json.dumps(obj))
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        return await self.request("PUT", self.path(rt, namespace, name), body)

    async def replace_status(self, obj: Mapping[str, Any]) -> JSON:
        rt, namespace, name = self._where(obj)
        current = await self.request("GET", self.path(rt, namespace, name))
        body = json.loads(json.dumps(obj))
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        return await self.request("PUT", self.path(rt, namespace, name) + "/status", body)

    async def delete(self, api_version: str, kind: str, name: str, namespace: str = "") -> None:
        rt = resource_of(api_version, kind)
        await self.request("DELETE", self.path(rt, namespace if rt.namespaced else "", name))

    async def kubeconfig_for(self, user: str, rules: Rules) -> str:
        role = f"{user}-{self.suffix}"
        await self.request(
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            {
                "metadata": {"name": role},
                "rules": [{"apiGroups": [g], "resources": [r], "verbs": list(v)} for g, r, v in rules],
            },
        )
        await self.request(
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            {
                "metadata": {"name": role},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
            },
        )
        self._cleanup += [
            ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", role),
            ("/apis/rbac.authorization.k8s.io/v1/clusterroles", role),
        ]
        creds = self.plane.pki.client(user)
        path = kubeconfig(
            self.workdir / f"{user}.kubeconfig",
            self.plane.url,
            self.plane.pki.ca_file,
            **{"client-certificate": str(creds.cert_file), "client-key": str(creds.key_file)},
        )
        return str(path)

    async def install(self, rt: ResourceType) -> None:
        name = f"{rt.plural}.{rt.group}"
        crd = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {
                "group": rt.group,
                "scope": "Namespaced" if rt.namespaced else "Cluster",
                "names": {"kind": rt.kind, "plural": rt.plural, "singular": rt.singular},
                "versions": [
                    {
                        "name": rt.version,
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                ],
            },
        }
        self._cleanup.append((_CRDS, name))
        await self.request("POST", _CRDS, crd)
        deadline = time.monotonic() + patience(30)
        while True:
            got = await self.request("GET", f"{_CRDS}/{name}")
            # A CRD just created has "status": {"conditions": null} until the controller first looks at it.
            status = got.get("status") or {}
            conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
            if conditions.get("Established") == "True":
                return
            assert time.monotonic() < deadline, f"CRD {name} not Established: {conditions}"
            await asyncio.sleep(0.1)

    async def uninstall(self, rt: ResourceType) -> None:
        name = f"{rt.plural}.{rt.group}"
        await self.request("DELETE", f"{_CRDS}/{name}")
        deadline = time.monotonic() + patience(30)
        while True:
            async with self.http.get(f"{self.plane.url}{_CRDS}/{name}") as resp:
                if resp.status == 404:
                    return
            assert time.monotonic() < deadline, f"CRD {name} still there"
            await asyncio.sleep(0.1)

    async def close(self) -> None:
        """Delete the cluster-scoped objects this test made (its namespace stays: no controller-manager
        would ever finish deleting it)."""
        try:
            for collection, name in reversed(self._cleanup):
                await self.request("DELETE", f"{collection}/{name}", ok=(404,))
        finally:
            if self._http is not None:
                await self._http.close()


_CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def kubevirt_vm_crd() -> JSON:
    """../shared's VirtualMachine CRD with the status subresource KubeVirt's own has (virt-operator's
    ``NewVirtualMachineCrd``; ../shared/oracle/kubevirt/crds.yaml likewise): virt-controller writes a VM's
    status, the revisions it captured included, only through ``/status``, and a write of the VM itself
    keeps the status it had. ../shared/k8s/kubevirt-crds.yaml declares none."""
    docs = yaml.safe_load_all(CRDS_FILE.read_text(encoding="utf-8"))
    crd: JSON = next(d for d in docs if d and d["metadata"]["name"] == "virtualmachines.kubevirt.io")
    for version in crd["spec"]["versions"]:
        version["subresources"] = {"status": {}}
    return crd


def apply_as_kubevirt(plane: ControlPlane, *objects: Mapping[str, Any]) -> None:
    """``kubectl apply`` the objects as a user writes them, then each VM's status through ``/status`` as
    virt-controller writes it (``status.instancetypeRef.controllerRevisionRef`` and the like): a VM's
    status in an apply is ignored where the CRD has the status subresource, as KubeVirt's has."""
    plain = [
        {k: v for k, v in o.items() if not (k == "status" and o.get("kind") == "VirtualMachine")}
        for o in objects
    ]
    plane.apply(*plain)
    for o in objects:
        if o.get("kind") == "VirtualMachine" and "status" in o:
            meta = o["metadata"]
            plane.kubectl(
                "patch",
                "virtualmachines.kubevirt.io",
                meta["name"],
                "-n",
                meta["namespace"],
                "--subresource=status",
                "--type=merge",
                "-p",
                json.dumps({"status": o["status"]}),
            )


_plane: ControlPlane | None = None
_plane_error: str | None = None
_plane_users = 0


@contextmanager
def shared_control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """The session's one real control plane (etcd + kube-apiserver, KubeVirt CRDs established), started
    by its first user and stopped after its last; skips the test with the reason where it cannot run."""
    global _plane, _plane_error, _plane_users
    reason = unavailable()
    if reason:
        pytest.skip(f"real control plane unavailable: {reason}")
    if _plane_error is not None:
        pytest.fail(f"the real control plane did not start: {_plane_error}")
    if _plane is None:
        plane = ControlPlane(tmp_path_factory.mktemp("realk8s"))
        try:
            plane.start()
            plane.kubectl("apply", "-f", str(CRDS_FILE))
            plane.kubectl("apply", "-f", "-", stdin=json.dumps(kubevirt_vm_crd()))
            plane.kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        except Exception as err:
            plane.close()
            _plane_error = str(err)
            raise
        _plane = plane
    _plane_users += 1
    try:
        yield _plane
    finally:
        _plane_users -= 1
        if _plane_users == 0 and _plane is not None:
            _plane.close()
            _plane = None
