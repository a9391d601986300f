"""The change-preview corpus: KubeVirt's own VM controller's answers (``expand-restart``, recorded by
hack/oracle/restart_corpus.py in tests/render/vmcontroller/corpus/) replayed against the engine.

Every case must get KubeVirt's RestartRequired verdict and message, its sync error, the VMI patches it
writes (CPU sockets, memory, affinity, tolerations, interfaces, hot-plugged volumes) and its VM patches
(the firmware UUID). Where the oracles are built, freshly generated cases are also compared live.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from hack.oracle import restart_corpus as GEN
from tests.render.vmcontroller.replay import replay

CORPUS = Path(__file__).with_name("corpus")
FAMILIES = sorted(p.name.removesuffix(".jsonl.gz") for p in CORPUS.glob("*.jsonl.gz"))


def _records(family: str) -> list[dict[str, Any]]:
    with gzip.open(CORPUS / f"{family}.jsonl.gz", "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def test_the_corpus_covers_every_family() -> None:
    assert set(FAMILIES) == set(GEN.FAMILIES)
    records = [r for family in FAMILIES for r in _records(family)]
    assert len(records) >= 900
    verdicts = {r["answer"]["restartRequired"] for r in records}
    assert verdicts == {True, False}, "both verdicts must occur"
    assert any(r["answer"].get("liveUpdates") for r in records)
    assert any(r["answer"].get("syncErrorReason") for r in records)


@pytest.mark.parametrize("family", FAMILIES)
def test_kubevirts_verdicts_on_every_case(family: str) -> None:
    records = _records(family)
    differ = [(r["name"], replay(r)) for r in records]
    differ = [d for d in differ if d[1] is not None]
    shown = [json.dumps({"case": name, "kubevirt": d[0], "ours": d[1]})[:800] for name, d in differ[:3] if d]
    assert not differ, f"{len(differ)} of {len(records)} differ: {shown}"


RESTART = GEN.find_binary(GEN.RESTART_ENV, "expand-restart")
LAUNCHER = GEN.find_binary(GEN.LAUNCHER_ENV, "expand-launcher")


@pytest.mark.skipif(
    RESTART is None or LAUNCHER is None,
    reason=f"no expand-restart/expand-launcher oracles (${GEN.RESTART_ENV}, ${GEN.LAUNCHER_ENV}; not built here)",
)
def test_fresh_cases_against_the_live_oracle() -> None:
    assert RESTART is not None and LAUNCHER is not None
    families, _ = GEN.build(RESTART, LAUNCHER, seed=7)
    records = [r for rs in families.values() for r in rs]
    differ = [r["name"] for r in records if replay(r) is not None]
    assert not differ, f"{len(differ)} of {len(records)} differ: {differ[:5]}"
