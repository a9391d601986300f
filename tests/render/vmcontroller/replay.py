"""Replaying a change-preview corpus case (hack/oracle/restart_corpus.py) against the engine."""

from __future__ import annotations

from typing import Any

from apiserver.render.objects import ObjectIndex
from apiserver.render.vmcontroller.preview import decide, oracle_answer

COMPARED = (
    "restartRequired",
    "message",
    "outcome",
    "liveUpdates",
    "vmPatches",
    "syncErrorReason",
    "syncError",
)


def ours(inp: dict[str, Any]) -> dict[str, Any]:
    """The engine's answer for one oracle input, in the oracle's shape."""
    result = decide(
        inp["vm"],
        ObjectIndex(inp.get("objects") or ()),
        vmi=inp.get("vmi"),
        start_vm=inp.get("startVM"),
        kubevirt=inp.get("kubevirt"),
    )
    return oracle_answer(result)


def replay(record: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """None when the engine answers as KubeVirt did; else (KubeVirt's, ours), compared members only."""
    mine = ours(record["input"])
    theirs = record["answer"]
    left = {k: theirs.get(k) for k in COMPARED}
    right = {k: mine.get(k) for k in COMPARED}
    left["liveUpdates"] = left["liveUpdates"] or {}
    right["liveUpdates"] = right["liveUpdates"] or {}
    return None if left == right else (left, right)
