"""One strictness policy (kube-apiserver's fieldValidation) at every entry point: the server's PUT, the
command line and the Python API answer the same input with the same Status, and warn the same way."""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver import ExpandError, ExpandWarning, expand, expand_vm
from apiserver.cli import main
from apiserver.documents.reader import KubeDumper
from tests.support.http_helpers import MemorySource, put_path, running_server

VM: dict[str, Any] = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachine",
    "metadata": {"name": "vm1", "namespace": "default"},
    "spec": {"runStrategy": "Always", "template": {"spec": {"domain": {"devices": {}}}}},
}
DOMAIN = "spec.template.spec.domain"


def with_domain(**members: Any) -> dict[str, Any]:
    vm = copy.deepcopy(VM)
    vm["spec"]["template"]["spec"]["domain"].update(members)
    return vm


TYPO = with_domain(cpuu={"cores": 2})  # unknown field
CASE = with_domain(cpu={"dedicatedCPUPlacement": True})  # Go's decoder matches it, a strict one does not
REQUIRED = with_domain(devices={"inputs": [{"name": "tablet", "bus": "usb"}]})  # inputs[].type missing

# The same input everywhere, and what each level makes of it: (causes at Strict, warnings at Warn).
FINDINGS: dict[str, tuple[dict[str, Any], list[tuple[str, str]], list[str]]] = {
    "unknown": (
        TYPO,
        [(f"{DOMAIN}.cpuu", "FieldValueUnknownField")],
        [f'unknown field "{DOMAIN}.cpuu"'],
    ),
    "case": (
        CASE,
        [(f"{DOMAIN}.cpu.dedicatedCPUPlacement", "FieldValueUnknownField")],
        [f'unknown field "{DOMAIN}.cpu.dedicatedCPUPlacement"'],
    ),
    "required": (
        REQUIRED,
        [(f"{DOMAIN}.devices.inputs[0].type", "FieldValueRequired")],
        [f"{DOMAIN}.devices.inputs[0].type: Required value"],
    ),
}

# Refused at every level, with one Status: (input, code, reason, causes).
ALWAYS: dict[str, tuple[dict[str, Any], int, str, list[tuple[str, str]]]] = {
    "no-spec": (
        {k: v for k, v in VM.items() if k != "spec"},
        422,
        "Invalid",
        [("spec", "FieldValueRequired")],
    ),
    "null-spec": ({**VM, "spec": None}, 422, "Invalid", [("spec", "FieldValueRequired")]),
    "spec-not-object": ({**VM, "spec": [1]}, 422, "Invalid", [("spec", "FieldValueTypeInvalid")]),
    "pod": ({**VM, "kind": "Pod"}, 422, "Invalid", [("kind", "FieldValueNotSupported")]),
    "empty": ({}, 422, "Invalid", [("spec", "FieldValueRequired")]),
}
LEVELS = ("Strict", "Warn", "Ignore")


# --- the three entry points -----------------------------------------------------------------------


async def via_server(
    tmp_path: Path, body: bytes, level: str | None, content_type: str = "application/json"
) -> Any:
    query = f"?fieldValidation={level}" if level is not None else ""
    async with running_server(MemorySource(), tmp_path) as srv:
        return await srv.put(put_path() + query, data=body, headers={"Content-Type": content_type})


def via_cli(
    tmp_path: Path, text: str, level: str | None, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    path = tmp_path / "vm.yaml"
    path.write_text(text)
    flags = ["--field-validation", level] if level is not None else []
    code = main(["expand", "-f", str(path), "-o", "json", *flags])
    out, err = capsys.readouterr()
    return code, out, err


SUMMARY_ONE_ADMITTED = "summary: 1 VM, 1 admitted, 0 refused, 0 errors, 1 file"


def cli_status(err: str) -> dict[str, Any]:
    lines = [line for line in err.splitlines() if not line.startswith(("Warning: ", "summary: "))]
    assert (
        len(lines) == 2 and lines[0].startswith("refused: ") and ": document 1: default/vm1: " in lines[0]
    ), err
    status: dict[str, Any] = json.loads(lines[1])
    return status


def python_status(vm: Any, level: str | None) -> dict[str, Any]:
    kwargs = {"field_validation": level} if level is not None else {}
    with pytest.raises(ExpandError) as exc:
        expand(vm, **kwargs)
    return exc.value.status


def causes_of(status: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["field"], c["reason"]) for c in status.get("details", {}).get("causes", [])]


# --- Strict (the command line's and the Python API's default; the server's PUTs default to Warn) ------


@pytest.mark.parametrize("name", sorted(FINDINGS))
@pytest.mark.parametrize("level", ["Strict", None], ids=["explicit", "default"])
async def test_strict_refuses_with_the_same_status_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, level: str | None
) -> None:
    vm, causes, _ = FINDINGS[name]
    server = await via_server(tmp_path, json.dumps(vm).encode(), "Strict")
    assert server.status == 422
    from_server = server.json()
    code, out, err = via_cli(tmp_path, yaml.dump(vm, Dumper=KubeDumper), level, capsys)
    assert code == 1 and out == ""
    from_cli = cli_status(err)
    from_python = python_status(vm, level)
    assert from_server == from_cli == from_python
    assert from_server["reason"] == "Invalid"
    assert causes_of(from_server) == causes
    assert from_server["message"].startswith('VirtualMachine.kubevirt.io "vm1" is invalid: ')


