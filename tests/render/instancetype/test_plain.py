"""The v1beta1 spec dicts written without pydantic (apiserver/render/instancetype/models/plain.py) are the
models' dumps: the same members, zero values and types, for every instance type and preference of the
examples, the bundled test catalog, the conformance corpus and common-instancetypes' releases; the same
errors for the broken ones. And a command-line run on current objects never imports pydantic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from apiserver.render.instancetype import revision
from apiserver.render.instancetype.models import v1beta1
from apiserver.render.instancetype.models._base import GoModel
from apiserver.render.instancetype.models.plain import FIELDS
from tests.support import shared

REPO = Path(__file__).resolve().parents[3]
KINDS = (*revision.INSTANCETYPE_KINDS, *revision.PREFERENCE_KINDS)


def _held(annotation: Any) -> type[GoModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, GoModel):
        return annotation
    return next((m for a in typing.get_args(annotation) if (m := _held(a)) is not None), None)


def fields_of(model: type[GoModel]) -> tuple[tuple[str, str | None, Any], ...]:
    """What plain.FIELDS should say of a model: each member's JSON name, model held and zero value."""
    out = []
    for name, info in model.model_fields.items():
        held = _held(info.annotation)
        zero = {} if isinstance(info.default, GoModel) else info.default
        out.append((info.alias or name, held.__name__ if held else None, zero))
    return tuple(out)


def test_the_fields_are_the_models() -> None:
    models = {
        name: cls
        for name, cls in vars(v1beta1).items()
        if isinstance(cls, type) and issubclass(cls, GoModel) and cls is not GoModel
    }
    assert set(FIELDS) == set(models)
    for name, cls in models.items():
        assert FIELDS[name] == fields_of(cls), name


