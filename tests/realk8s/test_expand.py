"""expand-spec and expand-vm-spec through kube-apiserver's aggregator, with kubectl as the client, for
conformance cases stored in the real cluster: the answer equals the engine's own output
(``apiserver.expand_vm``) on the objects as the API server stores them, on every served version."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from apiserver import ExpandError, expand_vm
from tests.realk8s import stored
from tests.realk8s.controlplane import ControlPlane, poll
from tests.realk8s.deployed import DeployedServer

GROUP = "subresources.kubevirt.io"
VERSIONS = ("v1", "v1alpha3")

# Each stores a different shape of lookup; none needs a cluster configuration of its own.
RENDERED = {
    "common-1000": "live namespaced instancetype and preference, explicit devices",
    "lookup-001": "namespaced and cluster objects of the same names, namespaced kinds asked",
    "docs-002": "live cluster-scoped instancetype and preference, empty matcher kinds",
    "common-0025": "live cluster-scoped common-instancetypes objects",
    "revision-009": "both pinned by spec revisionName, live objects changed since",
    "revision-013": "pinned by status.instancetypeRef.controllerRevisionRef",
    "revision-019": "status preferenceRef for another name: the live cluster preference wins",
}
FAILING = {
    "conflict-035": "VM conflicts with the instancetype and the preference",
    "lookup-032": "namespaced instancetype missing",
}


def expand_spec_path(version: str, namespace: str, name: str) -> str:
    return f"/apis/{GROUP}/{version}/namespaces/{namespace}/virtualmachines/{name}/expand-spec"


def expand_vm_spec_path(version: str, namespace: str) -> str:
    return f"/apis/{GROUP}/{version}/namespaces/{namespace}/expand-vm-spec"


@pytest.mark.parametrize("case_id", list(RENDERED))
def test_stored_case_renders_as_the_engine_does(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str, case_id: str, tmp_path: Path
) -> None:
    case = stored.store(control_plane, stored.case(case_id), namespace, uuid.uuid4().hex[:8])
    expected = expand_vm(case.vm, case.objects, case.kubevirt)
    # As virt-api answers (issue 29): the VM's managedFields too, though the deployed server caches VMs.
    assert expected["metadata"]["managedFields"] == case.vm["metadata"]["managedFields"] != []
    # Stored, the objects still render as KubeVirt rendered the case (renamed matchers are stripped).
    assert expected["spec"] == stored.case(case_id).expected["expanded"]["spec"]
    vm_file = tmp_path / "vm.json"
    vm_file.write_text(json.dumps(case.vm))
    # A case's VM status (its captured revisions) is a write after its creation: the server's store, which
    # answers the GETs, renders it once its watch delivered it.
    poll(
        f"{case.name} rendered as stored",
        lambda: control_plane.kubectl("get", "--raw", expand_spec_path("v1", namespace, case.name)).stdout,
        lambda text: json.loads(text) == expected,
    )
    for version in VERSIONS:
        got = control_plane.kubectl("get", "--raw", expand_spec_path(version, namespace, case.name))
        assert json.loads(got.stdout) == expected, version
        put = control_plane.kubectl(
            "replace", "--raw", expand_vm_spec_path(version, namespace), "-f", str(vm_file)
        )
        assert json.loads(put.stdout) == expected, version
    # What kubectl does not show: the aggregator passes our media type through.
    answer = control_plane.request(expand_spec_path("v1", namespace, case.name))
    assert (answer.status, answer.header("Content-Type")) == (200, "application/json")
    assert answer.json() == expected


@pytest.mark.parametrize("case_id", list(FAILING))
def test_failing_case_reaches_kubectl_as_a_status(
    deployed: DeployedServer, control_plane: ControlPlane, namespace: str, case_id: str, tmp_path: Path
) -> None:
    case = stored.store(control_plane, stored.case(case_id), namespace, uuid.uuid4().hex[:8])
    with pytest.raises(ExpandError) as raised:
        expand_vm(case.vm, case.objects, case.kubevirt)
    status = raised.value.status
    assert status["code"] == 422 and status["details"]["causes"], status
    vm_file = tmp_path / "vm.json"
    vm_file.write_text(json.dumps(case.vm))
    for version in VERSIONS:
        for args in (
            ("get", "--raw", expand_spec_path(version, namespace, case.name)),
            ("replace", "--raw", expand_vm_spec_path(version, namespace), "-f", str(vm_file)),
        ):
            result = control_plane.kubectl(*args, check=False)
            assert result.returncode == 1 and result.stdout == "", (args, result)
            # kubectl read a Status: it words an Invalid one itself, from its kind, name and causes.
            assert result.stderr.startswith(f'The VirtualMachine "{case.name}" is invalid: '), result.stderr
            for cause in status["details"]["causes"]:
                assert f"{cause['field']}: {cause['message']}" in result.stderr, result.stderr
        answer = control_plane.request(expand_spec_path(version, namespace, case.name))
        assert (answer.status, answer.header("Content-Type")) == (422, "application/json")
        assert answer.json() == status
        answer = control_plane.request(
            expand_vm_spec_path(version, namespace),
            method="PUT",
            body=vm_file.read_bytes(),
            headers={"Content-Type": "application/json"},
        )
        assert (answer.status, answer.header("Content-Type")) == (422, "application/json")
        assert answer.json() == status
