"""The tenancy matrix (issue 24), generated from the server's own OpenAPI documents: every operation they
list, each query parameter it takes with values that try to reach another namespace, for every kind of
caller; plus what no document lists (discovery, OpenAPI, /version, /metrics, probes) and the query
parameters every Kubernetes read may be sent. Pure: this module makes the requests and judges the answers;
tests/realk8s/test_tenancy_matrix.py sends them to the real control plane.

A request is judged by the marks it must not carry: each object of each namespace holds a distinct mark
(an annotation its rendering shows, a label value, a password, an instancetype name only its volume
knows), and each caller may read some of them. Any mark a caller may not read, in any answer's status
line, headers, body or watch event, is a finding; so is a 500, and any mark in the server's log outside
the query a caller sent.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
# Query parameters every Kubernetes read or write may be sent, whether or not a document lists them.
EXTRA_PARAMETERS = ("includeObject", "dryRun", "sendInitialEvents", "fieldManager", "unknownParameter")
# Which parameters are also tried on a watch (watch=1, timeoutSeconds=1): the ways a watch could widen.
WATCHED = ("fieldSelector", "labelSelector", "resourceVersion", "allowWatchBookmarks", "includeObject")


@dataclass(frozen=True)
class Caller:
    """``name``: the identity (None: no credentials at all); ``reads``: the marks it may read."""

    name: str | None
    reads: frozenset[str]
    direct_only: bool = False  # an unauthenticated peer: straight to the server, identity headers forged


@dataclass(frozen=True)
class Request:
    caller: Caller
    operation: str  # "GET /apis/.../{namespace}/..." as the document lists it, or the path's own
    parameter: str  # the parameter tried ("" for none)
    method: str
    path: str  # with the query
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    direct: bool = False  # straight to the server (as the aggregator would send it), not through it
    stream: bool = False  # a watch: read to its end


@dataclass
class Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes


@dataclass
class Tenants:
    """Two namespaces with the same object names, each object marked per namespace."""

    a: str
    b: str
    suffix: str
    marks: dict[str, dict[str, str]] = field(default_factory=dict)  # namespace -> kind -> mark

    def other(self, namespace: str) -> str:
        return self.b if namespace == self.a else self.a

    def all_marks(self) -> set[str]:
        return {m for kinds in self.marks.values() for m in kinds.values()}


MARK_KINDS = ("password", "label", "it", "pref", "pvc", "preset")


def make_tenants(a: str, b: str, suffix: str) -> Tenants:
    t = Tenants(a, b, suffix)
    for ns, letter in ((a, "a"), (b, "b")):
        t.marks[ns] = {kind: f"mark-{letter}-{kind}-{suffix}" for kind in MARK_KINDS}
    return t


def objects(t: Tenants) -> list[dict[str, Any]]:
    """The same objects in both namespaces, each with that namespace's marks."""
    out: list[dict[str, Any]] = []
    api = "instancetype.kubevirt.io/v1beta1"
    for ns in (t.a, t.b):
        m = t.marks[ns]

        def it(name: str, mark: str, ns: str = ns) -> dict[str, Any]:
            spec = {"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}, "annotations": {"matrix/mark": mark}}
            meta = {"name": name, "namespace": ns}
            return {"apiVersion": api, "kind": "VirtualMachineInstancetype", "metadata": meta, "spec": spec}

        out += [
            it("it", m["it"]),
            it(m["pvc"], m["pvc"]),  # named only by the volume's label: its name is the volume's mark
            {
                "apiVersion": api,
                "kind": "VirtualMachinePreference",
                "metadata": {"name": "pref", "namespace": ns},
                "spec": {"annotations": {"matrix/pref": m["pref"]}},
            },
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": "disk",
                    "namespace": ns,
                    "labels": {
                        "instancetype.kubevirt.io/default-instancetype": m["pvc"],
                        "instancetype.kubevirt.io/default-instancetype-kind": "VirtualMachineInstancetype",
                    },
                },
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            },
            {
                "apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachineInstancePreset",
                "metadata": {"name": "preset", "namespace": ns},
                "spec": {
                    "selector": {"matchLabels": {"matrix/app": "on"}},
                    "domain": {"firmware": {"serial": m["preset"]}},
                },
            },
            vm(ns, "vm-1", m, instancetype={"kind": "VirtualMachineInstancetype", "name": "it"}),
            vm(ns, "vm-2", m, instancetype={"inferFromVolume": "root"}),
        ]
    return out


