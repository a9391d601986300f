"""The tenancy matrix (issue 24) on the real control plane, against the server as deployed: every operation
the server's OpenAPI documents list x every query parameter it takes (and those every Kubernetes read
may be sent) x five callers, through kube-apiserver's aggregator as users call it (impersonated by the
admin), plus discovery, OpenAPI, /version, /metrics and the probes straight to the server as the
aggregator sends them, and every request again from a peer without credentials that forges the identity
headers. The requests and the judging are tests/support/tenancy_matrix.py; no answer, header, watch event or log
line may carry a mark its caller may not read, and nothing may answer 500.

While the matrix runs, the VMs of both namespaces keep changing, so that every watch sees events of the
other namespace go by. A second test runs a reduced matrix against a server whose scope checks are
neutralized (apiserver.sources.scope's covers and narrowed), to show the matrix finds what they prevent.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.realk8s.controlplane import ControlPlane, poll
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_auth import EXPAND_RULES
from tests.realk8s.test_collection import RESOURCE, ROLE
from tests.support import tenancy_matrix as m

COLLECTION_GROUP, COLLECTION_VERSION = "expand.kubevirt-expand.io", "v1"
RBAC = "rbac.authorization.k8s.io"
THREADS = 12


def _role(ns: str, name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": ns},
        "rules": rules,
    }


def _bind(ns: str, name: str, kind: str, role: str, who: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": RBAC, "kind": kind, "name": role},
        "subjects": [{"apiGroup": RBAC, "kind": "User", "name": who}],
    }


TENANT_RULES = [
    *EXPAND_RULES,
    {"apiGroups": ["instancetype.kubevirt.io"], "resources": ["*"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["get"]},
    {"apiGroups": ["kubevirt.io"], "resources": ["virtualmachineinstancepresets"], "verbs": ["get", "list"]},
    {"apiGroups": ["apps"], "resources": ["controllerrevisions"], "verbs": ["get"]},
    # The catalog change preview reads the VMs of the namespaces where its caller may list them.
    {"apiGroups": ["kubevirt.io"], "resources": ["virtualmachines"], "verbs": ["list"]},
]
# A cluster-scoped resource: granted by a ClusterRoleBinding (a RoleBinding grants nothing of it).
CATALOG_RULES = [
    {"apiGroups": [COLLECTION_GROUP], "resources": ["catalogchangepreviews"], "verbs": ["create"]}
]


@pytest.fixture(scope="module")
def matrix_setup(
    control_plane: ControlPlane, deployed: DeployedServer
) -> Iterator[tuple[m.Tenants, list[m.Caller]]]:
    suffix = uuid.uuid4().hex[:6]
    t = m.make_tenants(control_plane.new_namespace("mx-a"), control_plane.new_namespace("mx-b"), suffix)
    users = {name: f"{name}-{suffix}" for name in ("tenant-a", "tenant-b", "expand-a", "nobody")}
    rbac = [
        _role(t.a, "tenant", TENANT_RULES),
        _role(t.b, "tenant", TENANT_RULES),
        _bind(t.a, "tenant", "Role", "tenant", users["tenant-a"]),
        _bind(t.b, "tenant", "Role", "tenant", users["tenant-b"]),
        _bind(t.a, "collection", "ClusterRole", ROLE, users["tenant-a"]),
        _bind(t.b, "collection", "ClusterRole", ROLE, users["tenant-b"]),
        _role(t.a, "expand", EXPAND_RULES),
        _bind(t.a, "expand", "Role", "expand", users["expand-a"]),
    ]
    catalog_role = f"matrix-catalog-previews-{suffix}"
    rbac += [
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": catalog_role},
            "rules": CATALOG_RULES,
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": catalog_role},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": catalog_role},
            "subjects": [
                {"apiGroup": RBAC, "kind": "User", "name": users[who]}
                for who in ("tenant-a", "tenant-b", "expand-a")
            ],
        },
    ]
    control_plane.apply(*m.objects(t), *rbac)
    for ns in (t.a, t.b):
        poll(
            f"the rendered VMs of {ns}",
            lambda ns=ns: control_plane.kubectl(
                "get", RESOURCE, "-n", ns, "-o", "name", check=False
            ).stdout.split(),  # type: ignore[misc]
            lambda names: len(names) == 2,
            timeout=30,
        )
    for user, ns in ((users["tenant-a"], t.a), (users["tenant-b"], t.b), (users["expand-a"], t.a)):
        poll(
            f"RBAC for {user}",
            lambda u=user, n=ns: control_plane.kubectl(  # type: ignore[misc]
                "auth",
                "can-i",
                "update",
                "expand-vm-spec.subresources.kubevirt.io",
                "-n",
                n,
                f"--as={u}",
                check=False,
            ).stdout.strip(),
            lambda answer: answer == "yes",
        )
    a, b = t.marks[t.a], t.marks[t.b]
    callers = [
        m.Caller(users["tenant-a"], frozenset(a.values())),
        m.Caller(users["tenant-b"], frozenset(b.values())),
        m.Caller(users["expand-a"], frozenset({a["password"], a["label"], a["it"], a["pref"]})),
        m.Caller(users["nobody"], frozenset()),
        m.Caller(None, frozenset(), direct_only=True),
    ]
    try:
        yield t, callers
    finally:
        for kind in ("clusterrolebinding", "clusterrole"):
            control_plane.kubectl("delete", kind, catalog_role, "--ignore-not-found", check=False)


class Sender:
    """Sends matrix requests: through kube-apiserver as the admin impersonating the caller, or straight
    to the server with the front-proxy certificate and identity headers (a caller without credentials:
    no certificate, the headers forged)."""

    def __init__(self, cluster: ControlPlane, server: DeployedServer) -> None:
        self.cluster = cluster
        self.server = server
        self.local = threading.local()
        proxy = cluster.pki.front_proxy_client
        self.proxy_ssl = server.ssl_context((proxy.cert_file, proxy.key_file))
        self.bare_ssl = server.ssl_context()
        self.admin_ssl = cluster.ssl_for()
        self.peers = itertools.count(1)  # each thread's peer without credentials has an address of its own

    def _conn(self, kind: str) -> http.client.HTTPSConnection:
        conns = self.local.__dict__.setdefault("conns", {})
        conn = conns.get(kind)
        if conn is None:
            if kind == "aggregator":
                host, port = self.cluster.url.removeprefix("https://").rsplit(":", 1)
                conn = http.client.HTTPSConnection(host, int(port), context=self.admin_ssl, timeout=30)
            elif kind == "proxy":
                conn = http.client.HTTPSConnection(
                    "127.0.0.1", self.server.port, context=self.proxy_ssl, timeout=30
                )
            else:  # peers of their own (127.0.1.x): their refusals close their connections, not the aggregator's
                peer = f"127.0.1.{self.local.__dict__.setdefault('peer', next(self.peers))}"
                conn = http.client.HTTPSConnection(
                    "127.0.0.1", self.server.port, context=self.bare_ssl, timeout=30, source_address=(peer, 0)
                )
            conns[kind] = conn
        return conn

    def send(self, r: m.Request) -> m.Answer:
        headers = dict(r.headers)
        if r.direct:
            kind = "proxy" if r.caller.name is not None else "bare"
            who = r.caller.name or "kubernetes-admin"  # forged by a peer without credentials
            headers["X-Remote-User"] = who
            headers["X-Remote-Group"] = "system:authenticated" if r.caller.name else "system:masters"
        else:
            kind = "aggregator"
            assert r.caller.name is not None
            headers["Impersonate-User"] = r.caller.name
        for attempt in range(2):
            conn = self._conn(kind)
            try:
                conn.request(r.method, r.path, body=r.body, headers=headers)
                reply = conn.getresponse()
                body = reply.read()
                return m.Answer(reply.status, dict(reply.getheaders()), body)
            except (http.client.HTTPException, OSError):
                conn.close()
                self.local.conns.pop(kind, None)
                if attempt:
                    if kind == "bare":  # refused at its accept for its refusals: nothing answered
                        return m.Answer(0, {}, b"")
                    raise
        raise AssertionError("unreachable")


def _tokens_and_version(cluster: ControlPlane, t: m.Tenants) -> tuple[dict[str, str], str]:
    base = f"/apis/{COLLECTION_GROUP}/{COLLECTION_VERSION}"
    tokens = {}
    version = ""
    for key, path in (
        (t.a, f"{base}/namespaces/{t.a}/{RESOURCE}"),
        (t.b, f"{base}/namespaces/{t.b}/{RESOURCE}"),
        ("all", f"{base}/{RESOURCE}"),
    ):
        doc = cluster.request(path + "?limit=1").json()
        tokens[key] = doc["metadata"].get("continue", "")
        version = doc["metadata"]["resourceVersion"]
    return tokens, version


def _documents(
    cluster: ControlPlane, server: DeployedServer
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The server's OpenAPI v3 documents as kube-apiserver serves them, and their group-versions."""
    index = cluster.request("/openapi/v3").json()["paths"]
    ours = {server.group, COLLECTION_GROUP}
    docs, groups = [], []
    for key, entry in sorted(index.items()):
        parts = key.split("/")
        if len(parts) == 3 and parts[0] == "apis" and parts[1] in ours:
            docs.append(cluster.request("/" + entry["serverRelativeURL"].lstrip("/")).json())
            groups.append((parts[1], parts[2]))
    assert {g for g, _ in groups} == ours, index.keys()
    return docs, groups


