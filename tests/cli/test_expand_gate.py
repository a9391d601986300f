"""``kubevirt-expand expand`` as a CI job runs it (the installed console script, a folder of VMs): every file
read and every VM judged whatever else is broken, the report (stderr lines, ``-o jsonl``, ``-o json``),
``--check``, the summary line and the exit code that tells a refused VM (1) from broken input (2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SCRIPT = Path(sys.executable).parent / "kubevirt-expand"
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "apiserver.cli"]
MEMBERS = [
    "cluster",
    "file",
    "document",
    "item",
    "line",
    "kind",
    "namespace",
    "name",
    "outcome",
    "status",
    "causes",
    "warnings",
    "object",
]


def cli(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, "expand", *args], input=stdin, capture_output=True, text=True, timeout=120, cwd=cwd
    )


def vm(name: str, instancetype: str = "cmedium", **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, **extra},
        "spec": {
            "runStrategy": "Halted",
            "instancetype": {"kind": "VirtualMachineInstancetype", "name": instancetype},
            "template": {"spec": {"domain": {"devices": {}}}},
        },
    }


def refused_vm(name: str, instancetype: str = "cmedium") -> dict[str, Any]:
    """A VM KubeVirt refuses: it sets the sockets its instancetype sets (a conflict, 422)."""
    refused = vm(name, instancetype)
    refused["spec"]["template"]["spec"]["domain"]["cpu"] = {"sockets": 2}
    return refused


def instancetype(name: str, cpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": name},
        "spec": {"cpu": {"guest": cpus}, "memory": {"guest": "512Mi"}},
    }


def write(path: Path, *docs: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


BROKEN = "kind: VirtualMachine\nmetadata: {name: lost}\n---\nkind: VirtualMachine\nmetadata:\n  name: a: b\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository as a CI job sees it: vms/ with a broken file, a duplicated instancetype and a VM that
    uses it, a VM given twice, a refused VM, and good VMs (one file, and a List of two)."""
    vms = tmp_path / "vms"
    vms.mkdir()
    (vms / "00-broken.yaml").write_text(BROKEN)
    (vms / "10-instancetypes.yaml").write_text((EXAMPLES / "instancetypes.yaml").read_text())
    write(vms / "20-small.yaml", instancetype("small", 2))
    write(vms / "21-small-again.yaml", instancetype("small", 4))
    write(vms / "30-good.yaml", vm("good"))
    write(vms / "31-uses-small.yaml", vm("uses-small", "small"))
    write(vms / "32-refused.yaml", refused_vm("refused"))
    write(vms / "33-good-copy.yaml", vm("good"))
    listing = {"apiVersion": "v1", "kind": "List", "items": [vm("listed-a"), vm("listed-b")]}
    (vms / "40-list.json").write_text(json.dumps(listing))
    return tmp_path


CONFLICT = "VM field(s) spec.template.spec.domain.cpu.sockets conflicts with selected instance type"
SMALL_TWICE = (
    "VirtualMachineInstancetype default/small is defined twice: "
    "in vms/20-small.yaml: document 1 and in vms/21-small-again.yaml: document 1"
)
GOOD_TWICE = (
    "default/good is defined twice: in vms/30-good.yaml: document 1 and in vms/33-good-copy.yaml: document 1"
    "; applied together, whichever is applied last replaces the other"
)
USES_SMALL = "default/uses-small uses " + SMALL_TWICE.replace(" is defined", ", which is defined")
REPLACES = "; applied together, whichever is applied last replaces the other"
SUMMARY = "summary: 6 VMs, 3 admitted, 1 refused, 4 errors, 9 files"
# (file, document, item, kind, namespace, name, outcome) of every result, in input order.
RESULTS = [
    ("vms/00-broken.yaml", 2, None, None, None, None, "Error"),
    ("vms/21-small-again.yaml", 1, None, "VirtualMachineInstancetype", "default", "small", "Error"),
    ("vms/30-good.yaml", 1, None, "VirtualMachine", "default", "good", "Admitted"),
    ("vms/31-uses-small.yaml", 1, None, "VirtualMachine", "default", "uses-small", "Error"),
    ("vms/32-refused.yaml", 1, None, "VirtualMachine", "default", "refused", "Refused"),
    ("vms/33-good-copy.yaml", 1, None, "VirtualMachine", "default", "good", "Error"),
    ("vms/40-list.json", 1, 0, "VirtualMachine", "default", "listed-a", "Admitted"),
    ("vms/40-list.json", 1, 1, "VirtualMachine", "default", "listed-b", "Admitted"),
]


