"""VirtualMachineInstancePresets: selection, exclusion, merge, conflicts, quirks, and the golden cases."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from apiserver.render.kubernetes.errors import ExpandError
from apiserver.render.presets import PresetReport, apply_presets
from apiserver.render.presets.selector import SelectorError, label_selector_as_selector
from tests.support import shared
from tests.support.conformance import case_files, load

DEPRECATION = "kubevirt.io/v1 VirtualMachineInstancePresets is now deprecated and will be removed in v2."
LABEL_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character "
    "(e.g. 'MyValue',  or 'my_value',  or '12345', "
    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
FLAVOR = {"kubevirt.io/flavor": "small"}


def make_vm(
    domain: dict[str, Any] | None = None,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An expanded VM as the renderer writes it (Go member order, omitempty applied)."""
    meta: dict[str, Any] = {}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    full_domain: dict[str, Any] = {"resources": {}, "devices": {}}
    full_domain.update(domain or {})
    return {
        "kind": "VirtualMachine",
        "apiVersion": "kubevirt.io/v1",
        "metadata": {"name": "testvm", "namespace": "default"},
        "spec": {"runStrategy": "Always", "template": {"metadata": meta, "spec": {"domain": full_domain}}},
        "status": {},
    }


def preset(
    name: str,
    domain: Any = None,
    *,
    selector: Any = None,
    namespace: str = "default",
    no_domain: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(FLAVOR)} if selector is None else selector}
    if not no_domain:
        spec["domain"] = domain if domain is not None else {"cpu": {"cores": 4}}
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstancePreset",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def domain_of(vm: dict[str, Any]) -> dict[str, Any]:
    return vm["spec"]["template"]["spec"]["domain"]  # type: ignore[no-any-return]


def annotations_of(vm: dict[str, Any]) -> dict[str, str]:
    return vm["spec"]["template"]["metadata"].get("annotations", {})  # type: ignore[no-any-return]


def apply_error(vm: dict[str, Any], presets: list[Any]) -> ExpandError:
    with pytest.raises(ExpandError) as info:
        apply_presets(vm, presets)
    assert info.value.code == 422
    assert info.value.reason == "Invalid"
    return info.value


# --- selection -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ({"matchLabels": {"a": "1"}}, {"a": "1"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        ({"matchLabels": {"a": "1", "b": "2"}}, {"a": "1"}, False),
        ({"matchLabels": {"a": ""}}, {"a": ""}, True),
        ({"matchLabels": {"a": ""}}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {"a": "2"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "2"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"b": "1"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"b": "1"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": "1"}, False),
        (
            {"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]},
            {"a": "1"},
            False,
        ),
        (
            {"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]},
            {"a": "1", "b": "x"},
            True,
        ),
        ({}, {}, True),
        (None, {}, True),
        ({"matchLabels": {}, "matchExpressions": []}, {"x": "y"}, True),
    ],
)
def test_selector_matching(selector: Any, labels: dict[str, str], matches: bool) -> None:
    assert label_selector_as_selector(selector).matches(labels) is matches


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        (
            {"matchLabels": {"kubevirt.io/flavor": "!"}},
            'values[0][kubevirt.io/flavor]: Invalid value: "!": ' + LABEL_VALUE_MESSAGE,
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["1"]}]},
            '"Equals" is not a valid label selector operator',
        ),
        ({"matchExpressions": [{"key": "a"}]}, '"" is not a valid label selector operator'),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["small"]}]},
            'values: Invalid value: ["small"]: values set must be empty for exists and does not exist',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "DoesNotExist", "values": ["x", "<y>"]}]},
            '[values: Invalid value: ["x","\\u003cy\\u003e"]: '
            "values set must be empty for exists and does not exist, "
            'values[1][a]: Invalid value: "<y>": ' + LABEL_VALUE_MESSAGE + "]",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "NotIn"}]},
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchLabels": {"bad key": "x"}},
            "key: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or "
            "'.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            {"matchLabels": {"Example.com/x": "v"}},
            'key: Invalid value: "Example.com/x": prefix part a lowercase RFC 1123 subdomain '
            "must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character "
            "(e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
    ],
)
def test_invalid_selector_messages(selector: Any, message: str) -> None:
    with pytest.raises(SelectorError) as info:
        label_selector_as_selector(selector)
    assert info.value.message == message


