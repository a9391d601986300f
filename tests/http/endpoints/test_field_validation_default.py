"""A PUT that names no ``fieldValidation`` is judged at ``Warn``, kube-apiserver's default for a write that
names none: a case-mismatched member (``dedicatedCPUPlacement``, as a UI backend may send it) and an
unknown one go out as ``Warning`` headers in kube-apiserver's format, and the answer is the expansion of
the VM as Go decodes it (the member matched case-insensitively, the typo dropped: what virt-api answers
for the VM ``virtctl expand --file`` sends after its typed round trip). kubectl's
``?fieldValidation=Strict`` refuses, ``Ignore`` says nothing."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from apiserver.documents.manifests import read_manifest_paths
from tests.support.http_helpers import EXAMPLES, MemorySource, put_path, running_server

LAUNCH = "/apis/subresources.kubevirt.io/v1/namespaces/default/launch-vm-spec"
WARNINGS = [
    r'299 - "unknown field \"spec.template.spec.domain.cpu.dedicatedCPUPlacement\""',
    r'299 - "unknown field \"spec.template.spec.domain.x\""',
]


def _vm() -> dict[str, Any]:
    """A VM without an instancetype, its CPU pinned through a case-mismatched member, and a typo."""
    (vm,) = [o for _, o in read_manifest_paths([str(EXAMPLES / "vm-fedora.yaml")])]
    vm = copy.deepcopy(vm)
    vm["spec"].pop("instancetype", None)
    vm["spec"].pop("preference", None)
    domain = vm["spec"]["template"]["spec"]["domain"]
    domain["cpu"] = {"cores": 2, "dedicatedCPUPlacement": True}
    domain["memory"] = {"guest": "1Gi"}
    domain["x"] = 1
    return vm


async def test_put_without_field_validation_warns_and_answers_the_decoded_vm(tmp_path: Path) -> None:
    source = MemorySource([o for _, o in read_manifest_paths([str(EXAMPLES)])])
    vm = _vm()
    async with running_server(source, tmp_path) as srv:
        default = await srv.put(put_path(), json_body=vm)
        empty = await srv.put(put_path() + "?fieldValidation=", json_body=vm)
        ignored = await srv.put(put_path() + "?fieldValidation=Ignore", json_body=vm)
        strict = await srv.put(put_path() + "?fieldValidation=Strict", json_body=vm)
        launched = await srv.put(LAUNCH, json_body=vm)
        launched_strict = await srv.put(LAUNCH + "?fieldValidation=Strict", json_body=vm)
    assert default.status == empty.status == ignored.status == 200
    assert sorted(default.header_lists["warning"]) == WARNINGS
    assert sorted(empty.header_lists["warning"]) == WARNINGS
    assert "warning" not in ignored.header_lists
    # The answer is Ignore's: the member matched as Go matches it, the typo dropped.
    assert default.json() == ignored.json()
    cpu = default.json()["spec"]["template"]["spec"]["domain"]["cpu"]
    assert cpu["dedicatedCpuPlacement"] is True and "dedicatedCPUPlacement" not in cpu

    assert strict.status == 422
    fields = sorted(c["field"] for c in strict.json()["details"]["causes"])
    assert fields == ["spec.template.spec.domain.cpu.dedicatedCPUPlacement", "spec.template.spec.domain.x"]

    # launch-vm-spec: the same default, its warnings the same headers
    assert launched.status == 200
    assert sorted(launched.header_lists["warning"])[: len(WARNINGS)] == WARNINGS
    assert launched_strict.status == 422
