"""The folder source: indexing, reload on change, broken files keep their last good objects, deletes."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from apiserver.render.objects import ObjectRef
from apiserver.sources.base import ReportsCacheStats, Source
from apiserver.sources.folder import FolderSource
from tests.http_helpers import EXAMPLES, running_server, vm_path

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
    """Write ``text`` with an mtime surely different from before (coarse filesystem clocks)."""
    path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


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


async def wait_for(condition: Callable[[], bool], within: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.02)


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
    await wait_for(lambda: source.reloads >= 2 and source._snapshot.vms.get(("default", "vm2")) is not None)
    assert await cpu_of(source) == 4
    assert await source.get_vm("default", "vm2") is not None


async def test_broken_file_keeps_last_good_objects_and_fails_readiness(
    folder: tuple[Path, FolderSource],
) -> None:
    directory, source = folder
    bump(directory / "types.yaml", "kind: VirtualMachineClusterInstancetype\nmetadata: [unclosed\n")
    await wait_for(lambda: not source.checks()[0].ok)
    (check,) = source.checks()
    assert check.name == "manifests"
    assert "types.yaml" in check.message and "line" in check.message
    assert await cpu_of(source) == 1  # still served from before
    # Fixing the file replaces the kept objects.
    bump(directory / "types.yaml", INSTANCETYPE_YAML.format(cpu=2))
    await wait_for(lambda: source.checks()[0].ok)
    assert await cpu_of(source) == 2


async def test_broken_new_file_serves_nothing_from_it(folder: tuple[Path, FolderSource]) -> None:
    directory, source = folder
    (directory / "bad.yaml").write_text("- just\n- a list\n")
    await wait_for(lambda: not source.checks()[0].ok)
    assert "bad.yaml" in source.checks()[0].message
    assert await source.get_vm("default", "vm1") is not None


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
    await wait_for(lambda: not source.checks()[0].ok)
    assert "bad.yaml" in source.checks()[0].message and fragment in source.checks()[0].message
    assert await source.get_vm("default", "vm1") is not None


async def test_deleted_file_removes_its_objects(folder: tuple[Path, FolderSource]) -> None:
    directory, source = folder
    (directory / "vm.yaml").unlink()
    await wait_for(lambda: source._snapshot.vms.get(("default", "vm1")) is None)
    assert await source.get_vm("default", "vm1") is None
    assert await cpu_of(source) == 1


async def test_deleting_a_broken_file_clears_its_error(folder: tuple[Path, FolderSource]) -> None:
    directory, source = folder
    (directory / "bad.yaml").write_text("{")
    await wait_for(lambda: not source.checks()[0].ok)
    (directory / "bad.yaml").unlink()
    await wait_for(lambda: source.checks()[0].ok)


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
        await asyncio.sleep(0.2)  # let the watcher start
        (directory / "vm.yaml").write_text(VM_YAML.format(name="late"))
        await wait_for(lambda: ("default", "late") in source._snapshot.vms, within=5)
    finally:
        await source.close()


async def test_served_over_https_with_readyz_reporting_the_file(tmp_path: Path) -> None:
    directory = tmp_path / "served"
    shutil.copytree(EXAMPLES, directory)
    source = FolderSource(directory, poll_interval=0.05, watch=False)
    async with running_server(source, tmp_path) as srv:
        assert (await srv.get("/readyz")).status == 200
        bump(directory / "instancetypes.yaml", "kind: [")
        await wait_for(lambda: not source.checks()[0].ok)
        ready = await srv.get("/readyz?verbose")
        missing = await srv.get(vm_path(name="nosuch"))
        metrics = (await srv.get("/metrics")).body.decode()
    assert ready.status == 500
    assert "[-]manifests failed: " in ready.body.decode()
    assert "instancetypes.yaml" in ready.body.decode()
    assert missing.status == 404
    assert 'kubevirt_expand_source_cache_objects{cache="virtualmachines"} 3.0' in metrics