def test_invalid_selector_several_errors_aggregate_in_brackets() -> None:
    with pytest.raises(SelectorError) as info:
        label_selector_as_selector({"matchExpressions": [{"key": "", "operator": "Exists", "values": ["!"]}]})
    message = info.value.message
    assert message.startswith('[key: Invalid value: "": name part must be non-empty; name part must consist')
    assert (
        ', values: Invalid value: ["!"]: values set must be empty for exists and does not exist, ' in message
    )
    assert message.endswith(']")]') is False and message.endswith("')]")
    assert 'values[0][]: Invalid value: "!": a valid label must be' in message


def test_invalid_label_value_too_long() -> None:
    with pytest.raises(SelectorError) as info:
        label_selector_as_selector({"matchLabels": {"a": "x" * 64}})
    assert (
        info.value.message == f'values[0][a]: Invalid value: "{"x" * 64}": must be no more than 63 characters'
    )


def test_invalid_selector_in_non_matching_preset_fails_everything() -> None:
    vm = make_vm(labels=FLAVOR)
    good = preset("a")
    broken = preset("z-broken", selector={"matchLabels": {"other": "!"}})
    error = apply_error(vm, [good, broken])
    assert error.message == 'values[0][other]: Invalid value: "!": ' + LABEL_VALUE_MESSAGE
    assert error.causes == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "!": ' + LABEL_VALUE_MESSAGE,
            "field": "presets[z-broken].spec.selector.matchLabels[other]",
        }
    ]
    assert "cpu" not in domain_of(vm), "nothing may be applied when the preset step fails"
    assert error.status["details"]["name"] == "testvm" and error.status["details"]["kind"] == "VirtualMachine"


def test_invalid_operator_cause_names_the_expression() -> None:
    vm = make_vm(labels=FLAVOR)
    selector = {"matchExpressions": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Equals"}]}
    error = apply_error(vm, [preset("p", selector=selector)])
    assert error.message == '"Equals" is not a valid label selector operator'
    assert [c["field"] for c in error.causes] == ["presets[p].spec.selector.matchExpressions[1].operator"]


@pytest.mark.parametrize(
    ("selector", "field"),
    [
        ("kubevirt.io/flavor=small", "presets[p].spec.selector"),
        ({"matchLabels": ["a"]}, "presets[p].spec.selector.matchLabels"),
        ({"matchLabels": {"a": 1}}, "presets[p].spec.selector.matchLabels[a]"),
        ({"matchLabels": {"a": None}}, "presets[p].spec.selector.matchLabels[a]"),
        ({"matchExpressions": {"key": "a"}}, "presets[p].spec.selector.matchExpressions"),
        ({"matchExpressions": ["a"]}, "presets[p].spec.selector.matchExpressions[0]"),
        (
            {"matchExpressions": [{"key": 3, "operator": "Exists"}]},
            "presets[p].spec.selector.matchExpressions[0].key",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": ["In"]}]},
            "presets[p].spec.selector.matchExpressions[0].operator",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]},
            "presets[p].spec.selector.matchExpressions[0].values",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", 2]}]},
            "presets[p].spec.selector.matchExpressions[0].values[1]",
        ),
    ],
)
def test_malformed_selector_is_a_clean_422(selector: Any, field: str) -> None:
    error = apply_error(make_vm(labels=FLAVOR), [preset("p", selector=selector)])
    assert "'p'" in error.message
    assert [c["field"] for c in error.causes] == [field]


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ("not an object", "presets[0]"),
        ({"kind": "VirtualMachineInstancePreset", "metadata": {}, "spec": {}}, "presets[0].metadata.name"),
        ({"kind": "VirtualMachineInstancePreset", "metadata": {"name": "p"}, "spec": []}, "presets[p].spec"),
    ],
)
def test_malformed_preset_object_is_a_clean_422(obj: Any, field: str) -> None:
    error = apply_error(make_vm(labels=FLAVOR), [obj])
    assert [c["field"] for c in error.causes] == [field]


