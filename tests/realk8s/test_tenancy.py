"""Tenant isolation behind the real aggregator: nothing read on a caller's behalf that RBAC would not
show them (the model: apiserver/sources/access.py), with the Deployment's flags and with
``--authorize-references``.

Callers, through kube-apiserver (client certificates; the aggregator forwards them as X-Remote-User):
``reader`` may expand in namespace A and get every kind a VM may reference there (and the cluster
kinds); ``alice`` may only expand in A; ``bob`` may do nothing. Every object carries marks (annotations,
label values, a password, a serial) that show whether anything of it reached an answer.

The matrix: every reference kind (namespaced and cluster instancetype and preference, a revision by
``revisionName``, a revision that holds no instancetype, a PVC, a DataVolume and a DataSource that
``inferFromVolume`` follows, presets) x every outcome (ok, conflict, not found) x both callers, on both
servers: the reader gets KubeVirt's answer; a caller who may not read the object gets kube-apiserver's
403 for that read, the same whether the object exists or not, and no mark of it in the status, the body,
any header or any line the server logged meanwhile. Then the review's four findings, reproduced as
reported, each with the secure answer.

CDI's DataVolume and DataSource CRDs are not in ../shared/k8s/kubevirt-crds.yaml: this module installs
them (open schemas, as CDI's would store these objects) and removes them at the end.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from apiserver.http.endpoints.expandedvms import REDACTED_MESSAGE
from tests.realk8s.controlplane import ControlPlane, Credentials, Response, poll
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_auth import EXPAND_RULES, binding
from tests.realk8s.test_auth import user as rbac_user

GROUP = "subresources.kubevirt.io"
IT_API = "instancetype.kubevirt.io/v1beta1"
IT_GROUP = "instancetype.kubevirt.io"
DEFAULT_IT = "instancetype.kubevirt.io/default-instancetype"
DEFAULT_IT_KIND = "instancetype.kubevirt.io/default-instancetype-kind"
RBAC = "rbac.authorization.k8s.io"
CDI_KINDS = (("DataVolume", "datavolumes"), ("DataSource", "datasources"))


def crd(group: str, kind: str, plural: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [
                {
                    "name": "v1beta1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }


@dataclass
class Tenancy:
    """Namespace A (``ns``) and another tenant's (``other``), the callers, and every mark planted."""

    ns: str
    other: str
    suffix: str
    reader: str
    alice: str
    bob: str
    marks: dict[str, list[str]] = field(default_factory=dict)  # kind -> strings only its readers may see
    credentials: dict[str, Credentials] = field(default_factory=dict)

    @property
    def cit(self) -> str:
        return f"cit-{self.suffix}"

    @property
    def cpref(self) -> str:
        return f"cpref-{self.suffix}"

    @property
    def inferred(self) -> str:
        return f"cit-inferred-{self.suffix}"


def _objects(t: Tenancy) -> list[dict[str, Any]]:
    def meta(name: str, ns: str | None = None, **extra: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"name": name, **extra}
        if ns:
            out["namespace"] = ns
        return out

    def it(kind: str, name: str, ns: str | None, mark: str) -> dict[str, Any]:
        spec = {"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}, "annotations": {"tenancy.test/mark": mark}}
        return {"apiVersion": IT_API, "kind": kind, "metadata": meta(name, ns), "spec": spec}

    def pref(kind: str, name: str, ns: str | None, mark: str) -> dict[str, Any]:
        spec = {"annotations": {"tenancy.test/mark": mark}, "requirements": {"cpu": {"guest": 7}}}
        return {"apiVersion": IT_API, "kind": kind, "metadata": meta(name, ns), "spec": spec}

    inferring = {
        DEFAULT_IT: t.inferred,
        DEFAULT_IT_KIND: "VirtualMachineClusterInstancetype",
    }
    volume_meta = {"labels": inferring, "annotations": {"tenancy.test/mark": "MARK-VOLUME"}}
    revision_data = it("VirtualMachineInstancetype", "it-a", t.ns, "MARK-REV-A")
    statefulset_data = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "db", "env": [{"name": "POSTGRES_PASSWORD", "value": "hunter2-ns-a"}]}
                    ]
                }
            }
        },
        "$patch": "replace",
    }
    return [
        it("VirtualMachineInstancetype", "it-a", t.ns, "MARK-IT-A"),
        pref("VirtualMachinePreference", "pref-a", t.ns, "MARK-PREF-A"),
        it("VirtualMachineClusterInstancetype", t.cit, None, "MARK-CIT"),
        pref("VirtualMachineClusterPreference", t.cpref, None, "MARK-CPREF"),
        it("VirtualMachineClusterInstancetype", t.inferred, None, "MARK-INFERRED"),
        {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": meta("rev-it-a", t.ns),
            "data": revision_data,
            "revision": 1,
        },
        {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": meta("sts-rev-a", t.ns),
            "data": statefulset_data,
            "revision": 1,
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta("disk-a", t.ns, **volume_meta),
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
        {
            "apiVersion": "cdi.kubevirt.io/v1beta1",
            "kind": "DataVolume",
            "metadata": meta("dv-a", t.ns, **volume_meta),
            "spec": {"source": {"blank": {}}},
        },
        {
            "apiVersion": "cdi.kubevirt.io/v1beta1",
            "kind": "DataSource",
            "metadata": meta("ds-a", t.ns, **volume_meta),
            "spec": {"source": {}},
        },
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachineInstancePreset",
            "metadata": meta("preset-a", t.ns),
            "spec": {
                "selector": {"matchLabels": {"tenancy.test/app": t.suffix}},
                "domain": {"firmware": {"serial": f"SECRET-SERIAL-{t.suffix}"}},
            },
        },
        # Finding 1: another tenant's PVC whose label is a secret, and a PVC in kube-system.
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta("secret-pvc", t.other, labels={DEFAULT_IT: "top-secret-label-value"}),
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta(
                f"etcd-backup-{t.suffix}", "kube-system", labels={DEFAULT_IT: "etcd-label-value"}
            ),
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    ]


