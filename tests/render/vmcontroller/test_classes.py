"""Issue 36's classes of the change preview, without the oracles: what the previews must answer, each
written from KubeVirt's answer (``expand-restart`` for one pass, ``expand-settle`` for the settled state)
on a running VM of the oracle corpus (its VMI made by KubeVirt's own ``startVMI`` and VMI webhook)."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from apiserver.render.objects import ObjectIndex
from apiserver.render.vmcontroller.preview import decide, preview

CORPUS = Path(__file__).with_name("corpus")
AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
        }
    }
}
TOLERATIONS = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]


def _case(family: str, name: str) -> dict[str, Any]:
    with gzip.open(CORPUS / f"{family}.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record["name"] == name:
                return copy.deepcopy(record["input"])  # type: ignore[no-any-return]
    raise AssertionError(f"no case {name!r} in {family}")


def _tspec(vm: dict[str, Any]) -> dict[str, Any]:
    return vm["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def _running_with(field: str, value: Any) -> dict[str, Any]:
    """A LiveUpdate VM started with ``field`` set, its VMI carrying it."""
    inp = _case("scheduling", "add node selector (LiveUpdate)")
    for vm in (inp["startVM"], inp["vm"]):
        _tspec(vm).pop("nodeSelector", None)
        _tspec(vm)[field] = copy.deepcopy(value)
    inp["vmi"]["spec"][field] = copy.deepcopy(value)
    return inp


# --- 1. null, not empty, in the live patches -------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "emptied", "patched"),
    [
        ("nodeSelector", {"zone": "a"}, {}, None),
        ("nodeSelector", {"zone": "a"}, None, None),
        ("tolerations", TOLERATIONS, [], None),
        ("tolerations", TOLERATIONS, None, None),
        ("affinity", AFFINITY, None, None),
        # a pointer to an empty struct survives Go's encoding: KubeVirt writes it as it is
        ("affinity", AFFINITY, {}, {}),
    ],
)
def test_an_emptied_scheduling_field_is_removed_from_the_vmi(
    field: str, value: Any, emptied: Any, patched: Any
) -> None:
    inp = _running_with(field, value)
    if emptied is None:
        del _tspec(inp["vm"])[field]
    else:
        _tspec(inp["vm"])[field] = emptied
    result = decide(
        inp["vm"],
        ObjectIndex(inp["objects"]),
        vmi=inp["vmi"],
        start_vm=inp["startVM"],
        kubevirt=inp["kubevirt"],
    )
    assert not result.restart_required
    assert result.live_updates == {f"/spec/{field}": patched}
    shown = preview(
        inp["vm"],
        ObjectIndex(inp["objects"]),
        current=inp["startVM"],
        vmi=inp["vmi"],
        start_vm=inp["startVM"],
        kubevirt=inp["kubevirt"],
    )
    assert shown.verdict == "live"
    assert shown.as_status()["liveUpdates"] == [{"path": f"/spec/{field}", "value": patched}]