def human_lines(stderr: str) -> list[str]:
    """stderr without the Status lines (each follows its failure line and is checked separately)."""
    return [line for line in stderr.splitlines() if not line.startswith("{")]


def test_check_reports_every_vm_and_every_problem(repo: Path) -> None:
    proc = cli("-f", "vms/", "--check", cwd=repo)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert human_lines(proc.stderr) == [
        "error: vms/00-broken.yaml: document 2, line 6: mapping values are not allowed in this context",
        f"error: vms/21-small-again.yaml: document 1: {SMALL_TWICE}{REPLACES}",
        "admitted: vms/30-good.yaml: document 1: default/good",
        f"error: vms/31-uses-small.yaml: document 1: {USES_SMALL}",
        f"refused: vms/32-refused.yaml: document 1: default/refused: {CONFLICT}",
        f"error: vms/33-good-copy.yaml: document 1: {GOOD_TWICE}",
        "admitted: vms/40-list.json: document 1, items[0]: default/listed-a",
        "admitted: vms/40-list.json: document 1, items[1]: default/listed-b",
        SUMMARY,
    ]
    # Each failure line is followed by its Status.
    lines = proc.stderr.splitlines()
    statuses = [
        json.loads(lines[i + 1]) for i, line in enumerate(lines) if line.startswith(("error:", "refused:"))
    ]
    assert [(s["code"], s["reason"]) for s in statuses] == [
        (400, "BadRequest"),
        (409, "AlreadyExists"),
        (409, "Conflict"),
        (422, "Invalid"),
        (409, "AlreadyExists"),
    ]
    assert statuses[3]["details"]["causes"][0]["field"] == "spec.template.spec.domain.cpu.sockets"


def test_jsonl_report(repo: Path) -> None:
    proc = cli("-f", "vms/", "-o", "jsonl", cwd=repo)
    assert proc.returncode == 2, proc.stderr
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert all(list(r) == MEMBERS for r in results)
    assert [
        (r["file"], r["document"], r["item"], r["kind"], r["namespace"], r["name"], r["outcome"])
        for r in results
    ] == RESULTS
    assert (
        results[0]["line"] == 6
        and results[0]["status"]["message"] == "mapping values are not allowed in this context"
    )
    by_outcome = {r["outcome"]: r for r in results}
    assert by_outcome["Refused"]["status"]["message"] == CONFLICT
    assert results[3]["status"]["message"] == USES_SMALL
    for r in results:
        # The expanded VM for what is admitted (the duplicate's first copy is rendered: its own verdict).
        assert (r["object"] is not None) == (r["outcome"] == "Admitted")
        assert (r["status"] is None) == (r["outcome"] == "Admitted")
    good = results[2]["object"]
    assert good["spec"]["template"]["spec"]["domain"]["memory"] == {"guest": "1Gi"}
    # stderr is the same as without -o jsonl, and the summary ends it.
    assert human_lines(proc.stderr)[-1] == SUMMARY
    checked = cli("-f", "vms/", "-o", "jsonl", "--check", cwd=repo)
    assert [json.loads(line)["object"] for line in checked.stdout.splitlines()] == [None] * len(RESULTS)


def test_yaml_and_json_print_the_admitted_vms(repo: Path) -> None:
    as_yaml = cli("-f", "vms/", cwd=repo)
    assert as_yaml.returncode == 2
    names = ["good", "listed-a", "listed-b"]
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(as_yaml.stdout)] == names
    assert not any(line.startswith("admitted:") for line in as_yaml.stderr.splitlines())
    as_json = cli("-f", "vms/", "-o", "json", cwd=repo)
    body = json.loads(as_json.stdout)
    assert body["kind"] == "List" and [v["metadata"]["name"] for v in body["items"]] == names
    assert as_json.stderr == as_yaml.stderr


