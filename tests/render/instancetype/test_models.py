"""The spec models: naming convention, presence semantics, Go-like raw decoding, v1alpha conversions."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from apiserver.render.golang.gojson.types import fields_of
from apiserver.render.instancetype.models import v1alpha, v1beta1
from apiserver.render.instancetype.models._base import GoModel, raw_context
from apiserver.render.instancetype.models.v1beta1 import InstancetypeSpec, PreferenceSpec

ALL_MODELS = [
    m
    for module in (v1beta1, v1alpha)
    for m in vars(module).values()
    if isinstance(m, type) and issubclass(m, GoModel) and m is not GoModel
]


def _snake(json_name: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", json_name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


@pytest.mark.parametrize(
    "model", ALL_MODELS, ids=[f"{m.__module__.rsplit('.', 1)[1]}.{m.__name__}" for m in ALL_MODELS]
)
def test_attribute_is_snake_case_of_json_name(model: type[BaseModel]) -> None:
    for name, field in model.model_fields.items():
        assert name == _snake(field.alias or name), (name, field.alias)


def test_snake_examples() -> None:
    assert _snake("dedicatedCPUPlacement") == "dedicated_cpu_placement"
    assert _snake("preferredDiskIO") == "preferred_disk_io"
    assert _snake("preferredTPM") == "preferred_tpm"


V1BETA1_MODELS = [m for m in ALL_MODELS if m.__module__.endswith(".v1beta1")]


@pytest.mark.parametrize("model", V1BETA1_MODELS, ids=[m.__name__ for m in V1BETA1_MODELS])
def test_v1beta1_models_match_the_go_types(model: type[GoModel]) -> None:
    """Every JSON member of KubeVirt's v1beta1 type has an attribute, in Go's order, and no more."""
    go_fields = fields_of(f"kubevirt.io/api/instancetype/v1beta1.{model.go_name()}")
    assert [f.alias or n for n, f in model.model_fields.items()] == [f.name for f in go_fields]
    # Pointer, map and slice members are None when absent; plain values and structs have a zero default.
    for (attr, field), go in zip(model.model_fields.items(), go_fields, strict=True):
        nilable = bool(go.ref.get("p")) or go.ref["k"] in ("map", "slice")
        assert (field.default is None) == nilable, attr


def test_presence_defaults() -> None:
    spec = InstancetypeSpec()
    assert spec.cpu.guest == 0 and spec.memory.guest == "0" and spec.scheduler_name == ""
    for absent in (
        spec.cpu.model,
        spec.cpu.dedicated_cpu_placement,
        spec.cpu.numa,
        spec.node_selector,
        spec.gpus,
        spec.io_threads,
        spec.memory.max_guest,
        spec.annotations,
    ):
        assert absent is None
    pref = PreferenceSpec()
    assert pref.cpu is None and pref.devices is None and pref.prefer_spread_socket_to_core_ratio == 0


def test_populate_by_name_and_alias() -> None:
    a = v1beta1.CPUInstancetype(guest=2, dedicated_cpu_placement=True)
    b = v1beta1.CPUInstancetype.model_validate({"guest": 2, "dedicatedCPUPlacement": True})
    assert a == b and a.dedicated_cpu_placement is True


def test_models_are_frozen() -> None:
    with pytest.raises(ValidationError):
        InstancetypeSpec().scheduler_name = "x"  # type: ignore[misc]


def test_go_json_encoding() -> None:
    """to_json writes what json.Marshal writes: set pointers even when zero, plain zero values dropped."""
    spec = InstancetypeSpec.model_validate(
        {
            "cpu": {"guest": 0, "model": "", "dedicatedCPUPlacement": False},
            "memory": {"guest": "0"},
            "nodeSelector": {},
            "schedulerName": "",
        }
    )
    assert spec.to_json() == {
        "cpu": {"guest": 0, "model": "", "dedicatedCPUPlacement": False},
        "memory": {"guest": "0"},
    }
    assert PreferenceSpec.model_validate({"cpu": {}, "devices": {"preferredDiskBus": ""}}).to_json() == {
        "cpu": {},
        "devices": {},
    }


# --- raw decoding (old shapes) ---------------------------------------------------------------------


def _raw(model: type[GoModel], doc: Any, *, strict: bool = False) -> Any:
    return model.model_validate(doc, context=raw_context(strict=strict), by_alias=True, by_name=False)


def test_raw_null_keeps_zero_value() -> None:
    spec = _raw(v1alpha.InstancetypeSpec, {"cpu": {"guest": 2, "model": None}, "memory": None, "gpus": None})
    assert spec.cpu.model == "" and spec.memory.guest == "0" and spec.gpus is None


@pytest.mark.parametrize(
    "doc",
    [
        {"cpu": {"guest": "2"}},
        {"cpu": {"guest": 2.0}},
        {"cpu": {"guest": -1}},
        {"cpu": {"guest": 1 << 32}},
        {"cpu": {"guest": True}},
        {"cpu": {"model": 5}},
        {"cpu": {"dedicatedCPUPlacement": "true"}},
        {"memory": {"guest": True}},
        {"memory": {"guest": "1Zi"}},
        {"cpu": "x"},
    ],
)
def test_raw_type_errors(doc: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        _raw(v1alpha.InstancetypeSpec, doc)


def test_raw_names_are_case_sensitive_and_attribute_names_are_not_json() -> None:
    spec = _raw(v1alpha.InstancetypeSpec, {"CPU": {"guest": 2}, "cpu": {"dedicated_cpu_placement": True}})
    assert spec.cpu.guest == 0 and spec.cpu.dedicated_cpu_placement is False
    with pytest.raises(ValidationError):
        _raw(v1alpha.InstancetypeSpec, {"CPU": {"guest": 2}}, strict=True)


def test_raw_quantities_are_canonical() -> None:
    spec = _raw(v1alpha.InstancetypeSpec, {"memory": {"guest": "1024Mi"}})
    assert spec.memory.guest == "1Gi"
    assert _raw(v1alpha.InstancetypeSpec, {"memory": {"guest": 2048}}).memory.guest == "2048"


def test_raw_core_members_are_go_decoded() -> None:
    spec = _raw(
        v1alpha.InstancetypeSpec,
        {
            "cpu": {"numa": {"guestMappingPassthrough": {}, "bogus": 1}},
            "memory": {"hugepages": {"pageSize": "2Mi", "x": 1}},
        },
    )
    assert spec.cpu.numa == {"guestMappingPassthrough": {}}
    assert spec.memory.hugepages == {"pageSize": "2Mi"}


# --- conversions (compatibility_test.go, §8.4 of the semantics) ----------------------------------


def test_instancetype_conversion_materialises_pointers() -> None:
    old = v1alpha.InstancetypeSpec.model_validate({"cpu": {"guest": 4}, "memory": {"guest": "128Mi"}})
    new = old.to_v1beta1()
    assert new.to_json() == {
        "cpu": {"guest": 4, "model": "", "dedicatedCPUPlacement": False, "isolateEmulatorThread": False},
        "memory": {"guest": "128Mi"},
    }
    assert new.cpu.max_sockets is None and new.memory.overcommit_percent == 0 and new.node_selector is None


def test_instancetype_conversion_copies_everything_else() -> None:
    doc = {
        "cpu": {
            "guest": 2,
            "model": "host-passthrough",
            "dedicatedCPUPlacement": True,
            "isolateEmulatorThread": True,
            "numa": {"guestMappingPassthrough": {}},
            "realtime": {"mask": "0"},
        },
        "memory": {"guest": "2Gi", "hugepages": {"pageSize": "1Gi"}},
        "gpus": [{"name": "g", "deviceName": "nvidia"}],
        "hostDevices": [],
        "ioThreadsPolicy": "auto",
        "launchSecurity": {"sev": {}},
    }
    new = _raw(v1alpha.InstancetypeSpec, doc).to_v1beta1()
    assert new.cpu.model == "host-passthrough" and new.cpu.dedicated_cpu_placement is True
    assert new.cpu.numa == {"guestMappingPassthrough": {}} and new.cpu.realtime == {"mask": "0"}
    assert new.memory.hugepages == {"pageSize": "1Gi"}
    assert new.gpus == [{"name": "g", "deviceName": "nvidia"}]
    assert new.host_devices == []  # an empty list stays present, as Go's unsafe slice copy keeps it
    assert new.io_threads_policy == "auto" and new.launch_security == {"sev": {}}


def test_preference_conversion() -> None:
    doc = {
        "clock": {"preferredClockOffset": {"utc": {}}},
        "cpu": {"preferredCPUTopology": "preferCores"},
        "devices": {"preferredDiskBus": "virtio", "preferredAutoattachInputDevice": False},
        "features": {"preferredSmm": {}},
        "firmware": {
            "preferredUseEfi": True,
            "preferredUseSecureBoot": False,
            "preferredUseBiosSerial": True,
        },
        "machine": {"preferredMachineType": "q35"},
    }
    new = _raw(v1alpha.PreferenceSpec, doc).to_v1beta1()
    assert new.to_json() == doc


def test_preference_conversion_empty_topology_and_volumes() -> None:
    assert v1alpha.CPUPreferences().to_v1beta1().preferred_cpu_topology is None
    v2 = _raw(v1alpha.PreferenceSpecV1alpha2, {"cpu": {}, "volumes": {"preferredStorageClassName": "x"}})
    new = v2.to_v1beta1()
    assert new.cpu == v1beta1.CPUPreferences() and new.volumes is not None
    assert new.volumes.preferred_storage_class_name == "x"


def test_flavor_spec_conversion() -> None:
    assert _raw(v1alpha.FlavorSpec, {"cpu": {"guest": 1}, "memory": {}}).to_v1beta1().memory.guest == "0"
    assert _raw(v1alpha.FlavorSpec, {"memory": {"guest": "1Gi"}}).to_v1beta1().memory.guest == "1Gi"