def test_empty_selector_matches_vm_without_labels() -> None:
    vm = make_vm()
    report = apply_presets(vm, [preset("all", selector={})])
    assert report.matched == ["all"]
    assert domain_of(vm)["cpu"] == {"cores": 4}


def test_only_template_labels_count_and_other_namespaces_are_ignored() -> None:
    vm = make_vm(labels={"app": "x"})
    vm["metadata"]["labels"] = dict(FLAVOR)
    other_ns = preset("other", selector={}, namespace="elsewhere")
    report = apply_presets(vm, [preset("small"), other_ns])
    assert report.matched == []
    assert report.warnings == [] and report.admission_warnings == []
    assert "cpu" not in domain_of(vm)


def test_presets_apply_in_name_order() -> None:
    vm = make_vm(labels=FLAVOR)
    report = apply_presets(
        vm,
        [
            preset("b-cpu", {"resources": {"requests": {"cpu": "2"}}}),
            preset("a-mem", {"resources": {"requests": {"memory": "1Gi"}}}),
        ],
    )
    assert report.matched == ["a-mem", "b-cpu"]
    assert domain_of(vm)["resources"] == {"requests": {"memory": "1Gi"}}
    assert [(w.preset, w.applied, w.fields) for w in report.warnings] == [("b-cpu", False, [])]
    assert report.warnings[0].message == "Unable to apply VirtualMachineInstancePreset 'b-cpu': <nil>"


# --- exclusion -----------------------------------------------------------------------------------------

EXCLUDE = "virtualmachineinstancepresets.admission.kubevirt.io/exclude"


def test_exclusion_annotation_true_skips_even_broken_presets() -> None:
    vm = make_vm(labels=FLAVOR, annotations={EXCLUDE: "true"})
    before = copy.deepcopy(vm)
    report = apply_presets(
        vm,
        [
            preset("a", {"cpu": {"cores": 4}}),
            preset("b", {"cpu": {"cores": 2}}),
            preset("c", selector={"matchLabels": {"x": "!"}}),
        ],
    )
    assert report == PresetReport(matched=[], excluded=True, warnings=[], admission_warnings=[])
    assert vm == before


@pytest.mark.parametrize("value", ["True", "yes", "1", "false", ""])
def test_exclusion_needs_exactly_true(value: str) -> None:
    vm = make_vm(labels=FLAVOR, annotations={EXCLUDE: value})
    report = apply_presets(vm, [preset("small")])
    assert not report.excluded and report.matched == ["small"]
    assert domain_of(vm)["cpu"] == {"cores": 4}


def test_documented_old_exclusion_key_only_triggers_deprecation() -> None:
    old_key = "virtualmachinepresets.admission.kubevirt.io/exclude"
    vm = make_vm(labels=FLAVOR, annotations={old_key: "true"})
    report = apply_presets(vm, [preset("small")])
    assert not report.excluded
    assert annotations_of(vm) == {old_key: "true", "virtualmachinepreset.kubevirt.io/small": "kubevirt.io/v1"}
    assert report.admission_warnings == [DEPRECATION]


def test_exclusion_on_vm_metadata_does_not_count() -> None:
    vm = make_vm(labels=FLAVOR)
    vm["metadata"]["annotations"] = {EXCLUDE: "true"}
    assert apply_presets(vm, [preset("small")]).matched == ["small"]


# --- merging each section ------------------------------------------------------------------------------

