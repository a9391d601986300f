"""One path, one meaning, straight to the server's port (issue 37, finding 2; finding 7's access log).

The review found, from a pod (straight to the port, not through the aggregator, which forwards the
decoded path): a user allowed only ``get virtualmachines/expand-spec`` got launch-spec with
``.../virtualmachines/vm-a%2Fexpand-spec/launch-spec`` and the collection with a namespace segment
carrying ``%2F...%2Fexpand-spec%2Fx``; a user allowed only ``update launch-vm-spec`` got expand-vm-spec
with ``.../namespaces/ns-a%2Flaunch-vm-spec/expand-vm-spec``. Authorization read the decoded path and
aiohttp's router the encoded one. Now the target is parsed once, as kube-apiserver parses it, and every
variant of a path (encoded slashes and characters, double encoding, odd segments) gets what its decoded
path, sent plainly, gets: here fuzzed for both users over the three operations each may not call, with
client certificates of their own (as any caller who can reach the port).
"""

from __future__ import annotations

import http.client
import json
import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote, unquote

import pytest

from tests.realk8s.controlplane import ControlPlane, Credentials, poll
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_collection import RESOURCE, instancetype, vm

GROUP = "subresources.kubevirt.io"
COLLECTION = "expand.kubevirt-expand.io"
RBAC = "rbac.authorization.k8s.io"
# What stays unescaped when a decoded path is sent plainly (RFC 3986's pchar and "/").
PLAIN_SAFE = "/!$&'()*+,;=:@-._~"


@dataclass
class Callers:
    ns: str
    expand_only: Credentials  # get virtualmachines/expand-spec (both groups), and what a launch reads
    launch_put: Credentials  # update launch-vm-spec (and what a launch reads), not expand-vm-spec
    names: tuple[str, str]


def _role(ns: str, name: str, rules: list[dict[str, object]], user: str) -> list[dict[str, object]]:
    return [
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": ns},
            "rules": rules,
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": ns},
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": name},
            "subjects": [{"apiGroup": RBAC, "kind": "User", "name": user}],
        },
    ]


@pytest.fixture(scope="module")
def callers(control_plane: ControlPlane, deployed: DeployedServer) -> Iterator[Callers]:
    suffix = uuid.uuid4().hex[:6]
    ns = control_plane.new_namespace("paths")
    expand_user, launch_user = f"expand-only-{suffix}", f"launch-put-{suffix}"
    control_plane.apply(
        instancetype(ns, "small", 2),
        vm(ns, "vm-a", "small", {}),
        *_role(
            ns,
            "expand-only",
            [
                {
                    "apiGroups": [GROUP, COLLECTION],
                    "resources": ["virtualmachines/expand-spec"],
                    "verbs": ["get"],
                },
                # what a launch would read on its behalf: only the launch-spec rule is missing
                {"apiGroups": [""], "resources": ["resourcequotas"], "verbs": ["list"]},
            ],
            expand_user,
        ),
        *_role(
            ns,
            "launch-put",
            [
                {"apiGroups": [GROUP], "resources": ["launch-vm-spec"], "verbs": ["update"]},
                # what a launch reads on the caller's behalf (the Namespace: below too)
                {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["resourcequotas"], "verbs": ["list"]},
            ],
            launch_user,
        ),
        # The Namespace at the cluster scope as well, as the server reviewed it before finding 7 was
        # fixed: this module's findings do not hang on that one. Both users may read it.
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"paths-{suffix}"},
            "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]}],
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"paths-{suffix}"},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": f"paths-{suffix}"},
            "subjects": [
                {"apiGroup": RBAC, "kind": "User", "name": launch_user},
                {"apiGroup": RBAC, "kind": "User", "name": expand_user},
            ],
        },
    )
    poll(
        "vm-a rendered",
        lambda: control_plane.kubectl("get", RESOURCE, "-n", ns, "-o", "name", check=False).stdout.split(),
        lambda names: len(names) == 1,
        timeout=30,
    )
    found = Callers(
        ns,
        control_plane.pki.client(expand_user),
        control_plane.pki.client(launch_user),
        (expand_user, launch_user),
    )
    port, body = Port(deployed), vm_body(ns)
    try:  # RBAC in effect for both, as the server sees it (a denial is kept 10 s: patience)
        for creds, method, path, data in (
            (
                found.expand_only,
                "GET",
                f"/apis/{GROUP}/v1/namespaces/{ns}/virtualmachines/vm-a/expand-spec",
                None,
            ),
            (found.launch_put, "PUT", f"/apis/{GROUP}/v1/namespaces/{ns}/launch-vm-spec", body),
        ):
            poll(
                f"RBAC for {creds.cert_file.name}",
                lambda c=creds, m=method, p=path, d=data: port.send(c, m, p, d)[0],  # type: ignore[misc]
                lambda code: code == 200,
                timeout=40,
            )
    finally:
        port.close()
    yield found
    control_plane.kubectl(
        "delete", f"clusterrolebinding/paths-{suffix}", f"clusterrole/paths-{suffix}", check=False
    )