class Churn:
    """Keeps the VMs of both namespaces changing (a label), so that watches see events go by."""

    def __init__(self, cluster: ControlPlane, t: m.Tenants) -> None:
        self.cluster, self.t = cluster, t
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        for n in itertools.count():
            if self.stop.wait(0.3):
                return
            ns = self.t.a if n % 2 else self.t.b
            self.cluster.kubectl(
                "label", "vm", "-n", ns, "vm-1", f"matrix/tick={n}", "--overwrite", check=False
            )

    def __enter__(self) -> Churn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


def run_matrix(
    cluster: ControlPlane,
    server: DeployedServer,
    t: m.Tenants,
    callers: list[m.Caller],
    *,
    only: set[str] | None = None,
) -> tuple[list[m.Request], list[m.Finding], list[str], dict[str, Any]]:
    docs, groups = _documents(cluster, server)
    ops = m.operations(docs)
    if only is not None:
        ops = [op for op in ops if op.template.endswith(tuple(only))]
    tokens, version = _tokens_and_version(cluster, t)
    requests = list(m.requests(ops, t, callers, tokens=tokens, version=version))
    if only is None:
        requests += list(m.plain_requests(groups, callers))
    sender = Sender(cluster, server)
    log_start = server.log_size()
    findings: list[m.Finding] = []
    codes: dict[str, int] = {}
    statuses: dict[tuple[str, str | None], set[int]] = {}  # (operation, caller) -> the codes answered
    seen: dict[str | None, set[str]] = {c.name: set() for c in callers}  # marks each read, as it may
    with Churn(cluster, t), ThreadPoolExecutor(THREADS) as pool:
        for request, answer in zip(requests, pool.map(sender.send, requests), strict=True):
            findings += m.judge(request, answer, t)
            codes[str(answer.status)] = codes.get(str(answer.status), 0) + 1
            statuses.setdefault((request.operation, request.caller.name), set()).add(answer.status)
            text = answer.body.decode(errors="replace")
            seen[request.caller.name].update(mark for mark in request.caller.reads if mark in text)
    # Every line logged for the requests answered (a watch's access line comes before its end is sent).
    bad_lines = m.judge_log(server.wait_log_written(log_start), t)
    size = {
        "operations": len(ops) + (0 if only else len(m.plain_paths(groups))),
        "parameter values": len({(r.operation, r.parameter, r.path.partition("?")[2]) for r in requests}),
        "callers": len(callers),
        "requests": len(requests),
        "watches": sum(r.stream for r in requests),
        "seen": seen,
        "statuses": statuses,
    }
    shown = {k: v for k, v in size.items() if k not in ("seen", "statuses")}
    print(f"\nmatrix: {shown}; answers by status: {dict(sorted(codes.items()))}")
    return requests, findings, bad_lines, size