SECTIONS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "requests",
        {"resources": {"requests": {"memory": "64M"}}},
        {"resources": {"requests": {"memory": "64M"}}},
    ),
    (
        "cpu",
        {"cpu": {"cores": 2, "model": "host-passthrough"}},
        {"cpu": {"cores": 2, "model": "host-passthrough"}},
    ),
    (
        "firmware",
        {"firmware": {"uuid": "11112222-3333-4444-5555-666677778888"}},
        {"firmware": {"uuid": "11112222-3333-4444-5555-666677778888"}},
    ),
    (
        "clock",
        {"clock": {"utc": {}, "timer": {"hpet": {"present": False}}}},
        {"clock": {"utc": {}, "timer": {"hpet": {"present": False}}}},
    ),
    ("features", {"features": {"smm": {}}}, {"features": {"acpi": {}, "smm": {}}}),
    (
        "watchdog",
        {"devices": {"watchdog": {"name": "wd", "i6300esb": {"action": "poweroff"}}}},
        {"devices": {"watchdog": {"name": "wd", "i6300esb": {"action": "poweroff"}}}},
    ),
    ("ioThreadsPolicy", {"ioThreadsPolicy": "shared"}, {"ioThreadsPolicy": "shared"}),
]


@pytest.mark.parametrize(("section", "preset_domain", "expected"), SECTIONS, ids=[s[0] for s in SECTIONS])
def test_each_section_is_applied_to_an_empty_template(
    section: str, preset_domain: dict[str, Any], expected: dict[str, Any]
) -> None:
    vm = make_vm(labels=FLAVOR)
    report = apply_presets(vm, [preset("small", preset_domain)])
    domain = domain_of(vm)
    for key, value in expected.items():
        assert domain[key] == value
    assert report.warnings == []
    assert annotations_of(vm) == {"virtualmachinepreset.kubevirt.io/small": "kubevirt.io/v1"}
    assert report.admission_warnings == [DEPRECATION]


@pytest.mark.parametrize(("section", "preset_domain", "expected"), SECTIONS, ids=[s[0] for s in SECTIONS])
def test_identical_section_counts_as_applied(
    section: str, preset_domain: dict[str, Any], expected: dict[str, Any]
) -> None:
    vm = make_vm(expected, labels=FLAVOR)
    before = copy.deepcopy(domain_of(vm))
    report = apply_presets(vm, [preset("small", preset_domain)])
    assert report.warnings == []
    assert domain_of(vm) == before
    assert "virtualmachinepreset.kubevirt.io/small" in annotations_of(vm)


def test_merged_template_keeps_go_member_order() -> None:
    vm = make_vm({"machine": {"type": "q35"}}, labels=FLAVOR)
    apply_presets(
        vm,
        [
            preset(
                "small",
                {
                    "ioThreadsPolicy": "auto",
                    "cpu": {"threads": 1, "cores": 2},
                    "resources": {"requests": {"memory": "1024Mi"}},
                },
            )
        ],
    )
    domain = domain_of(vm)
    assert list(domain) == ["resources", "cpu", "machine", "devices", "ioThreadsPolicy"]
    assert list(domain["cpu"]) == ["cores", "threads"]
    assert domain["resources"] == {"requests": {"memory": "1Gi"}}, "quantities are written canonically"


@pytest.mark.parametrize(
    "preset_domain",
    [
        {"memory": {"guest": "1Gi"}},
        {"devices": {"disks": [{"name": "d"}], "interfaces": [{"name": "default", "masquerade": {}}]}},
        {"resources": {"limits": {"memory": "1Gi"}}},
        {"resources": {"overcommitGuestOverhead": True}},
        {"machine": {"type": "q35"}, "ioThreads": {"supplementalPoolThreadCount": 2}},
        {},
    ],
)
def test_ignored_sections_give_unable_to_apply_nil(preset_domain: dict[str, Any]) -> None:
    vm = make_vm(labels=FLAVOR)
    before = copy.deepcopy(vm)
    report = apply_presets(vm, [preset("small", preset_domain)])
    assert vm == before
    assert [(w.preset, w.applied, w.fields, w.message) for w in report.warnings] == [
        ("small", False, [], "Unable to apply VirtualMachineInstancePreset 'small': <nil>")
    ]
    assert report.admission_warnings == []


