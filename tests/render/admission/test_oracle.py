"""A small differential run against KubeVirt's own VM webhook, where its oracle binary is built.

``hack/oracle/diff_admission.py`` generates near-miss VMs from the golden admission cases and compares our verdict
with KubeVirt's (``expand-admit``, built by ../shared/oracle/build.sh; ``KUBEVIRT_EXPAND_ADMIT_ORACLE``
names it, else ../oracle/bin/expand-admit beside the repository). CI machines have no oracle: the test
skips there, saying why. Run the script itself for thousands of inputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hack.oracle import diff_admission as DIFF
from tests.support import shared

REPO = Path(__file__).resolve().parents[3]
ORACLE = Path(DIFF.DEFAULT_ORACLE)


@shared.needs_shared(shared.ADMISSION_CASES_DIR)
@pytest.mark.skipif(
    not ORACLE.exists(), reason=f"no expand-admit oracle at {ORACLE} (not built on this machine)"
)
@pytest.mark.parametrize("seed", [1, 2])
def test_near_misses_get_kubevirts_verdict(seed: int) -> None:
    inputs = DIFF.generate(per_case=1, seed=seed, limit=150, depth=2)
    differ = DIFF.run(str(ORACLE), inputs)
    shown = [json.dumps({"kubevirt": theirs, "ours": mine})[:600] for _, theirs, mine in differ[:3]]
    assert not differ, f"{len(differ)} of {len(inputs)} verdicts differ: {shown}"