def _rbac(t: Tenancy) -> list[dict[str, Any]]:
    reads = [
        {
            "apiGroups": [IT_GROUP],
            "resources": ["virtualmachineinstancetypes", "virtualmachinepreferences"],
            "verbs": ["get"],
        },
        {"apiGroups": ["apps"], "resources": ["controllerrevisions"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["get"]},
        {"apiGroups": ["cdi.kubevirt.io"], "resources": ["datavolumes", "datasources"], "verbs": ["get"]},
        {
            "apiGroups": ["kubevirt.io"],
            "resources": ["virtualmachineinstancepresets"],
            "verbs": ["get", "list"],
        },
    ]
    cluster_reads = [
        {
            "apiGroups": [IT_GROUP],
            "resources": ["virtualmachineclusterinstancetypes", "virtualmachineclusterpreferences"],
            "verbs": ["get"],
        }
    ]

    def role(kind: str, name: str, rules: list[dict[str, Any]], ns: str | None = None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": name}
        if ns:
            metadata["namespace"] = ns
        return {"apiVersion": f"{RBAC}/v1", "kind": kind, "metadata": metadata, "rules": rules}

    def binding(
        kind: str, name: str, role_kind: str, users: list[str], ns: str | None = None
    ) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": name}
        if ns:
            metadata["namespace"] = ns
        return {
            "apiVersion": f"{RBAC}/v1",
            "kind": kind,
            "metadata": metadata,
            "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": name},
            "subjects": [{"apiGroup": RBAC, "kind": "User", "name": u} for u in users],
        }

    cluster_role = f"tenancy-reader-{t.suffix}"
    return [
        role("Role", "expander", EXPAND_RULES, t.ns),
        binding("RoleBinding", "expander", "Role", [t.reader, t.alice], t.ns),
        role("Role", "reader", reads, t.ns),
        binding("RoleBinding", "reader", "Role", [t.reader], t.ns),
        role("ClusterRole", cluster_role, cluster_reads),
        binding("ClusterRoleBinding", cluster_role, "ClusterRole", [t.reader]),
    ]


@pytest.fixture(scope="module")
def tenancy(control_plane: ControlPlane) -> Iterator[Tenancy]:
    crds = [crd("cdi.kubevirt.io", kind, plural) for kind, plural in CDI_KINDS]
    control_plane.apply(*crds)
    control_plane.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        *(f"crd/{c['metadata']['name']}" for c in crds),
    )
    suffix = uuid.uuid4().hex[:8]
    t = Tenancy(
        ns=control_plane.new_namespace("ten-a"),
        other=control_plane.new_namespace("ten-b"),
        suffix=suffix,
        reader=f"reader-{suffix}",
        alice=f"alice-{suffix}",
        bob=f"bob-{suffix}",
    )
    for user in (t.reader, t.alice, t.bob):
        t.credentials[user] = control_plane.pki.client(user)
    t.marks = {
        "instancetype": ["MARK-IT-A"],
        "preference": ["MARK-PREF-A", "requires 7"],
        "cluster-instancetype": ["MARK-CIT"],
        "cluster-preference": ["MARK-CPREF", "requires 7"],
        "revisionName": ["MARK-REV-A"],
        "other-revision": ["hunter2", "POSTGRES", "Object 'Kind'"],
        "pvc": ["MARK-", t.inferred],
        "datavolume": ["MARK-", t.inferred],
        "datasource": ["MARK-", t.inferred],
        "preset": ["SECRET-SERIAL", "preset-a"],
    }
    objects = _objects(t)
    control_plane.apply(*objects, *_rbac(t))
    for user, resource, where in (
        (t.reader, "persistentvolumeclaims", ("-n", t.ns)),
        (t.reader, "virtualmachineclusterinstancetypes.instancetype.kubevirt.io", ()),
        (t.alice, f"expand-vm-spec.{GROUP}", ("-n", t.ns)),
    ):
        verb = "update" if "expand" in resource else "get"
        poll(
            f"RBAC for {user} in effect",
            lambda u=user, r=resource, w=where, v=verb: control_plane.kubectl(  # type: ignore[misc]
                "auth", "can-i", v, r, *w, f"--as={u}", check=False
            ).stdout.strip(),
            lambda answer: answer == "yes",
        )
    try:
        yield t
    finally:
        cluster_role = f"tenancy-reader-{suffix}"
        control_plane.kubectl(
            "delete", "clusterrolebinding,clusterrole", cluster_role, "--ignore-not-found", check=False
        )
        for kind in ("VirtualMachineClusterInstancetype", "VirtualMachineClusterPreference"):
            names = [o["metadata"]["name"] for o in objects if o["kind"] == kind]
            control_plane.kubectl(
                "delete", f"{kind.lower()}s.{IT_GROUP}", *names, "--ignore-not-found", check=False
            )
        # It stays Terminating (pvc-protection, and no controller-manager), like the test namespaces.
        control_plane.kubectl(
            "delete",
            "pvc",
            "-n",
            "kube-system",
            f"etcd-backup-{suffix}",
            "--ignore-not-found",
            "--wait=false",
        )
        control_plane.kubectl(
            "delete", "crd", *(c["metadata"]["name"] for c in crds), "--wait=true", check=False
        )