def test_ignored_section_next_to_merged_one_passes_unnoticed() -> None:
    vm = make_vm(labels=FLAVOR)
    report = apply_presets(vm, [preset("small", {"cpu": {"cores": 4}, "machine": {"type": "q35"}})])
    assert report.warnings == []
    assert domain_of(vm)["cpu"] == {"cores": 4} and "machine" not in domain_of(vm)


# --- conflicts with the template -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "preset_domain", "field"),
    [
        ({"cpu": {"cores": 4, "sockets": 1}}, {"cpu": {"cores": 4}}, "spec.cpu"),
        ({"features": {"acpi": {}, "apic": {}}}, {"features": {"apic": {}, "smm": {}}}, "spec.features"),
        ({"firmware": {"bootloader": {"efi": {}}}}, {"firmware": {"uuid": "1"}}, "spec.firmware"),
        (
            {"clock": {"utc": {}, "timer": {"rtc": {}}}},
            {"clock": {"timezone": "UTC"}},
            "spec.clock.clockoffset",
        ),
        ({"ioThreadsPolicy": "auto"}, {"ioThreadsPolicy": "shared"}, "spec.ioThreadsPolicy"),
        (
            {"resources": {"requests": {"memory": "128M"}}},
            {"resources": {"requests": {"memory": "64M"}}},
            "spec.resources.requests[memory]",
        ),
    ],
)
def test_section_conflict_keeps_template_value(
    template: dict[str, Any], preset_domain: dict[str, Any], field: str
) -> None:
    vm = make_vm(template, labels=FLAVOR)
    before = copy.deepcopy(vm)
    report = apply_presets(vm, [preset("small", preset_domain)])
    assert vm == before
    (warning,) = report.warnings
    assert (warning.applied, warning.fields) == (False, [field])
    assert warning.message.startswith(f"Unable to apply VirtualMachineInstancePreset 'small': {field}: ")
    assert report.admission_warnings == []


def test_features_acpi_empty_equals_absent() -> None:
    vm = make_vm({"features": {"acpi": {}, "apic": {}}}, labels=FLAVOR)
    report = apply_presets(vm, [preset("small", {"features": {"apic": {}}})])
    assert report.warnings == [] and "virtualmachinepreset.kubevirt.io/small" in annotations_of(vm)


def test_partial_application_annotates_and_lists_conflicts() -> None:
    vm = make_vm({"cpu": {"cores": 6}, "firmware": {"uuid": "x"}}, labels=FLAVOR)
    report = apply_presets(
        vm, [preset("small", {"cpu": {"cores": 4}, "firmware": {"uuid": "y"}, "features": {"smm": {}}})]
    )
    (warning,) = report.warnings
    assert (warning.applied, warning.fields) == (True, ["spec.cpu", "spec.firmware"])
    assert warning.message.startswith(
        "Some settings were not applied for VirtualMachineInstancePreset 'small': ["
    )
    assert domain_of(vm)["cpu"] == {"cores": 6} and domain_of(vm)["features"] == {"acpi": {}, "smm": {}}
    assert "virtualmachinepreset.kubevirt.io/small" in annotations_of(vm)


def test_clock_timer_merged_despite_offset_conflict() -> None:
    vm = make_vm({"clock": {"utc": {}}}, labels=FLAVOR)
    report = apply_presets(
        vm, [preset("small", {"clock": {"timezone": "Europe/Paris", "timer": {"rtc": {}}}})]
    )
    assert domain_of(vm)["clock"] == {"utc": {}, "timer": {"rtc": {}}}
    assert [(w.applied, w.fields) for w in report.warnings] == [(True, ["spec.clock.clockoffset"])]


