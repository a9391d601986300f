"""hack/benchmarks/tenancy.py runs end to end against a control plane of its own (tiny settings: this checks
that it works and reports every figure, not how fast anything is)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.realk8s.controlplane import REPO


def test_bench_tenancy_reports_both_servers_and_endpoints(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hack.benchmarks.tenancy",
            "--users=2",
            "--duration=0.5",
            "--rounds=1",
            "--concurrency=2",
            f"--json={out}",
        ],
        capture_output=True,
        cwd=REPO,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(out.read_text())
    assert set(results) == {
        f"{e} {p} {s}"
        for e in ("GET", "PUT")
        for p in ("cold", "warm")
        for s in ("default", "authorize-references")
    }
    assert all(r["errors"] == 0 and r["requests"] > 0 for r in results.values()), results
    # Cold, each request is reviewed itself; with the flag, each of its two references too.
    for endpoint in ("GET", "PUT"):
        assert results[f"{endpoint} cold default"]["reviews_asked"] == 2
        assert results[f"{endpoint} cold authorize-references"]["reviews_asked"] == 6
    assert "ratio (flag / default)" in proc.stdout
