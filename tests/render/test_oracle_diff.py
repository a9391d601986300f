"""A short differential run against KubeVirt's own expand (hack/oracle/diff_expand.py): inputs composed from
scratch and golden inputs mutated, through the oracle and through ours, with no difference beyond
the known ones. Where the oracle binary is absent (CI) this skips; the long runs are the script's."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import shared
from tests.support.oracle import REPO, find_oracle, where

pytestmark = pytest.mark.skipif(
    find_oracle() is None, reason=f"no expand-oracle at {where()} (../shared/oracle builds it)"
)


@shared.needs_shared(shared.CASES_DIR)
def test_a_short_differential_run_finds_no_unknown_difference() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hack.oracle.diff_expand",
            "--composed",
            "150",
            "--mutated",
            "150",
            "--seed",
            "18",
        ],
        capture_output=True,
        cwd=REPO,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "300 inputs (seed 18)" in proc.stdout
    assert "differences not known: 0" in proc.stdout
    assert "same (expanded)" in proc.stdout  # it did expand things


def test_a_name_no_object_can_have_is_a_known_difference(tmp_path: Path) -> None:
    """revisionName "Always": KubeVirt asks the API server and answers not found; we refuse the name on
    its field before reading anything (docs/security.md). The run counts it apart, not as a difference."""
    vm = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": "default"},
        "spec": {
            "instancetype": {"name": "it", "revisionName": "Always"},
            "template": {"spec": {"domain": {"devices": {}}}},
        },
    }
    replay = tmp_path / "inputs.jsonl"
    replay.write_text(json.dumps({"vm": vm, "objects": []}) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "hack.oracle.diff_expand", "--replay", str(replay)],
        capture_output=True,
        cwd=REPO,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.search(
        r"replay\s+invalid name \(we answer 422 on the field, KubeVirt not found\)\s+1\b", proc.stdout
    )
    assert "differences not known: 0" in proc.stdout