@pytest.fixture(scope="module", params=["default", "authorize-references"])
def server(
    request: pytest.FixtureRequest,
    deployed: DeployedServer,
    control_plane: ControlPlane,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[DeployedServer]:
    """The server behind the aggregator: the session's (the Deployment's flags), or one with
    ``--authorize-references`` registered in its place for this module, and the session's put back."""
    if request.param == "default":
        yield deployed
        return
    strict = DeployedServer(
        control_plane, tmp_path_factory.mktemp("authorize-references"), extra_args=["--authorize-references"]
    )
    strict.install()
    strict.start()
    try:
        strict.register()
        yield strict
    finally:
        strict.stop()
        deployed.register()


def strict(server: DeployedServer) -> bool:
    return "--authorize-references" in server.extra_args


# -- the requests -------------------------------------------------------------------------------------


def machine(t: Tenancy, **spec: Any) -> dict[str, Any]:
    domain: dict[str, Any] = {"devices": {}}
    template: dict[str, Any] = {"metadata": {}, "spec": {"domain": domain}}
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": t.ns},
        "spec": {"template": template, **spec},
    }


def conflicting(vm: dict[str, Any]) -> dict[str, Any]:
    """The VM sets what an instancetype sets (cpu, memory): a conflict names those fields."""
    vm["spec"]["template"]["spec"]["domain"].update({"cpu": {"sockets": 2}, "memory": {"guest": "2Gi"}})
    return vm