def test_no_answer_event_header_or_log_line_carries_a_mark_its_caller_may_not_read(
    control_plane: ControlPlane, deployed: DeployedServer, matrix_setup: tuple[m.Tenants, list[m.Caller]]
) -> None:
    t, callers = matrix_setup
    requests, findings, bad_lines, size = run_matrix(control_plane, deployed, t, callers)
    assert not findings, "\n".join(map(str, findings[:40]))
    assert not bad_lines, "\n".join(bad_lines[:20])
    # The matrix reached what it tests: every caller read every mark it may read, somewhere.
    assert size["operations"] >= 15 and size["watches"] >= 100, size
    for caller in callers:
        assert size["seen"][caller.name] == caller.reads, (
            caller.name,
            caller.reads - size["seen"][caller.name],
        )
    ops = {r.operation for r in requests}
    assert any("expand-spec" in o for o in ops) and any("expand-vm-spec" in o for o in ops)
    assert any(o.endswith(RESOURCE) for o in ops) and any(o.endswith("{name}") and RESOURCE in o for o in ops)
    # The catalog change preview ran for all five callers: each tenant got its own namespace's answer
    # (201) and 403 for the other's; the expand-only user lists no VMs (403 for each namespace named).
    (catalog,) = [o for o in ops if o.endswith(m.CATALOG_PREVIEWS)]
    answered = {c.name: size["statuses"][(catalog, c.name)] for c in callers}
    assert 201 in answered[callers[0].name] and 403 in answered[callers[0].name], answered
    assert 201 in answered[callers[1].name] and 403 in answered[callers[1].name], answered
    assert answered[callers[2].name] == {403} and answered[callers[3].name] == {403}, answered
    assert 201 not in answered[None], answered


