"""What the deployed server writes to its log behind the real aggregator: the aggregator's own traffic
(availability probes five at a time per APIService every 30 s, discovery and OpenAPI polls every
minute) is not in the info-level access log, the users' requests are."""

from __future__ import annotations

import http.client
import json
import re

from tests.realk8s.controlplane import ControlPlane, poll
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_auth import expand_spec, store_vm
from tests.realk8s.test_collection import RESOURCE, ROLE, instancetype

GROUP = "subresources.kubevirt.io"


def probes_answered(deployed: DeployedServer, cluster: ControlPlane) -> int:
    """How many discovery requests for our group-versions the server has answered 200 (its metrics)."""
    admin = cluster.pki.admin
    code, body = deployed.direct("/metrics", cert=(admin.cert_file, admin.key_file))
    assert code == 200
    pattern = re.compile(
        rf'kubevirt_expand_http_requests_total\{{code="200",endpoint="/apis/{re.escape(GROUP)}/v1(alpha3)?",verb="GET"\}} ([0-9.]+)'
    )
    return int(sum(float(m.group(2)) for m in pattern.finditer(body.decode())))


def test_aggregator_traffic_is_not_in_the_info_log(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    store_vm(control_plane, namespace)
    start = deployed.log_size()
    before = probes_answered(deployed, control_plane)
    deployed.ensure_available()  # an update of the APIServices makes the aggregator probe both at once
    poll(
        "the aggregator's probes", lambda: probes_answered(deployed, control_plane), lambda n: n >= before + 2
    )
    control_plane.kubectl("get", "--raw", expand_spec(namespace))
    path = expand_spec(namespace)
    lines = deployed.wait_log(start, lambda line: f'"path":"{path}"' in line)
    access = [json.loads(line) for line in lines if '"logger":"apiserver.access"' in line]
    assert [(e["method"], e["path"], e["code"], e["user"]) for e in access] == [
        ("GET", path, 200, "kubernetes-admin")
    ]


def test_identity_headers_from_a_peer_without_the_proxys_certificate_are_counted_not_logged_each_time(
    deployed: DeployedServer,
) -> None:
    """Issue 37, finding 5: unauthenticated ``GET /readyz?verbose`` with an 8 KB ``X-Remote-User`` wrote
    an 8 KB WARNING per request (300 requests: 2.5 MB). Now the peer is logged once, cut short, and
    every request is counted."""
    huge = "x" * 8000  # within aiohttp's 8190-byte header line
    sample = "kubevirt_expand_untrusted_identity_headers_total"
    before = deployed.metric(sample)
    offset = deployed.log_size()
    # A peer of its own (127.0.3.x), so that an earlier test's line for another peer does not count.
    conn = http.client.HTTPSConnection(
        "127.0.0.1",
        deployed.port,
        context=deployed.ssl_context(),
        timeout=30,
        source_address=("127.0.3.7", 0),
    )
    try:
        for _ in range(50):
            conn.request("GET", "/readyz?verbose", headers={"X-Remote-User": huge})
            reply = conn.getresponse()
            reply.read()
            assert reply.status == 200
    finally:
        conn.close()
    lines = deployed.wait_log_written(offset)
    noted = [line for line in lines if "identity headers" in line]
    assert len(noted) == 1, [line[:200] for line in noted[:3]]
    assert "127.0.3.7" in noted[0] and "x" * 65 not in noted[0] and len(noted[0]) < 1000
    assert sum(len(line) for line in lines) < 20_000  # 50 x 8 KB before
    assert deployed.metric(sample) - before == 50


def test_a_list_of_redacted_items_writes_no_info_line_per_item(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str
) -> None:
    """Issue 37, finding 7: every list wrote one INFO line per redacted item (the refused review of each
    item's hidden read). Those refusals are routine for a list, and are written at debug level."""
    tenant = f"lister-{namespace}"
    rbac = "rbac.authorization.k8s.io"
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "disk",
            "namespace": namespace,
            "labels": {"instancetype.kubevirt.io/default-instancetype": "small"},
        },
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    inferring = [
        {
            "apiVersion": "kubevirt.io/v1",
            "kind": "VirtualMachine",
            "metadata": {"name": f"infer-{i}", "namespace": namespace},
            "spec": {
                "instancetype": {"inferFromVolume": "root"},
                "template": {
                    "spec": {
                        "domain": {"devices": {}},
                        "volumes": [{"name": "root", "persistentVolumeClaim": {"claimName": "disk"}}],
                    }
                },
            },
        }
        for i in range(5)
    ]
    control_plane.apply(
        instancetype(namespace, "small", 2),
        pvc,
        *inferring,
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "lister", "namespace": namespace},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": ROLE},
            "subjects": [{"apiGroup": rbac, "kind": "User", "name": tenant}],
        },
    )
    path = f"/apis/expand.kubevirt-expand.io/v1/namespaces/{namespace}/{RESOURCE}"
    poll(
        "the VMs rendered",
        lambda: len(control_plane.request(path).json()["items"]),
        lambda n: n == 5,
        timeout=30,
    )

    def listed() -> list[dict[str, object]]:
        done = control_plane.kubectl("get", "--raw", path, f"--as={tenant}", check=False)
        return json.loads(done.stdout)["items"] if done.returncode == 0 else []  # type: ignore[no-any-return]

    items = poll("the tenant's list", listed, lambda found: len(found) == 5, timeout=30)
    assert all("virtualMachine" not in item for item in items)  # redacted: the PVC is not the tenant's
    offset = deployed.log_size()
    for _ in range(4):
        assert len(listed()) == 5
    lines = deployed.wait_log_written(offset)
    info = [line for line in lines if '"level":"info"' in line and "forbidden" in line and tenant in line]
    assert info == [], info[:3]
    access = [line for line in lines if '"logger":"apiserver.access"' in line and tenant in line]
    assert len(access) >= 4, access  # the lists themselves are logged, one line each