def inferring(
    vm: dict[str, Any], volume: dict[str, Any], templates: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    vm["spec"]["instancetype"] = {"inferFromVolume": "root"}
    vm["spec"]["template"]["spec"]["volumes"] = [{"name": "root", **volume}]
    if templates:
        vm["spec"]["dataVolumeTemplates"] = templates
    return vm


@dataclass
class Case:
    """One request: the VM, the query, and the read a caller without rights is refused."""

    vm: dict[str, Any]
    query: str = ""
    # (verb, group, resource, namespace, name) of the read refused, for a caller who may not make it.
    refused: tuple[str, str, str, str, str] = ("", "", "", "", "")
    # Substring of the answer a reader gets (None: a 200).
    error: str | None = None


def case(t: Tenancy, kind: str, outcome: str) -> Case:
    ns = t.ns
    found = outcome != "notfound"
    if kind == "instancetype":
        name = "it-a" if found else "nope-it"
        vm = machine(t, instancetype={"kind": "VirtualMachineInstancetype", "name": name})
        return _shaped(vm, outcome, ("get", IT_GROUP, "virtualmachineinstancetypes", ns, name), name)
    if kind == "cluster-instancetype":
        name = t.cit if found else f"nope-{t.suffix}"
        vm = machine(t, instancetype={"name": name})
        return _shaped(vm, outcome, ("get", IT_GROUP, "virtualmachineclusterinstancetypes", "", name), name)
    if kind in ("preference", "cluster-preference"):
        cluster = kind == "cluster-preference"
        name = (t.cpref if cluster else "pref-a") if found else "nope-pref"
        pkind = "VirtualMachineClusterPreference" if cluster else "VirtualMachinePreference"
        vm = machine(t, preference={"kind": pkind, "name": name})
        resource = "virtualmachineclusterpreferences" if cluster else "virtualmachinepreferences"
        refused = ("get", IT_GROUP, resource, "" if cluster else ns, name)
        if outcome == "conflict":  # a preference's kind of conflict: its requirements, with ?validate
            vm["spec"]["template"]["spec"]["domain"]["cpu"] = {"sockets": 1}
            return Case(vm, "?validate=true", refused, "failure checking preference requirements")
        return Case(vm, "", refused, None if found else f'{resource}.{IT_GROUP} "{name}" not found')
    if kind == "revisionName":
        name = "rev-it-a" if found else "nope-rev"
        vm = machine(
            t, instancetype={"kind": "VirtualMachineInstancetype", "name": "it-a", "revisionName": name}
        )
        return _shaped(
            vm, outcome, ("get", "apps", "controllerrevisions", ns, name), name, "controllerrevisions.apps"
        )
    if kind == "other-revision":  # outcomes: a StatefulSet's revision, or none at all
        name = "sts-rev-a" if found else "nope-rev"
        vm = machine(
            t, instancetype={"kind": "VirtualMachineInstancetype", "name": "it-a", "revisionName": name}
        )
        error = (
            "failed to decode object in ControllerRevision: "
            if found
            else f'controllerrevisions.apps "{name}" not found'
        )
        return Case(vm, "", ("get", "apps", "controllerrevisions", ns, name), error)
    if kind == "pvc":
        name = "disk-a" if found else "nope-pvc"
        vm = inferring(machine(t), {"persistentVolumeClaim": {"claimName": name}})
        return _inferred(
            vm,
            outcome,
            ("get", "", "persistentvolumeclaims", ns, name),
            f'persistentvolumeclaims "{name}" not found',
        )
    if kind == "datavolume":
        name = "dv-a" if found else "nope-dv"
        vm = inferring(machine(t), {"dataVolume": {"name": name}})
        # A DataVolume that is gone leads to the PVC of the same name (also missing here).
        return _inferred(
            vm,
            outcome,
            ("get", "cdi.kubevirt.io", "datavolumes", ns, name),
            f'persistentvolumeclaims "{name}" not found',
        )
    if kind == "datasource":
        name = "ds-a" if found else "nope-ds"
        template = {"metadata": {"name": "dv-t"}, "spec": {"sourceRef": {"kind": "DataSource", "name": name}}}
        vm = inferring(machine(t), {"dataVolume": {"name": "dv-t"}}, [template])
        return _inferred(
            vm,
            outcome,
            ("get", "cdi.kubevirt.io", "datasources", ns, name),
            f'datasources.cdi.kubevirt.io "{name}" not found',
        )
    assert kind == "preset"
    vm = machine(t)
    # ok: the preset applies; conflict: the VM sets its own serial (a preset conflict, a Warning);
    # notfound: no preset selects the VM.
    vm["spec"]["template"]["metadata"]["labels"] = {"tenancy.test/app": t.suffix if found else "none"}
    if outcome == "conflict":
        vm["spec"]["template"]["spec"]["domain"]["firmware"] = {"serial": "mine"}
    return Case(vm, "?presets=true", ("list", "kubevirt.io", "virtualmachineinstancepresets", ns, ""))


def _shaped(
    vm: dict[str, Any], outcome: str, refused: tuple[str, str, str, str, str], name: str, resource: str = ""
) -> Case:
    if outcome == "conflict":
        return Case(conflicting(vm), "", refused, "conflicts with selected instance type")
    if outcome == "notfound":
        qualified = resource or f"{refused[2]}.{refused[1]}"
        return Case(vm, "", refused, f'{qualified} "{name}" not found')
    return Case(vm, "", refused)


def _inferred(
    vm: dict[str, Any], outcome: str, refused: tuple[str, str, str, str, str], missing: str
) -> Case:
    if outcome == "conflict":
        return Case(conflicting(vm), "", refused, "conflicts with selected instance type")
    return Case(vm, "", refused, missing if outcome == "notfound" else None)


def put(cluster: ControlPlane, t: Tenancy, user: str, c: Case) -> Response:
    """PUT expand-vm-spec through kube-apiserver's aggregator as ``user``."""
    return cluster.request(
        f"/apis/{GROUP}/v1/namespaces/{t.ns}/expand-vm-spec{c.query}",
        method="PUT",
        body=json.dumps(c.vm).encode(),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        credentials=t.credentials[user],
    )


def forbidden(user: str, verb: str, group: str, resource: str, namespace: str, name: str) -> dict[str, Any]:
    """kube-apiserver's 403 for a read, written out here (not taken from the server's code)."""
    qualified = f"{resource}.{group}" if group else resource
    subject = f'{qualified} "{name}"' if name else qualified
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    details: dict[str, Any] = {"name": name} if name else {}
    if group:
        details["group"] = group
    details["kind"] = resource
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{subject} is forbidden: User "{user}" cannot {verb} resource "{resource}" in API '
        f'group "{group}" {scope}',
        "reason": "Forbidden",
        "details": details,
        "code": 403,
    }