@pytest.mark.parametrize("name", sorted(ALWAYS))
@pytest.mark.parametrize("level", LEVELS)
async def test_always_refused_at_every_level_with_one_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, level: str
) -> None:
    vm, code, reason, causes = ALWAYS[name]
    from_server = (await via_server(tmp_path, json.dumps(vm).encode(), level)).json()
    from_python = python_status(vm, level)
    assert from_server == from_python
    assert (from_server["code"], from_server["reason"], causes_of(from_server)) == (code, reason, causes)
    if vm.get("kind") in (None, "VirtualMachine") and vm:  # the command line expands VirtualMachines only
        exit_code, out, err = via_cli(tmp_path, yaml.dump(vm, Dumper=KubeDumper), level, capsys)
        assert exit_code == 1 and out == ""
        assert cli_status(err) == from_server


async def test_a_body_that_is_not_an_object_is_400_on_the_server_and_in_python(tmp_path: Path) -> None:
    reply = await via_server(tmp_path, b"[1, 2]", "Ignore")
    assert reply.status == 400
    assert reply.json() == python_status([1, 2], "Ignore")
    assert reply.json()["message"] == "expected a VirtualMachine object, got a list"


# --- Warn -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FINDINGS))
async def test_warn_expands_and_warns_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    vm, _, texts = FINDINGS[name]
    ignored = expand(vm, field_validation="Ignore")
    assert ignored.warnings == ()

    reply = await via_server(tmp_path, json.dumps(vm).encode(), "Warn")
    assert reply.status == 200
    assert reply.json() == ignored.vm
    assert reply.header_lists["warning"] == ["299 - " + json.dumps(t) for t in texts]

    code, out, err = via_cli(tmp_path, yaml.dump(vm, Dumper=KubeDumper), "Warn", capsys)
    assert code == 0
    assert json.loads(out) == ignored.vm
    assert err.splitlines() == [
        *(f"Warning: {tmp_path / 'vm.yaml'}: document 1: default/vm1: {t}" for t in texts),
        SUMMARY_ONE_ADMITTED,
    ]

    result = expand(vm, field_validation="Warn")
    assert result.vm == ignored.vm and list(result.warnings) == texts
    with pytest.warns(ExpandWarning) as caught:
        assert expand_vm(vm, field_validation="Warn") == ignored.vm
    assert [str(w.message) for w in caught] == texts


async def test_ignore_says_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reply = await via_server(tmp_path, json.dumps(TYPO).encode(), "Ignore")
    assert reply.status == 200 and "warning" not in reply.headers
    code, _, err = via_cli(tmp_path, yaml.dump(TYPO, Dumper=KubeDumper), "ignore", capsys)  # any case
    assert (code, err) == (0, SUMMARY_ONE_ADMITTED + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expand_vm(TYPO, field_validation="Ignore")


# --- duplicate fields: the same in JSON and YAML --------------------------------------------------------

DUP_JSON = (
    b'{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "vm1"},'
    b' "spec": {"runStrategy": "Halted", "runStrategy": "Always",'
    b' "template": {"spec": {"domain": {"devices": {}}}}}}'
)
DUP_YAML = (
    "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: vm1\nspec:\n"
    "  runStrategy: Halted\n  runStrategy: Always\n  template:\n    spec:\n      domain:\n        devices: {}\n"
)


@pytest.mark.parametrize(
    ("body", "content_type"), [(DUP_JSON, "application/json"), (DUP_YAML.encode(), "application/yaml")]
)
async def test_duplicate_fields_follow_the_level(tmp_path: Path, body: bytes, content_type: str) -> None:
    strict = await via_server(tmp_path, body, "Strict", content_type)
    assert strict.status == 422
    assert strict.json()["details"]["causes"] == [
        {
            "reason": "FieldValueDuplicate",
            "message": 'duplicate field "spec.runStrategy"',
            "field": "spec.runStrategy",
        }
    ]
    warn = await via_server(tmp_path, body, "Warn", content_type)
    assert warn.status == 200
    assert warn.json()["spec"]["runStrategy"] == "Always"  # the last one, as Go keeps it
    assert warn.header_lists["warning"] == ['299 - "duplicate field \\"spec.runStrategy\\""']
    ignore = await via_server(tmp_path, body, "Ignore", content_type)
    assert ignore.status == 200 and "warning" not in ignore.headers


def test_duplicate_fields_on_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = via_cli(tmp_path, DUP_YAML, None, capsys)
    assert code == 1 and out == ""
    assert causes_of(cli_status(err)) == [("spec.runStrategy", "FieldValueDuplicate")]
    code, out, err = via_cli(tmp_path, DUP_YAML, "Warn", capsys)
    assert code == 0 and json.loads(out)["spec"]["runStrategy"] == "Always"
    assert err == (
        f'Warning: {tmp_path / "vm.yaml"}: document 1: default/vm1: duplicate field "spec.runStrategy"\n'
        f"{SUMMARY_ONE_ADMITTED}\n"
    )
    # In another object of the input: an error at Strict (exit 2; the VM, which does not use it, is
    # still judged), a warning at Warn.
    other = DUP_YAML.replace("runStrategy: Halted\n  runStrategy", "runStrategy")
    other += "---\nkind: VirtualMachineInstancetype\nmetadata: {name: it, name: it2}\nspec: {}\n"
    code, out, err = via_cli(tmp_path, other, None, capsys)
    assert code == 2 and json.loads(out)["metadata"]["name"] == "vm1"
    where = f"error: {tmp_path / 'vm.yaml'}: document 2, line 13"
    assert f'{where}: VirtualMachineInstancetype default/it2: duplicate field "metadata.name"' in err
    assert err.endswith("summary: 1 VM, 1 admitted, 0 refused, 1 error, 1 file\n")
    code, out, err = via_cli(tmp_path, other, "Warn", capsys)
    assert code == 0 and 'document 2: duplicate field "metadata.name"' in err


# --- choosing the level ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["strict", "bogus", "STRICT"])
async def test_an_unsupported_level_is_answered_as_kube_apiserver_does(tmp_path: Path, value: str) -> None:
    reply = await via_server(tmp_path, json.dumps(VM).encode(), value)
    assert reply.status == 422
    body = reply.json()
    supported = 'supported values: "", "Ignore", "Strict", "Warn"'
    assert body["message"] == (
        f'UpdateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "{value}": {supported}'
    )
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueNotSupported",
            "message": f'Unsupported value: "{value}": {supported}',
            "field": "fieldValidation",
        }
    ]