SABOTAGE = """
# Neutralizes the scope checks of apiserver.sources.scope (tests/realk8s/test_tenancy_matrix.py).
from apiserver.sources import scope as _scope

_scope.Scope.covers = lambda self, namespace, name=None: True
_scope.Scope.narrowed = lambda self, namespace: self.namespace if namespace is None else namespace
"""


SABOTAGE_CATALOG = """
# Neutralizes the catalog change preview's reviews (tests/realk8s/test_tenancy_matrix.py): the fleet is
# read as if the caller could list the VMs of every namespace.
from apiserver.sources import reads as _reads

_fleet = _reads.ScopedReads.fleet


async def _every_namespace(self, namespaces=None, *, named=()):
    scope = self.scope
    self.scope = scope._replace(gate=None)
    try:
        return await _fleet(self, namespaces, named=named)
    finally:
        self.scope = scope


_reads.ScopedReads.fleet = _every_namespace
"""


@pytest.fixture
def sabotaged(
    request: pytest.FixtureRequest,
    control_plane: ControlPlane,
    deployed: DeployedServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[DeployedServer]:
    """A second server like the deployed one whose scope checks always pass (or what the test's
    parameter neutralizes instead), registered in its place for the test (the deployed one is registered
    again after)."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(getattr(request, "param", SABOTAGE))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])))
    server = DeployedServer(control_plane, tmp_path / "sabotaged")
    server.install()
    server.start()
    try:
        server.register()
        yield server
    finally:
        server.stop()
        deployed.register()


def test_the_matrix_finds_what_the_scope_checks_prevent(
    control_plane: ControlPlane, sabotaged: DeployedServer, matrix_setup: tuple[m.Tenants, list[m.Caller]]
) -> None:
    """With every scope check neutralized, the collection's list and watch of one namespace show another
    namespace's rendered VMs (a field selector names it; a watch's events go by), and the matrix says so.
    GET expand-spec, PUT expand-vm-spec and the get of one item take no parameter that names another
    namespace: their scope is the path, and a body naming another namespace is refused before anything
    is read (apiserver/http/endpoints/bodies.py), so there is nothing for the matrix to find there."""
    t, callers = matrix_setup
    tenants = [c for c in callers if c.name is not None and c.name.startswith("tenant-a")]
    _, findings, _, _ = run_matrix(control_plane, sabotaged, t, tenants, only={RESOURCE})
    leaked = {(f.request.operation, f.request.stream) for f in findings}
    assert any(not stream for _, stream in leaked), findings[:5]  # lists
    assert any(stream for _, stream in leaked), findings[:5]  # watches
    theirs = set(t.marks[t.b].values())
    assert all(any(mk in f.what for mk in theirs) for f in findings)
    print(f"\nwith the scope checks neutralized: {len(findings)} findings, e.g. {findings[0]}")


@pytest.mark.parametrize("sabotaged", [SABOTAGE_CATALOG], indirect=True)
def test_the_matrix_finds_what_the_catalog_previews_reviews_prevent(
    control_plane: ControlPlane, sabotaged: DeployedServer, matrix_setup: tuple[m.Tenants, list[m.Caller]]
) -> None:
    """With the catalog change preview reading the fleet as if its caller could list every namespace's
    VMs, a tenant's preview names the other namespace (its VMs, its summary), and the matrix says so."""
    t, callers = matrix_setup
    tenants = [c for c in callers if c.name is not None and c.name.startswith("tenant-a")]
    _, findings, _, _ = run_matrix(control_plane, sabotaged, t, tenants, only={m.CATALOG_PREVIEWS})
    # The other tenant's namespace among them; every finding a namespace the caller may not read (on a
    # control plane other tests share, theirs too), never its own.
    assert any(t.b in f.what for f in findings), findings[:5]
    assert all(f.what.startswith("names namespace ") and t.a not in f.what for f in findings), findings[:5]
    print(f"\nwith the catalog preview's reviews neutralized: {len(findings)} findings, e.g. {findings[0]}")


