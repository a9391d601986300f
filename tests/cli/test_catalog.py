"""``--catalog`` (what a cluster holds already, under the inputs), the ``Unresolved`` outcome and its exit
code against the others, and ``catalog snapshot`` where there is no cluster to read (the real one:
tests/realk8s/test_catalog_snapshot.py)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_expand_gate import cli, human_lines, instancetype, refused_vm, vm, write

CR = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "KubeVirt",
    "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
}


def cr(interface: str) -> dict[str, Any]:
    return {**CR, "spec": {"configuration": {"network": {"defaultNetworkInterface": interface}}}}


def rendered(proc: Any) -> list[dict[str, Any]]:
    return [json.loads(line)["object"] for line in proc.stdout.splitlines()]


def test_a_catalog_resolves_what_the_inputs_lack(tmp_path: Path) -> None:
    write(tmp_path / "vm.yaml", vm("a", "small"))
    write(tmp_path / "catalog.yaml", instancetype("small", 3), vm("ignored", "small"))
    alone = cli("-f", "vm.yaml", "-o", "jsonl", cwd=tmp_path)
    assert alone.returncode == 3
    assert json.loads(alone.stdout)["outcome"] == "Unresolved"
    proc = cli("-f", "vm.yaml", "--catalog", "catalog.yaml", "-o", "jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (got,) = rendered(proc)
    assert got["spec"]["template"]["spec"]["domain"]["cpu"]["sockets"] == 3
    # The catalog's VM is not judged; the run says what the catalog gave.
    assert human_lines(proc.stderr) == [
        "catalog: 1 file: 1 VirtualMachineInstancetype (1 other object ignored)",
        "summary: 1 VM, 1 admitted, 0 refused, 0 errors, 1 file",
    ]
    # The same as giving the object beside the VM.
    beside = cli("-f", "vm.yaml", "-f", "catalog.yaml", "-o", "jsonl", cwd=tmp_path)
    assert rendered(beside)[0] == got


def test_the_inputs_replace_the_catalogs_objects_and_the_first_catalog_wins(tmp_path: Path) -> None:
    write(tmp_path / "vm.yaml", vm("a", "small"))
    write(tmp_path / "mine.yaml", instancetype("small", 2))
    write(tmp_path / "one.yaml", instancetype("small", 3))
    write(tmp_path / "two.yaml", instancetype("small", 4))

    def sockets(*args: str) -> int:
        proc = cli("-f", "vm.yaml", *args, "-o", "jsonl", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return int(rendered(proc)[0]["spec"]["template"]["spec"]["domain"]["cpu"]["sockets"])

    assert sockets("-f", "mine.yaml", "--catalog", "one.yaml") == 2  # as applying it would
    assert sockets("--catalog", "one.yaml", "--catalog", "two.yaml") == 3
    assert sockets("--catalog", "two.yaml", "--catalog", "one.yaml") == 4


def test_the_kubevirt_cr_flag_then_inputs_then_catalog(tmp_path: Path) -> None:
    write(tmp_path / "vm.yaml", vm("a", "small"), instancetype("small", 1))
    write(tmp_path / "catalog.yaml", cr("masquerade"))
    write(tmp_path / "input-cr.yaml", cr("bridge"))
    write(tmp_path / "flag-cr.yaml", cr("masquerade"))

    def interface(*args: str) -> dict[str, Any]:
        proc = cli("-f", "vm.yaml", *args, "-o", "jsonl", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return dict(rendered(proc)[0]["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"][0])

    assert "masquerade" in interface("--catalog", "catalog.yaml")
    assert "bridge" in interface("--catalog", "catalog.yaml", "-f", "input-cr.yaml")
    assert "masquerade" in interface(
        "--kubevirt", "flag-cr.yaml", "-f", "input-cr.yaml", "--catalog", "catalog.yaml"
    )
    write(tmp_path / "two.yaml", cr("bridge"))
    proc = cli("-f", "vm.yaml", "--catalog", "catalog.yaml", "--catalog", "two.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "2 KubeVirt CRs found" in proc.stderr


def test_a_broken_catalog_stops_the_run(tmp_path: Path) -> None:
    write(tmp_path / "vm.yaml", vm("a", "small"))
    (tmp_path / "catalog.yaml").write_text("kind: VirtualMachineInstancetype\nmetadata: [\n")
    proc = cli("-f", "vm.yaml", "--catalog", "catalog.yaml", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith("error: --catalog catalog.yaml: document 1, line ")
    assert "summary:" not in proc.stderr
    proc = cli("-f", "vm.yaml", "--catalog", "nope/", cwd=tmp_path)
    assert proc.returncode == 2 and "error: --catalog nope/: no such file or directory" in proc.stderr


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ([], 3),  # unresolved alone
        (["refused"], 1),  # a refusal is the stronger verdict
        (["broken"], 2),  # broken input stronger still
    ],
)
def test_exit_code_of_unresolved_among_the_others(tmp_path: Path, extra: list[str], code: int) -> None:
    write(tmp_path / "in.yaml", instancetype("small", 1), vm("good", "small"), vm("lost", "absent"))
    if "refused" in extra:
        write(tmp_path / "refused.yaml", refused_vm("bad", "small"))
    if "broken" in extra:
        (tmp_path / "broken.yaml").write_text("kind: [\n")
    proc = cli("-f", ".", "--check", cwd=tmp_path)
    assert proc.returncode == code, proc.stderr
    assert "unresolved: in.yaml: document 3: default/lost: " in proc.stderr


def test_validate_refuses_before_it_finds_nothing_to_render(tmp_path: Path) -> None:
    """With --validate, a VM the webhook refuses is refused even where its instancetype is missing (the
    webhook passes over what it cannot find and judges the rest); one it admits stays unresolved."""
    no_strategy = vm("halted", "absent")
    del no_strategy["spec"]["runStrategy"]
    write(tmp_path / "in.yaml", no_strategy, vm("lost", "absent"))
    proc = cli("-f", "in.yaml", "--check", "--validate", "-o", "jsonl", cwd=tmp_path)
    assert proc.returncode == 1
    assert [json.loads(line)["outcome"] for line in proc.stdout.splitlines()] == ["Refused", "Unresolved"]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def snapshot(tmp_path: Path, *args: str) -> Any:
    import subprocess

    from tests.cli.test_expand_gate import COMMAND

    return subprocess.run(
        [*COMMAND, "catalog", "snapshot", *args], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )


def test_snapshot_without_a_cluster_writes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{closed_port()}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    proc = snapshot(tmp_path, "--kubeconfig", str(config), "-o", "catalog.yaml", "--request-timeout", "5")
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: cannot reach the Kubernetes API")
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == [config]
    proc = snapshot(tmp_path, "--kubeconfig", str(tmp_path / "absent"), "-o", "catalog.yaml")
    assert proc.returncode == 2
    assert proc.stderr == (
        f"error: cannot load the cluster configuration: kubeconfig {tmp_path / 'absent'}: no such file\n"
    )