class Port:
    """Requests straight to the server's port with a caller's client certificate, targets sent as written."""

    def __init__(self, deployed: DeployedServer) -> None:
        self.deployed = deployed
        self.conns: dict[str, http.client.HTTPSConnection] = {}

    def send(self, creds: Credentials, method: str, target: str, body: bytes | None) -> tuple[int, str]:
        """The status and what the answer is: a Status' reason and message, else the object's kind. A 429
        (the caller's share of SubjectAccessReviews spent: the fuzzing asks hundreds) is retried after its
        Retry-After, as a client should, so every spelling is judged."""
        for _ in range(30):
            status, said, retry_after = self._send_once(creds, method, target, body)
            if status != 429:
                return status, said
            time.sleep(float(retry_after or 1))
        return status, said

    def _send_once(
        self, creds: Credentials, method: str, target: str, body: bytes | None
    ) -> tuple[int, str, str | None]:
        key = str(creds.cert_file)
        for attempt in range(2):
            conn = self.conns.get(key)
            if conn is None:
                ctx = self.deployed.ssl_context((creds.cert_file, creds.key_file))
                conn = self.conns[key] = http.client.HTTPSConnection(
                    "127.0.0.1", self.deployed.port, context=ctx, timeout=30
                )
            try:
                headers = {"Content-Type": "application/json"} if body is not None else {}
                conn.request(method, target, body=body, headers=headers)
                reply = conn.getresponse()
                data = reply.read()
                if reply.getheader("Connection", "").lower() == "close":
                    conn.close()
                    self.conns.pop(key, None)
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self.conns.pop(key, None)
                if attempt:
                    raise
        retry_after = reply.getheader("Retry-After")
        try:
            doc = json.loads(data)
        except ValueError:
            return reply.status, data.decode(errors="replace")[:200], retry_after
        if doc.get("kind") == "Status":
            return reply.status, f"{doc.get('reason')}: {doc.get('message')}", retry_after
        return reply.status, str(doc.get("kind")), retry_after

    def close(self) -> None:
        for conn in self.conns.values():
            conn.close()


def plain(target: str) -> str:
    """``target`` as its decoded path sent plainly: what kube-apiserver (and the aggregator) read (Go's
    ``url.ParseRequestURI``: the path is what comes before the first ``?``, every escape decoded)."""
    path, sep, query = target.partition("?")
    return quote(unquote(path), safe=PLAIN_SAFE) + sep + query


def variants(path: str, rng: random.Random) -> list[str]:
    """Encoded and odd spellings of ``path`` (``/apis/G/V/...``): each slash after the version encoded
    (``%2F``, ``%2f``, ``%252F``), all of them, characters of every segment escaped, dot segments,
    doubled and trailing slashes, ``%23``, ``%3F``, ``;``, ``%00`` and ``+`` appended to segments."""
    head = "/".join(path.split("/")[:4])  # /apis/G/V
    rest = path[len(head) + 1 :].split("/")
    found = set()

    def join(parts: list[str], seps: list[str]) -> str:
        out = parts[0]
        for sep, part in zip(seps, parts[1:], strict=True):
            out += sep + part
        return f"{head}/{out}"

    slashes = ["/"] * (len(rest) - 1)
    for i in range(len(slashes)):
        for enc in ("%2F", "%2f", "%252F", "//", "/./", "/x/../"):
            seps = list(slashes)
            seps[i] = enc
            found.add(join(rest, seps))
    found.add(join(rest, ["%2F"] * len(slashes)))
    for i, segment in enumerate(rest):
        for upper in (True, False):
            j = rng.randrange(len(segment))
            escaped = f"%{ord(segment[j]):02{'X' if upper else 'x'}}"
            parts = list(rest)
            parts[i] = segment[:j] + escaped + segment[j + 1 :]
            found.add(join(parts, slashes))
        for tail in ("%23", "%3F", ";x", "%00", "+", "%2F"):
            parts = list(rest)
            parts[i] = segment + tail
            found.add(join(parts, slashes))
    found.add(path + "/")
    found.add(path + "%2F")
    return sorted(found - {path})


def vm_body(ns: str) -> bytes:
    return json.dumps(
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": "vm-b", "namespace": ns},
            "spec": {"template": {"spec": {"domain": {"devices": {}}}}},
        }
    ).encode()