# -- hidden edits (issue 37, finding 1) ---------------------------------------------------------------------

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def _as(cluster: ControlPlane, who: str | None, path: str, accept: str = "", timeout: float = 30) -> Any:
    headers = {"Impersonate-User": who} if who else {}
    if accept:
        headers["Accept"] = accept
    reply = cluster.request(path, headers=headers, timeout=timeout)
    assert reply.status == 200, (who, path, reply.status, reply.body[:300])
    return reply.body if "watch=1" in path else reply.json()


def _versions(cluster: ControlPlane, who: str, items: str) -> dict[str, str]:
    """The probe VM's item's resourceVersion as ``who`` reads it in each of m.VERSION_VIEWS."""
    listing = _as(cluster, who, items)
    one = _as(cluster, who, f"{items}/{m.PROBE_VM}")
    rows = _as(cluster, who, items, TABLE)
    row = _as(cluster, who, f"{items}/{m.PROBE_VM}", TABLE)
    [item] = [i for i in listing["items"] if i["metadata"]["name"] == m.PROBE_VM]
    [in_rows] = [r for r in rows["rows"] if r["cells"][0] == m.PROBE_VM]
    assert "virtualMachine" not in item and item["status"]["conditions"][0]["reason"] == "Forbidden", item
    seen = (
        item["metadata"]["resourceVersion"],
        one["metadata"]["resourceVersion"],
        in_rows["object"]["metadata"]["resourceVersion"],
        row["metadata"]["resourceVersion"],
    )
    return dict(zip(m.VERSION_VIEWS, seen, strict=True))


def _probe_events(body: bytes) -> list[tuple[str, str]]:
    events = [json.loads(line) for line in body.splitlines() if line.strip()]
    return [
        (e["type"], e["object"]["metadata"].get("resourceVersion", ""))
        for e in events
        if e["type"] != "BOOKMARK" and e["object"].get("metadata", {}).get("name") == m.PROBE_VM
    ]


