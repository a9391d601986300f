"""Rules of KubeVirt's VM webhook that the golden admission cases do not pin: cluster state (a running VMI),
panics, Go's pattern and MAC syntax, base64, paths, feature-gate precedence, the ten-cause cut.

Each expectation was checked against KubeVirt's own webhook (the expand-admit oracle) when written.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from apiserver import ExpandError, expand
from apiserver.render import ObjectIndex, ObjectRef
from apiserver.render import expand as render_expand
from apiserver.render.admission import PREFIX, AdmissionDenied
from apiserver.render.admission.clusterconfig import admission_config
from apiserver.render.admission.disks import validate_path
from apiserver.render.admission.firmware import validate_emulated_machine

BASE: dict[str, Any] = {
    "apiVersion": "kubevirt.io/v1",
    "kind": "VirtualMachine",
    "metadata": {"name": "vm", "namespace": "default"},
    "spec": {
        "runStrategy": "Always",
        "template": {
            "metadata": {},
            "spec": {
                "domain": {
                    "resources": {"requests": {"memory": "1Gi"}},
                    "devices": {
                        "disks": [{"name": "root", "disk": {"bus": "virtio"}}],
                        "interfaces": [{"name": "default", "masquerade": {}}],
                    },
                },
                "networks": [{"name": "default", "pod": {}}],
                "volumes": [{"name": "root", "containerDisk": {"image": "quay.io/containerdisks/fedora:42"}}],
            },
        },
    },
}


def vm(**changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(BASE)
    for path, value in changes.items():
        cur = out
        keys = path.split("__")
        for key in keys[:-1]:
            cur = cur.setdefault(key, {})
        cur[keys[-1]] = value
    return out


def refusal(
    body: Mapping[str, Any], objects: list[Any] | None = None, kubevirt: Any = None
) -> AdmissionDenied:
    with pytest.raises(AdmissionDenied) as err:
        expand(body, objects or [], kubevirt, validate=True, field_validation="Ignore")
    return err.value


def test_the_base_vm_is_admitted() -> None:
    assert expand(vm(), validate=True).warnings == ()


# --- cluster state: the running VMI ----------------------------------------------------------------

REQUESTED = {
    "ready": True,
    "volumeRequests": [
        {
            "addVolumeOptions": {
                "name": "hp",
                "disk": {"disk": {"bus": "scsi"}},
                "volumeSource": {"persistentVolumeClaim": {"claimName": "hp"}},
            }
        }
    ],
}


def running_vmi(volumes: list[Any], migrating: bool = False) -> dict[str, Any]:
    vmi: dict[str, Any] = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstance",
        "metadata": {"name": "vm", "namespace": "default"},
        "spec": copy.deepcopy(BASE["spec"]["template"]["spec"]),
    }
    vmi["spec"]["volumes"] += volumes
    if migrating:
        vmi["status"] = {"migrationState": {"startTimestamp": "2026-01-01T00:00:00Z"}}
    return vmi


def test_a_volume_request_is_checked_against_the_running_vmi() -> None:
    other = [{"name": "hp", "persistentVolumeClaim": {"claimName": "another"}}]
    err = refusal(vm(status=REQUESTED), [running_vmi(other)])
    assert err.verdict.stage == "volumerequests"
    assert err.causes == [
        {
            "reason": "FieldValueInvalid",
            "message": "AddVolume request for [hp] conflicts with an existing volume of the same name on "
            "currently running vmi",
            "field": "Status.volumeRequests",
        }
    ]


def test_no_volume_request_while_the_vmi_migrates() -> None:
    err = refusal(vm(status=REQUESTED), [running_vmi([], migrating=True)])
    assert err.causes[0]["message"] == "Cannot handle volume requests while VMI migration is in progress"
    assert err.causes[0]["field"] == "spec"


def test_a_volume_request_without_a_running_vmi_is_admitted() -> None:
    expand(vm(status=REQUESTED), validate=True, field_validation="Ignore")


class Recording(ObjectIndex):
    """An ObjectIndex that remembers what the renderer asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[ObjectRef] = []

    def get(self, ref: ObjectRef) -> Mapping[str, Any] | None:
        self.asked.append(ref)
        return super().get(ref)


