"""What the deployed server writes to its log behind the real aggregator: the aggregator's own traffic
(availability probes five at a time per APIService every 30 s, discovery and OpenAPI polls every
minute) is not in the info-level access log, the users' requests are."""

from __future__ import annotations

import json
import re

from tests.realk8s.controlplane import ControlPlane, poll
from tests.realk8s.deployed import DeployedServer
from tests.realk8s.test_auth import expand_spec, store_vm

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