def vm(
    ns: str | None, name: str, marks: Mapping[str, str] | None, *, instancetype: dict[str, Any]
) -> dict[str, Any]:
    """A VM of ``ns`` (None: no namespace) whose labels and cloud-init carry ``marks`` (none: a caller's
    own body, which carries nothing of anyone)."""
    meta: dict[str, Any] = {"name": name, "labels": {"matrix/app": "on"}}
    if ns is not None:
        meta["namespace"] = ns
    volumes: list[dict[str, Any]] = [{"name": "root", "persistentVolumeClaim": {"claimName": "disk"}}]
    if marks is not None:
        meta["labels"]["mark-label"] = marks["label"]
        volumes.append(
            {
                "name": "cloudinit",
                "cloudInitNoCloud": {"userData": f"#cloud-config\npassword: {marks['password']}\n"},
            }
        )
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": meta,
        "spec": {
            "instancetype": instancetype,
            "preference": {"kind": "VirtualMachinePreference", "name": "pref"},
            # Presets select on the template's labels.
            "template": {
                "metadata": {"labels": {"matrix/app": "on"}},
                "spec": {"domain": {"devices": {}}, "volumes": volumes},
            },
        },
    }


# -- the operations, from the OpenAPI documents ---------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    method: str
    template: str
    parameters: tuple[str, ...]  # query parameters
    body: bool


def operations(documents: Iterable[Mapping[str, Any]]) -> list[Operation]:
    """Every operation of OpenAPI v3 documents, with its query parameters (path-level ones included)."""
    found: dict[tuple[str, str], Operation] = {}
    for doc in documents:
        for template, item in doc.get("paths", {}).items():
            shared = [p for p in item.get("parameters", []) if isinstance(p, dict)]
            for method, op in item.items():
                if method not in ("get", "put", "post", "patch", "delete") or not isinstance(op, dict):
                    continue
                params = [*shared, *op.get("parameters", [])]
                query = tuple(sorted({p["name"] for p in params if p.get("in") == "query"}))
                found[(method, template)] = Operation(method.upper(), template, query, "requestBody" in op)
    return sorted(found.values(), key=lambda o: (o.template, o.method))


def _token(version: str, key: tuple[str, str], namespace: str | None) -> str:
    doc = {"v": version, "k": list(key), "n": namespace}
    return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")


def values(
    parameter: str, t: Tenants, path_ns: str | None, tokens: Mapping[str, str], version: str
) -> list[str]:
    """Values of ``parameter`` that try to reach past the path's namespace (``path_ns``; None for the
    list of every namespace), and plain ones."""
    here = path_ns or t.a
    there = t.other(here)
    mine, theirs = t.marks[here], t.marks[there]
    table = {
        "presets": ["true", "false"],
        "validate": ["true", "false"],
        "assumePVCs": ["true", "false"],  # launch-spec and launch-v(m,mi)-spec: the claims read, or not
        "pretty": ["true"],
        "fieldValidation": ["Strict", "Warn", "Ignore"],
        "labelSelector": [
            f"mark-label={mine['label']}",
            f"mark-label=={theirs['label']}",
            "mark-label!=x",
            f"mark-label in ({theirs['label']},{mine['label']})",
            "mark-label notin (x)",
            "mark-label",
            "!mark-label",
        ],
        "fieldSelector": [
            "metadata.name=vm-1",
            "metadata.name==vm-2",
            "metadata.name!=vm-1",
            f"metadata.namespace={here}",
            f"metadata.namespace={there}",
            f"metadata.namespace=={there}",
            f"metadata.namespace!={here}",
            f"metadata.namespace={there},metadata.name=vm-1",
        ],
        "limit": ["1"],
        "continue": [
            tokens.get(here, ""),  # real
            tokens.get(there, ""),  # another namespace's, replayed
            tokens.get("all", ""),  # the list of every namespace's
            _token(version, (there, ""), here),  # forged: its own namespace, another's key
            _token(version, (there, ""), None),
            "not-a-token",
        ],
        "resourceVersion": ["0", version, "not-a-version"],
        "resourceVersionMatch": ["NotOlderThan", "Exact"],
        "watch": ["true"],
        "allowWatchBookmarks": ["true"],
        "timeoutSeconds": ["1"],
        "includeObject": ["None", "Metadata", "Object"],
        "dryRun": ["All"],
        "sendInitialEvents": ["true"],
        "fieldManager": ["matrix"],
        "unknownParameter": [theirs["password"]],  # a value the server must neither use nor log
    }
    return [v for v in table.get(parameter, ["x"]) if v]