@pytest.mark.parametrize(
    ("status", "reads"),
    [(REQUESTED, True), ({**REQUESTED, "ready": False}, False), ({"ready": True}, False)],
    ids=["ready-with-requests", "not-ready", "no-requests"],
)
def test_the_vmi_is_read_only_when_kubevirt_reads_it(status: dict[str, Any], reads: bool) -> None:
    lookup = Recording()
    render_expand(vm(status=status), lookup, validate=True)
    assert (ObjectRef("VirtualMachineInstance", "default", "vm") in lookup.asked) is reads


# --- KubeVirt's panics -----------------------------------------------------------------------------


def test_a_panic_of_kubevirts_webhook_is_a_refusal_without_causes() -> None:
    body = vm()
    body["spec"]["template"]["spec"]["domain"]["memory"] = {"hugepages": {"pageSize": "0"}}
    err = refusal(body)
    assert err.verdict.panic and err.code == 422 and err.causes == []
    assert "panics" in err.message


# --- Go's syntaxes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("machine", "patterns", "ok"),
    [
        ("q35", ["q35*"], True),
        ("pc-q35-rhel9.6.0", ["q35*", "pc-q35*"], True),
        ("pc-i440fx-2.12", ["q35*", "pc-q35*"], False),
        ("q35", ["q3?"], True),
        ("q35", ["q[0-9]5"], True),
        ("q35", ["q[^0-9]5"], False),
        ("a/b", ["*"], False),
    ],
)
def test_emulated_machines_match_as_go_filepath_match(machine: str, patterns: list[str], ok: bool) -> None:
    config = admission_config({"emulatedMachines": patterns})
    spec = {"architecture": "amd64", "domain": {"machine": {"type": machine}}}
    assert (validate_emulated_machine("spec", spec, config) == []) is ok


@pytest.mark.parametrize(
    ("mac", "problem"),
    [
        ("aa:bb:cc:dd:ee:ff", None),
        ("AA-BB-CC-DD-EE-FF", None),
        ("aabb.ccdd.eeff", None),
        ("aa:bb-cc:dd:ee:ff", "malformed"),
        ("aa:bb:cc:dd:ee", "malformed"),
        ("aa:bb:cc:dd:ee:ff:00:11", "too long"),
        ("02:00:00:00:00:00", "reserved"),
    ],
)
def test_mac_addresses_parse_as_go_parsemac(mac: str, problem: str | None) -> None:
    body = vm()
    body["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"][0]["macAddress"] = mac
    if problem is None:
        expand(body, validate=True)
        return
    err = refusal(body)
    assert problem in err.causes[0]["message"]


@pytest.mark.parametrize(
    ("data", "ok"), [("I2Nsb3VkLWNvbmZpZw==", True), ("I2Nsb3VkLWNvbmZpZw", False), ("not base64!", False)]
)
def test_cloud_init_base64_is_gos_standard_encoding(data: str, ok: bool) -> None:
    body = vm()
    body["spec"]["template"]["spec"]["volumes"].append(
        {"name": "ci", "cloudInitNoCloud": {"userDataBase64": data}}
    )
    body["spec"]["template"]["spec"]["domain"]["devices"]["disks"].append({"name": "ci"})
    if ok:
        expand(body, validate=True)
        return
    assert refusal(body).causes[0]["message"].endswith("userDataBase64 is not a valid base64 value.")


@pytest.mark.parametrize(
    ("path", "ok"),
    [("/a/b", True), ("/a/b/", True), ("a/b", False), ("/a/../b", False), ("/a//b", False), ("/", False)],
)
def test_paths_are_absolute_and_clean(path: str, ok: bool) -> None:
    assert (validate_path("f", path) == []) is ok


# --- feature gates ----------------------------------------------------------------------------------


def test_a_beta_gate_is_on_unless_disabled() -> None:
    body = vm()
    body["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"][0] = {
        "name": "default",
        "passtBinding": {},
    }
    expand(body, validate=True)
    err = refusal(body, kubevirt={"developerConfiguration": {"disabledFeatureGates": ["PasstBinding"]}})
    assert err.causes[0]["message"] == "PasstBinding feature gate is not enabled"


