"""The test suite itself, as a newcomer and CI meet it: without ``../shared``, in parallel, never passing empty.

Each test runs pytest (or ``hack/test.sh``) in a subprocess on a copy of the project, so what is checked is
what a user sees: the exit code and the lines printed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import shared

REPO = shared.REPO
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
# What the parent run (its xdist worker, CI, a custom shared/) set must not reach the child.
FOREIGN_ENV = ("CI", shared.SHARED_ENV, shared.CASES_ENV, *shared.REQUIRE_ENVS, "KUBEBUILDER_ASSETS")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in FOREIGN_ENV and not k.startswith("PYTEST_")}
    return env | extra


def project_copy(tmp_path: Path) -> Path:
    """The project's files (tracked and new, not ignored) in ``tmp_path/project``, with no ``shared`` beside."""
    root = tmp_path / "project"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True
    )
    if listed.returncode != 0:  # not a git checkout (an unpacked archive): everything but caches
        junk = shutil.ignore_patterns(".git", ".venv", "*cache*", "*.egg-info", "build", "dist")
        shutil.copytree(REPO, root, ignore=junk)
        return root
    for name in filter(None, listed.stdout.decode().split("\0")):
        origin = REPO / name
        if origin.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, root / name)
    assert not (tmp_path / "shared").exists()
    return root


def run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PYTEST, *args], cwd=cwd, env=clean_env(**env), capture_output=True, text=True, timeout=600
    )


def untracked(root: Path) -> list[str]:
    """What ``git status`` shows in ``root`` besides the files staged by :func:`stage`."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=root, capture_output=True, text=True
    )
    assert status.returncode == 0, status.stderr
    return [line for line in status.stdout.splitlines() if not line.startswith("A  ")]


def stage(root: Path) -> None:
    """Make ``root`` a git repository with every file staged, as a fresh clone's ``git status`` sees it."""
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    assert untracked(root) == []


def test_without_shared_the_tests_needing_it_skip_with_one_reason(tmp_path: Path) -> None:
    root = project_copy(tmp_path)
    stage(root)
    # Every module is collected (none may fail without shared/); the tests needing it, or the real control
    # plane, are run: the fuzz targets drawing golden cases, the CLI and conformance cases, the Go types,
    # tests/realk8s and the real half of tests/parity.
    marks = f"{shared.MARK} or {shared.PLANE_MARK}"
    proc = run(root, "-n", "2", "--dist", "loadgroup", "-m", marks, "-rs")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    reason = f"../shared not found at {tmp_path / 'shared'}"
    lines = [line for line in out.splitlines() if reason in line]
    assert len(lines) == 1, out[-3000:]
    assert shared.SHARED_ENV in lines[0]  # says how to point elsewhere
    folded = re.fullmatch(r"SKIPPED \[(\d+)\] tests/conftest\.py:\d+: .*", lines[0])
    assert folded, lines[0]
    # One summary line per reason: that one alone (never a line per test).
    assert [line for line in out.splitlines() if line.startswith("SKIPPED ")] == lines
    # Nothing passed, failed or errored: every selected test skipped, all for that reason.
    tally = re.search(r"^(\d+) skipped(?:, \d+ deselected)? in ", out, re.MULTILINE)
    assert tally, out[-1000:]
    assert tally[1] == folded[1]
    assert int(tally[1]) >= 100  # 110 when written: conformance, CLI cases, Go types, the real control plane
    # The run wrote nothing git would show (no hypothesis database entries in tests/fuzz_regressions/).
    assert untracked(root) == []


def test_ci_refuses_to_run_without_shared(tmp_path: Path) -> None:
    root = project_copy(tmp_path)
    for name in shared.REQUIRE_ENVS:
        proc = run(root, "tests/render/kubernetes/test_quantity.py", **{name: "true"})
        assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout[-2000:]
        assert f"{name} is set, so these tests must run, not skip" in proc.stderr
        assert "passed" not in proc.stdout


