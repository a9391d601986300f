"""The folder source: indexing, reload on change, broken files keep their last good objects, deletes."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from apiserver.render.objects import ObjectRef
from apiserver.sources.base import ReportsCacheStats, Source
from apiserver.sources.folder import FolderSource
from tests.support.http_helpers import EXAMPLES, running_server, vm_path
from tests.support.patience import patience
from tests.support.waiting import eventually

VM_YAML = """\
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: {name}
  namespace: default
spec:
  instancetype:
    name: small
  template:
    spec:
      domain:
        devices: {{}}
"""

INSTANCETYPE_YAML = """\
apiVersion: instancetype.kubevirt.io/v1beta1
kind: VirtualMachineClusterInstancetype
metadata:
  name: small
spec:
  cpu:
    guest: {cpu}
  memory:
    guest: 1Gi
"""

FLAVOR_YAML = """\
apiVersion: flavor.kubevirt.io/v1alpha1
kind: VirtualMachineFlavor
metadata:
  name: old
  namespace: default
spec: {}
"""


def bump(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` at once (a poll never sees it half written, as with a ConfigMap),
    with an mtime surely different from before (coarse filesystem clocks)."""
    staged = path.with_name(f".{path.name}.new")  # hidden: the source skips it
    staged.write_text(text)
    st = staged.stat()
    os.utime(staged, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    os.replace(staged, path)


@pytest.fixture
async def folder(tmp_path: Path) -> AsyncIterator[tuple[Path, FolderSource]]:
    directory = tmp_path / "manifests"
    directory.mkdir()
    (directory / "vm.yaml").write_text(VM_YAML.format(name="vm1"))
    (directory / "types.yaml").write_text(INSTANCETYPE_YAML.format(cpu=1) + "---\n" + FLAVOR_YAML)
    source = FolderSource(directory, poll_interval=0.05, watch=False)
    await source.start()
    yield directory, source
    await source.close()


async def cpu_of(source: FolderSource) -> object:
    obj = await source.get(ObjectRef("VirtualMachineClusterInstancetype", "", "small"))
    return None if obj is None else obj["spec"]["cpu"]["guest"]


async def test_indexes_every_kind(folder: tuple[Path, FolderSource]) -> None:
    _, source = folder
    assert isinstance(source, ReportsCacheStats)
    _typed: Source = source
    vm = await source.get_vm("default", "vm1")
    assert vm is not None and vm["metadata"]["name"] == "vm1"
    assert await source.get_vm("other", "vm1") is None
    assert await cpu_of(source) == 1
    # Legacy flavor kinds are found under the instancetype kind they were renamed to.
    assert await source.get(ObjectRef("VirtualMachineInstancetype", "default", "old")) is not None
    assert [c.ok for c in source.checks()] == [True]


async def test_examples_folder(tmp_path: Path) -> None:
    source = FolderSource(EXAMPLES, watch=False)
    await source.start()
    try:
        assert await source.get_vm("default", "fedora") is not None
        assert await source.get(ObjectRef("VirtualMachinePreference", "default", "fedora")) is not None
        assert await source.kubevirt() is not None
        assert len(await source.presets("default")) >= 1
        assert all(c.ok for c in source.checks())
    finally:
        await source.close()


async def test_reload_on_change_and_new_file(folder: tuple[Path, FolderSource]) -> None:
    directory, source = folder
    bump(directory / "types.yaml", INSTANCETYPE_YAML.format(cpu=4))
    (directory / "vm2.json").write_text(
        '{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", '
        '"metadata": {"name": "vm2", "namespace": "default"}, "spec": {}}'
    )
    await eventually(lambda: source.reloads >= 2 and source._snapshot.vms.get(("default", "vm2")) is not None)
    assert await cpu_of(source) == 4
    assert await source.get_vm("default", "vm2") is not None


def warned(source: FolderSource) -> bool:
    """The source reports a problem while staying ready (after a good first read)."""
    (check,) = source.checks()
    assert check.ok, check.message
    return bool(check.message)


async def test_broken_file_keeps_last_good_objects_and_warns(
    folder: tuple[Path, FolderSource],
) -> None:
    directory, source = folder
    bump(directory / "types.yaml", "kind: VirtualMachineClusterInstancetype\nmetadata: [unclosed\n")
    await eventually(lambda: warned(source))
    (check,) = source.checks()
    assert check.name == "manifests"
    assert "types.yaml" in check.message and "line" in check.message
    assert await cpu_of(source) == 1  # still served from before
    # Fixing the file replaces the kept objects.
    bump(directory / "types.yaml", INSTANCETYPE_YAML.format(cpu=2))
    await eventually(lambda: not warned(source))
    assert await cpu_of(source) == 2


async def test_broken_new_file_serves_nothing_from_it(
    folder: tuple[Path, FolderSource], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "apiserver.sources.folder")
    directory, source = folder
    (directory / "bad.yaml").write_text("- just\n- a list\n")
    await eventually(lambda: warned(source))
    assert "bad.yaml" in source.checks()[0].message
    assert await source.get_vm("default", "vm1") is not None
    # The log does not claim objects "read from it before" for a file never read.
    (line,) = logged(caplog, "bad.yaml")
    assert line.endswith("(nothing from it is served)"), line


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 100 levels"),  # crashed libyaml's composer
        ("kind: X\nx: &a [*a]\n", 'anchor "a" value contains itself'),
        ("kind: X\nmetadata: {name: a, name: b}\n", 'duplicate field "metadata.name"'),
    ],
    ids=["deep", "recursive", "duplicate"],
)
async def test_hostile_file_is_reported_and_the_rest_served(
    folder: tuple[Path, FolderSource], text: str, fragment: str
) -> None:
    directory, source = folder
    (directory / "bad.yaml").write_text(text)
    await eventually(lambda: warned(source))
    assert "bad.yaml" in source.checks()[0].message and fragment in source.checks()[0].message
    assert await source.get_vm("default", "vm1") is not None