def test_an_alpha_gate_is_off_unless_enabled() -> None:
    body = vm()
    body["spec"]["template"]["spec"]["domain"]["devices"]["autoattachVSOCK"] = True
    assert refusal(body).causes[0]["message"] == "VSOCK feature gate is not enabled in kubevirt-config"
    expand(body, kubevirt={"developerConfiguration": {"featureGates": ["VSOCK"]}}, validate=True)


@pytest.mark.parametrize(
    "bad",
    [
        {"pvcTolerateLessSpaceUpToPercent": 101},
        {"memoryOvercommit": -5},
        {"cpuAllocationRatio": -1},
    ],
)
def test_an_invalid_configuration_leaves_the_webhook_on_the_defaults(bad: dict[str, Any]) -> None:
    # GetConfig serves the webhook too: a configuration validateConfig refuses enables no gate
    body = vm()
    body["spec"]["template"]["spec"]["domain"]["devices"]["autoattachVSOCK"] = True
    gates = {"featureGates": ["VSOCK"]}
    expand(body, kubevirt={"spec": {"configuration": {"developerConfiguration": gates}}}, validate=True)
    kubevirt = {"spec": {"configuration": {"developerConfiguration": {**gates, **bad}}}}
    err = refusal(body, kubevirt=kubevirt)
    assert [c["message"] for c in err.causes] == ["VSOCK feature gate is not enabled in kubevirt-config"]


def test_an_invalid_configuration_is_named_beside_the_verdict() -> None:
    result = expand(vm(), kubevirt={"imagePullPolicy": "Sometimes"}, validate=True)
    assert list(result.warnings) == [
        "the KubeVirt configuration is invalid (invalid dev.imagePullPolicy in config: Sometimes): "
        "KubeVirt ignores it and expands with its default configuration, as here"
    ]


def test_the_webhook_reads_the_configuration_with_exact_member_names() -> None:
    # client-go decodes the CR case-sensitively: DeveloperConfiguration is an unknown member
    body = vm()
    body["spec"]["template"]["spec"]["domain"]["devices"]["autoattachVSOCK"] = True
    err = refusal(body, kubevirt={"DeveloperConfiguration": {"featureGates": ["VSOCK"]}})
    assert err.causes[0]["message"] == "VSOCK feature gate is not enabled in kubevirt-config"


# --- the webhook's answer --------------------------------------------------------------------------


def test_at_most_ten_causes_and_the_rest_counted() -> None:
    body = vm()
    body["spec"]["template"]["spec"]["domain"]["devices"]["inputs"] = [{"type": "mouse"} for _ in range(12)]
    err = refusal(body)
    assert len(err.causes) == 10 and len(err.verdict.causes) == 12
    assert err.message.endswith("Input device can have only tablet type., and 2 more validation errors")


# --- the schema stage (go-openapi's words) ---------------------------------------------------------


def schema_messages(body: Mapping[str, Any]) -> list[str]:
    from apiserver.render.admission.schema import validate_schema

    return validate_schema(body)


def test_schema_numbers_are_float64_and_integers_need_no_fraction() -> None:
    body = vm()
    body["spec"]["template"]["spec"]["domain"]["cpu"] = {"cores": 2}
    assert schema_messages(body) == []
    body["spec"]["template"]["spec"]["domain"]["cpu"] = {"cores": 2.5}
    assert schema_messages(body) == [
        'spec.template.spec.domain.cpu.cores in body must be of type int64: "float64"'
    ]


def test_schema_a_ref_member_with_a_default_is_still_required() -> None:
    body = vm(spec__dataVolumeTemplates=[{"metadata": {"name": "x"}}])
    assert schema_messages(body) == ["spec.dataVolumeTemplates.spec in body is required"]


def test_schema_status_is_open_but_typed() -> None:
    body = vm(status={"anything": 1})
    assert schema_messages(body) == []
    body = vm(status={"created": "yes"})
    assert schema_messages(body) == ['status.created in body must be of type boolean: "string"']


def test_schema_without_spec_and_with_unknown_top_level_members() -> None:
    body = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "x"}, "extra": 1}
    assert schema_messages(body) == [
        ".extra in body is a forbidden property",
        "spec in body is required",
        'spec in body must be of type object: "null"',
    ]