def test_an_incomplete_shared_fails_the_tests_needing_the_missing_part(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    proc = run(
        REPO,
        "tests/render/kubernetes/test_quantity.py",
        "-k",
        "corpus",
        **{shared.SHARED_ENV: str(tmp_path / "shared")},
    )
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, proc.stdout[-2000:]
    assert f"not found, although {tmp_path / 'shared'} is there" in proc.stdout
    assert re.search(r"\b1 error\b", proc.stdout.splitlines()[-1]), proc.stdout[-2000:]


def test_a_missing_cases_folder_named_by_the_environment_fails(tmp_path: Path) -> None:
    proc = run(
        REPO,
        "tests/render/kubernetes/test_quantity.py",
        "-k",
        "corpus",
        **{shared.CASES_ENV: str(tmp_path / "none")},
    )
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, proc.stdout[-2000:]
    assert f"{shared.CASES_ENV} names {tmp_path / 'none'}, which does not exist" in proc.stdout


def test_hack_test_sh_runs_pytest_in_parallel_and_fails_when_nothing_is_collected(tmp_path: Path) -> None:
    """hack/test.sh with stand-ins for the linters (they are not what is checked) and the real pytest."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    stamp = subprocess.run(["sha256sum", "pyproject.toml"], cwd=REPO, capture_output=True, text=True)
    (venv / f".installed-{stamp.stdout[:16]}").touch()  # hack/venv.sh: already installed
    for tool in ("ruff", "mypy", "lint-imports"):
        (venv / "bin" / tool).write_text("#!/bin/sh\nexit 0\n")
    args = tmp_path / "pytest-args"
    (venv / "bin" / "pytest").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@" > {args}\nexec {sys.executable} -m pytest -p no:cacheprovider "$@"\n'
    )
    for tool in (venv / "bin").iterdir():
        tool.chmod(0o755)
    proc = subprocess.run(
        ["bash", "hack/test.sh", "tests/render/kubernetes/test_quantity.py", "-k", "no_test_is_named_so"],
        cwd=REPO,
        env=clean_env(VENV=str(venv)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert args.read_text().splitlines()[:4] == ["-n", "auto", "--dist", "loadgroup"]
    assert "no tests ran" in proc.stdout, proc.stdout[-2000:]
    assert proc.returncode == pytest.ExitCode.NO_TESTS_COLLECTED


def test_xdist_keeps_each_group_on_one_worker() -> None:
    """--dist loadgroup hands out work units: a module's tests (up to tests/conftest.py's CHUNK) go together.
    pytest 9.2 silently breaks this (pytest-dev/pytest-xdist#1386; pyproject.toml pins pytest below it)."""
    files = ["tests/render/kubernetes/test_quantity.py", "tests/render/instancetype/test_revision.py"]
    proc = run(REPO, "-n", "2", "--dist", "loadgroup", "-vv", *files)
    assert proc.returncode == 0, proc.stdout[-3000:]
    # Skipped tests count too: without ../shared some of these skip, on their group's worker all the same.
    ran = re.findall(
        r"^\[(gw\d+)\] \[ *\d+%\] (?:PASSED|SKIPPED) (tests/[^:]+)::.+@(\S+) *$", proc.stdout, re.MULTILINE
    )
    workers: dict[str, set[str]] = {}
    groups: dict[str, set[str]] = {}
    for worker, module, group in ran:
        workers.setdefault(module, set()).add(worker)
        groups.setdefault(module, set()).add(group)
    assert sorted(workers) == sorted(files), proc.stdout[-3000:]
    assert all(len(used) == 1 for used in workers.values()), workers
    assert groups == {module: {f"{module}#0"} for module in files}
    tally = re.search(r"\b(\d+) passed(?:, (\d+) skipped)? in ", proc.stdout)
    assert tally, proc.stdout[-1000:]
    assert len(ran) == int(tally[1]) + int(tally[2] or 0) > 140  # 151 without ../shared, 223 with it


FUZZ_PROBE = """
from hypothesis import given, strategies as st

from tests.support.fuzzing import count, fuzz


@fuzz("probe", 5, keep_failures=False)
@given(st.integers())
def test_probe(n: int) -> None:
    count("probe")
"""


def test_the_summary_says_how_to_repeat_each_fuzz_run(tmp_path: Path) -> None:
    """A seed where hypothesis drew one, the forced seed when given, "derandomized" under ``CI`` (where
    hypothesis picks the examples from the test's code), also from xdist workers."""
    root = project_copy(tmp_path)
    (root / "tests" / "test_probe_fuzz.py").write_text(FUZZ_PROBE)
    (tmp_path / "shared").mkdir()  # with CI set, a missing ../shared would stop the run before the test
    summaries = {}
    for label, env in (
        ("drawn", {}),
        ("forced", {"KUBEVIRT_EXPAND_FUZZ_SEED": "1234"}),
        ("ci", {"CI": "true"}),
    ):
        proc = run(root, "-n", "2", "tests/test_probe_fuzz.py", **env)
        assert proc.returncode == 0, proc.stdout[-2000:]
        lines = [line for line in proc.stdout.splitlines() if line.startswith("fuzz: probe: ")]
        assert len(lines) == 1, proc.stdout[-2000:]
        summaries[label] = lines[0]
    assert re.fullmatch(r"fuzz: probe: 5 examples, seed \d{6,}", summaries["drawn"]), summaries
    assert summaries["forced"] == "fuzz: probe: 5 examples, seed 1234"
    assert summaries["ci"] == "fuzz: probe: 5 examples, seed derandomized"