def test_every_section_conflicting_reports_fields_in_check_order() -> None:
    template = {
        "resources": {"requests": {"memory": "128M"}},
        "cpu": {"cores": 6},
        "firmware": {"uuid": "a"},
        "clock": {"utc": {}, "timer": {"rtc": {}}},
        "features": {"smm": {}},
        "devices": {"watchdog": {"name": "a", "i6300esb": {}}},
        "ioThreadsPolicy": "auto",
    }
    preset_domain = {
        "ioThreadsPolicy": "shared",
        "devices": {"watchdog": {"name": "b", "i6300esb": {}}},
        "features": {"apic": {}},
        "clock": {"timezone": "UTC", "timer": {"hpet": {}}},
        "firmware": {"uuid": "b"},
        "cpu": {"cores": 4},
        "resources": {"requests": {"memory": "64M"}},
    }
    report = apply_presets(make_vm(template, labels=FLAVOR), [preset("small", preset_domain)])
    (warning,) = report.warnings
    assert warning.fields == [
        "spec.resources.requests[memory]",
        "spec.cpu",
        "spec.firmware",
        "spec.clock.clockoffset",
        "spec.clock.timer",
        "spec.features",
        "spec.devices.watchdog",
        "spec.ioThreadsPolicy",
    ]
    assert not warning.applied


def test_requests_are_not_merged_per_key() -> None:
    vm = make_vm({"resources": {"requests": {"cpu": "1"}}}, labels=FLAVOR)
    report = apply_presets(vm, [preset("small", {"resources": {"requests": {"memory": "64M"}}})])
    assert domain_of(vm)["resources"] == {"requests": {"cpu": "1"}}
    assert [(w.applied, w.fields) for w in report.warnings] == [(False, [])]


# --- the quantity quirk --------------------------------------------------------------------------------


def test_quirk_1024mi_on_both_sides_conflicts_yet_applies() -> None:
    vm = make_vm({"resources": {"requests": {"memory": "1Gi"}}}, labels=FLAVOR)  # 1024Mi arrives as 1Gi
    report = apply_presets(vm, [preset("small", {"resources": {"requests": {"memory": "1024Mi"}}})])
    (warning,) = report.warnings
    assert (warning.applied, warning.fields) == (True, ["spec.resources.requests[memory]"])
    assert warning.message.startswith(
        "Some settings were not applied for VirtualMachineInstancePreset 'small': "
    )
    assert "virtualmachinepreset.kubevirt.io/small" in annotations_of(vm)


@pytest.mark.parametrize(("template", "preset_value"), [("8Gi", "8192Mi"), ("1Gi", "1Gi"), ("64M", "64M")])
def test_quirk_clean_pairs(template: str, preset_value: str) -> None:
    vm = make_vm({"resources": {"requests": {"memory": template}}}, labels=FLAVOR)
    report = apply_presets(vm, [preset("small", {"resources": {"requests": {"memory": preset_value}}})])
    assert report.warnings == []
    assert "virtualmachinepreset.kubevirt.io/small" in annotations_of(vm)


@pytest.mark.parametrize(("a", "b"), [("1.5Gi", "1.5Gi"), ("1Gi", "1024Mi"), ("1000M", "1G"), ("1Pi", "1Pi")])
def test_quirk_presets_with_equal_values_conflict(a: str, b: str) -> None:
    vm = make_vm(labels=FLAVOR)
    error = apply_error(
        vm,
        [
            preset("a", {"resources": {"requests": {"memory": a}}}),
            preset("b", {"resources": {"requests": {"memory": b}}}),
        ],
    )
    assert error.message.startswith(
        "VirtualMachinePresets cannot be applied due to conflicts: presets 'b' and 'a' conflict: "
        "spec.resources.requests[memory]: "
    )
    assert [c["field"] for c in error.causes] == ["presets[b].spec.domain.resources.requests[memory]"]
    assert "resources" not in domain_of(vm) or domain_of(vm)["resources"] == {}