@pytest.mark.parametrize("level", ["", None], ids=["empty", "absent"])
async def test_the_servers_default_is_warn_as_kube_apiservers(tmp_path: Path, level: str | None) -> None:
    body = json.dumps(TYPO).encode()
    default = await via_server(tmp_path, body, level)
    warned = await via_server(tmp_path, body, "Warn")
    assert default.status == warned.status != 422
    assert default.header_lists.get("warning") == warned.header_lists.get("warning")
    assert default.header_lists.get("warning")


def test_an_unsupported_level_elsewhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "vm.yaml"
    path.write_text(yaml.dump(VM))
    with pytest.raises(SystemExit) as exc:
        main(["expand", "-f", str(path), "--field-validation", "bogus"])
    assert exc.value.code == 2
    assert "must be one of Strict, Warn, Ignore" in capsys.readouterr().err
    with pytest.raises(ValueError, match="field_validation must be one of Strict, Warn, Ignore"):
        expand(VM, field_validation="bogus")


# --- what the Python API accepts ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vm", "objects", "message"),
    [
        (
            {**VM, "metadata": {"name": "vm1", "labels": {1: "a"}}},
            [],
            "metadata.labels: mapping key 1 is not a string",
        ),
        ({**VM, "metadata": {"name": "vm1", "labels": {None: "a"}}}, [], "mapping key None is not a string"),
        (VM, [{"kind": "X"}, [1]], "objects[1]: expected an object (a mapping), got a list"),
        (
            VM,
            [{"kind": "X", "metadata": {("a",): 1}}],
            "objects[0].metadata: mapping key ('a',) is not a string",
        ),
        ({**VM, "status": {"x": float("nan")}}, [], "status.x: nan is not a JSON number"),
        ({**VM, "status": {"x": 10**400}}, [], "status.x: number out of range"),
        ({**VM, "status": {"x": (1, 2)}}, [], "status.x: a tuple is not a JSON value"),
        ({**VM, "status": {"x": b"raw"}}, [], "status.x: a bytes is not a JSON value"),
    ],
    ids=["int-key", "none-key", "object-not-mapping", "tuple-key", "nan", "huge-int", "tuple", "bytes"],
)
def test_python_arguments_must_be_json(vm: Any, objects: list[Any], message: str) -> None:
    with pytest.raises(ExpandError) as exc:
        expand_vm(vm, objects, field_validation="Ignore")
    assert exc.value.code == 400 and exc.value.reason == "BadRequest"
    assert message in exc.value.message


def test_python_nesting_is_capped() -> None:
    deep: Any = {}
    for _ in range(150):
        deep = {"a": deep}
    with pytest.raises(ExpandError, match="nested deeper than 100 levels"):
        expand_vm({**VM, "status": deep}, field_validation="Ignore")


def test_python_a_5000_digit_quantity_is_an_expand_error() -> None:
    vm = with_domain(resources={"requests": {"memory": "12345" * 1000}})
    with pytest.raises(ExpandError) as exc:
        expand_vm(vm, field_validation="Ignore")
    assert exc.value.code == 422
    assert "at most 4000 significant digits" in exc.value.message
