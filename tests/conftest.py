"""Suite-wide hooks: tests that read ``../shared`` skip with one reason without it (see tests/support/shared.py);
xdist work units; the fuzz profile and seeds in the terminal summary, so a run can be repeated."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import shared

# Tests per pytest-xdist work unit; see pytest_collection_modifyitems.
CHUNK = 200


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{shared.MARK}(path): reads path in ../shared; skips without it")
    config.addinivalue_line(
        "markers", f"{shared.PLANE_MARK}: runs etcd and kube-apiserver; skips without them"
    )
    demanded = shared.demanded_by()
    if shared.MISSING is not None and demanded is not None:
        raise pytest.UsageError(f"{shared.MISSING}; {demanded} is set, so these tests must run, not skip")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist turns the groups into node ids (a plain hook)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # With --dist loadgroup an ungrouped test is a work unit of its own, and thousands of millisecond tests
    # then wait on the controller's round trips (measured slower than one process). So consecutive tests of
    # a module go out together, up to CHUNK at a time; an explicit xdist_group (one control plane, one
    # wheel build) is kept. Only in an xdist worker with loadgroup (so `-k group` keeps its meaning elsewhere).
    if not getattr(config.option, "loadgroup", False):
        return
    seen: dict[str, int] = {}
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        module = item.nodeid.split("::", 1)[0]
        index = seen[module] = seen.get(module, -1) + 1
        item.add_marker(pytest.mark.xdist_group(f"{module}#{index // CHUNK}"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before any fixture: a session fixture (the real control plane) would otherwise skip for a reason of
    # its own. Raised from this one line, every such skip folds into one line of the summary.
    # A part that must be there but is not (a folder an environment variable names) fails the test even
    # where another part is merely absent.
    found = [
        shared.problem(mark.args[0] if mark.args else shared.SHARED)
        for mark in item.iter_markers(shared.MARK)
    ]
    for skip, why in sorted(problem for problem in found if problem is not None):
        if skip:
            pytest.skip(why)
        pytest.fail(why, pytrace=False)
    if item.get_closest_marker(shared.PLANE_MARK) is not None:
        from tests.realk8s.controlplane import unavailable

        reason = unavailable()
        if reason is not None:
            demanded = shared.demanded_by()
            if demanded is not None:
                pytest.fail(f"real control plane unavailable: {reason}; {demanded} is set", pytrace=False)
            pytest.skip(f"real control plane unavailable: {reason}")


# Fuzz figures per worker ("" without xdist): {target: (examples, seed)}. Workers send theirs with each
# report (user_properties travel to the controller), so the summary has them in a parallel run too.
_FUZZ_RAN: dict[str, dict[str, tuple[int, int | str | None]]] = {}


def _fuzz_snapshot() -> dict[str, tuple[int, int | str | None]] | None:
    fuzzing = sys.modules.get("tests.support.fuzzing")
    if fuzzing is None:
        return None
    return {target: (n, fuzzing.seed_of(target)) for target, n in fuzzing.RAN.items() if n}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    outcome = yield
    if call.when == "teardown":
        snapshot = _fuzz_snapshot()
        if snapshot:
            outcome.get_result().user_properties.append(("fuzz", snapshot))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for name, value in report.user_properties:
        if name == "fuzz":
            _FUZZ_RAN[str((getattr(report, "node", None) and report.node.gateway.id) or "")] = dict(value)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    ran = {target: figures for worker in _FUZZ_RAN.values() for target, figures in worker.items()}
    if not ran:
        return
    profile = sys.modules["tests.support.fuzzing"].PROFILE if "tests.support.fuzzing" in sys.modules else "ci"
    terminalreporter.write_line(f"fuzz: profile {profile} (KUBEVIRT_EXPAND_FUZZ_SEED=N repeats a seed)")
    for target, (n, seed) in sorted(ran.items()):
        terminalreporter.write_line(f"fuzz: {target}: {n} examples, seed {seed}")