def test_uncached_equal_presets_apply_cleanly_one_after_the_other() -> None:
    # 1024Mi and 1048576Ki are equal Go structs; the second preset is compared with the first one's
    # quantity (what the VMI then holds), not with its canonical text 1Gi, so it applies cleanly.
    vm = make_vm(labels=FLAVOR)
    report = apply_presets(
        vm,
        [
            preset("a", {"resources": {"requests": {"memory": "1024Mi"}}}),
            preset("b", {"resources": {"requests": {"memory": "1048576Ki"}}}),
        ],
    )
    assert report.warnings == []
    assert domain_of(vm)["resources"] == {"requests": {"memory": "1Gi"}}
    assert set(annotations_of(vm)) == {
        "virtualmachinepreset.kubevirt.io/a",
        "virtualmachinepreset.kubevirt.io/b",
    }


def test_bad_request_quantity_is_a_clean_422() -> None:
    error = apply_error(
        make_vm(labels=FLAVOR), [preset("p", {"resources": {"requests": {"memory": "lots"}}})]
    )
    assert "'p'" in error.message
    assert error.causes[0]["field"].startswith("presets[p].spec.domain.resources.requests")


def test_bad_domain_value_is_a_clean_422() -> None:
    error = apply_error(make_vm(labels=FLAVOR), [preset("p", {"cpu": {"cores": "four"}})])
    assert "'p'" in error.message
    assert error.causes[0]["field"].startswith("presets[p].spec.domain.cpu")


# --- several presets -----------------------------------------------------------------------------------


def test_preset_conflicts_reject_everything() -> None:
    vm = make_vm(labels=FLAVOR)
    before = copy.deepcopy(vm)
    error = apply_error(
        vm,
        [
            preset("a", {"cpu": {"cores": 4}}),
            preset("b", {"cpu": {"cores": 2}}),
            preset("c", {"cpu": {"cores": 3}, "features": {"smm": {}}}),
            preset("d", {"features": {"apic": {}}}),
        ],
    )
    assert vm == before
    assert error.message.startswith(
        "VirtualMachinePresets cannot be applied due to conflicts: [presets 'b' and 'a' conflict: spec.cpu: "
    )
    pattern = re.compile(r"presets '(\w)' and '(\w)' conflict: ([^:]+): ")
    pairs = [m.groups() if (m := pattern.match(c["message"])) else None for c in error.causes]
    assert pairs == [
        ("b", "a", "spec.cpu"),
        ("c", "a", "spec.cpu"),
        ("c", "b", "spec.cpu"),
        ("d", "c", "spec.features"),
    ]
    assert error.causes[0]["field"] == "presets[b].spec.domain.cpu"


def test_identical_presets_do_not_conflict() -> None:
    vm = make_vm(labels=FLAVOR)
    report = apply_presets(vm, [preset("a"), preset("b")])
    assert report.warnings == [] and report.matched == ["a", "b"]


def test_matching_preset_without_domain_is_refused() -> None:
    error = apply_error(make_vm(labels=FLAVOR), [preset("nodomain", no_domain=True)])
    assert "'nodomain'" in error.message
    assert error.causes == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value: missing domain.",
            "field": "presets[nodomain].spec.domain",
        }
    ]


def test_non_matching_preset_without_domain_is_harmless() -> None:
    vm = make_vm(labels=FLAVOR)
    other = preset("nodomain", selector={"matchLabels": {"x": "y"}}, no_domain=True)
    assert apply_presets(vm, [other, preset("small")]).matched == ["small"]


# --- annotations and warnings --------------------------------------------------------------------------


def test_stale_annotation_overwritten_and_dotted_name_kept() -> None:
    vm = make_vm(
        labels=FLAVOR, annotations={"virtualmachinepreset.kubevirt.io/windows.large": "stale", "x": "y"}
    )
    apply_presets(vm, [preset("windows.large")])
    assert annotations_of(vm) == {
        "virtualmachinepreset.kubevirt.io/windows.large": "kubevirt.io/v1",
        "x": "y",
    }


def test_lookalike_annotation_triggers_deprecation_without_presets() -> None:
    vm = make_vm(annotations={"virtualmachinepreset.kubevirt.io/legacy": "x"})
    report = apply_presets(vm, [])
    assert report.admission_warnings == [DEPRECATION]
    assert report.warning_texts() == [DEPRECATION]