def may_read(t: Tenancy, server: DeployedServer, user: str, kind: str, outcome: str) -> bool:
    """The model: the reader may read everything here; alice sees instancetypes, preferences and the
    revisions holding one as KubeVirt shows them, unless --authorize-references; nothing else (a
    revision that does not exist holds none: for her it is refused like any other revision)."""
    if user == t.reader:
        return True
    if kind == "revisionName" and outcome == "notfound":
        return False
    model = kind in {
        "instancetype",
        "preference",
        "cluster-instancetype",
        "cluster-preference",
        "revisionName",
    }
    return model and not strict(server)


def assert_nothing_shows(marks: list[str], reply: Response, log_lines: list[str]) -> None:
    seen = [reply.body.decode(errors="replace"), *(f"{k}: {v}" for k, v in reply.headers.items()), *log_lines]
    for mark in marks:
        assert not [text for text in seen if mark in text], f"{mark!r} showed: {seen}"


KINDS = [
    "instancetype",
    "preference",
    "cluster-instancetype",
    "cluster-preference",
    "revisionName",
    "other-revision",
    "pvc",
    "datavolume",
    "datasource",
    "preset",
]


@pytest.mark.parametrize("kind", KINDS)
def test_tenant_isolation_matrix(
    server: DeployedServer, control_plane: ControlPlane, tenancy: Tenancy, kind: str
) -> None:
    t = tenancy
    outcomes = ("ok", "notfound") if kind == "other-revision" else ("ok", "conflict", "notfound")
    refusals: list[dict[str, Any]] = []
    for user in (t.reader, t.alice):
        for outcome in outcomes:
            c = case(t, kind, outcome)
            offset = server.log_size()
            reply = put(control_plane, t, user, c)
            where = f"{kind}/{outcome} as {user}"
            if may_read(t, server, user, kind, outcome):
                if c.error is None:
                    assert reply.status == 200, (where, reply.body)
                    assert_applied(t, kind, outcome, reply)
                else:
                    assert reply.status == 422, (where, reply.body)
                    assert c.error in reply.json()["message"], (where, reply.body)
                    assert "hunter2" not in reply.body.decode()
                continue
            verb, group, resource, namespace, name = c.refused
            assert reply.status == 403, (where, reply.body)
            assert reply.json() == forbidden(user, verb, group, resource, namespace, name), where
            assert reply.header("Warning") is None
            # Up to this request's own access line (a refusal's lines are written before it); an earlier
            # 403 PUT of this user's was waited for in the same way, so it is not taken for this one.
            lines = server.wait_access(offset, method="PUT", user=user, code=403)
            assert_nothing_shows(t.marks[kind], reply, lines)
            # Exists or not: the same answer but for the name the caller gave.
            refusal = reply.json()
            refusal["message"] = refusal["message"].replace(f'"{name}"', '"NAME"')
            refusal["details"].pop("name", None)
            refusals.append(refusal)
    if refusals:
        assert all(r == refusals[0] for r in refusals), json.dumps(refusals, indent=1)


def assert_applied(t: Tenancy, kind: str, outcome: str, reply: Response) -> None:
    """A 200 for a reader: the referenced object is what was applied."""
    vm = reply.json()
    annotations = (vm["spec"]["template"].get("metadata") or {}).get("annotations") or {}
    expected = {
        "instancetype": "MARK-IT-A",
        "preference": "MARK-PREF-A",
        "cluster-instancetype": "MARK-CIT",
        "cluster-preference": "MARK-CPREF",
        "revisionName": "MARK-REV-A",
        "pvc": "MARK-INFERRED",
        "datavolume": "MARK-INFERRED",
        "datasource": "MARK-INFERRED",
    }
    if kind == "preset":
        serial = vm["spec"]["template"]["spec"]["domain"].get("firmware", {}).get("serial")
        if outcome == "ok":
            assert serial == f"SECRET-SERIAL-{t.suffix}"
        elif outcome == "conflict":
            assert serial == "mine"
            assert "preset-a" in (reply.header("Warning") or "")
        else:
            assert serial is None
        return
    assert annotations.get("tenancy.test/mark") == expected[kind], vm


# -- the collection's store: GET expand-spec answered from it, and its items ---------------------------