def test_schema_reports_a_message_once_and_items_under_the_lists_path() -> None:
    body = vm()
    body["spec"]["template"]["spec"]["volumes"] += [{"name": 1}, {"name": 1}]
    assert schema_messages(body) == [
        'spec.template.spec.volumes.name in body must be of type string: "number"'
    ]


def test_schema_a_null_is_checked_against_the_type_and_the_enum() -> None:
    body = vm()
    body["spec"]["template"]["spec"]["dnsPolicy"] = None
    assert schema_messages(body) == [
        'spec.template.spec.dnsPolicy in body must be of type string: "null"',
        "spec.template.spec.dnsPolicy in body should be one of [ClusterFirst ClusterFirstWithHostNet Default None]",
    ]


# --- Go's quantities change under Cmp (issue 29) -----------------------------------------------------


def _instancetype(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachineInstancetype",
        "metadata": {"name": "it", "namespace": "default"},
        "spec": spec,
    }


def _preference(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "instancetype.kubevirt.io/v1beta1",
        "kind": "VirtualMachinePreference",
        "metadata": {"name": "pref", "namespace": "default"},
        "spec": spec,
    }


def _memory_vm(
    memory: dict[str, Any], *, instancetype: bool = False, preference: bool = False
) -> dict[str, Any]:
    body = vm()
    domain = body["spec"]["template"]["spec"]["domain"]
    del domain["resources"]
    if memory:
        domain["memory"] = memory
    if instancetype:
        body["spec"]["instancetype"] = {"name": "it", "kind": "VirtualMachineInstancetype"}
    if preference:
        body["spec"]["preference"] = {"name": "pref", "kind": "VirtualMachinePreference"}
    return body


def test_live_update_memory_reads_the_guest_as_cmp_left_it() -> None:
    # Guest.Cmp(*maxGuest) promotes the int64 10E to an inf.Dec; its Value() then wraps: not 2Mi aligned.
    err = refusal(_memory_vm({"guest": "10E", "maxGuest": "18446744073709551616"}))
    assert err.code == 422
    assert err.causes == [
        {
            "reason": "FieldValueInvalid",
            "message": "Guest memory must be 2Mi aligned",
            "field": "spec.template.spec.domain.memory.guest",
        }
    ]


def test_live_update_memory_of_two_int64_amounts_keeps_the_int64_value() -> None:
    err = refusal(_memory_vm({"guest": "10E", "maxGuest": "20E"}))
    assert [c["message"] for c in err.causes] == [
        "Memory hotplug is only available for VMs with at least 1Gi of guest memory"
    ]


def test_a_memory_requirement_promotes_the_guest_the_later_rules_read() -> None:
    # requirements.checkMemory compares through a pointer to the applied guest; the hugepages rule then
    # reads 100E's wrapped Dec value, which is no multiple of 2Mi.
    objects = [
        _instancetype({"cpu": {"guest": 1}, "memory": {"guest": "100E", "hugepages": {"pageSize": "2Mi"}}}),
        _preference({"requirements": {"memory": {"guest": "9.223372036854775807e18"}}}),
    ]
    err = refusal(_memory_vm({}, instancetype=True, preference=True), objects)
    assert err.code == 422 and err.verdict.stage == "spec"
    path = "spec.template.spec.domain.resources.requests.memory"
    assert err.causes == [
        {
            "reason": "FieldValueInvalid",
            "message": f"{path} '0' is not a multiple of the page size "
            "spec.template.spec.domain.memory.hugepages.pageSize '2Mi'",
            "field": path,
        }
    ]
    # with an int64 requirement the guest stays an int64 amount, whose Value() is 0: admitted
    objects[1] = _preference({"requirements": {"memory": {"guest": "1Mi"}}})
    expand(_memory_vm({}, instancetype=True, preference=True), objects, validate=True)


def test_a_memory_requirement_promotes_the_vms_own_guest() -> None:
    body = _memory_vm({"guest": "100E"}, preference=True)
    body["spec"]["template"]["spec"]["domain"]["resources"] = {"limits": {"memory": "1Gi"}}
    objects = [_preference({"requirements": {"memory": {"guest": "9.223372036854775807e18"}}})]
    err = refusal(body, objects, kubevirt={"vmRolloutStrategy": "Stage"})
    assert err.causes == [
        {
            "reason": "FieldValueInvalid",
            "message": "spec.template.spec.domain.memory.guest '100E' must be equal to or less than the memory "
            "limit spec.template.spec.domain.resources.limits.memory '1Gi'",
            "field": "spec.template.spec.domain.memory.guest",
        }
    ]


