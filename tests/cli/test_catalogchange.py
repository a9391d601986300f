"""``kubevirt-expand preview --catalog-before A --catalog-after B -f FLEET``: a catalog change previewed
across a fleet, per VM and per namespace, with exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver.cli import main
from tests.support.shared import SHARED, needs_shared

COMMON = SHARED / "catalogs" / "common-instancetypes"


def _vm(
    name: str, namespace: str, *, instancetype: str, preference: str | None = None, **extra: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "runStrategy": extra.pop("run_strategy", "Always"),
        "instancetype": {"name": instancetype, **extra.pop("instancetype_extra", {})},
        "template": {"spec": {"domain": {"devices": {}}, **extra.pop("template", {})}},
    }
    if preference is not None:
        spec["preference"] = {"name": preference}
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _instancetype(name: str, cpus: int, memory: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    kind = "VirtualMachineClusterInstancetype"
    if namespace is not None:
        meta["namespace"] = namespace
        kind = "VirtualMachineInstancetype"
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": kind,
        "metadata": meta,
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": memory}},
    }


def _write(path: Path, docs: list[dict[str, Any]]) -> str:
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def preview(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["preview", *args])
    out, err = capsys.readouterr()
    return code, out, err


@needs_shared
def test_common_instancetypes_upgrade_refuses_an_arm64_vm_with_an_amd64_only_preference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = _write(
        tmp_path / "fleet.yaml",
        [
            _vm("web", "team-a", instancetype="u1.medium", preference="fedora"),
            _vm(
                "arm",
                "team-a",
                instancetype="u1.medium",
                preference="fedora",
                template={"architecture": "arm64"},
            ),
            _vm("plain", "team-b", instancetype="u1.small", run_strategy="Halted"),
        ],
    )
    code, out, err = preview(
        capsys,
        "--catalog-before",
        str(COMMON / "v1.6.0"),
        "--catalog-after",
        str(COMMON / "v1.7.0"),
        "-f",
        fleet,
    )
    assert code == 1, err
    assert "edited: VirtualMachineClusterPreference fedora\n" in out
    assert (
        "team-a/arm: refused (admission webhook would deny the VirtualMachine: failure checking preference "
        "requirements: preference requires architecture amd64 but arm64 is being requested)"
    ) in out
    assert "team-a/web: unchanged\n" in out
    assert "team-b/plain" not in out  # u1.small did not change: not rendered, not listed
    assert err.startswith("catalog change: objects 21 edited; 3 VMs: 1 refused, 1 unaffected, 1 unchanged (")

    code, out, _ = preview(
        capsys,
        "--catalog-before", str(COMMON / "v1.6.0"),
        "--catalog-after", str(COMMON / "v1.7.0"),
        "-f", fleet,
        "-o", "json",
    )  # fmt: skip
    answer = json.loads(out)
    verdicts = {(e["namespace"], e["name"]): e["verdict"] for e in answer["items"]}
    assert verdicts == {
        ("team-a", "arm"): "refused",
        ("team-a", "web"): "unchanged",
        ("team-b", "plain"): "unaffected",
    }
    assert {
        "kind": "VirtualMachineClusterPreference",
        "namespace": "",
        "name": "fedora",
        "change": "edited",
    } in (answer["changedObjects"])


def test_a_bigger_instancetype_shows_the_restart_the_cost_and_the_quota_it_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _write(
        tmp_path / "before.yaml", [_instancetype("team", 2, "2Gi"), _instancetype("other", 1, "1Gi")]
    )
    bigger = _instancetype("team", 2, "4Gi")
    bigger["spec"]["ioThreadsPolicy"] = "auto"  # not live-updatable: the VMs must restart
    after = _write(tmp_path / "after.yaml", [bigger, _instancetype("other", 1, "1Gi")])
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "compute", "namespace": "shop"},
        "spec": {"hard": {"requests.memory": "6Gi"}},
    }
    fleet = _write(
        tmp_path / "fleet.yaml",
        [
            quota,
            _vm("db", "shop", instancetype="team"),
            _vm("cache", "shop", instancetype="team"),
            _vm("idle", "shop", instancetype="team", run_strategy="Halted"),
            _vm("tool", "shop", instancetype="other"),
        ],
    )
    code, out, err = preview(
        capsys, "--catalog-before", before, "--catalog-after", after, "-f", fleet, "-o", "json"
    )
    assert code == 1, err
    answer = json.loads(out)
    by_name = {e["name"]: e for e in answer["items"]}
    assert by_name["db"]["verdict"] == "restart"
    assert by_name["db"]["message"] == "a non-live-updatable field was changed in the template spec"
    assert by_name["idle"]["verdict"] == "stopped"
    assert by_name["tool"]["verdict"] == "unaffected"
    change = by_name["db"]["requests"]
    assert change["before"]["memory"] != change["after"]["memory"]
    assert {"path": "/spec/template/spec/domain/memory/guest", "old": "2Gi", "new": "4Gi"} in by_name["db"][
        "changes"
    ]
    (shop,) = answer["namespaces"]
    assert shop["namespace"] == "shop" and shop["affected"] == 3 and shop["vms"] == 4
    assert shop["requestsChange"]["memory"] == "+6Gi"  # three pods, 2Gi more guest memory each
    (compute,) = shop["quotas"]
    # The two running VMs use about 2 x 2.3Gi today (no status.used: counted from the fleet); restarted
    # with 4Gi guests they need more than the quota's 6Gi.
    assert compute["fits"] is False and compute["exceeds"] == ["requests.memory"]

    code, out, err = preview(capsys, "--catalog-before", before, "--catalog-after", after, "-f", fleet)
    assert "shop/db: restart (" in out
    assert '  /spec/template/spec/domain/memory/guest: "2Gi" -> "4Gi"' in out
    assert "  pod requests: memory " in out
    assert "namespace shop: 3 of 4 VMs affected; requests memory +6Gi" in out
    assert "  quota compute: exceeded once the running VMs restart (requests.memory " in out
    assert "; 1 quota exceeded (" in err


def test_a_change_no_vm_uses_passes_without_rendering(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _write(
        tmp_path / "before.yaml", [_instancetype("used", 1, "1Gi"), _instancetype("spare", 1, "1Gi")]
    )
    after = _write(
        tmp_path / "after.yaml", [_instancetype("used", 1, "1Gi"), _instancetype("spare", 8, "8Gi")]
    )
    # The VM names an instancetype neither catalog holds: were it rendered, it would be an error.
    fleet = _write(
        tmp_path / "fleet.yaml", [_vm("a", "ns", instancetype="used"), _vm("b", "ns", instancetype="gone")]
    )
    code, out, err = preview(capsys, "--catalog-before", before, "--catalog-after", after, "-f", fleet)
    assert code == 0, err
    assert out == "edited: VirtualMachineClusterInstancetype spare\n"
    assert err.startswith("catalog change: objects 1 edited; 2 VMs: 2 unaffected (")


def test_an_added_instancetype_a_vm_already_names_is_rendered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _write(tmp_path / "before.yaml", [_instancetype("used", 1, "1Gi")])
    after = _write(tmp_path / "after.yaml", [_instancetype("used", 1, "1Gi"), _instancetype("new", 2, "2Gi")])
    fleet = _write(tmp_path / "fleet.yaml", [_vm("waiting", "ns", instancetype="new")])
    code, out, _ = preview(capsys, "--catalog-before", before, "--catalog-after", after, "-f", fleet)
    assert "added: VirtualMachineClusterInstancetype new" in out
    # Under the first catalog the VM cannot be rendered: it does not run as it is
    assert "ns/waiting: error (the VM as it is cannot be rendered: " in out
    assert code == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--catalog-before", "x"], "error: give both --catalog-before and --catalog-after"),
        (["--catalog-before", "x", "--catalog-after", "y"], "error: give the fleet with -f FILE|DIR"),
        (
            ["--catalog-before", "x", "--catalog-after", "y", "-f", "z", "--before", "a"],
            "leave out --before/--after",
        ),
        ([], "error: give --before and --after (or --catalog-before/--catalog-after -f)"),
    ],
)
def test_usage_errors_say_what_to_give(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = preview(capsys, *args)
    assert code == 2 and out == ""
    assert message in err


def test_a_fleet_without_vms_is_unusable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = _write(tmp_path / "c.yaml", [_instancetype("a", 1, "1Gi")])
    fleet = _write(
        tmp_path / "fleet.yaml", [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}]
    )
    code, _, err = preview(capsys, "--catalog-before", catalog, "--catalog-after", catalog, "-f", fleet)
    assert code == 2
    assert f"error: no VirtualMachine in {fleet}" in err


@needs_shared
def test_ci_reports_place_each_vm_at_its_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        yaml.safe_dump_all(
            [
                _vm("web", "team-a", instancetype="u1.medium", preference="fedora"),
                _vm(
                    "arm",
                    "team-a",
                    instancetype="u1.medium",
                    preference="fedora",
                    template={"architecture": "arm64"},
                ),
            ]
        )
    )
    line = next(
        n for n, text in enumerate(fleet.read_text().splitlines(), 1) if "architecture: arm64" in text
    )
    reports = {fmt: tmp_path / f"report.{fmt}" for fmt in ("junit", "sarif", "codequality")}
    code, _, err = preview(
        capsys,
        "--catalog-before", str(COMMON / "v1.6.0"),
        "--catalog-after", str(COMMON / "v1.7.0"),
        "-f", str(fleet),
        *(f"--report={fmt}={path}" for fmt, path in reports.items()),
    )  # fmt: skip
    assert code == 1, err
    junit = reports["junit"].read_text()
    assert 'tests="2" failures="1" errors="0"' in junit
    assert f'name="document 2: team-a/arm" classname="{fleet}" file="{fleet}" time="0" line="{line}"' in junit
    (result,) = json.loads(reports["sarif"].read_text())["runs"][0]["results"]
    assert result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": line}
    assert "preference requires architecture amd64 but arm64 is being requested" in result["message"]["text"]
    (issue,) = json.loads(reports["codequality"].read_text())
    assert issue["location"] == {"path": str(fleet), "lines": {"begin": line}}


def test_a_restart_is_a_failure_at_the_matcher_and_a_live_change_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _write(
        tmp_path / "before.yaml", [_instancetype("team", 2, "2Gi"), _instancetype("grow", 1, "1Gi")]
    )
    bigger = _instancetype("team", 2, "2Gi")
    bigger["spec"]["ioThreadsPolicy"] = "auto"
    after = _write(tmp_path / "after.yaml", [bigger, _instancetype("grow", 2, "1Gi")])
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        yaml.safe_dump_all([_vm("db", "shop", instancetype="team"), _vm("web", "shop", instancetype="grow")])
    )
    lines = [
        n for n, text in enumerate(fleet.read_text().splitlines(), 1) if text.strip().startswith("name: ")
    ]
    sarif = tmp_path / "r.sarif"
    code, _, err = preview(
        capsys,
        "--catalog-before",
        before,
        "--catalog-after",
        after,
        "-f",
        str(fleet),
        "--report",
        f"sarif={sarif}",
    )
    assert code == 1, err
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    by_level = {r["level"]: r for r in results}
    restart = by_level["error"]
    assert restart["ruleId"] == "RestartRequired"
    assert (
        "the catalog change needs a restart: a non-live-updatable field was changed"
        in restart["message"]["text"]
    )
    # at the instancetype's name in the VM (the line of the matcher naming the edited object)
    assert restart["locations"][0]["physicalLocation"]["region"]["startLine"] in lines
    live = by_level["warning"]
    assert (
        "the catalog change applies live: /spec/template/spec/domain/cpu/sockets" in live["message"]["text"]
    )


def test_a_report_format_it_does_not_write_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["preview", "--catalog-before", "x", "--catalog-after", "y", "-f", "z", "--report", "html=r"])
    assert exited.value.code == 2
    assert "expected FORMAT=FILE with FORMAT one of junit, sarif, codequality" in capsys.readouterr().err
