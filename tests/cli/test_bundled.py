"""The catalogs shipped with the package (``--catalog common-instancetypes[@VERSION]``, ``catalog list``):
the very objects of ../shared/catalogs, offline, by name, on every command that reads a catalog."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from apiserver.cli import bundled
from hack.generators import catalogs
from tests.cli.test_expand_gate import COMMAND
from tests.support.shared import SHARED

HERE = Path(__file__).parent / "typos"
SHARED_CATALOGS = SHARED / "catalogs" / "common-instancetypes"


def kubevirt_expand(*args: str, cwd: Path = HERE) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.skipif(not SHARED_CATALOGS.is_dir(), reason="../shared/catalogs is not at hand")
def test_the_bundled_releases_are_the_shared_catalogs_unmodified() -> None:
    assert catalogs.main(["--check"]) == 0, "rerun: .venv/bin/python -m hack.generators.catalogs"
    for release in bundled.releases():
        shipped = [d for d in yaml.safe_load_all(bundled.read(release)) if d]
        source = [
            d
            for name in catalogs.FILES
            for d in yaml.safe_load_all((SHARED_CATALOGS / release.version / name).read_text())
            if d
        ]
        assert shipped == source, release.label
        assert (release.instancetypes, release.preferences) == (
            sum(d["kind"] == "VirtualMachineClusterInstancetype" for d in source),
            sum(d["kind"] == "VirtualMachineClusterPreference" for d in source),
        )


def test_the_licence_and_origin_are_shipped_beside_them() -> None:
    folder = Path(bundled.__file__).parents[1] / "catalogs" / "common-instancetypes"
    assert "Apache License" in (folder / "LICENSE").read_text()
    readme = (folder / "README.md").read_text()
    assert "https://github.com/kubevirt/common-instancetypes" in readme
    assert all(r.commit in readme for r in bundled.releases())
    assert sum(p.stat().st_size for p in folder.iterdir()) < 40_000  # compressed: 15 KB of 440 KB of YAML


def test_catalog_list() -> None:
    proc = kubevirt_expand("catalog", "list")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "CATALOG                      RELEASED    INSTANCETYPES  PREFERENCES  COMMIT\n"
        "common-instancetypes@v1.7.0  2026-06-19  65             54           fb2fbb9687ba\n"
        "common-instancetypes@v1.6.0  2026-01-26  65             54           3f3d545de1d4\n"
        "common-instancetypes@v1.5.1  2025-10-14  55             54           d0f10bc385a6\n"
        "--catalog common-instancetypes is common-instancetypes@v1.7.0, the newest; Apache-2.0, from "
        "https://github.com/kubevirt/common-instancetypes\n"
    )


@pytest.mark.parametrize(
    ("name", "release", "instancetypes"),
    [
        ("common-instancetypes", "v1.7.0", 65),
        ("common-instancetypes@v1.6.0", "v1.6.0", 65),
        ("common-instancetypes@1.5.1", "v1.5.1", 55),
    ],
)
def test_expand_takes_a_bundled_release_by_name(name: str, release: str, instancetypes: int) -> None:
    proc = kubevirt_expand("expand", "-f", "repo/vms/cache.yaml", "--catalog", name, "--check")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[0] == (
        f"catalog: common-instancetypes@{release} (bundled): {instancetypes} VirtualMachineClusterInstancetype, "
        "54 VirtualMachineClusterPreference"
    )


def test_a_file_of_the_same_name_wins(tmp_path: Path) -> None:
    (tmp_path / "vms").mkdir()
    (tmp_path / "vms" / "cache.yaml").write_text((HERE / "repo/vms/cache.yaml").read_text())
    (tmp_path / "common-instancetypes").write_text("kind: [\n")
    proc = kubevirt_expand("expand", "-f", "vms", "--catalog", "common-instancetypes", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: --catalog common-instancetypes: document 1, line 2: ")


def test_a_release_that_is_not_bundled_and_a_name_close_to_one() -> None:
    proc = kubevirt_expand("expand", "-f", "repo/vms", "--catalog", "common-instancetypes@v1.4.0")
    assert proc.returncode == 2
    assert proc.stderr == (
        "error: --catalog common-instancetypes@v1.4.0: no such release bundled (bundled: v1.7.0, v1.6.0, "
        "v1.5.1; kubevirt-expand catalog list); for another, download its bundle from "
        "https://github.com/kubevirt/common-instancetypes/releases and give the file\n"
    )
    proc = kubevirt_expand("expand", "-f", "repo/vms", "--catalog", "common-instancetype")
    assert proc.returncode == 2
    assert proc.stderr == (
        "error: --catalog common-instancetype: no such file or directory, nor a bundled catalog; did you mean "
        "common-instancetypes? (kubevirt-expand catalog list)\n"
    )


def test_resources_takes_a_catalog() -> None:
    proc = kubevirt_expand("resources", "-f", "repo/vms/cache.yaml", "--catalog", "common-instancetypes")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("catalog: common-instancetypes@v1.7.0 (bundled): ")
    assert proc.stdout.splitlines()[1].split()[:3] == ["shop", "cache", "105m"]


def test_preview_takes_a_catalog(tmp_path: Path) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    text = (HERE / "repo/vms/cache.yaml").read_text()
    (before / "vm.yaml").write_text(text)
    (after / "vm.yaml").write_text(text.replace("u1.medium", "u1.large"))
    proc = kubevirt_expand("preview", "--before", str(before), "--after", str(after))
    assert proc.returncode == 1  # without a catalog neither side renders
    proc = kubevirt_expand(
        "preview", "--before", str(before), "--after", str(after), "--catalog", "common-instancetypes"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "shop/cache: live",
        "  /spec/template/spec/domain/cpu/sockets: 1 -> 2",
        '  /spec/template/spec/domain/memory/guest: "4Gi" -> "8Gi"',
    ]


def test_catalog_sizes_reads_a_bundled_release() -> None:
    proc = kubevirt_expand(
        "catalog", "sizes", "-f", "common-instancetypes@v1.5.1", "--configmap", "kv/vm-sizes"
    )
    assert proc.returncode == 0, proc.stderr
    data = yaml.safe_load(proc.stdout)["data"]
    assert "cluster.u1.medium.cpu" in data
