"""Every case of the launcher corpus (``cases/*.jsonl``, KubeVirt's own answers from ``expand-launcher``,
written by ``hack/oracle/launcher_corpus.py``) through our engine: the virt-launcher pod's containers, init
containers and totals, the memory overhead, and the VMI's CPU, memory, resources, architecture and machine
must be KubeVirt's, or the render must fail where KubeVirt's does, with its message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hack.oracle.launcher_corpus import FAMILIES, run_case

CASES = Path(__file__).parent / "cases"


def _cases() -> list[Any]:
    out = []
    for path in sorted(CASES.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            case = json.loads(line)
            out.append(pytest.param(case, id=f"{path.stem}/{case['name']}"))
    return out


ALL = _cases()


def test_the_corpus_covers_every_family_with_hundreds_of_cases() -> None:
    families = {p.id.split("/")[0] for p in ALL}
    assert families == set(FAMILIES)
    assert len(ALL) >= 800


@pytest.mark.parametrize("case", ALL)
def test_case_gets_kubevirts_answer(case: dict[str, Any]) -> None:
    ours = json.loads(json.dumps(run_case(case["input"])))
    assert ours == case["answer"]