# --- the spread check divides only where Go does -----------------------------------------------------

SPREAD_ZERO = {
    "cpu": {"preferredCPUTopology": "spread", "spreadOptions": {"across": "SocketsCoresThreads", "ratio": 0}}
}


def test_an_odd_vcpu_count_fails_on_threads_before_a_ratio_of_0_divides() -> None:
    objects = [_instancetype({"cpu": {"guest": 5}, "memory": {"guest": "1Gi"}}), _preference(SPREAD_ZERO)]
    err = refusal(_memory_vm({}, instancetype=True, preference=True), objects)
    assert err.code == 422 and not err.verdict.panic
    assert err.causes == [
        {
            "reason": "FieldValueInvalid",
            "message": "5 vCPUs provided by the instance type are not divisible by the number of threads per "
            "core 2 and Spec.PreferSpreadSocketToCoreRatio or Spec.CPU.PreferSpreadOptions.Ratio of 0",
            "field": "instancetype.spec.cpu.guest",
        }
    ]


@pytest.mark.parametrize(
    ("guest", "across"),
    [(4, "SocketsCoresThreads"), (0, "SocketsCoresThreads"), (5, "SocketsCores"), (5, "CoresThreads")],
)
def test_a_ratio_of_0_panics_where_go_divides_by_it(guest: int, across: str) -> None:
    preference = {"cpu": {**SPREAD_ZERO["cpu"], "spreadOptions": {"across": across, "ratio": 0}}}
    objects = [_instancetype({"cpu": {"guest": guest}, "memory": {"guest": "1Gi"}}), _preference(preference)]
    err = refusal(_memory_vm({}, instancetype=True, preference=True), objects)
    assert err.verdict.panic and err.causes == []


# --- the webhook's own decode (json.Unmarshal after the schema check) ---------------------------------


def test_a_number_with_a_fraction_in_an_integer_field_is_the_webhooks_bare_400() -> None:
    # The schema takes 1.0 as an integer; Go's decoder of the uint does not: ToAdmissionResponseError.
    body = vm()
    body["spec"]["template"]["spec"]["domain"]["devices"]["disks"] = [{"name": "root", "bootOrder": 1.0}]
    err = refusal(body)
    assert err.code == 400 and err.causes == [] and err.verdict.stage == "decode"
    assert err.message == PREFIX + (
        "json: cannot unmarshal number 1.0 into Go struct field VMISpecAlias.domain.devices.disks.0.bootOrder "
        "of type uint"
    )


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("spec", "template", "spec", "domain", "cpu"),
            {"cores": 4294967296},
            "json: cannot unmarshal number 4294967296 into Go struct field VMISpecAlias.domain.cpu.cores "
            "of type uint32",
        ),
        (
            ("spec", "template", "spec", "terminationGracePeriodSeconds"),
            30.0,
            "json: cannot unmarshal number 30.0 into Go struct field VMISpecAlias.terminationGracePeriodSeconds "
            "of type int64",
        ),
        (
            ("spec", "template", "metadata", "generation"),
            1.0,
            "json: cannot unmarshal number 1.0 into Go struct field VirtualMachine.spec.template.metadata.generation "
            "of type int64",
        ),
    ],
)
def test_integer_fields_decode_as_go_decodes_them(path: tuple[str, ...], value: Any, message: str) -> None:
    body = vm()
    cur = body
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = value
    err = refusal(body)
    assert (err.code, err.causes, err.message) == (400, [], PREFIX + message)


def test_without_validate_a_decode_error_stays_the_expand_error() -> None:
    body = vm()
    body["spec"]["template"]["spec"]["domain"]["devices"]["disks"] = [{"name": "root", "bootOrder": 1.0}]
    with pytest.raises(ExpandError) as err:
        expand(body, field_validation="Ignore")
    assert not isinstance(err.value, AdmissionDenied) and err.value.code == 422
    assert err.value.message.startswith("Can not unmarshal Request body to struct")