CATALOG_PREVIEWS = "catalogchangepreviews"


def catalog_bodies(t: Tenants, here: str) -> list[bytes]:
    """Bodies of a catalog change preview (cluster-scoped, so ``here`` is the first tenant's): the
    namespaced instancetype ``it`` edited in each namespace, and an edit of ``here``'s asked for the other
    namespace's VMs. A caller sees the VMs of the namespaces where they may list VMs and a count of the
    others'; a namespace they may not read, named, is a 403 for that read."""
    there = t.other(here)

    def it(ns: str) -> dict[str, Any]:
        spec = {"cpu": {"guest": 4}, "memory": {"guest": "2Gi"}}
        meta = {"name": "it", "namespace": ns}
        return {
            "apiVersion": "instancetype.kubevirt.io/v1beta1",
            "kind": "VirtualMachineInstancetype",
            "metadata": meta,
            "spec": spec,
        }

    def body(**spec: Any) -> bytes:
        doc = {"apiVersion": "expand.kubevirt-expand.io/v1", "kind": "CatalogChangePreview", "spec": spec}
        return json.dumps(doc).encode()

    return [
        body(objects=[it(here)]),
        body(objects=[it(there)]),
        body(objects=[it(here)], namespaces=[there]),
        body(
            objects=[it(here)],
            removed=[{"kind": "VirtualMachineInstancetype", "name": "it", "namespace": there}],
        ),
    ]


def _fill(template: str, namespace: str | None, name: str) -> str:
    path = template.replace("{name}", name)
    if namespace is not None:
        path = path.replace("{namespace}", namespace)
    return "/" + path.lstrip("/")


def _query(pairs: Iterable[tuple[str, str]]) -> str:
    from urllib.parse import urlencode

    text = urlencode(list(pairs))
    return f"?{text}" if text else ""


