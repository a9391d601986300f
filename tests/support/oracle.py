"""Where KubeVirt's own code is, as command-line oracles (../shared/oracle): for the differential run
(hack/oracle/diff_expand.py), the benchmark (hack/benchmarks/engine.py) and the tests that use them, which skip
where the binary is absent (CI)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

REPO: Final = Path(__file__).resolve().parents[2]
ENV: Final = "KUBEVIRT_EXPAND_ORACLE"
PLACES: Final = (
    Path.home() / ".cache" / "kubevirt-oracle" / "bin" / "expand-oracle",  # build.sh's default OUT
    REPO.parent / "oracle" / "bin" / "expand-oracle",
)


def find_oracle(given: str | None = None) -> Path | None:
    """The expand-oracle binary: ``given``, else ``$KUBEVIRT_EXPAND_ORACLE``, else where build.sh puts
    it; None when there is none."""
    given = given or os.environ.get(ENV)
    if given:
        return Path(given) if Path(given).is_file() else None
    return next((p for p in PLACES if p.is_file()), None)


def where() -> str:
    """The places looked at, for a skip reason."""
    return os.environ.get(ENV) or " or ".join(str(p) for p in PLACES)