def test_edits_of_objects_a_caller_may_not_read_move_nothing_they_see(
    control_plane: ControlPlane, deployed: DeployedServer, matrix_setup: tuple[m.Tenants, list[m.Caller]]
) -> None:
    """Issue 37, finding 1: tenant-a is shown vm-far redacted (it reads a PVC of B). Each hidden edit
    makes the store render it again (the admin's watch sees a MODIFIED event each time), while tenant-a's
    watch of the same span sees no event of it, and its resourceVersion in tenant-a's list, get and
    Tables stays what it was. A change tenant-a may see (a label of the VM) still moves it, and a watch
    from the redacted item's own version is answered."""
    t, callers = matrix_setup
    tenant = next(c.name for c in callers if c.name and c.name.startswith("tenant-a"))
    assert tenant is not None
    items = f"/apis/{COLLECTION_GROUP}/{COLLECTION_VERSION}/namespaces/{t.a}/{RESOURCE}"
    edits = m.hidden_edits(t)
    control_plane.apply(*m.probe_objects(t))
    try:
        poll(
            "the probe VM rendered",
            lambda: [i["metadata"]["name"] for i in _as(control_plane, None, items)["items"]],
            lambda names: m.PROBE_VM in names,
            timeout=30,
        )
        before = _versions(control_plane, tenant, items)
        assert len(set(before.values())) == 1, before
        views = 0
        for edit in edits:
            since = _as(control_plane, None, items)["metadata"]["resourceVersion"]
            watch = f"{items}?watch=1&resourceVersion={since}&timeoutSeconds=6"
            with ThreadPoolExecutor(2) as pool:
                theirs = pool.submit(_as, control_plane, tenant, watch)
                admins = pool.submit(_as, control_plane, None, watch)
                time.sleep(1.5)  # both watches open from `since` either way; events come live or replayed
                for step in edit.steps:
                    if isinstance(step, dict):
                        control_plane.apply(step)
                    else:
                        control_plane.kubectl(*step)
                seen, control = _probe_events(theirs.result()), _probe_events(admins.result())
            assert [kind for kind, _ in control] and {kind for kind, _ in control} == {"MODIFIED"}, (
                edit.name,
                control,
            )
            assert seen == [], (edit.name, seen)
            assert _versions(control_plane, tenant, items) == before, edit.name
            views += len(before) + 1
        # What tenant-a may see still moves it: the VM's own label.
        since = before["list"]
        watch = f"{items}?watch=1&resourceVersion={since}&timeoutSeconds=5"
        with ThreadPoolExecutor(1) as pool:
            theirs = pool.submit(_as, control_plane, tenant, watch)
            time.sleep(1.5)
            control_plane.kubectl("label", "vm", "-n", t.a, m.PROBE_VM, "probe/seen=yes")
            seen = _probe_events(theirs.result())
        assert [kind for kind, _ in seen] == ["MODIFIED"], seen
        after = _versions(control_plane, tenant, items)
        assert len(set(after.values())) == 1 and after != before, after
        print(
            f"\nhidden edits: {len(edits)} edits x {len(before) + 1} views (watch, {', '.join(m.VERSION_VIEWS)}) "
            f"= {views} checks for a caller who may not read them; the admin's watch saw each edit"
        )
    finally:
        control_plane.kubectl("delete", "vm", "-n", t.a, m.PROBE_VM, "--ignore-not-found", check=False)
        control_plane.kubectl(
            "delete", "pvc", "-n", t.b, m.PROBE_PVC, "--ignore-not-found", "--wait=false", check=False
        )
        for n in range(1, 6):
            control_plane.kubectl(
                "delete",
                "virtualmachineinstancetypes.instancetype.kubevirt.io",
                "-n",
                t.a,
                m.PROBE_IT.format(n),
                "--ignore-not-found",
                check=False,
            )