def requests(
    ops: Iterable[Operation],
    t: Tenants,
    callers: Iterable[Caller],
    *,
    tokens: Mapping[str, str],
    version: str,
) -> Iterator[Request]:
    """Every operation x parameter value x caller x namespace in the path (both tenants'), one
    parameter at a time, and the ways a watch could widen with ``watch=1``."""
    callers = list(callers)
    for op in ops:
        namespaces: list[str | None] = [t.a, t.b] if "{namespace}" in op.template else [None]
        names = ["vm-1", "vm-2", "nope"] if "{name}" in op.template else [""]
        parameters = ["", *op.parameters, *(p for p in EXTRA_PARAMETERS if p not in op.parameters)]
        label = f"{op.method} {op.template}"
        for ns in namespaces:
            here = ns or t.a
            bodies: list[bytes | None] = [None]
            if op.body and op.template.endswith(CATALOG_PREVIEWS):
                bodies = list(catalog_bodies(t, here))
            elif op.body:
                it = {"kind": "VirtualMachineInstancetype", "name": "it"}
                bodies = [
                    json.dumps(vm(None, "probe", None, instancetype=it)).encode(),
                    json.dumps(vm(t.other(here), "probe", None, instancetype=it)).encode(),
                    json.dumps(vm(None, "probe", None, instancetype={"inferFromVolume": "root"})).encode(),
                ]
            for name in names:
                path = _fill(op.template, ns, name)
                collection = op.method == "GET" and not name and "watch" in op.parameters
                for parameter in parameters:
                    for value in values(parameter, t, ns, tokens, version) if parameter else [""]:
                        pairs = [(parameter, value)] if parameter else []
                        headers: tuple[tuple[str, str], ...] = ()
                        if parameter == "includeObject":
                            headers = (("Accept", TABLE),)
                        stream = parameter == "watch"
                        if stream:
                            pairs.append(("timeoutSeconds", "1"))
                        variants = [(pairs, stream)]
                        if collection and parameter in WATCHED:
                            variants.append(([*pairs, ("watch", "1"), ("timeoutSeconds", "1")], True))
                        for query_pairs, streamed in variants:
                            for body in bodies:
                                for caller in callers:
                                    yield Request(
                                        caller,
                                        label,
                                        parameter,
                                        op.method,
                                        path + _query(query_pairs),
                                        (("Content-Type", "application/json"), *headers) if body else headers,
                                        body,
                                        direct=caller.direct_only,
                                        stream=streamed,
                                    )


def plain_paths(groups: Iterable[tuple[str, str]]) -> list[str]:
    """What no document lists: discovery, OpenAPI, /version, /metrics and the probes."""
    paths = [
        "/apis",
        "/openapi/v2",
        "/openapi/v3",
        "/version",
        "/metrics",
        "/readyz?verbose",
        "/livez",
        "/healthz",
    ]
    for group, version in groups:
        paths += [f"/apis/{group}", f"/apis/{group}/{version}", f"/apis/{group}/{version}/version"]
        paths.append(f"/openapi/v3/apis/{group}/{version}")
    return sorted(set(paths))


def plain_requests(groups: Iterable[tuple[str, str]], callers: Iterable[Caller]) -> Iterator[Request]:
    for path in plain_paths(groups):
        for caller in callers:
            yield Request(caller, f"GET {path}", "", "GET", path, direct=True)


# -- judging ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    request: Request
    what: str

    def __str__(self) -> str:
        r = self.request
        who = r.caller.name or "(no credentials)"
        return f"{who}: {r.method} {r.path}{' (direct)' if r.direct else ''}: {self.what}"


def judge(request: Request, answer: Answer, t: Tenants) -> list[Finding]:
    """What of ``answer`` the caller may not see: another's mark anywhere, or a 500."""
    found = []
    if answer.status >= 500 and answer.status != 503 and answer.status != 504:
        found.append(Finding(request, f"answered {answer.status}: {answer.body[:200]!r}"))
    forbidden = t.all_marks() - request.caller.reads
    text = answer.body.decode(errors="replace")
    headers = "\n".join(f"{k}: {v}" for k, v in answer.headers.items())
    for mark in forbidden:
        if mark in text:
            found.append(Finding(request, f"body carries {mark}"))
        if mark in headers:
            found.append(Finding(request, f"headers carry {mark}"))
    if request.operation.endswith(CATALOG_PREVIEWS) and answer.status == 201:
        found += _judge_catalog(request, answer, t)
    return found


def _judge_catalog(request: Request, answer: Answer, t: Tenants) -> list[Finding]:
    """A catalog change preview names only VMs and namespaces of the namespaces whose objects its caller
    may read (VM names are the same in both namespaces, so marks alone would not tell)."""
    readable = {ns for ns in (t.a, t.b) if t.marks[ns]["password"] in request.caller.reads}
    status = json.loads(answer.body).get("status") or {}
    named = {i.get("namespace") for i in status.get("items") or ()}
    named |= {n.get("namespace") for n in status.get("namespaces") or ()}
    named |= {c.get("namespace") for c in status.get("changedObjects") or () if c.get("namespace")}
    return [Finding(request, f"names namespace {ns}") for ns in sorted(named - readable, key=str)]


