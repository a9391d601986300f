"""A small differential run against KubeVirt's own VM webhook, where its oracle binary is built.

``hack/diff_admission.py`` generates near-miss VMs from the golden admission cases and compares our verdict
with KubeVirt's (``expand-admit``, built by ../shared/oracle/build.sh; ``KUBEVIRT_EXPAND_ADMIT_ORACLE``
names it, else ../oracle/bin/expand-admit beside the repository). CI machines have no oracle: the test
skips there, saying why. Run the script itself for thousands of inputs.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests import shared

REPO = Path(__file__).resolve().parents[1]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("diff_admission", REPO / "hack" / "diff_admission.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


DIFF = _script()
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