def test_the_reviews_paths_are_not_served_to_callers_without_the_rule(
    deployed: DeployedServer, callers: Callers
) -> None:
    """The review's three paths: each is what its decoded path is (not found), and the operation it
    reached is the 403 it is when asked plainly."""
    ns, port = callers.ns, Port(deployed)
    body = vm_body(ns)
    cases = [
        (
            callers.expand_only,
            "GET",
            f"/apis/{GROUP}/v1/namespaces/{ns}/virtualmachines/vm-a%2Fexpand-spec/launch-spec",
            f"/apis/{GROUP}/v1/namespaces/{ns}/virtualmachines/vm-a/launch-spec",
            None,
        ),
        (
            callers.expand_only,
            "GET",
            f"/apis/{COLLECTION}/v1/namespaces/{ns}%2Fvirtualmachines%2Fvm-a%2Fexpand-spec%2Fx/{RESOURCE}",
            f"/apis/{COLLECTION}/v1/namespaces/{ns}/{RESOURCE}",
            None,
        ),
        (
            callers.launch_put,
            "PUT",
            f"/apis/{GROUP}/v1/namespaces/{ns}%2Flaunch-vm-spec/expand-vm-spec",
            f"/apis/{GROUP}/v1/namespaces/{ns}/expand-vm-spec",
            body,
        ),
    ]
    seen = []
    try:
        for creds, method, attack, operation, data in cases:
            assert port.send(creds, method, operation, data)[0] == 403, operation
            got = port.send(creds, method, attack, data)
            seen.append((attack, got, port.send(creds, method, plain(attack), data)))
    finally:
        port.close()
    served = [(attack, got) for attack, got, _ in seen if got[0] == 200]
    assert not served, served
    assert all(got == decoded for _, got, decoded in seen), seen
    assert all(got[0] == 404 for _, got, _ in seen), seen  # no route for the decoded path, as kube-apiserver


def test_every_spelling_of_a_path_gets_what_its_decoded_path_gets(
    deployed: DeployedServer, callers: Callers
) -> None:
    """Fuzzed: every variant of the three operations, sent by both users, gets the same status and
    answer as its decoded path sent plainly; none is a 200 unless that plain path is (which only the
    operation each user is allowed can be)."""
    ns, port, rng = callers.ns, Port(deployed), random.Random(37)
    body = vm_body(ns)
    operations = [
        ("GET", f"/apis/{GROUP}/v1/namespaces/{ns}/virtualmachines/vm-a/launch-spec", None),
        ("GET", f"/apis/{GROUP}/v1/namespaces/{ns}/virtualmachines/vm-a/expand-spec", None),
        ("GET", f"/apis/{COLLECTION}/v1/namespaces/{ns}/{RESOURCE}", None),
        ("PUT", f"/apis/{GROUP}/v1/namespaces/{ns}/expand-vm-spec", body),
        ("PUT", f"/apis/{GROUP}/v1/namespaces/{ns}/launch-vm-spec", body),
    ]
    differ, served, sent = [], 0, 0
    try:
        for creds in (callers.expand_only, callers.launch_put):
            for method, path, data in operations:
                for variant in variants(path, rng):
                    got = port.send(creds, method, variant, data)
                    want = port.send(creds, method, plain(variant), data)
                    sent += 1
                    served += got[0] == 200
                    if got != want:
                        differ.append((creds.cert_file.name, method, variant, got, want))
    finally:
        port.close()
    print(f"\npath variants: {sent} sent straight to the port, {served} answered 200, {len(differ)} differ")
    assert not differ, "\n".join(map(str, differ[:20]))
    assert sent >= 300 and served > 0  # the allowed operations' variants that decode to them are served


def test_the_access_log_writes_the_target_as_received(deployed: DeployedServer, callers: Callers) -> None:
    """Finding 7: the access line showed the decoded path (``/namespaces/ns-a/launch-vm-spec/
    expand-vm-spec``); it writes the target as the client sent it, as kube-apiserver's audit log keeps
    ``requestURI``, path segments unredacted (object names, as there)."""
    ns, port = callers.ns, Port(deployed)
    attack = f"/apis/{GROUP}/v1/namespaces/{ns}%2Flaunch-vm-spec/expand-vm-spec"
    offset = deployed.log_size()
    try:
        port.send(callers.launch_put, "PUT", attack, b"{}")
    finally:
        port.close()
    lines = deployed.wait_log_written(offset)
    access = [json.loads(line) for line in lines if line.startswith("{") and '"apiserver.access"' in line]
    mine = [(e["path"], e["code"]) for e in access if ns in e["path"] and "expand-vm-spec" in e["path"]]
    assert mine[-1:] == [(attack, 404)], mine  # not the decoded .../{ns}/launch-vm-spec/expand-vm-spec
