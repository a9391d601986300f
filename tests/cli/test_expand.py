"""``kubevirt-expand expand``: the real console script, and ``apiserver.cli.main`` in process.

The golden cases run through the command line three ways: every case in process (files written as
YAML, ``main([...])``), a sample across all areas through the installed console script, and most
cases in one console-script run (each case in its own namespace).
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver.cli import main
from apiserver.cli.inputs import WatchedLookup
from apiserver.documents.reader import KubeDumper
from apiserver.render import ExpandError, ExpandResult
from tests.support import shared
from tests.support.conformance import Case, case_files, error_matches, load

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SCRIPT = Path(sys.executable).parent / "kubevirt-expand"
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "apiserver.cli"]
FILES = case_files()
needs_cases = shared.needs_shared(shared.CASES_DIR)


# --- helpers -------------------------------------------------------------------------------------


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed console script."""
    return subprocess.run(
        [*COMMAND, *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def dump(objs: Iterable[Mapping[str, Any]]) -> str:
    """YAML as kubectl reads it back (strings such as ``y`` quoted)."""
    return yaml.dump_all(list(objs), Dumper=KubeDumper, sort_keys=False)


def write_case(directory: Path, case: Case) -> list[str]:
    """Write a case as YAML manifests; return the extra arguments it needs (presets, kubevirt)."""
    inp = case.input
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vm.yaml").write_text(dump([inp["vm"]]))
    if inp["objects"]:
        (directory / "objects.yaml").write_text(dump(inp["objects"]))
    # The cases record KubeVirt's lenient decoding: field validation Ignore.
    args = ["--field-validation", "Ignore"]
    if case.id.startswith("presets-"):
        args.append("--presets")
    if "kubevirt" in inp:
        # A bare KubeVirtConfiguration has no kind, so it cannot sit among the manifests.
        kubevirt_file = directory.parent / f"{directory.name}-kubevirt.yaml"
        kubevirt_file.write_text(dump([inp["kubevirt"]]))
        args += ["--kubevirt", str(kubevirt_file)]
    return args


NOT_FAILURES = ("Warning: ", "admitted: ", "summary: ", "note: ", "skipped: ")
# KubeVirt's not-found of an object a VM references (the API server's text): such a VM is unresolved.
REFERENCE_NOT_FOUND = re.compile(
    r'^(virtualmachine(cluster)?(instancetypes|preferences)\.instancetype\.kubevirt\.io|controllerrevisions\.apps) "[^"]*" not found$'
)


def is_unresolved(status: dict[str, Any]) -> bool:
    """A 422 whose every cause is the not-found of a referenced object (the CLI's ``Unresolved``)."""
    causes = status.get("details", {}).get("causes") or []
    return bool(causes) and all(
        c.get("reason") == "FieldValueNotFound" and REFERENCE_NOT_FOUND.match(c.get("message", ""))
        for c in causes
    )


FAILURE = re.compile(
    r"^(refused|unresolved|error): (?P<file>.+?): document (?P<document>\d+)(, items\[\d+\])?: (?P<label>[^: ]+)[: ]"
)


def status_lines(stderr: str) -> list[tuple[str, dict[str, Any]]]:
    """(human line, Status) for each failure reported on stderr; the summary line comes last."""
    assert stderr.splitlines()[-1].startswith("summary: "), stderr[-2000:]
    lines = [line for line in stderr.splitlines() if not line.startswith(NOT_FAILURES)]
    assert len(lines) % 2 == 0, stderr
    pairs = []
    for human, body in zip(lines[::2], lines[1::2], strict=True):
        assert human.startswith(("refused: ", "unresolved: ", "error: ")), stderr
        pairs.append((human, json.loads(body)))
    return pairs


def failure_label(human: str) -> str:
    """The ``namespace/name`` a failure line names after its file and document."""
    found = FAILURE.match(human)
    assert found, human
    return found.group("label")


def summary(stderr: str) -> str:
    return stderr.splitlines()[-1]


def _without_hints(text: str) -> str:
    """A failure line without the suggestions a run adds to a not-found name."""
    return re.sub(r" \((?:did you mean|the bundled) [^)]*\)", "", text)


def check_case_result(case: Case, code: int, stdout: str, stderr: str, *, output: str = "json") -> None:
    exp = case.expected
    vm = case.input["vm"]
    label = f"{vm['metadata']['namespace']}/{vm['metadata']['name']}"
    if "error" in exp:
        assert stdout == ""
        ((human, status),) = status_lines(stderr)
        assert error_matches(exp, status["message"]), status["message"]
        # A VM whose instancetype, preference or revision is missing is unresolved (exit 3), not refused.
        verdict, counts, exit_code = (
            ("unresolved", "0 refused, 1 unresolved", 3)
            if is_unresolved(status)
            else ("refused", "1 refused", 1)
        )
        assert code == exit_code, stderr
        assert human.startswith(f"{verdict}: ")
        # The Status is KubeVirt's; the line names every missing instancetype and preference first
        # (apiserver.cli.expand._name_first), each with the closest names when one is close.
        said = _without_hints(human.split(f"vm.yaml: document 1: {label}: ", 1)[1])
        message = status["message"].replace("\n", " ")
        assert said == message or said.startswith(message + "; ") or said.endswith("; " + message), human
        assert status["kind"] == "Status" and status["code"] == 422 and status["reason"] == "Invalid"
        assert summary(stderr).startswith(f"summary: 1 VM, 0 admitted, {counts}, 0 errors, ")
        return
    assert code == 0, stderr
    got = json.loads(stdout) if output == "json" else yaml.safe_load(stdout)
    assert got == exp["expanded"]
    # Members in the renderer's (Go's) order, not sorted: the same bytes as KubeVirt once re-encoded.
    assert json.dumps(got) == json.dumps(exp["expanded"])
    files = "2 files" if case.input["objects"] else "1 file"
    assert [line for line in stderr.splitlines() if not line.startswith("Warning: ")] == [
        f"summary: 1 VM, 1 admitted, 0 refused, 0 errors, {files}"
    ]
    for warning in exp.get("warnings", []):
        assert any(warning["preset"] in line for line in stderr.splitlines()), (warning, stderr)


def sample(files: Sequence[Path], per_area: int) -> list[Path]:
    """Evenly spaced cases of every area, so the sample crosses all of them."""
    areas: dict[str, list[Path]] = {}
    for path in files:
        areas.setdefault(path.stem.rsplit("-", 1)[0], []).append(path)
    picked: list[Path] = []
    for paths in areas.values():
        step = max(1, len(paths) // per_area)
        picked.extend(paths[::step][:per_area])
    return picked


# --- every golden case, in process -----------------------------------------------------------------


@shared.parametrize("path", FILES, [p.stem for p in FILES])
def test_case_in_process(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = load(path)
    extra = write_case(tmp_path / "case", case)
    code = main(["expand", "-f", str(tmp_path / "case"), "-o", "json", *extra])
    out, err = capsys.readouterr()
    check_case_result(case, code, out, err)


# --- a sample through the console script -----------------------------------------------------------

SAMPLE = sample(FILES, per_area=5)


@needs_cases
def test_sample_covers_every_area() -> None:
    assert len(SAMPLE) >= min(50, len(FILES))
    assert {p.stem.rsplit("-", 1)[0] for p in SAMPLE} == {p.stem.rsplit("-", 1)[0] for p in FILES}


@shared.parametrize("path", SAMPLE, [p.stem for p in SAMPLE])
def test_case_console_script(path: Path, tmp_path: Path) -> None:
    case = load(path)
    extra = write_case(tmp_path / "case", case)
    # Alternate the output format: half the sample is read back from YAML.
    output = "yaml" if SAMPLE.index(path) % 2 else "json"
    proc = cli("expand", "-f", str(tmp_path / "case"), "-o", output, *extra)
    check_case_result(case, proc.returncode, proc.stdout, proc.stderr, output=output)


# --- most golden cases in one run of the console script --------------------------------------------


def _renamed(case: Case) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The case's VM and objects with every namespace made unique to the case."""
    vm = copy.deepcopy(case.input["vm"])
    objects = copy.deepcopy(case.input["objects"])
    for obj in [vm, *objects]:
        meta = obj.get("metadata", {})
        if meta.get("namespace"):
            meta["namespace"] = f"{case.id}-{meta['namespace']}"
    return vm, objects


def _batchable(case: Case) -> bool:
    # Cluster-scoped objects and cluster configurations cannot be kept apart per case.
    return "kubevirt" not in case.input and all(
        not o["kind"].startswith("VirtualMachineCluster") for o in case.input["objects"]
    )


@needs_cases
@pytest.mark.parametrize("presets", [False, True], ids=["plain", "presets"])
def test_many_cases_in_one_run(tmp_path: Path, presets: bool) -> None:
    cases = [
        c
        for c in map(load, FILES)
        if _batchable(c) and c.id.startswith("presets-") == presets and c.expected.get("kind") != "panic"
    ]
    assert cases, "no batchable cases in the corpus"
    docs: list[dict[str, Any]] = []
    by_label: dict[str, Case] = {}
    for case in cases:
        vm, objects = _renamed(case)
        docs.append(vm)
        docs.extend(objects)
        by_label[f"{vm['metadata']['namespace']}/{vm['metadata']['name']}"] = case
    (tmp_path / "all.yaml").write_text(dump(docs))
    flags = ["--field-validation", "Ignore", *(["--presets"] if presets else [])]
    proc = cli("expand", "-f", str(tmp_path / "all.yaml"), "-o", "json", *flags)

    failing = [c for c in cases if "error" in c.expected]
    reported = status_lines(proc.stderr)
    assert len(reported) == len(failing)
    unresolved = 0
    for human, status in reported:
        case = by_label[failure_label(human)]
        assert "error" in case.expected, (case.id, status)
        assert error_matches(case.expected, status["message"]), (case.id, status["message"])
        unresolved += is_unresolved(status)
        assert human.startswith("unresolved: " if is_unresolved(status) else "refused: "), human
    # Refused (1) wins over unresolved (3): a VM that needs fixing is the stronger verdict.
    code = 1 if len(failing) > unresolved else 3 if unresolved else 0
    assert proc.returncode == code, proc.stderr[-2000:]
    items = json.loads(proc.stdout)["items"]
    succeeding = [c for c in cases if "error" not in c.expected]
    assert len(items) == len(succeeding)
    for case, got in zip(succeeding, items, strict=True):
        want = copy.deepcopy(case.expected["expanded"])
        want["metadata"]["namespace"] = f"{case.id}-{want['metadata']['namespace']}"
        assert got == want, case.id


# --- the examples ----------------------------------------------------------------------------------


def docs_case(name: str) -> Case | None:
    path = next((p for p in FILES if p.stem.startswith("docs-") and load(p).data["name"] == name), None)
    return load(path) if path else None


def expand_examples() -> dict[str, Any]:
    proc = cli("expand", "-f", "examples/")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "summary: 3 VMs, 3 admitted, 0 refused, 0 errors, 7 files\n"
    vms = {vm["metadata"]["name"]: vm for vm in yaml.safe_load_all(proc.stdout)}
    assert list(vms) == ["fedora-cluster", "fedora-pinned", "fedora"]  # file name order
    return vms


def test_examples_expand() -> None:
    # The pinned VM gets the revision's 2 vCPUs and 2Gi, not the live cmedium's.
    domain = expand_examples()["fedora-pinned"]["spec"]["template"]["spec"]["domain"]
    assert domain["memory"] == {"guest": "2Gi"}
    assert domain["cpu"]["sockets"] * domain["cpu"]["cores"] * domain["cpu"]["threads"] == 2
    assert "clock" not in domain


@needs_cases
def test_examples_expand_like_kubevirt() -> None:
    vms = expand_examples()
    cluster_case = docs_case("docs: cluster cmedium + cluster fedora")
    if cluster_case is None:  # another corpus (KUBEVIRT_EXPAND_CONFORMANCE) may not hold it
        pytest.skip("the docs case with the cluster-scoped pair is not in this corpus")
    want = copy.deepcopy(cluster_case.expected["expanded"])
    want["metadata"]["name"] = "fedora-cluster"
    assert vms["fedora-cluster"] == want
    # The namespaced pair has the same content, so the user-guide VM comes out the same.
    want["metadata"]["name"] = "fedora"
    assert vms["fedora"] == want


def test_examples_with_presets() -> None:
    proc = cli("expand", "-f", "examples/", "--presets", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert body["apiVersion"] == "v1" and body["kind"] == "List"
    pinned = {vm["metadata"]["name"]: vm for vm in body["items"]}["fedora-pinned"]
    template = pinned["spec"]["template"]
    assert template["spec"]["domain"]["clock"] == {"utc": {}, "timer": {"rtc": {"tickPolicy": "catchup"}}}
    annotation = {"virtualmachinepreset.kubevirt.io/utc-clock": "kubevirt.io/v1"}
    assert template["metadata"]["annotations"] == annotation
    # KubeVirt's deprecation warning for presets reaches the user.
    assert any(line.startswith("Warning: ") for line in proc.stderr.splitlines()), proc.stderr


def test_examples_are_what_they_say() -> None:
    """The example objects parse and have the kinds and names the README and the docs promise."""
    proc_objects = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
        for p in EXAMPLES.glob("*.yaml")
        for o in yaml.safe_load_all(p.read_text())
    }
    assert proc_objects >= {
        ("VirtualMachineInstancetype", "default", "cmedium"),
        ("VirtualMachineClusterInstancetype", "", "cmedium"),
        ("VirtualMachinePreference", "default", "fedora"),
        ("VirtualMachineClusterPreference", "", "fedora"),
        ("VirtualMachine", "default", "fedora"),
        ("VirtualMachine", "default", "fedora-cluster"),
        ("VirtualMachine", "default", "fedora-pinned"),
        ("VirtualMachineInstancePreset", "default", "utc-clock"),
        ("KubeVirt", "kubevirt", "kubevirt"),
    }


# --- output formats, inputs, exit codes (the real engine) -------------------------------------------

VM: dict[str, Any] = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachine",
    "metadata": {"name": "small"},
    "spec": {
        "instancetype": {"kind": "VirtualMachineInstancetype", "name": "tiny"},
        "template": {"spec": {"domain": {"devices": {}}}},
    },
}
TINY: dict[str, Any] = {
    "apiVersion": "instancetype.kubevirt.io/v1beta1",
    "kind": "VirtualMachineInstancetype",
    "metadata": {"name": "tiny"},
    "spec": {"cpu": {"guest": 2}, "memory": {"guest": "512Mi"}},
}


def vm_named(name: str, **spec: Any) -> dict[str, Any]:
    vm = copy.deepcopy(VM)
    vm["metadata"]["name"] = name
    vm["spec"].update(spec)
    return vm


def test_yaml_output_multi_document_in_input_order(tmp_path: Path) -> None:
    (tmp_path / "in.yaml").write_text(dump([vm_named("b"), TINY, vm_named("a")]))
    proc = cli("expand", "-f", str(tmp_path / "in.yaml"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n---\n") == 1
    docs = list(yaml.safe_load_all(proc.stdout))
    assert [d["metadata"] for d in docs] == [
        {"name": "b", "namespace": "default"},
        {"name": "a", "namespace": "default"},
    ]
    assert docs[0]["spec"]["template"]["spec"]["domain"]["memory"] == {"guest": "512Mi"}
    # Block style, members in the renderer's (Go's) order: kind before apiVersion, not sorted.
    assert proc.stdout.startswith("kind: VirtualMachine\napiVersion: kubevirt.io/v1\nmetadata:\n")
    assert "{" not in proc.stdout.replace("{}", "")


def test_json_single_object_and_list_input_from_stdin() -> None:
    listing = {"apiVersion": "v1", "kind": "List", "items": [TINY, VM]}
    proc = cli("expand", "-f", "-", "-o", "json", stdin=json.dumps(listing).encode())
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["kind"] == "VirtualMachine" and got["metadata"] == {"name": "small", "namespace": "default"}


def test_several_files_and_namespace_flag(tmp_path: Path) -> None:
    (tmp_path / "vm.json").write_text(json.dumps(VM))
    (tmp_path / "it.yaml").write_text(dump([TINY]))
    proc = cli("expand", "-f", str(tmp_path / "vm.json"), "-f", str(tmp_path / "it.yaml"), "-n", "team-a")
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(proc.stdout)["metadata"]["namespace"] == "team-a"


def test_one_failure_does_not_stop_the_others(tmp_path: Path) -> None:
    missing = vm_named("broken", instancetype={"kind": "VirtualMachineInstancetype", "name": "nope"})
    (tmp_path / "in.yaml").write_text(dump([vm_named("first"), missing, TINY, vm_named("last")]))
    proc = cli("expand", "-f", str(tmp_path), "-o", "json")
    assert proc.returncode == 3  # unresolved: its instancetype is not among the inputs
    # The shape follows the input (several VMs: a List), not how many succeeded.
    items = json.loads(proc.stdout)["items"]
    assert [vm["metadata"]["name"] for vm in items] == ["first", "last"]
    ((human, status),) = status_lines(proc.stderr)
    message = 'virtualmachineinstancetypes.instancetype.kubevirt.io "nope" not found'
    assert human == f"unresolved: {tmp_path / 'in.yaml'}: document 2: default/broken: {message}"
    assert summary(proc.stderr) == "summary: 3 VMs, 2 admitted, 0 refused, 1 unresolved, 0 errors, 1 file"
    assert status["message"] == message and status["code"] == 422
    assert status["details"]["causes"][0]["field"] == "spec.instancetype.name"


def test_kubevirt_cr_among_inputs_and_from_flag(tmp_path: Path) -> None:
    cr = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "KubeVirt",
        "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
        "spec": {"configuration": {"network": {"defaultNetworkInterface": "masquerade"}}},
    }
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "vm.yaml").write_text(dump([VM, TINY]))

    def interfaces(*args: str) -> Any:
        proc = cli("expand", "-o", "json", *args)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"]

    assert interfaces("-f", str(tmp_path / "in")) == [{"name": "default", "bridge": {}}]
    (tmp_path / "cr.yaml").write_text(dump([cr]))
    assert interfaces("-f", str(tmp_path / "in"), "-f", str(tmp_path / "cr.yaml")) == [
        {"name": "default", "masquerade": {}}
    ]
    # A bare KubeVirtConfiguration, and the List that `kubectl get kubevirt -o yaml` prints.
    (tmp_path / "config.yaml").write_text("network:\n  defaultNetworkInterface: masquerade\n")
    assert interfaces("-f", str(tmp_path / "in"), "--kubevirt", str(tmp_path / "config.yaml")) == [
        {"name": "default", "masquerade": {}}
    ]
    (tmp_path / "list.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [cr]}))
    assert interfaces("-f", str(tmp_path / "in"), "--kubevirt", str(tmp_path / "list.json")) == [
        {"name": "default", "masquerade": {}}
    ]
    # --kubevirt wins over a CR among the inputs.
    (tmp_path / "bridge.yaml").write_text("{}\n")
    both = ["-f", str(tmp_path / "in"), "-f", str(tmp_path / "cr.yaml")]
    assert interfaces(*both, "--kubevirt", str(tmp_path / "bridge.yaml")) == [
        {"name": "default", "bridge": {}}
    ]


@needs_cases
def test_validate_reports_admission_causes(tmp_path: Path) -> None:
    case = next(
        c
        for c in map(load, FILES)
        if c.id.startswith("requirements-")
        and "expanded" in c.expected
        and "causes" in c.expected["admission"]
        and "kubevirt" not in c.input
    )
    write_case(tmp_path / "case", case)
    plain = cli("expand", "-f", str(tmp_path / "case"), "-o", "json")
    assert plain.returncode == 0, plain.stderr
    proc = cli("expand", "-f", str(tmp_path / "case"), "-o", "json", "--validate")
    assert proc.returncode == 1
    assert proc.stdout == ""
    ((_, status),) = status_lines(proc.stderr)
    assert status["code"] == 422
    assert status["details"]["causes"] == case.expected["admission"]["causes"]


# --- engine-independent behaviour: usage errors, namespaces, the reader ---------------------------------


def assert_usage_error(proc: subprocess.CompletedProcess[str], text: str) -> None:
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert text in proc.stderr
    assert "Traceback" not in proc.stderr


def test_help_has_examples() -> None:
    proc = cli("expand", "--help")
    assert proc.returncode == 0
    assert "kubevirt-expand expand -f examples/" in proc.stdout
    for flag in ("--filename", "--kubevirt", "--namespace", "--output", "--presets", "--validate"):
        assert flag in proc.stdout
    assert "expand" in cli("--help").stdout


def test_usage_errors() -> None:
    assert_usage_error(cli("expand"), "error: no input: give -f FILE|DIR|- or write the paths to judge in")
    assert_usage_error(cli("expand", "-f", "examples", "-o", "wide"), "invalid choice: 'wide'")
    assert_usage_error(cli("expand", "-f", "no/such/file.yaml"), "error: no/such/file.yaml: no such file")
    assert_usage_error(cli("expand", "-f", "examples", "-n", ""), "error: --namespace must not be empty")


def test_broken_yaml_is_an_error_naming_file_document_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "vm.yaml"
    first = dump([TINY])
    bad.write_text(first + "---\nkind: VirtualMachine\nmetadata:\n  name: a: b\n")
    line = first.count("\n") + 4  # lines are counted in the file, as an editor shows them
    proc = cli("expand", "-f", str(tmp_path))
    assert_usage_error(proc, f"error: {bad}: document 2, line {line}: mapping values are not allowed")
    human, status, last = proc.stderr.splitlines()
    assert human == f"error: {bad}: document 2, line {line}: mapping values are not allowed in this context"
    assert json.loads(status) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "mapping values are not allowed in this context",
        "reason": "BadRequest",
        "code": 400,
    }
    assert last == "summary: 0 VMs, 0 admitted, 0 refused, 1 error, 1 file"


def test_a_file_that_is_not_yaml(tmp_path: Path) -> None:
    (tmp_path / "picture.yaml").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\xff\xfe")
    assert_usage_error(cli("expand", "-f", str(tmp_path / "picture.yaml")), "picture.yaml: document 1")
    (tmp_path / "notes.yaml").write_text("Just some notes: nothing: to see\n")
    assert_usage_error(cli("expand", "-f", str(tmp_path / "notes.yaml")), "notes.yaml: document 1, line 1")
    # A document that is no Kubernetes object at all is passed over, counted, and named.
    (tmp_path / "words.txt").write_text("hello world\n")
    proc = cli("expand", "-f", str(tmp_path / "words.txt"))
    assert_usage_error(proc, "error: no VirtualMachine found")
    assert f"skipped: 1 document that is no Kubernetes object ({tmp_path / 'words.txt'})" in proc.stderr
    assert summary(proc.stderr).endswith(", 1 file, 1 skipped")


def test_no_vm_in_input(tmp_path: Path) -> None:
    (tmp_path / "it.yaml").write_text(dump([TINY]))
    assert_usage_error(cli("expand", "-f", str(tmp_path)), f"error: no VirtualMachine found in {tmp_path}")
    assert_usage_error(cli("expand", "-f", "-", stdin=b""), "error: no VirtualMachine found in -")


def test_two_kubevirt_crs_are_ambiguous(tmp_path: Path) -> None:
    cr = {"apiVersion": "kubevirt.io/v1", "kind": "KubeVirt", "metadata": {"name": "kubevirt"}, "spec": {}}
    (tmp_path / "a.yaml").write_text(dump([VM, cr]))
    (tmp_path / "b.yaml").write_text(dump([cr]))
    assert_usage_error(cli("expand", "-f", str(tmp_path)), "2 KubeVirt CRs found")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("kind: VirtualMachineInstancetype\nmetadata: {name: x}\n", "found kind VirtualMachineInstancetype"),
        ("network: {}\n---\nnetwork: {}\n", "found 2 documents"),
        ("- a\n", "found a list"),
    ],
)
def test_bad_kubevirt_file(tmp_path: Path, content: str, problem: str) -> None:
    (tmp_path / "kv.yaml").write_text(content)
    proc = cli("expand", "-f", "examples/vm-fedora.yaml", "--kubevirt", str(tmp_path / "kv.yaml"))
    assert_usage_error(proc, f"expected one KubeVirt CR or KubeVirtConfiguration, {problem}")


def test_vm_in_another_namespace_than_the_flag(tmp_path: Path) -> None:
    vm = vm_named("elsewhere")
    vm["metadata"]["namespace"] = "prod"
    (tmp_path / "vm.yaml").write_text(dump([vm]))
    proc = cli("expand", "-f", str(tmp_path), "-n", "dev")
    assert proc.returncode == 1
    assert proc.stdout == ""
    ((human, status),) = status_lines(proc.stderr)
    assert (
        human
        == f"refused: {tmp_path / 'vm.yaml'}: document 1: prod/elsewhere: VM namespace must be empty or dev"
    )
    assert status["code"] == 422 and status["reason"] == "Invalid"
    assert status["details"]["causes"][0]["field"] == "metadata.namespace"


# --- in process, with the renderer replaced: what the CLI itself does with results ------------------


class FakeEngine:
    """Records what the CLI hands the renderer and answers with a fixed VM, warnings or failure."""

    def __init__(self, fail: Mapping[str, BaseException] | None = None, warnings: Sequence[str] = ()) -> None:
        self.fail = dict(fail or {})
        self.warnings = list(warnings)
        self.calls: list[tuple[dict[str, Any], WatchedLookup, Any, dict[str, Any]]] = []

    def __call__(self, vm: dict[str, Any], lookup: WatchedLookup, **kwargs: Any) -> ExpandResult:
        self.calls.append((copy.deepcopy(vm), lookup, kwargs.pop("kubevirt"), kwargs))
        name = vm["metadata"]["name"]
        if name in self.fail:
            raise self.fail[name]
        out = {
            "kind": "VirtualMachine",
            "apiVersion": "kubevirt.io/v1",
            "metadata": vm["metadata"],
            "spec": {"zeta": 1, "alpha": {"userData": "#cloud-config\npassword: x\n", "on": "yes"}},
            "status": {},
        }
        return ExpandResult(out, list(self.warnings))


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    engine = FakeEngine()
    monkeypatch.setattr("apiserver.cli.expand.expand", engine)
    return engine


def test_fake_yaml_output_keeps_order_and_literal_blocks(
    fake: FakeEngine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "vm.yaml").write_text(dump([VM]))
    assert main(["expand", "-f", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert err == "summary: 1 VM, 1 admitted, 0 refused, 0 errors, 1 file\n"
    assert out == (
        "kind: VirtualMachine\n"
        "apiVersion: kubevirt.io/v1\n"
        "metadata:\n"
        "  name: small\n"
        "  namespace: default\n"
        "spec:\n"
        "  zeta: 1\n"
        "  alpha:\n"
        "    userData: |\n"
        "      #cloud-config\n"
        "      password: x\n"
        "    'on': 'yes'\n"
        "status: {}\n"
    )


def test_fake_arguments_reach_the_renderer(
    fake: FakeEngine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = {"kind": "VirtualMachineClusterInstancetype", "metadata": {"name": "big"}, "spec": {}}
    elsewhere = copy.deepcopy(TINY)
    elsewhere["metadata"]["namespace"] = "other"
    (tmp_path / "in.yaml").write_text(dump([VM, TINY, cluster, elsewhere]))
    (tmp_path / "kv.yaml").write_text("kind: KubeVirtConfiguration\nnetwork: {}\n")
    args = ["expand", "-f", str(tmp_path / "in.yaml"), "-n", "dev", "--presets", "--validate"]
    assert main([*args, "--kubevirt", str(tmp_path / "kv.yaml")]) == 0
    ((vm, index, kubevirt, flags),) = fake.calls
    assert vm["metadata"] == {"name": "small", "namespace": "dev"}
    assert kubevirt == {"network": {}}
    assert flags == {
        "presets": True,
        "validate": True,
        "exact_names": False,
        "field_validation": "Strict",
        "duplicates": [],
    }
    from apiserver.render import ObjectRef

    assert index.get(ObjectRef("VirtualMachineInstancetype", "dev", "tiny")) is not None
    assert index.get(ObjectRef("VirtualMachineInstancetype", "other", "tiny")) is not None
    assert index.get(ObjectRef("VirtualMachineClusterInstancetype", "", "big")) is not None
    assert len(index.index) == 3


def test_fake_warnings_and_failures(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = FakeEngine(
        fail={"bad": ExpandError.invalid("it broke\nbadly"), "bug": KeyError("spec")},
        warnings=["kubevirt.io/v1 VirtualMachineInstancePresets is now deprecated"],
    )
    monkeypatch.setattr("apiserver.cli.expand.expand", engine)
    # TINY given: a VM naming a missing instancetype would have it named first (test_typos.py)
    (tmp_path / "in.yaml").write_text(dump([vm_named("bad"), vm_named("ok"), vm_named("bug"), TINY]))
    # A failure of ours (500) is no verdict on the VM: an Error, exit 2.
    assert main(["expand", "-f", str(tmp_path), "-o", "json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["items"][0]["metadata"]["name"] == "ok"
    lines = err.splitlines()
    where = f"{tmp_path / 'in.yaml'}: document"
    assert lines[0] == f"refused: {where} 1: default/bad: it broke badly"
    assert json.loads(lines[1])["message"] == "it broke\nbadly"
    assert lines[2] == (
        f"Warning: {where} 2: default/ok: kubevirt.io/v1 VirtualMachineInstancePresets is now deprecated"
    )
    assert lines[3] == f"error: {where} 3: default/bug: Internal error occurred: KeyError: 'spec'"
    assert json.loads(lines[4])["code"] == 500
    assert lines[5] == "summary: 3 VMs, 1 admitted, 1 refused, 1 error, 1 file"
    assert len(lines) == 6


def test_fake_only_failures_print_nothing_on_stdout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("apiserver.cli.expand.expand", FakeEngine(fail={"small": ExpandError.invalid("no")}))
    (tmp_path / "vm.yaml").write_text(dump([VM]))
    for output in ("yaml", "json"):
        assert main(["expand", "-f", str(tmp_path), "-o", output]) == 1
        out, _ = capsys.readouterr()
        assert out == ""


def test_fake_stdin_in_process(
    fake: FakeEngine, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    stream = io.TextIOWrapper(io.BytesIO(json.dumps(VM).encode()))
    monkeypatch.setattr(sys, "stdin", stream)
    assert main(["expand", "-f", "-", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["metadata"]["name"] == "small"


PATCHED_RUN = """
import sys
import apiserver.cli.expand as cli_expand
from apiserver.cli import main
from apiserver.render import ExpandResult
cli_expand.expand = lambda vm, lookup, **kw: ExpandResult(dict(vm), [])
sys.exit(main(sys.argv[1:]))
"""


def test_broken_pipe_is_quiet(tmp_path: Path) -> None:
    # Many VMs into a reader that stops after one line: no traceback, no "Exception ignored".
    (tmp_path / "in.yaml").write_text(dump([vm_named(f"vm{i}") for i in range(3000)]))
    cmd = [sys.executable, "-c", PATCHED_RUN, "expand", "-f", str(tmp_path)]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline() == b"apiVersion: kubevirt.io/v1\n"
        proc.stdout.close()
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
    assert err == ""
    assert code == 1


def test_help_warn_example_expands_only_the_given_vm(tmp_path: Path) -> None:
    """The ``--field-validation Warn`` example of ``expand --help``, run as shown with a typo in vm.yaml,
    prints that VM once with its warning (not also the VMs of examples/)."""
    help_text = cli("expand", "--help").stdout
    lines = help_text.split("# Expand a VM with unknown fields")[1].splitlines()[1:3]
    command = " ".join(part.strip().rstrip("\\").strip() for part in lines).split()
    assert command[:2] == ["kubevirt-expand", "expand"] and "vm.yaml" in command, command
    vm = (EXAMPLES / "vm-fedora.yaml").read_text().replace("runStrategy:", "runStrategyy:")
    (tmp_path / "vm.yaml").write_text(vm)
    args = [str(tmp_path / "vm.yaml") if a == "vm.yaml" else a for a in command[1:]]
    result = cli(*args)
    assert result.returncode == 0, result.stderr
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(result.stdout)] == ["fedora"]
    assert result.stderr == (
        f'Warning: {tmp_path / "vm.yaml"}: document 1: default/fedora: unknown field "spec.runStrategyy"\n'
        "summary: 1 VM, 1 admitted, 0 refused, 0 errors, 3 files\n"
    )