EVMS = "/apis/expand.kubevirt-expand.io/v1/namespaces/{ns}/expandedvirtualmachines"


def stored_vms(t: Tenancy) -> list[dict[str, Any]]:
    """Two stored VMs the store renders with the server's account: one reads only its namespaced
    instancetype, one infers its instancetype from PVC ``disk-a`` (which only the reader may get)."""
    plain = machine(t, instancetype={"kind": "VirtualMachineInstancetype", "name": "it-a"})
    plain["metadata"]["name"] = "stored-it"
    infer = inferring(machine(t), {"persistentVolumeClaim": {"claimName": "disk-a"}})
    infer["metadata"]["name"] = "stored-pvc"
    return [plain, infer]


def get_as(cluster: ControlPlane, t: Tenancy, user: str, path: str) -> Response:
    headers = {"Accept": "application/json"}
    return cluster.request(path, headers=headers, credentials=t.credentials[user])


def test_store_served_get_and_collection_items_per_caller(
    server: DeployedServer, control_plane: ControlPlane, tenancy: Tenancy
) -> None:
    """The store (the Deployment's --vm-cache) renders both VMs, the PVC one included. GET
    expand-spec: the reader gets the store's rendering; alice gets, for the PVC VM, the same 403 for the
    PVC read as her PUT of it (and with --authorize-references, the 403 for the instancetype of the
    other, from the store's path); a list: each item is whole for the reader, and for alice whole only
    where the model shows it to her, else Rendered=Unknown Forbidden with nothing of the PVC."""
    t = tenancy
    collection_role = {"kind": "ClusterRole", "name": "kubevirt-expand:expandedvirtualmachines"}
    control_plane.apply(
        *stored_vms(t),
        binding(t.ns, "evm-readers", collection_role, rbac_user(t.reader), rbac_user(t.alice)),
    )
    items_path = EVMS.format(ns=t.ns)

    def listed(who: str) -> dict[str, dict[str, Any]]:
        reply = get_as(control_plane, t, who, items_path)
        if reply.status != 200:
            return {}
        return {i["metadata"]["name"]: i for i in reply.json()["items"]}

    items = poll(
        "the store's items, visible to the reader",
        lambda: listed(t.reader),
        lambda got: {"stored-it", "stored-pvc"} <= set(got) and "virtualMachine" in got["stored-pvc"],
        timeout=30,
    )
    # Rendered with the server's account: the PVC's label chose the instancetype.
    rendered_pvc = items["stored-pvc"]["virtualMachine"]
    assert rendered_pvc["spec"]["template"]["metadata"]["annotations"]["tenancy.test/mark"] == "MARK-INFERRED"
    for name in ("stored-it", "stored-pvc"):
        reply = get_as(
            control_plane,
            t,
            t.reader,
            f"/apis/{GROUP}/v1/namespaces/{t.ns}/virtualmachines/{name}/expand-spec",
        )
        assert reply.status == 200, reply.body
        assert reply.json() == items[name]["virtualMachine"], name

    offset = server.log_size()
    expand = f"/apis/{GROUP}/v1/namespaces/{t.ns}/virtualmachines/{{}}/expand-spec"
    pvc_refusal = forbidden(t.alice, "get", "", "persistentvolumeclaims", t.ns, "disk-a")
    put_reply = put(control_plane, t, t.alice, Case(stored_vms(t)[1]))
    assert put_reply.status == 403 and put_reply.json() == pvc_refusal
    for _ in range(2):  # the second may come by the dispatcher's shortcut: the same answer
        reply = get_as(control_plane, t, t.alice, expand.format("stored-pvc"))
        assert reply.status == 403 and reply.json() == pvc_refusal, reply.body
        reply = get_as(control_plane, t, t.alice, expand.format("stored-it"))
        if strict(server):
            it_refusal = forbidden(t.alice, "get", IT_GROUP, "virtualmachineinstancetypes", t.ns, "it-a")
            assert reply.status == 403 and reply.json() == it_refusal, reply.body
        else:
            assert reply.status == 200 and reply.json() == items["stored-it"]["virtualMachine"]
    listing = get_as(control_plane, t, t.alice, items_path)
    assert listing.status == 200, listing.body
    mine = {i["metadata"]["name"]: i for i in listing.json()["items"]}
    hidden = mine["stored-pvc"]
    assert "virtualMachine" not in hidden and "cpu" not in hidden["summary"]
    condition = hidden["status"]["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("Unknown", "Forbidden")
    assert condition["message"] == REDACTED_MESSAGE  # never which objects, nor of which kinds
    if strict(server):
        assert "virtualMachine" not in mine["stored-it"]
        assert mine["stored-it"]["status"]["conditions"][0]["message"] == REDACTED_MESSAGE
    else:
        assert mine["stored-it"] == items["stored-it"]
    assert_nothing_shows(
        ["MARK-INFERRED", t.inferred, "MARK-VOLUME"], listing, server.wait_log_written(offset)
    )


def test_bob_is_refused_by_kube_apiserver_before_us(
    server: DeployedServer, control_plane: ControlPlane, tenancy: Tenancy
) -> None:
    offset = server.log_size()
    reply = put(control_plane, tenancy, tenancy.bob, case(tenancy, "pvc", "ok"))
    assert reply.status == 403
    assert f'User "{tenancy.bob}" cannot update resource "expand-vm-spec"' in reply.json()["message"]
    # Nothing of bob's reached the server: everything it logged up to a later request's line says so.
    assert not [line for line in server.wait_log_written(offset) if tenancy.bob in line]


# -- the review's findings 1-4, as reported ---------------------------------------------------------


def kubectl_put(
    cluster: ControlPlane, t: Tenancy, user: str, vm: dict[str, Any], tmp_path: Path, query: str = ""
) -> tuple[int, str]:
    """``kubectl replace --raw`` as ``user`` (impersonated): exit code and what kubectl printed."""
    path = tmp_path / f"vm-{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps(vm))
    result = cluster.kubectl(
        "replace",
        "--raw",
        f"/apis/{GROUP}/v1/namespaces/{t.ns}/expand-vm-spec{query}",
        "-f",
        str(path),
        f"--as={user}",
        check=False,
    )
    return result.returncode, (result.stdout + result.stderr).strip()


def test_finding_1_volumes_of_any_namespace(
    server: DeployedServer, control_plane: ControlPlane, tenancy: Tenancy, tmp_path: Path
) -> None:
    """Was: 422 '... "top-secret-label-value" not found' (another namespace's PVC label), and existing
    and missing kube-system PVCs answered differently. Now: the PVC read is refused as kube-apiserver
    would refuse alice, existing or not; with --authorize-references the same."""
    t = tenancy
    answers = []
    for namespace, name in (
        (t.other, "secret-pvc"),
        ("kube-system", f"etcd-backup-{t.suffix}"),
        ("kube-system", f"etcd-backup2-{t.suffix}"),
    ):
        template = {
            "metadata": {"name": "dv"},
            "spec": {"source": {"pvc": {"namespace": namespace, "name": name}}},
        }
        vm = inferring(machine(t), {"dataVolume": {"name": "dv"}}, [template])
        code, text = kubectl_put(control_plane, t, t.alice, vm, tmp_path)
        assert code == 1
        assert text == (
            f'Error from server (Forbidden): persistentvolumeclaims "{name}" is forbidden: User "{t.alice}" cannot '
            f'get resource "persistentvolumeclaims" in API group "" in the namespace "{namespace}"'
        )
        assert "label-value" not in text
        answers.append(text.replace(name, "NAME"))
    assert answers[1] == answers[2]  # kube-system: exists, or not


def test_finding_2_any_revisions_content(
    server: DeployedServer, control_plane: ControlPlane, tenancy: Tenancy, tmp_path: Path
) -> None:
    """Was: 422 'failed to decode object in ControllerRevision: Object 'Kind' is missing in '{...
    "POSTGRES_PASSWORD","value":"hunter2-ns-a" ...}'' for a caller who may not get revisions. Now: 403;
    a caller who may read it gets KubeVirt's message up to where it would quote the data."""
    t = tenancy
    vm = machine(
        t, instancetype={"kind": "VirtualMachineInstancetype", "name": "it-a", "revisionName": "sts-rev-a"}
    )
    code, text = kubectl_put(control_plane, t, t.alice, vm, tmp_path)
    assert (code, text) == (
        1,
        f'Error from server (Forbidden): controllerrevisions.apps "sts-rev-a" is forbidden: User "{t.alice}" '
        f'cannot get resource "controllerrevisions" in API group "apps" in the namespace "{t.ns}"',
    )
    code, text = kubectl_put(control_plane, t, t.reader, vm, tmp_path)
    assert code == 1 and "hunter2" not in text
    assert text.endswith(
        "failed to decode object in ControllerRevision: Object 'Kind' is missing in the revision's data"
    )


def test_finding_3_authorize_references_guards_every_answer(
    server: DeployedServer, control_plane: ControlPlane, tenancy: Tenancy, tmp_path: Path
) -> None:
    """Was, with --authorize-references and no read on it-a: a 403 for a valid VM, but a 422 conflict
    (naming the fields it-a sets) with cpu.sockets and memory.guest, 422 not found for nope-it against
    403 for it-a, and the preset's serial with ?presets=true. Now every one is the same 403 before
    anything of the object is looked at; without the flag, alice sees instancetypes as with KubeVirt,
    but never presets she may not list."""
    t = tenancy
    valid = machine(t, instancetype={"kind": "VirtualMachineInstancetype", "name": "it-a"})
    answers = {
        "valid": kubectl_put(control_plane, t, t.alice, valid, tmp_path),
        "conflict": kubectl_put(
            control_plane, t, t.alice, conflicting(json.loads(json.dumps(valid))), tmp_path
        ),
        "missing": kubectl_put(
            control_plane,
            t,
            t.alice,
            machine(t, instancetype={"kind": "VirtualMachineInstancetype", "name": "nope-it"}),
            tmp_path,
        ),
    }
    preset_vm = json.loads(json.dumps(valid))
    preset_vm["spec"]["template"]["metadata"]["labels"] = {"tenancy.test/app": t.suffix}
    answers["presets"] = kubectl_put(control_plane, t, t.alice, preset_vm, tmp_path, "?presets=true")
    it_refusal = (
        f'Error from server (Forbidden): virtualmachineinstancetypes.{IT_GROUP} "NAME" is forbidden: User '
        f'"{t.alice}" cannot get resource "virtualmachineinstancetypes" in API group "{IT_GROUP}" in the '
        f'namespace "{t.ns}"'
    )
    if strict(server):
        for what in ("valid", "conflict", "missing", "presets"):
            code, text = answers[what]
            assert code == 1
            assert text.replace('"it-a"', '"NAME"').replace('"nope-it"', '"NAME"') == it_refusal, what
    else:
        assert answers["valid"][0] == 0 and "MARK-IT-A" in answers["valid"][1]
        assert (
            answers["conflict"][0] == 1 and "conflicts with selected instance type" in answers["conflict"][1]
        )
        assert answers["missing"][1].endswith(f'virtualmachineinstancetypes.{IT_GROUP} "nope-it" not found')
        code, text = answers["presets"]
        assert (code, text) == (
            1,
            f"Error from server (Forbidden): virtualmachineinstancepresets.kubevirt.io is forbidden: User "
            f'"{t.alice}" cannot list resource "virtualmachineinstancepresets" in API group "kubevirt.io" in the '
            f'namespace "{t.ns}"',
        )
    assert "SECRET-SERIAL" not in answers["presets"][1]


@pytest.mark.parametrize(
    ("spec", "field", "value"),
    [
        (
            {"instancetype": {"kind": "VirtualMachineInstancetype", "name": "."}},
            "spec.instancetype.name",
            ".",
        ),
        ({"instancetype": {"name": ".."}}, "spec.instancetype.name", ".."),
        (
            {"instancetype": {"name": "it-a", "kind": "VirtualMachineInstancetype", "revisionName": "."}},
            "spec.instancetype.revisionName",
            ".",
        ),
    ],
    ids=["namespaced-dot", "cluster-dotdot", "revision-dot"],
)
def test_finding_4_names_that_are_paths(
    server: DeployedServer,
    control_plane: ControlPlane,
    tenancy: Tenancy,
    tmp_path: Path,
    spec: dict[str, Any],
    field: str,
    value: str,
) -> None:
    """Was: '.' listed instancetypes, '..' fetched a discovery document, 'revisionName: .' a 503 naming
    the server's ServiceAccount and its RBAC denial. Now: a 422 naming the field, nothing read."""
    offset = server.log_size()
    code, text = kubectl_put(control_plane, tenancy, tenancy.alice, machine(tenancy, **spec), tmp_path)
    assert code == 1
    assert text.startswith(
        f'The VirtualMachine "vm" is invalid: {field}: Invalid value: "{value}": a lowercase RFC 1123 subdomain'
    )
    assert "serviceaccount" not in text
    lines = server.wait_log(offset, lambda line: '"PUT' in line and "422" in line)
    assert not [line for line in lines if "serviceaccount" in line]


def test_finding_4_a_vm_named_dot(
    server: DeployedServer, control_plane: ControlPlane, tenancy: Tenancy
) -> None:
    """Was: GET .../virtualmachines/./expand-spec listed the VMs. Now: a 422 naming metadata.name,
    through the aggregator (which passes the escaped dot on) and straight to the server."""
    t = tenancy
    proxy = control_plane.pki.front_proxy_client
    for name in ("%2E", "%2E%2E"):
        path = f"/apis/{GROUP}/v1/namespaces/{t.ns}/virtualmachines/{name}/expand-spec"
        reply = control_plane.request(path)  # the admin, through the aggregator
        assert reply.status == 422, reply.body
        assert reply.json()["details"]["causes"][0]["field"] == "metadata.name"
        code, body = server.direct(
            path.replace(name, "."),
            headers={"X-Remote-User": "admin", "X-Remote-Group": "system:masters"},
            cert=(proxy.cert_file, proxy.key_file),
        )
        assert code == 422, body