def judge_log(lines: Iterable[str], t: Tenants) -> list[str]:
    """Log lines that carry any object's mark outside the query a caller sent (which the access log
    writes for the server's own parameters)."""
    marks = t.all_marks()
    bad = []
    for line in lines:
        if not any(m in line for m in marks):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            bad.append(line)
            continue
        if entry.get("logger") == "apiserver.access":
            entry = {k: v for k, v in entry.items() if k not in ("query", "msg")}
            entry["msg"] = ""
        if any(m in json.dumps(entry) for m in marks):
            bad.append(line)
    return bad


# -- hidden edits: a redacted item is a fixed point (issue 37, finding 1) ---------------------------------
#
# A VM of namespace A infers its instancetype from a volume of namespace B (a DataVolume template cloning
# B's PVC), whose label names an instancetype of A. A's tenant may list the collection of A but not get
# B's PVCs, so the item is shown to them redacted. Each edit below changes only what they may not read,
# or what only that PVC's label ties to the VM (instancetypes of A that the label names or not); the
# store renders the VM again each time. Nothing of it may reach the tenant: no event, no new version in
# a list, a get or either Table.

PROBE_VM = "vm-far"
PROBE_PVC = "probe-disk"
PROBE_IT = "probe-it-{}"
INSTANCETYPE_LABEL = "instancetype.kubevirt.io/default-instancetype"


def probe_instancetype(ns: str, n: int, cpus: int | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": PROBE_IT.format(n), "namespace": ns},
        "spec": {"cpu": {"guest": cpus or n}, "memory": {"guest": "1Gi"}},
    }


def probe_pvc(ns: str, names: int) -> dict[str, Any]:
    """B's PVC, its label naming ``probe-it-<names>``."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": PROBE_PVC,
            "namespace": ns,
            "labels": {
                INSTANCETYPE_LABEL: PROBE_IT.format(names),
                f"{INSTANCETYPE_LABEL}-kind": "VirtualMachineInstancetype",
            },
        },
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


def probe_objects(t: Tenants) -> list[dict[str, Any]]:
    """B's PVC naming probe-it-3 (which does not exist yet) and A's VM inferring from it."""
    machine = vm(t.a, PROBE_VM, t.marks[t.a], instancetype={"inferFromVolume": "root"})
    template = machine["spec"]["template"]["spec"]
    template["volumes"][0] = {"name": "root", "dataVolume": {"name": "far"}}
    source = {"pvc": {"namespace": t.b, "name": PROBE_PVC}}
    machine["spec"]["dataVolumeTemplates"] = [{"metadata": {"name": "far"}, "spec": {"source": source}}]
    return [probe_pvc(t.b, 3), machine]


@dataclass(frozen=True)
class HiddenEdit:
    """Changes to objects a caller may not read; ``steps``: objects to apply, or kubectl arguments."""

    name: str
    steps: tuple[dict[str, Any] | tuple[str, ...], ...]


def hidden_edits(t: Tenants) -> list[HiddenEdit]:
    """The issue's probe (instancetypes probe-it-1..5 created in A: only the one B's label names
    changes the rendering), B's label changed (seen at the next rendering, which an edit of the
    instancetype it named makes), and the instancetype it now names deleted."""
    return [
        HiddenEdit(
            "instancetypes probe-it-1..5 created in A", tuple(probe_instancetype(t.a, n) for n in range(1, 6))
        ),
        HiddenEdit(
            "B's PVC relabelled to probe-it-4, then probe-it-3 edited",
            (probe_pvc(t.b, 4), probe_instancetype(t.a, 3, cpus=7)),
        ),
        HiddenEdit(
            "probe-it-4 deleted",
            (
                (
                    "delete",
                    "virtualmachineinstancetypes.instancetype.kubevirt.io",
                    "-n",
                    t.a,
                    PROBE_IT.format(4),
                ),
            ),
        ),
    ]


# How a caller reads an item's resourceVersion: a list, a get, a Table of the list, a Table of the item.
VERSION_VIEWS = ("list", "get", "table list", "table get")
