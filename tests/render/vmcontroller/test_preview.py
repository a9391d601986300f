"""The change preview a person reads: the rendered difference, the verdict and KubeVirt's message.

Running VMs come from the oracle corpus (their VMIs were made by KubeVirt's own ``startVMI`` and VMI
webhook), so the previews here are of VMs as KubeVirt runs them.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

from apiserver.render.objects import ObjectIndex
from apiserver.render.vmcontroller import jsonpatch
from apiserver.render.vmcontroller.preview import preview, propose

CORPUS = Path(__file__).with_name("corpus")


def _case(family: str, name: str) -> dict[str, Any]:
    with gzip.open(CORPUS / f"{family}.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record["name"] == name:
                return record  # type: ignore[no-any-return]
    raise AssertionError(f"no case {name!r} in {family}")


def _preview(inp: dict[str, Any], proposed: dict[str, Any] | None = None, **kw: Any) -> Any:
    return preview(
        proposed or inp["vm"],
        ObjectIndex(inp["objects"]),
        current=inp["startVM"],
        vmi=inp["vmi"],
        start_vm=inp["startVM"],
        kubevirt=inp["kubevirt"],
        **kw,
    )


def _apply(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """RFC 6902 add/remove/replace, written out here to check the patch independently."""
    doc = copy.deepcopy(doc)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last: Any = int(parts[-1]) if isinstance(parent, list) else parts[-1]
        if op["op"] == "remove":
            del parent[last]
        else:
            parent[last] = op["value"]
    return doc


def test_a_bigger_instancetype_within_max_sockets_goes_live() -> None:
    inp = _case("instancetype-switch", "u1.medium -> u1.xlarge (LiveUpdate)")["input"]
    result = _preview(inp, include_rendered=True)
    assert result.verdict == "live"
    assert result.message == ""
    assert result.live_updates["/spec/domain/cpu/sockets"] == 4
    assert result.live_updates["/spec/domain/memory/guest"] == "16Gi"
    changed = {c["path"]: (c.get("old"), c.get("new")) for c in result.changes}
    assert changed["/spec/template/spec/domain/cpu/sockets"] == (1, 4)
    assert changed["/spec/template/spec/domain/memory/guest"] == ("4Gi", "16Gi")
    assert (
        _apply(result.running["spec"], [{**op, "path": op["path"][5:]} for op in result.patch])
        == (result.proposed["spec"])
    )


def test_beyond_max_sockets_needs_a_restart_with_kubevirts_message() -> None:
    inp = _case("instancetype-switch", "u1.small -> u1.xlarge (LiveUpdate)")["input"]
    result = _preview(inp)
    assert result.verdict == "restart"
    assert result.message == "CPU sockets updated in template spec to a value higher than what's available"
    assert "/spec/domain/cpu/sockets" not in result.live_updates


def test_the_stage_rollout_strategy_restarts_what_live_update_would_apply() -> None:
    inp = _case("instancetype-switch", "u1.medium -> u1.xlarge (Stage)")["input"]
    result = _preview(inp)
    assert (result.verdict, result.rollout_strategy) == ("restart", "Stage")
    assert result.message == "a non-live-updatable field was changed in the template spec"


def test_a_preference_switch_needs_a_restart() -> None:
    inp = _case("preference-switch", "p-virtio -> p-sata (LiveUpdate)")["input"]
    result = _preview(inp)
    assert result.verdict == "restart"
    assert result.message == "a non-live-updatable field was changed in the template spec"
    changed = {c["path"]: (c.get("old"), c.get("new")) for c in result.changes}
    # p-virtio preferred a virtio interface model; p-sata prefers none
    assert changed["/spec/template/spec/domain/devices/interfaces/0/model"] == ("virtio", None)


def test_a_stopped_vm_takes_any_change_at_its_next_start() -> None:
    inp = _case("instancetype-switch", "u1.small -> u1.xlarge (LiveUpdate)")["input"]
    result = preview(inp["vm"], ObjectIndex(inp["objects"]), current=inp["startVM"], kubevirt=inp["kubevirt"])
    assert result.verdict == "stopped"
    assert result.changes


def test_a_vm_the_webhook_refuses_is_refused_with_its_causes() -> None:
    inp = _case("instancetype-switch", "u1.small -> u1.xlarge (LiveUpdate)")["input"]
    proposed = copy.deepcopy(inp["vm"])
    proposed["spec"]["template"]["spec"]["domain"]["cpu"] = {"sockets": 2}
    result = _preview(inp, proposed)
    assert result.verdict == "refused"
    assert result.refusal is not None and result.refusal["code"] == 422
    causes = result.refusal["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.template.spec.domain.cpu.sockets"]


def test_a_missing_instancetype_is_the_controllers_error() -> None:
    inp = _case("instancetype-switch", "u1.small -> u1.xlarge (LiveUpdate)")["input"]
    proposed = copy.deepcopy(inp["vm"])
    proposed["spec"]["instancetype"] = {"name": "no-such-size", "kind": "VirtualMachineClusterInstancetype"}
    result = _preview(inp, proposed)
    assert result.verdict == "error"
    assert result.refusal is not None
    assert "no-such-size" in result.refusal["message"]


def test_propose_names_a_switch_or_an_upgrade_without_a_whole_vm() -> None:
    inp = _case("instancetype-switch", "u1.small -> u1.xlarge (LiveUpdate)")["input"]
    start = inp["startVM"]
    target = inp["vm"]["spec"]["instancetype"]
    switched = propose(start, instancetype=target)
    assert switched["spec"]["instancetype"] == {"name": "u1.xlarge", "kind": target["kind"]}
    assert "instancetypeRef" not in switched["status"]
    assert _preview(inp, switched).verdict == "restart"
    upgraded = propose(start, upgrade=True)
    assert "instancetypeRef" not in upgraded["status"]
    assert start["status"]["instancetypeRef"], "the caller's VM is not changed"
    assert _preview(inp, upgraded).verdict == "live"


def test_the_patch_escapes_pointer_tokens() -> None:
    old = {"metadata": {"labels": {"a/b": "1", "c~d": "2"}}}
    new = {"metadata": {"labels": {"a/b": "3"}}}
    ops = jsonpatch.diff(old, new)
    assert {"op": "remove", "path": "/metadata/labels/c~0d"} in ops
    assert {"op": "replace", "path": "/metadata/labels/a~1b", "value": "3"} in ops
    assert _apply(old, ops) == new
