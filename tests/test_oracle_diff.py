"""A short differential run against KubeVirt's own expand (hack/diff_oracle.py): inputs composed from
scratch and golden inputs mutated, through the oracle and through ours, with no difference beyond
the known ones. Where the oracle binary is absent (CI) this skips; the long runs are the script's."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests import shared
from tests.oracle import REPO, find_oracle, where

pytestmark = pytest.mark.skipif(
    find_oracle() is None, reason=f"no expand-oracle at {where()} (../shared/oracle builds it)"
)


@shared.needs_shared(shared.CASES_DIR)
def test_a_short_differential_run_finds_no_unknown_difference() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "hack/diff_oracle.py"),
            "--composed",
            "150",
            "--mutated",
            "150",
            "--seed",
            "18",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "300 inputs (seed 18)" in proc.stdout
    assert "differences not known: 0" in proc.stdout
    assert "same (expanded)" in proc.stdout  # it did expand things
