"""The launcher corpus' inputs asked of KubeVirt live, where its ``expand-launcher`` oracle is built
(``KUBEVIRT_EXPAND_LAUNCHER_ORACLE``, else where build.sh puts it, else ../oracle/bin/expand-launcher): the
answers must still be the ones committed (the corpus is current), and ours must equal them. CI has no
oracle: the test skips, saying why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hack.oracle import launcher_corpus as CORPUS

ORACLE = Path(CORPUS.DEFAULT_ORACLE)


@pytest.mark.skipif(
    not ORACLE.exists(), reason=f"no expand-launcher oracle at {ORACLE} (not built on this machine)"
)
@pytest.mark.parametrize(
    "family", ["architectures", "dedicated", "gpus", "networks", "multus", "claims", "vmis"]
)
def test_kubevirt_answers_as_the_committed_corpus_says(family: str) -> None:
    cases = CORPUS.generate(family)[family]
    answers = CORPUS.ask_oracle(str(ORACLE), [given for _, given in cases])
    committed = {
        json.loads(line)["name"]: json.loads(line)["answer"]
        for line in (Path(__file__).parent / "cases" / f"{family}.jsonl").read_text().splitlines()
    }
    stale = [name for (name, _), answer in zip(cases, answers, strict=True) if committed.get(name) != answer]
    assert not stale, f"rerun hack/oracle/launcher_corpus.py: {stale[:5]}"
    differ = [
        name
        for (name, given), answer in zip(cases, answers, strict=True)
        if json.loads(json.dumps(CORPUS.run_case(given))) != answer
    ]
    assert not differ, differ[:5]