def _objects(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        if value.get("kind") in KINDS and ("spec" in value or "metadata" in value):  # no VM matcher
            yield value
        for member in value.values():
            yield from _objects(member)
    elif isinstance(value, list):
        for item in value:
            yield from _objects(item)


def _from_files(paths: list[Path]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in paths:
        if path.suffix == ".json":
            found += _objects(json.loads(path.read_text()))
        else:
            try:
                found += _objects(list(yaml.safe_load_all(path.read_text())))
            except yaml.YAMLError:
                continue  # a Helm template, a broken file of the CLI's tests
    return found


def _typed(value: Any) -> Any:
    """The value with each leaf's type beside it, so a plain str is not taken for a QuantityText."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


def _both(obj: dict[str, Any], exact_names: bool) -> tuple[Any, Any]:
    kind = obj.get("kind")
    plain, typed = (
        (revision.instancetype_spec_dict_from_object, revision.instancetype_spec_from_object)
        if kind in revision.INSTANCETYPE_KINDS
        else (revision.preference_spec_dict_from_object, revision.preference_spec_from_object)
    )
    answers = []
    for run in (
        lambda: plain(obj, exact_names=exact_names),
        lambda: typed(obj, exact_names=exact_names).model_dump(by_alias=True, exclude_none=True),
    ):
        try:
            answers.append(_typed(run()))
        except revision.RevisionError as err:
            answers.append(("error", type(err).__name__, err.message))
    return answers[0], answers[1]


def check(objects: list[dict[str, Any]]) -> int:
    current = 0
    for obj in objects:
        for exact_names in (True, False):
            plain, typed = _both(obj, exact_names)
            assert plain == typed, (obj, exact_names)
        current += obj.get("apiVersion") in (None, "", revision.V1BETA1)
    return current


def test_the_dicts_are_the_dumps_for_the_examples_and_the_test_catalog() -> None:
    objects = _from_files(
        [*sorted((REPO / "examples").glob("*.yaml")), *sorted((REPO / "tests" / "cli").rglob("*.yaml"))]
    )
    assert check(objects) >= 9


def test_the_dicts_are_the_dumps_for_every_member() -> None:
    """Every member of both specs set (values from the conformance corpus' shapes), and broken ones."""
    instancetype = {
        "kind": "VirtualMachineInstancetype",
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "metadata": {"name": "all"},
        "spec": {
            "nodeSelector": {"a": "b"},
            "schedulerName": "s",
            "cpu": {
                "guest": 2,
                "model": "host-passthrough",
                "dedicatedCPUPlacement": True,
                "numa": {"guestMappingPassthrough": {}},
                "isolateEmulatorThread": False,
                "realtime": {"mask": "0"},
                "maxSockets": 4,
            },
            "memory": {
                "guest": "1024Mi",
                "hugepages": {"pageSize": "2Mi"},
                "overcommitPercent": 10,
                "maxGuest": "4Gi",
            },
            "gpus": [{"name": "g", "deviceName": "d"}],
            "hostDevices": [{"name": "h", "deviceName": "d"}],
            "ioThreadsPolicy": "auto",
            "ioThreads": {"supplementalPoolThreadCount": 2},
            "launchSecurity": {"sev": {}},
            "annotations": {"x": "y"},
            "unknown": 1,
        },
    }
    preference = {
        "kind": "VirtualMachineClusterPreference",
        "metadata": {"name": "all"},
        "spec": {
            "clock": {"preferredClockOffset": {"utc": {}}, "preferredTimer": {"hpet": {"present": False}}},
            "cpu": {
                "preferredCPUTopology": "spread",
                "spreadOptions": {"across": "SocketsCores", "ratio": 2},
                "preferredCPUFeatures": [{"name": "x", "policy": "require"}],
            },
            "devices": {
                "preferredDiskBus": "virtio",
                "preferredRng": {},
                "preferredTPM": {"persistent": True},
                "preferredAutoattachGraphicsDevice": False,
                "preferredDiskBlockSize": {"custom": {"logical": 512, "physical": 512}},
            },
            "features": {"preferredAcpi": {}, "preferredHyperv": {"relaxed": {}}, "preferredKvm": {}},
            "firmware": {"preferredUseEfi": True, "preferredEfi": {"secureBoot": True}},
            "machine": {"preferredMachineType": "q35"},
            "volumes": {"preferredStorageClassName": "fast"},
            "preferredSubdomain": "sub",
            "preferredTerminationGracePeriodSeconds": 30,
            "requirements": {"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}, "architecture": "amd64"},
            "annotations": {"a": "b"},
            "preferSpreadSocketToCoreRatio": 3,
            "preferredArchitecture": "arm64",
            "preferredLaunchSecurity": {"sev": {}},
        },
    }
    broken = [
        {**instancetype, "spec": {"cpu": {"guest": "two"}, "memory": {"guest": "1Gi"}}},
        {**instancetype, "spec": {"cpu": {"guest": 1}, "memory": {"guest": "lots"}}},
        {**preference, "spec": {"cpu": {"preferredCPUTopology": 5}}},
        {**preference, "spec": None},
        {**preference, "spec": {"CPU": {"preferredCPUTopology": "cores"}, "Devices": None}},
        {**instancetype, "apiVersion": "instancetype.kubevirt.io/v1alpha2"},
        {**instancetype, "kind": "VirtualMachineClusterInstancetype", "apiVersion": "nope/v1"},
    ]
    assert check([instancetype, preference, *broken]) == 7
    full = revision.instancetype_spec_dict_from_object(instancetype)
    assert list(full) == [name for name, _, _ in FIELDS["InstancetypeSpec"]]
    assert list(full["cpu"]) == [name for name, _, _ in FIELDS["CPUInstancetype"]]
    full = revision.preference_spec_dict_from_object(preference)
    assert list(full) == [name for name, _, _ in FIELDS["PreferenceSpec"]]


@shared.needs_shared(shared.CASES_DIR)
def test_the_dicts_are_the_dumps_for_the_conformance_corpus() -> None:
    objects = [
        obj
        for case in sorted(shared.CASES_DIR.glob("*.json"))
        for obj in _objects(json.loads(case.read_text()).get("input"))
    ]
    assert check(objects) >= 90


@shared.needs_shared(shared.SHARED / "catalogs" / "common-instancetypes")
def test_the_dicts_are_the_dumps_for_common_instancetypes() -> None:
    paths = sorted((shared.SHARED / "catalogs" / "common-instancetypes").rglob("*.yaml"))
    assert check(_from_files(paths)) >= 100


def test_a_command_line_run_on_current_objects_imports_no_pydantic() -> None:
    """The models and pydantic were half of a one-file check's start-up (docs/performance.md)."""
    examples = REPO / "examples"
    code = (
        "import contextlib, io, sys\nfrom apiserver.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n    code = main(sys.argv[1:])\n"
        "print(code, sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic' or 'models.v1' in m))"
    )
    args = [f"-f={examples / n}" for n in ("vm-fedora.yaml", "instancetypes.yaml", "preferences.yaml")]
    result = subprocess.run(
        [sys.executable, "-c", code, "expand", *args, "--check"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        check=True,
    )
    assert result.stdout.split(maxsplit=1) == ["0", "[]\n"], result.stdout + result.stderr
