"""hack/benchmarks/collection.py --flat runs end to end against a control plane of its own (tiny settings:
this checks that it measures both callers on both sets and prints their ratios, not how fast anything is)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.realk8s.controlplane import REPO


def test_flat_measures_both_callers_on_both_sets(tmp_path: Path) -> None:
    out = tmp_path / "flat.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hack.benchmarks.collection",
            "--flat",
            "--sizes=1200",
            "--rounds=1",
            "--seconds=1",
            "--warmup=0.5",
            "--connections=2",
            "--processes=1",
            f"--json={out}",
        ],
        capture_output=True,
        cwd=REPO,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert figures["vms"] == 1200
    (row,) = figures["rounds"]
    assert set(row) == {f"{c} {s}" for c in ("admin", "token") for s in ("1000", "all")}
    # Every GET answered 200 (the benchmark fails otherwise), the token user's through its RoleBindings.
    assert all(w["rps"] > 0 and w["cpu_us_per_request"] > 0 for w in row.values()), row
    # The admin (system:masters) is never reviewed.
    assert row["admin 1000"]["reviews_asked"] == row["admin all"]["reviews_asked"] == 0
    for caller in ("admin", "token"):
        assert f"{caller}: random VMs among 1,000 " in proc.stdout
    assert proc.stdout.count("rate ") == 2 and proc.stdout.count("CPU per request ") == 2
