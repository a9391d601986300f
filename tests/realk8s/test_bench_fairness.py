"""hack/benchmarks/fairness.py runs end to end against a control plane of its own (tiny settings: this checks
that it works and reports every figure, not how fast anything is)."""

from __future__ import annotations

import subprocess
import sys

from tests.realk8s.controlplane import REPO


def test_bench_fairness_reports_both_modes_every_way_and_the_minted_watches() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hack.benchmarks.fairness", "--seconds=0.5", "--concurrency=4", "--minted=3"],
        capture_output=True,
        cwd=REPO,
        text=True,
        timeout=600,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    assert "CPU seats off (--cpu-seats=0):" in out and "CPU seats on (default seats):" in out
    for line in ("B's GET alone:", "B's GET while A saturates:"):
        assert sum(f"straight   {line}" in x for x in out.splitlines()) == 2, out
        assert sum(f"aggregator {line}" in x for x in out.splitlines()) == 2, out
    assert out.count("B's GET while A repeats one PUT (cached)") == 2, out
    assert "'200'" in out and "no answer" not in out, out
    assert "3 minted identities' watches: {200: 3}" in out and "B's first watch: 200" in out, out