async def test_deleted_file_removes_its_objects(folder: tuple[Path, FolderSource]) -> None:
    directory, source = folder
    (directory / "vm.yaml").unlink()
    await eventually(lambda: source._snapshot.vms.get(("default", "vm1")) is None)
    assert await source.get_vm("default", "vm1") is None
    assert await cpu_of(source) == 1


async def test_deleting_a_broken_file_clears_its_error(folder: tuple[Path, FolderSource]) -> None:
    directory, source = folder
    (directory / "bad.yaml").write_text("{")
    await eventually(lambda: warned(source))
    (directory / "bad.yaml").unlink()
    await eventually(lambda: not warned(source))


async def test_cache_stats_count_hits_and_misses(folder: tuple[Path, FolderSource]) -> None:
    _, source = folder
    await source.get(ObjectRef("VirtualMachineClusterInstancetype", "", "small"))
    await source.get(ObjectRef("VirtualMachineClusterInstancetype", "", "missing"))
    stats = {s.cache: s for s in source.cache_stats()}
    assert stats["objects"].size == 2
    assert (stats["objects"].hits, stats["objects"].misses) == (1, 1)
    assert stats["virtualmachines"].size == 1


async def test_watchfiles_notices_a_change_quickly(tmp_path: Path) -> None:
    directory = tmp_path / "watched"
    directory.mkdir()
    source = FolderSource(directory, poll_interval=60, watch=True)
    await source.start()
    try:
        # The watcher starts in the background, and a change made before it watches waits for the poll, a
        # minute away: probe until it sees one.
        loop = asyncio.get_running_loop()
        deadline, reloads = loop.time() + patience(5), source.reloads
        while source.reloads == reloads:
            assert loop.time() < deadline, "the watcher never noticed a change"
            bump(directory / "probe.yaml", "# probe\n")
            await asyncio.sleep(0.1)  # a probe loop (a change each round), bounded by the deadline above
        (directory / "vm.yaml").write_text(VM_YAML.format(name="late"))
        await eventually(lambda: ("default", "late") in source._snapshot.vms, within=5)
    finally:
        await source.close()


def verbose_line(body: bytes) -> str:
    (line,) = [line for line in body.decode().splitlines() if "]manifests " in line]
    return line


def source_errors(metrics: bytes) -> str:
    (line,) = [
        line for line in metrics.decode().splitlines() if line.startswith("kubevirt_expand_source_errors ")
    ]
    return line.split()[1]


def logged(caplog: pytest.LogCaptureFixture, fragment: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if fragment in r.getMessage()]