def test_exit_codes_tell_refused_from_broken(repo: Path) -> None:
    good = ["-f", "vms/10-instancetypes.yaml", "-f", "vms/30-good.yaml", "-f", "vms/40-list.json"]
    proc = cli(*good, "--check", cwd=repo)
    assert (proc.returncode, human_lines(proc.stderr)[-1]) == (
        0,
        "summary: 3 VMs, 3 admitted, 0 refused, 0 errors, 3 files",
    )
    proc = cli(*good, "-f", "vms/32-refused.yaml", "--check", cwd=repo)
    assert (proc.returncode, human_lines(proc.stderr)[-1]) == (
        1,
        "summary: 4 VMs, 3 admitted, 1 refused, 0 errors, 4 files",
    )
    # A broken file makes it 2 whatever the verdicts; so does a path that does not exist.
    proc = cli(*good, "-f", "vms/32-refused.yaml", "-f", "vms/00-broken.yaml", "--check", cwd=repo)
    assert (proc.returncode, human_lines(proc.stderr)[-1]) == (
        2,
        "summary: 4 VMs, 3 admitted, 1 refused, 1 error, 5 files",
    )
    proc = cli(*good, "-f", "vms/nope.yaml", "--check", cwd=repo)
    assert proc.returncode == 2
    assert human_lines(proc.stderr)[-2:] == [
        "error: vms/nope.yaml: no such file or directory",
        "summary: 3 VMs, 3 admitted, 0 refused, 1 error, 4 files",
    ]
    # --validate makes the verdicts stricter (KubeVirt's webhook wants a run strategy), not the codes different.
    assert cli(*good, "--check", "--validate", cwd=repo).returncode == 0
    halted = vm("halted")
    del halted["spec"]["runStrategy"]
    write(repo / "vms" / "50-no-run-strategy.yaml", halted)
    with_it = [*good, "-f", "vms/50-no-run-strategy.yaml", "--check"]
    assert cli(*with_it, cwd=repo).returncode == 0
    proc = cli(*with_it, "--validate", cwd=repo)
    assert proc.returncode == 1
    assert human_lines(proc.stderr)[-2:] == [
        "refused: vms/50-no-run-strategy.yaml: document 1: default/halted: admission webhook would deny the "
        "VirtualMachine: RunStrategy must be specified",
        "summary: 4 VMs, 3 admitted, 1 refused, 0 errors, 4 files",
    ]
    # No VM at all is unusable input too (a gate that checked nothing), with the reason.
    proc = cli("-f", "vms/10-instancetypes.yaml", "-o", "jsonl", cwd=repo)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines() == [
        "error: no VirtualMachine found in vms/10-instancetypes.yaml",
        "summary: 0 VMs, 0 admitted, 0 refused, 0 errors, 1 file",
    ]


@pytest.mark.parametrize("count", [0, 1, 5])
def test_jsonl_has_one_shape_whatever_the_count(tmp_path: Path, count: int) -> None:
    docs = [instancetype("small", 2), *(vm(f"vm{i}", "small") for i in range(count))]
    write(tmp_path / "in.yaml", *docs)
    proc = cli("-f", "in.yaml", "-o", "jsonl", cwd=tmp_path)
    assert proc.returncode == (0 if count else 2)
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(results) == count
    assert [(r["document"], r["name"], r["outcome"]) for r in results] == [
        (i + 2, f"vm{i}", "Admitted") for i in range(count)
    ]
    assert all(list(r) == MEMBERS for r in results)
    # Broken and refused ones are lines of the same shape.
    (tmp_path / "broken.yaml").write_text("kind: [\n")
    write(tmp_path / "refused.yaml", refused_vm("refused", "small"))
    proc = cli("-f", "in.yaml", "-f", "broken.yaml", "-f", "refused.yaml", "-o", "jsonl", cwd=tmp_path)
    assert proc.returncode == 2
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert all(list(r) == MEMBERS for r in results)
    assert [r["outcome"] for r in results] == ["Admitted"] * count + ["Error", "Refused"]
    assert results[count]["file"] == "broken.yaml" and results[count]["kind"] is None


@pytest.mark.parametrize(
    ("vms", "failing", "expected"),
    [
        (0, 0, {"apiVersion": "v1", "kind": "List", "items": []}),
        (1, 0, "the VM"),
        (1, 1, None),
        (3, 0, ["vm0", "vm1", "vm2"]),
        (3, 3, {"apiVersion": "v1", "kind": "List", "items": []}),
    ],
    ids=["none", "one", "one-failing", "three", "three-failing"],
)
def test_json_follows_kubectl(tmp_path: Path, vms: int, failing: int, expected: Any) -> None:
    """-o json: the VM itself when the inputs hold one VM document, else a List (empty when none renders)."""
    docs = [refused_vm(f"vm{i}", "small") if i < failing else vm(f"vm{i}", "small") for i in range(vms)]
    write(tmp_path / "in.yaml", instancetype("small", 2), *docs)
    proc = cli("-f", "in.yaml", "-o", "json", cwd=tmp_path)
    if expected is None:
        assert (proc.returncode, proc.stdout) == (1, "")
        return
    body = json.loads(proc.stdout)
    if expected == "the VM":
        assert body["kind"] == "VirtualMachine" and body["metadata"]["name"] == "vm0"
    elif isinstance(expected, list):
        assert body["kind"] == "List" and [v["metadata"]["name"] for v in body["items"]] == expected
    else:
        assert body == expected


