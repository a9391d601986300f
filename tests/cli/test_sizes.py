"""``kubevirt-expand catalog sizes`` offline: a ConfigMap whose data gives each instancetype's virt-launcher
pod requests, equal to what ``resources`` renders for the minimal VM the command states it assumes; an
instancetype that does not render is left out with a warning; usage errors exit 2. (From the cluster:
tests/realk8s/test_policy.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver.cli import main
from apiserver.cli.sizes import ASSUMPTION, ASSUMPTION_ANNOTATION, RESOURCES_ANNOTATION, minimal_vm
from apiserver.render.kubernetes.quantity import parse_quantity

REPO = Path(__file__).parents[2]
EXAMPLES = REPO / "examples"


def sizes(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["catalog", "sizes", *args])
    out, err = capsys.readouterr()
    return code, out, err


def pod_requests(capsys: pytest.CaptureFixture[str], folder: Path, vm: dict[str, Any]) -> dict[str, str]:
    (folder / "vm.yaml").write_text(yaml.safe_dump(vm))
    code = main(["resources", "-f", str(folder), "-o", "json"])
    out, _ = capsys.readouterr()
    assert code == 0
    (line,) = [v for v in yaml.safe_load(out)["vms"] if v["name"] == "sizes"]
    requests: dict[str, str] = line["pod"]["total"]["requests"]
    return requests


def test_each_instancetype_gets_its_minimal_vms_pod(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = sizes(capsys, "-f", str(EXAMPLES), "--configmap", "kubevirt-expand/vm-sizes")
    assert code == 0, err
    doc = yaml.safe_load(out)
    assert doc["kind"] == "ConfigMap" and doc["metadata"]["namespace"] == "kubevirt-expand"
    assert doc["metadata"]["name"] == "vm-sizes"
    assert doc["metadata"]["annotations"][ASSUMPTION_ANNOTATION] == ASSUMPTION
    data = doc["data"]
    catalog = [
        d
        for f in sorted(EXAMPLES.glob("*.yaml"))
        for d in yaml.safe_load_all(f.read_text())
        if d and d["kind"] in ("VirtualMachineInstancetype", "VirtualMachineClusterInstancetype")
    ]
    assert len(data) == 3 * len(catalog) > 0
    # Each figure is what `resources` renders for the minimal VM, next to the same catalog.
    for it in catalog:
        kind, name = it["kind"], it["metadata"]["name"]
        namespace = it["metadata"].get("namespace", "default")
        key = f"cluster.{name}" if kind == "VirtualMachineClusterInstancetype" else f"ns.{namespace}.{name}"
        folder = tmp_path / key
        folder.mkdir()
        for f in EXAMPLES.glob("*.yaml"):
            docs = [d for d in yaml.safe_load_all(f.read_text()) if d and d["kind"] != "VirtualMachine"]
            (folder / f.name).write_text(yaml.safe_dump_all(docs))
        requests = pod_requests(capsys, folder, minimal_vm(kind, name, namespace))
        assert int(data[f"{key}.memory"]) == parse_quantity(requests["memory"]).value
        assert int(data[f"{key}.cpu"]) == parse_quantity(requests["cpu"]).value * 1000
        assert data[f"{key}.hugepages"] == "0"
    assert err.splitlines()[-1] == (
        f"sizes: wrote ConfigMap kubevirt-expand/vm-sizes ({len(catalog)} instancetypes: memory, hugepages, "
        "cpu requests) to stdout"
    )


def test_an_instancetype_that_does_not_render_is_left_out(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    broken = {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": "broken"},
        "spec": {"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}, "gpus": "not a list"},
    }
    ok = {**broken, "metadata": {"name": "ok"}, "spec": {"cpu": {"guest": 2}, "memory": {"guest": "2Gi"}}}
    (tmp_path / "its.yaml").write_text(yaml.safe_dump_all([broken, ok]))
    out_file = tmp_path / "sizes.yaml"
    code, out, err = sizes(
        capsys, "-f", str(tmp_path / "its.yaml"), "--configmap", "a/b", "-o", str(out_file)
    )
    assert code == 0 and out == ""
    assert set(yaml.safe_load(out_file.read_text())["data"]) == {
        "cluster.ok.memory",
        "cluster.ok.hugepages",
        "cluster.ok.cpu",
    }
    assert "Warning: VirtualMachineClusterInstancetype broken: left out: " in err


def test_hugepages_are_counted_and_the_resources_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """common-instancetypes' cx1.2xlarge (v1.7.0): 16Gi of guest memory in 2Mi pages, so its pod's memory
    request is the overhead alone; the ConfigMap gives the hugepages beside it."""
    cx = {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": "cx1.2xlarge"},
        "spec": {
            "cpu": {
                "guest": 8,
                "dedicatedCPUPlacement": True,
                "isolateEmulatorThread": True,
                "numa": {"guestMappingPassthrough": {}},
            },
            "ioThreadsPolicy": "auto",
            "memory": {"guest": "16Gi", "hugepages": {"pageSize": "2Mi"}},
        },
    }
    (tmp_path / "cx.yaml").write_text(yaml.safe_dump(cx))
    code, out, err = sizes(capsys, "-f", str(tmp_path / "cx.yaml"), "--configmap", "kubevirt-expand/vm-sizes")
    assert code == 0, err
    doc = yaml.safe_load(out)
    data = doc["data"]
    assert data["cluster.cx1.2xlarge.hugepages"] == str(16 * 1024**3)
    assert int(data["cluster.cx1.2xlarge.memory"]) < 4 * 1024**3  # the overhead alone: under a 4Gi cap
    assert int(data["cluster.cx1.2xlarge.memory"]) + int(data["cluster.cx1.2xlarge.hugepages"]) > 16 * 1024**3
    assert doc["metadata"]["annotations"][RESOURCES_ANNOTATION].startswith(
        "memory: the pod's memory request (bytes); hugepages: its hugepages-<size> requests summed (bytes); "
        "cpu: its CPU request (millicores); not given: "
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--configmap", "a/b"), "give either -f FILE|DIR|- or --cluster"),
        (("--configmap", "a/b", "-f", str(EXAMPLES), "--cluster"), "give either -f FILE|DIR|- or --cluster"),
        (("--configmap", "b", "-f", str(EXAMPLES)), "--configmap 'b': expected NAMESPACE/NAME"),
        (
            ("--configmap", "a/b", "-f", str(EXAMPLES), "-n", "x"),
            "-n/--namespace reads a cluster's namespace: give --cluster",
        ),
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str) -> None:
    code, out, err = sizes(capsys, *args)
    assert code == 2 and out == ""
    assert err == f"error: {message}\n"