async def test_a_broken_file_after_a_good_read_is_reported_and_the_server_stays_ready(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "apiserver.sources.folder")
    directory = tmp_path / "served"
    shutil.copytree(EXAMPLES, directory)
    broken = directory / "instancetypes.yaml"
    good = broken.read_text()
    source = FolderSource(directory, poll_interval=0.02, watch=False)
    async with running_server(source, tmp_path) as srv:
        assert (await srv.get("/readyz")).status == 200
        assert source_errors((await srv.get("/metrics")).body) == "0.0"
        bump(broken, "kind: VirtualMachineInstancetype\nmetadata: [unclosed\n")
        await eventually(lambda: warned(source))
        scans = source.scans
        await eventually(lambda: source.scans >= scans + 10)  # polled again and again, unchanged
        ready = await srv.get("/readyz")
        verbose = await srv.get("/readyz?verbose")
        one = await srv.get("/readyz/manifests?verbose")
        vm = await srv.get(vm_path(name="fedora"))
        metrics = (await srv.get("/metrics")).body
        errors_logged = logged(caplog, str(broken))
        bump(broken, good)
        await eventually(lambda: not warned(source))
        fixed = await srv.get("/readyz?verbose")
        fixed_metrics = (await srv.get("/metrics")).body
    assert (ready.status, ready.body) == (200, b"ok")
    assert verbose.status == 200 and verbose.body.decode().endswith("readyz check passed\n")
    line = verbose_line(verbose.body)
    assert line.startswith(f"[+]manifests ok - warning, serving what was read before: {broken}: "), line
    assert "document 1, line 3: " in line
    assert one.status == 200 and verbose_line(one.body) == line
    assert vm.status == 200  # the instancetypes read before are still applied
    assert source_errors(metrics) == "1.0"
    # One log line for the change, not one per poll.
    assert len(errors_logged) == 1 and "document 1, line 3: " in errors_logged[0], errors_logged
    assert "serving the 2 object(s) read from it before" in errors_logged[0]
    assert verbose_line(fixed.body) == "[+]manifests ok"
    assert source_errors(fixed_metrics) == "0.0"
    assert logged(caplog, "read without errors again") == [
        f"{broken}: read without errors again (2 object(s))"
    ]


async def test_a_folder_broken_from_the_start_is_unready_until_one_good_read(tmp_path: Path) -> None:
    directory = tmp_path / "manifests"
    directory.mkdir()
    (directory / "vm.yaml").write_text(VM_YAML.format(name="vm1"))
    bad = directory / "types.yaml"
    bad.write_text("- just\n- a list\n")
    source = FolderSource(directory, poll_interval=0.02, watch=False)
    async with running_server(source, tmp_path) as srv:
        await eventually(lambda: source.scans > 0)
        unready = await srv.get("/readyz?verbose")
        metrics = (await srv.get("/metrics")).body
        bump(bad, INSTANCETYPE_YAML.format(cpu=1))
        await eventually(lambda: source.checks()[0].ok)
        ready = await srv.get("/readyz")
        bump(bad, "{")
        await eventually(lambda: warned(source))
        still = await srv.get("/readyz?verbose")
    assert unready.status == 500
    assert verbose_line(unready.body).startswith(f"[-]manifests failed: {bad}: document 1: not a Kubernetes")
    assert source_errors(metrics) == "1.0"
    assert (ready.status, ready.body) == (200, b"ok")
    assert still.status == 200
    assert verbose_line(still.body).startswith(
        f"[+]manifests ok - warning, serving what was read before: {bad}"
    )


async def test_a_missing_folder_is_unready_and_one_gone_after_a_good_read_warns(tmp_path: Path) -> None:
    directory = tmp_path / "later"
    source = FolderSource(directory, poll_interval=0.02, watch=False)
    async with running_server(source, tmp_path) as srv:
        await eventually(lambda: source.scans > 0)
        unready = await srv.get("/readyz?verbose")
        # The folder appears whole, as a mounted volume does: a poll between a mkdir and the file's write
        # would read it empty (and good), and the test would go on before the VM was ever read.
        staged = tmp_path / "staged"
        staged.mkdir()
        (staged / "vm.yaml").write_text(VM_YAML.format(name="vm1"))
        staged.rename(directory)
        await eventually(lambda: source.checks()[0].ok)
        ready = await srv.get("/readyz")
        directory.rename(tmp_path / "elsewhere")
        await eventually(lambda: warned(source))
        gone = await srv.get("/readyz?verbose")
        metrics = (await srv.get("/metrics")).body
        vm = await source.get_vm("default", "vm1")
    assert unready.status == 500
    assert verbose_line(unready.body).startswith(f"[-]manifests failed: cannot read directory {directory}: ")
    assert (ready.status, ready.body) == (200, b"ok")
    assert gone.status == 200
    warning = f"[+]manifests ok - warning, serving what was read before: cannot read directory {directory}: "
    assert verbose_line(gone.body).startswith(warning)
    assert source_errors(metrics) == "1.0"
    assert vm is not None  # kept from the good read
