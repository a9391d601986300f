"""Issue 36's classes (hack/oracle/settle_classes.py) against KubeVirt's VM controller: its answers for
one sync pass (``expand-restart``) and for the passes until the VM settles (``expand-settle``), recorded in
tests/render/vmcontroller/settle/ and replayed here; where the oracles are built, freshly generated cases
are compared live as well."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from hack.oracle import restart_corpus as G
from hack.oracle import settle_classes as S

RECORDED = Path(__file__).with_name("settle")
CLASSES = sorted(p.name.removesuffix(".jsonl.gz") for p in RECORDED.glob("*.jsonl.gz"))


def _records(name: str) -> list[dict[str, Any]]:
    with gzip.open(RECORDED / f"{name}.jsonl.gz", "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def _differ(records: list[dict[str, Any]], *, settled: bool) -> list[str]:
    shown = []
    for record in records:
        pair = S.differs(record, settled=settled)
        if pair is not None:
            shown.append(json.dumps({"case": record["name"], "kubevirt": pair[0], "ours": pair[1]})[:800])
    return shown


def test_the_recordings_hold_what_each_class_is_about() -> None:
    assert set(CLASSES) == set(S.CLASSES)
    by_class = {name: _records(name) for name in CLASSES}
    assert all(len(records) >= 90 for records in by_class.values())
    removed = [
        r
        for r in by_class["null-empty"]
        if any(v is None for p, v in r["settled"]["liveUpdates"].items() if p != "/spec/affinity")
    ]
    assert removed, "a scheduling member removed from the VMI (null)"
    migration = by_class["migration"]
    assert any("/status/migratedVolumes" in r["settled"]["liveUpdates"] for r in migration)
    assert any("/spec/volumes" in r["settled"]["liveUpdates"] for r in migration)
    assert any(r["settled"].get("vmStatus", {}).get("volumeUpdateState") for r in migration)
    assert any("/status/conditions" in r["settled"]["liveUpdates"] for r in migration)
    assert any(
        "invalid volumes to update with migration" in (r["settled"]["message"] or "") for r in migration
    )
    later = [
        r for r in by_class["hotplug"] if r["settled"]["restartRequired"] and not r["pass"]["restartRequired"]
    ]
    assert later, "interfaces whose restart only the pass after the hotplug finds"


@pytest.mark.parametrize("name", CLASSES)
@pytest.mark.parametrize("settled", [False, True], ids=["one-pass", "settled"])
def test_kubevirts_answers_on_every_recorded_case(name: str, settled: bool) -> None:
    records = _records(name)
    differ = _differ(records, settled=settled)
    assert not differ, f"{len(differ)} of {len(records)} differ: {differ[:3]}"


RESTART = G.find_binary(G.RESTART_ENV, "expand-restart")
SETTLE = G.find_binary(S.SETTLE_ENV, "expand-settle")
LAUNCHER = G.find_binary(G.LAUNCHER_ENV, "expand-launcher")


@pytest.mark.skipif(
    RESTART is None or SETTLE is None or LAUNCHER is None,
    reason=f"no expand-restart/expand-settle/expand-launcher oracles (${G.RESTART_ENV}, ${S.SETTLE_ENV},"
    f" ${G.LAUNCHER_ENV}; not built here)",
)
def test_fresh_cases_against_the_live_oracles() -> None:
    assert RESTART is not None and SETTLE is not None and LAUNCHER is not None
    classes, _ = S.build(RESTART, SETTLE, LAUNCHER, seed=11, per_class=60)
    for name, records in classes.items():
        assert len(records) >= 50, name
        for settled in (False, True):
            differ = _differ(records, settled=settled)
            assert not differ, f"{name}: {len(differ)} of {len(records)} differ: {differ[:3]}"