def test_duplicates_in_one_list_and_across_kinds_and_namespaces(tmp_path: Path) -> None:
    """Same kind, namespace and name is a duplicate, named by its item in a List; another namespace or a
    cluster-scoped kind of the same name is not."""
    other_ns = instancetype("small", 2)
    other_ns["metadata"]["namespace"] = "team-b"
    cluster = {**instancetype("small", 2), "kind": "VirtualMachineClusterInstancetype"}
    listing = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [vm("a", "small"), vm("b", "small"), vm("a", "small")],
    }
    write(tmp_path / "in.yaml", instancetype("small", 2), other_ns, cluster, listing)
    proc = cli("-f", "in.yaml", "--check", cwd=tmp_path)
    assert proc.returncode == 2
    assert human_lines(proc.stderr) == [
        "admitted: in.yaml: document 4, items[0]: default/a",
        "admitted: in.yaml: document 4, items[1]: default/b",
        "error: in.yaml: document 4, items[2]: default/a is defined twice: in in.yaml: document 4, items[0] "
        f"and in in.yaml: document 4, items[2]{REPLACES}",
        "summary: 3 VMs, 2 admitted, 0 refused, 1 error, 1 file",
    ]


def test_a_duplicated_preset_leaves_the_vms_it_may_match_without_a_verdict(tmp_path: Path) -> None:
    preset = yaml.safe_load((EXAMPLES / "preset.yaml").read_text())
    write(tmp_path / "a.yaml", preset)
    write(tmp_path / "b.yaml", preset)
    write(tmp_path / "vm.yaml", instancetype("small", 2), vm("a", "small"))
    plain = cli("-f", ".", "--check", cwd=tmp_path)
    assert plain.returncode == 2  # the duplicate itself
    assert "admitted: vm.yaml: document 2: default/a" in plain.stderr
    with_presets = cli("-f", ".", "--check", "--presets", cwd=tmp_path)
    assert (
        "error: vm.yaml: document 2: default/a uses VirtualMachineInstancePreset default/utc-clock, which is "
        "defined twice: in a.yaml: document 1 and in b.yaml: document 1" in with_presets.stderr
    )


def test_broken_stdin_among_files(tmp_path: Path) -> None:
    write(tmp_path / "vm.yaml", instancetype("small", 2), vm("a", "small"))
    proc = cli(
        "-f", "vm.yaml", "-f", "-", "--check", cwd=tmp_path, stdin="kind: VirtualMachine\n---\nmetadata: {}\n"
    )
    assert proc.returncode == 2
    assert human_lines(proc.stderr) == [
        "admitted: vm.yaml: document 2: default/a",
        "error: <stdin>: document 2: kind is missing",
        "summary: 1 VM, 1 admitted, 0 refused, 1 error, 2 files",
    ]


PROGRESS_RUN = """
import sys
from apiserver.cli import main, output
output._Progress.DELAY = output._Progress.INTERVAL = 0  # draw at every VM, however fast the machine
sys.exit(main(sys.argv[1:]))
"""


def test_progress_line_only_on_a_terminal(tmp_path: Path) -> None:
    import os
    import pty

    write(tmp_path / "in.yaml", instancetype("small", 2), *(vm(f"vm{i}", "small") for i in range(3)))
    write(tmp_path / "refused.yaml", refused_vm("refused", "small"))
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                PROGRESS_RUN,
                "expand",
                "-f",
                "in.yaml",
                "-f",
                "refused.yaml",
                "-o",
                "jsonl",
            ],
            stdout=subprocess.PIPE,
            stderr=secondary,
            cwd=tmp_path,
            timeout=120,
        )
        os.close(secondary)
        terminal = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: the other end is closed and everything was read
                break
            if not chunk:
                break
            terminal += chunk
    finally:
        os.close(primary)
    assert proc.returncode == 1
    assert b"\x1b" not in proc.stdout and len(proc.stdout.splitlines()) == 4
    text = terminal.decode().replace("\r\n", "\n")
    # Drawn after each VM but the last, erased before every other line, never left behind.
    assert text == (
        "\r\x1b[Kjudged 1/4 VMs\r\x1b[Kjudged 2/4 VMs\r\x1b[Kjudged 3/4 VMs\r\x1b[K"
        f"refused: refused.yaml: document 1: default/refused: {CONFLICT}\n"
        + text.split("\n")[1]
        + "\nsummary: 4 VMs, 3 admitted, 1 refused, 0 errors, 2 files\n"
    )
    assert json.loads(text.split("\n")[1])["code"] == 422