def test_no_annotation_for_unapplied_preset() -> None:
    vm = make_vm({"firmware": {"uuid": "x"}}, labels=FLAVOR)
    report = apply_presets(vm, [preset("a", {"cpu": {"cores": 1}}), preset("b", {"firmware": {"uuid": "y"}})])
    assert annotations_of(vm) == {"virtualmachinepreset.kubevirt.io/a": "kubevirt.io/v1"}
    texts = report.warning_texts()
    assert texts[0].startswith("Unable to apply VirtualMachineInstancePreset 'b': spec.firmware: ")
    assert texts[1:] == [DEPRECATION]
    assert all("\n" not in t for t in texts)


# --- the golden cases ----------------------------------------------------------------------------------

PRESET_CASES = [p for p in case_files() if p.stem.startswith("presets-")]


def _prefix(message: str) -> str:
    head, sep, _ = message.partition(": ")
    return head + sep


@shared.parametrize("path", PRESET_CASES, [p.stem for p in PRESET_CASES])
def test_conformance(path: Any) -> None:
    case = load(path)
    expected = case.expected
    if "matched" not in expected:
        pytest.skip("expand fails before the presets step; covered by the expand conformance test")
    from apiserver import expand_vm

    objects = [o for o in case.input.get("objects", []) if o.get("kind") != "VirtualMachineInstancePreset"]
    presets = [o for o in case.input.get("objects", []) if o.get("kind") == "VirtualMachineInstancePreset"]
    # The cases record KubeVirt's lenient decoding: fieldValidation Ignore.
    vm = expand_vm(case.input["vm"], objects, case.input.get("kubevirt"), field_validation="Ignore")
    kind = expected.get("kind")
    if kind in ("presets", "panic"):
        with pytest.raises(ExpandError) as info:
            apply_presets(vm, presets)
        error = info.value
        assert error.code == 422
        if kind == "panic":
            return
        prefix = expected.get("errorPrefix")
        if prefix:
            assert error.message.startswith(prefix)
            got: list[dict[str, Any]] = []
            for cause in error.causes:
                match = re.match(r"presets '(.+?)' and '(.+?)' conflict: (spec\.[^:]+): ", cause["message"])
                assert match, cause
                later, earlier, field = match.groups()
                if got and got[-1]["presets"] == [later, earlier]:
                    got[-1]["fields"].append(field)
                else:
                    got.append({"presets": [later, earlier], "fields": [field]})
            assert got == expected["presetConflicts"]
        else:
            assert error.message == expected["error"]
            assert error.causes and all(c["field"].startswith("presets[") for c in error.causes)
        return
    report = apply_presets(vm, presets)
    assert vm == expected["expanded"]
    # The template is re-encoded here, so its member order (Go declaration order) is ours to keep.
    template, expected_template = vm["spec"]["template"], expected["expanded"]["spec"]["template"]
    assert json.dumps(template) == json.dumps(expected_template)
    assert report.matched == expected["matched"]
    assert report.excluded == expected.get("excluded", False)
    assert [(w.preset, w.applied, w.fields, _prefix(w.message)) for w in report.warnings] == [
        (w["preset"], w["applied"], w["fields"], _prefix(w["message"])) for w in expected["warnings"]
    ]
    assert report.admission_warnings == expected["admissionWarnings"]


def test_long_sections_are_shortened_in_warnings() -> None:
    features = [{"name": f"feature-{i}", "policy": "require"} for i in range(40)]
    vm = make_vm({"cpu": {"cores": 1, "features": features}}, labels=FLAVOR)
    report = apply_presets(vm, [preset("small", {"cpu": {"cores": 2, "features": features}})])
    (text,) = report.warning_texts()
    assert text.startswith("Unable to apply VirtualMachineInstancePreset 'small': spec.cpu: {")
    assert len(text) < 600 and "..." in text
