"""The Go JSON codec against Go's own output (the corpus) and against Go's documented rules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from apiserver.render.golang import gojson
from apiserver.render.golang.gojson import GoDecodeError, check, decode, encode, roundtrip
from apiserver.render.golang.gojson.goscalars import (
    canonical_cidr,
    canonical_ip,
    float32_value,
    format_duration,
    parse_duration,
    parse_time,
)
from tests.support import shared
from tests.support.conformance import case_files

CASES = case_files()
needs_corpus = shared.needs_shared(shared.CASES_DIR)


def dumps(doc: Any) -> str:
    """Order-sensitive text, so member order is compared too."""
    return json.dumps(doc, ensure_ascii=False)


def _load(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def _vm(spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": "ns", **meta},
        "spec": spec if spec is not None else {"template": {"spec": {"domain": {"devices": {}}}}},
    }


def _domain(**domain: Any) -> dict[str, Any]:
    return _vm({"template": {"spec": {"domain": {"devices": {}, **domain}}}})


def _dom(decoded: dict[str, Any]) -> dict[str, Any]:
    return dict(decoded["spec"]["template"]["spec"]["domain"])


# --- the corpus ----------------------------------------------------------------------------------------


@needs_corpus
def test_corpus_expanded_is_a_fixed_point_member_order_included() -> None:
    checked = 0
    for path in CASES:
        expanded = _load(path)["expected"].get("expanded")
        if expanded is None:
            continue
        assert dumps(roundtrip(expanded, "VirtualMachine")) == dumps(expanded), path.name
        checked += 1
    assert checked > 100


@needs_corpus
def test_corpus_vm_without_matchers_expands_to_gos_round_trip() -> None:
    checked = 0
    for path in CASES:
        case = _load(path)
        vm, expanded = case["input"]["vm"], case["expected"].get("expanded")
        spec = vm.get("spec") or {}
        if expanded is None or spec.get("instancetype") or spec.get("preference") or "presets" in path.name:
            continue
        assert dumps(roundtrip(vm, "VirtualMachine")) == dumps(expanded), path.name
        checked += 1
    assert checked >= 1


@needs_corpus
def test_corpus_legacy_decoded_objects_are_gos_round_trip() -> None:
    """v1.6 decoded these through Go and wrote them with json.Marshal (members sorted by the corpus)."""
    checked = 0
    for path in CASES:
        for revision in (_load(path).get("legacy") or {}).get("revisions", []):
            obj = revision.get("decodedObject")
            if obj:
                got = roundtrip(obj, obj["kind"])
                assert json.dumps(got, sort_keys=True) == json.dumps(obj, sort_keys=True), path.name
                checked += 1
    assert checked > 10


@needs_corpus
def test_corpus_every_input_object_decodes_and_round_trips_idempotently() -> None:
    for path in CASES:
        case = _load(path)
        docs = [(case["input"]["vm"], "VirtualMachine")]
        for obj in case["input"].get("objects", []):
            kind = obj.get("kind")
            if kind in gojson.ROOTS:
                docs.append((obj, kind))
        kubevirt = case["input"].get("kubevirt")
        if kubevirt is not None:
            docs.append((kubevirt, "KubeVirt" if "spec" in kubevirt else "KubeVirtConfiguration"))
        for doc, root in docs:
            once = roundtrip(doc, root)
            assert dumps(roundtrip(once, root)) == dumps(once), (path.name, root)
            assert dumps(encode(decode(doc, root), root)) == dumps(once)


# --- presence semantics --------------------------------------------------------------------------------


def test_always_written_members_and_zero_values() -> None:
    out = roundtrip({"spec": {}}, "VirtualMachine")
    assert dumps(out) == dumps({"metadata": {}, "spec": {"template": None}, "status": {}})
    out = roundtrip(_domain(), "VirtualMachine")
    assert out["spec"]["template"] == {
        "metadata": {},
        "spec": {"domain": {"resources": {}, "devices": {}}},
    }
    assert list(out) == ["kind", "apiVersion", "metadata", "spec", "status"]  # TypeMeta's order
    disk = roundtrip(_domain(devices={"disks": [{}]}), "VirtualMachine")
    assert _dom(disk)["devices"]["disks"] == [{"name": ""}]
    empty_disk = {"name": "scratch", "emptyDisk": {}}
    vols = roundtrip(
        _vm({"template": {"spec": {"domain": {"devices": {}}, "volumes": [empty_disk]}}}), "VirtualMachine"
    )
    assert vols["spec"]["template"]["spec"]["volumes"] == [
        {"name": "scratch", "emptyDisk": {"capacity": "0"}}
    ]


def test_instancetype_guest_members_are_always_written() -> None:
    out = roundtrip({"spec": {}}, "VirtualMachineInstancetype")
    assert out["spec"] == {"cpu": {"guest": 0}, "memory": {"guest": "0"}}


def test_omitempty_drops_zero_scalars_and_empty_collections_but_keeps_pointers() -> None:
    vm = _domain(
        cpu={"cores": 0, "sockets": 2, "model": "", "dedicatedCpuPlacement": False, "features": []},
        devices={"autoattachPodInterface": False, "rng": {}, "disks": []},
        features={},
        machine={"type": ""},
    )
    vm["spec"]["template"]["spec"]["nodeSelector"] = {}
    decoded = decode(vm, "VirtualMachine")
    tmpl = decoded["spec"]["template"]["spec"]
    # decode: non-pointer zeros are gone, present pointers and collections stay
    assert tmpl["domain"]["cpu"] == {"sockets": 2, "features": []}
    assert tmpl["domain"]["devices"] == {"autoattachPodInterface": False, "rng": {}, "disks": []}
    assert tmpl["nodeSelector"] == {}
    assert tmpl["domain"]["machine"] == {}
    # encode: omitempty drops empty collections, a non-pointer struct member is always written
    out = encode(decoded, "VirtualMachine")["spec"]["template"]["spec"]
    assert "nodeSelector" not in out
    assert out["domain"]["cpu"] == {"sockets": 2}
    assert out["domain"]["devices"] == {"autoattachPodInterface": False, "rng": {}}
    assert out["domain"]["features"] == {"acpi": {}}
    assert out["domain"]["machine"] == {"type": ""}


def test_null_removes_pointers_and_collections_and_leaves_non_pointers() -> None:
    vm = _domain(cpu=None, memory={"guest": None}, resources=None, devices={"disks": None})
    vm["spec"]["running"] = None
    decoded = decode(vm, "VirtualMachine")
    assert "running" not in decoded["spec"]
    assert _dom(decoded) == {"memory": {}, "devices": {}}
    out = encode(decoded, "VirtualMachine")
    assert _dom(out) == {"resources": {}, "memory": {}, "devices": {}}
    assert encode(decode({"spec": {"template": None}}, "VirtualMachine"), "VirtualMachine")["spec"] == {
        "template": None
    }
    # a non-pointer Quantity given null holds zero, and zero is written
    assert roundtrip({"spec": {"memory": {"guest": None}}}, "VirtualMachineInstancetype")["spec"][
        "memory"
    ] == {"guest": "0"}


def test_map_keys_sorted_and_quantities_canonical() -> None:
    vm = _domain(resources={"requests": {"memory": "1024Mi", "cpu": "1000m"}, "limits": {"memory": 1.5}})
    vm["metadata"]["labels"] = {"b": "2", "a": "1", "B": "3"}
    out = roundtrip(vm, "VirtualMachine")
    assert dumps(out["metadata"]["labels"]) == dumps({"B": "3", "a": "1", "b": "2"})
    resources = _dom(out)["resources"]
    assert dumps(resources) == dumps(
        {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1500m"}}
    )


def test_member_names_fold_case_unless_exact() -> None:
    vm = _vm(
        {"RUNSTRATEGY": "Always", "Template": {"spec": {"domain": {"CPU": {"Cores": 2}, "devices": {}}}}}
    )
    folded = decode(vm, "VirtualMachine")
    assert folded["spec"]["runStrategy"] == "Always"
    assert _dom(folded)["cpu"] == {"cores": 2}
    exact = decode(vm, "VirtualMachine", exact_names=True)
    assert exact["spec"] == {}
    # an exact match wins over a folded one; dashes and underscores are significant
    assert decode({"spec": {"runStrategy": "Always", "RunStrategy": "Halted"}}, "VirtualMachine")["spec"] == {
        "runStrategy": "Halted"
    }
    assert decode({"spec": {"run_strategy": "Always"}}, "VirtualMachine")["spec"] == {}
    assert decode({"spec": {"\u212aind": 1}}, "VirtualMachine")["spec"] == {}  # no such member anyway
    assert decode({"\u212aind": "VirtualMachine"}, "VirtualMachine") == {"kind": "VirtualMachine"}


@pytest.mark.parametrize("run_strategy", ["runStrategy", "RunStrategy"], ids=["fast path", "closures"])
def test_exact_names_end_at_kubevirts_own_unmarshal_json(run_strategy: str) -> None:
    # VirtualMachineInstanceSpec.UnmarshalJSON decodes with encoding/json, which folds case whatever the
    # caller's decoder does: KubeVirt's real virt-api renders a stored VM's spec.template.spec.domain.cpu
    # .dedicatedCPUPlacement as dedicatedCpuPlacement (tests/virtapi; golden cases instancetype-019 and
    # conflict-013), while members above the template's spec still need their exact names. (A folded name
    # in VirtualMachineSpec hands it, and all below it, to the closures instead of the generated decoders.)
    domain = {"cpu": {"dedicatedCPUPlacement": True}, "devices": {}}
    vm = _vm({run_strategy: "Always", "template": {"spec": {"domain": domain, "Hostname": "h"}}})
    decoded = decode(vm, "VirtualMachine", exact_names=True)
    assert decoded["spec"].get("runStrategy") == ("Always" if run_strategy == "runStrategy" else None)
    template = decoded["spec"]["template"]["spec"]
    assert template["hostname"] == "h"
    assert template["domain"]["cpu"] == {"dedicatedCpuPlacement": True}


def test_case_folded_duplicates_merge_objects() -> None:
    doc = {"spec": {"template": {"spec": {"domain": {"cpu": {"cores": 1}, "CPU": {"sockets": 2}}}}}}
    assert _dom(decode(doc, "VirtualMachine"))["cpu"] == {"cores": 1, "sockets": 2}


def test_unknown_members_are_dropped() -> None:
    vm = _domain(cpu={"corez": 4}, bogus=True)
    vm["status"] = {"printableStatus": "Running", "whatever": 1}
    out = roundtrip(vm, "VirtualMachine")
    assert _dom(out) == {"resources": {}, "cpu": {}, "devices": {}}
    assert out["status"] == {"printableStatus": "Running"}


def test_custom_types() -> None:
    meta = {"creationTimestamp": "2024-01-02T03:04:05.999+02:00", "deletionTimestamp": "0001-01-01T00:00:00Z"}
    out = roundtrip({"metadata": meta}, "VirtualMachine")["metadata"]
    assert out == {"creationTimestamp": "2024-01-02T01:04:05Z", "deletionTimestamp": None}
    assert roundtrip({"metadata": {"creationTimestamp": None}}, "VirtualMachine")["metadata"] == {}
    # IntOrString and RawExtension
    probe = {"httpGet": {"port": "http"}, "tcpSocket": {"port": 8080}}
    tmpl = roundtrip(_vm({"template": {"spec": {"readinessProbe": probe}}}), "VirtualMachine")
    assert tmpl["spec"]["template"]["spec"]["readinessProbe"] == {
        "httpGet": {"port": "http"},
        "tcpSocket": {"port": 8080},
    }
    revision = roundtrip({"data": {"b": 1, "a": [None]}, "revision": 0}, "ControllerRevision")
    assert dumps(revision) == dumps({"metadata": {}, "data": {"b": 1, "a": [None]}, "revision": 0})


def test_durations_and_float32_in_kubevirt_configuration() -> None:
    limiter = {"tokenBucketRateLimiter": {"qps": 0.1, "burst": 5}}
    conf = {"apiConfiguration": {"restClient": {"rateLimiter": limiter}}}
    out = roundtrip(conf, "KubeVirtConfiguration")
    assert dumps(out["apiConfiguration"]["restClient"]["rateLimiter"]) == dumps(
        {"tokenBucketRateLimiter": {"qps": 0.1, "burst": 5}}
    )
    assert float32_value(0.1) == 0.1 and float32_value(5.0) == 5 and isinstance(float32_value(5.0), int)
    assert float32_value(1e-7) == 1e-7
    assert float32_value(16777217.0) == 16777216


@pytest.mark.parametrize(
    ("text", "ns", "back"),
    [
        ("90m", 90 * 60 * 10**9, "1h30m0s"),
        ("1.5h", 90 * 60 * 10**9, "1h30m0s"),
        ("0", 0, "0s"),
        ("1.5ms", 1_500_000, "1.5ms"),
        ("1us", 1000, "1\u00b5s"),
        ("-2s", -2 * 10**9, "-2s"),
        ("1h1m1.25s", 3661_250_000_000, "1h1m1.25s"),
        ("3ns", 3, "3ns"),
    ],
)
def test_go_durations(text: str, ns: int, back: str) -> None:
    assert parse_duration(text) == ns
    assert format_duration(ns) == back


@pytest.mark.parametrize("text", ["", "1", "1x", "h", ".s", "9223372036854775808ns"])
def test_go_duration_errors(text: str) -> None:
    with pytest.raises(ValueError, match=r"^time: "):
        parse_duration(text)


def test_go_times() -> None:
    assert parse_time("2024-02-29T23:59:59-01:00") == "2024-03-01T00:59:59Z"
    assert parse_time("0001-01-01T00:00:00Z") is None
    assert parse_time("0001-01-01T01:00:00+01:00") is None
    assert parse_time("0001-01-01T00:00:00.5Z") == "0001-01-01T00:00:00Z"  # not the zero time
    for bad in ["2024-02-30T00:00:00Z", "2024-1-01T00:00:00Z", "yesterday", "2024-01-01 00:00:00Z"]:
        with pytest.raises(ValueError, match="parsing time"):
            parse_time(bad)


# --- decode hooks ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ip", "canonical"),
    [
        ("010.000.000.001", "10.0.0.1"),
        ("::FFFF:1.2.3.4", "1.2.3.4"),
        ("2001:DB8:0:0:0:0:0:1", "2001:db8::1"),
        ("2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1"),
        ("1:0:2:3:4:5:6:7", "1:0:2:3:4:5:6:7"),
        ("dns.example.com", "dns.example.com"),
        ("256.1.1.1", "256.1.1.1"),
        ("fe80::1%eth0", "fe80::1%eth0"),
    ],
)
def test_ip_hook(ip: str, canonical: str) -> None:
    assert canonical_ip(ip) == canonical


def test_decode_hooks_in_place() -> None:
    tmpl = {
        "dnsConfig": {"nameservers": ["010.000.000.001", "::FFFF:1.2.3.4", "ns.local"]},
        "domain": {"devices": {"interfaces": [{"name": "a", "dhcpOptions": {"ntpServers": ["001.2.3.4"]}}]}},
        "networks": [
            {"name": "a", "pod": {"vmNetworkCIDR": "010.0.2.5/024", "vmIPv6NetworkCIDR": "FD00::1/64"}}
        ],
    }
    out = roundtrip(_vm({"template": {"spec": tmpl}}), "VirtualMachine")["spec"]["template"]["spec"]
    assert out["dnsConfig"]["nameservers"] == ["10.0.0.1", "1.2.3.4", "ns.local"]
    assert out["domain"]["devices"]["interfaces"][0]["dhcpOptions"]["ntpServers"] == ["1.2.3.4"]
    assert out["networks"][0]["pod"] == {"vmNetworkCIDR": "10.0.2.5/24", "vmIPv6NetworkCIDR": "FD00::1/64"}
    assert canonical_cidr("10.0.0.1/33") == "10.0.0.1/33"
    assert canonical_cidr("::ffff:10.0.0.1/120") == "10.0.0.1/120"


# --- wrong types ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("domain", "path", "message"),
    [
        (
            {"cpu": {"cores": "2"}},
            "spec.template.spec.domain.cpu.cores",
            "json: cannot unmarshal string into Go struct field CPU.spec.template.spec.domain.cpu.cores "
            "of type uint32",
        ),
        (
            {"cpu": {"cores": -1}},
            "spec.template.spec.domain.cpu.cores",
            "json: cannot unmarshal number -1 into Go struct field CPU.spec.template.spec.domain.cpu.cores "
            "of type uint32",
        ),
        (
            {"cpu": {"cores": 1.5}},
            "spec.template.spec.domain.cpu.cores",
            "json: cannot unmarshal number 1.5 into Go struct field CPU.spec.template.spec.domain.cpu.cores "
            "of type uint32",
        ),
        (
            {"cpu": []},
            "spec.template.spec.domain.cpu",
            "json: cannot unmarshal array into Go struct field DomainSpec.spec.template.spec.domain.cpu "
            "of type v1.CPU",
        ),
        (
            {"devices": {"disks": [{"name": "a"}, {"name": 7}]}},
            "spec.template.spec.domain.devices.disks[1].name",
            "json: cannot unmarshal number into Go struct field "
            "Disk.spec.template.spec.domain.devices.disks.name of type string",
        ),
        (
            {"devices": {"autoattachPodInterface": "false"}},
            "spec.template.spec.domain.devices.autoattachPodInterface",
            "json: cannot unmarshal string into Go struct field Devices.spec.template.spec.domain.devices."
            "autoattachPodInterface of type bool",
        ),
        (
            {"resources": {"requests": {"memory": "1 Gi"}}},
            "spec.template.spec.domain.resources.requests[memory]",
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            {"memory": {"guest": True}},
            "spec.template.spec.domain.memory.guest",
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
    ],
)
def test_wrong_types_raise_with_path_and_go_message(domain: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(GoDecodeError) as err:
        decode(_domain(**domain), "VirtualMachine")
    assert err.value.path == path
    assert err.value.message == message == str(err.value)


@pytest.mark.parametrize(
    ("domain", "message"),
    [
        # Go's own text (go1.27.3 json.Unmarshal into v1.VirtualMachine, KubeVirt's types)
        (
            {"devices": {"disks": [{"name": "root", "bootOrder": 1.0}]}},
            "json: cannot unmarshal number 1.0 into Go struct field VMISpecAlias.domain.devices.disks.0.bootOrder "
            "of type uint",
        ),
        (
            {"cpu": {"cores": 4294967296}},
            "json: cannot unmarshal number 4294967296 into Go struct field VMISpecAlias.domain.cpu.cores "
            "of type uint32",
        ),
        (
            {"devices": {"disks": ["x"]}},
            "json: cannot unmarshal string into VMISpecAlias.domain.devices.disks.0 of type v1.Disk",
        ),
        (
            {
                "devices": {
                    "interfaces": [{"name": "x", "dhcpOptions": {"privateOptions": [{"option": 240.0}]}}]
                }
            },
            "json: cannot unmarshal number 240.0 into Go struct field DHCPOptionsAlias.privateOptions.0.option "
            "of type int",
        ),
        (
            {"devices": {"interfaces": [{"name": "x", "dhcpOptions": {"ntpServers": [1]}}]}},
            "json: cannot unmarshal number into DHCPOptionsAlias.ntpServers.0 of type string",
        ),
        (
            {"resources": {"requests": {"memory": "1 Gi"}}},
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
    ],
)
def test_unmarshal_message_is_gos_json_v2_wording(domain: dict[str, Any], message: str) -> None:
    with pytest.raises(GoDecodeError) as err:
        decode(_domain(**domain), "VirtualMachine")
    assert err.value.unmarshal_message == message


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"metadata": {"labels": {"a/b~c": 1}}},
            "json: cannot unmarshal number into Go struct field VirtualMachine.metadata.labels.a~1b~0c of type string",
        ),
        (
            {"status": {"observedGeneration": 2.0}},
            "json: cannot unmarshal number 2.0 into Go struct field VirtualMachine.status.observedGeneration "
            "of type int64",
        ),
        (
            {"spec": {"template": {"spec": {"networks": [{"name": "default", "pod": 5}]}}}},
            "json: cannot unmarshal number into Go value of type v1.PodNetworkAlias",
        ),
        (
            {"spec": {"template": {"spec": 5}}},
            "json: cannot unmarshal number into Go value of type v1.VMISpecAlias",
        ),
        ([], "json: cannot unmarshal array into Go value of type v1.VirtualMachine"),
    ],
)
def test_unmarshal_message_names_the_root_or_the_alias(change: Any, message: str) -> None:
    doc = (
        {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", **change}
        if isinstance(change, dict)
        else change
    )
    with pytest.raises(GoDecodeError) as err:
        decode(doc, "VirtualMachine")
    assert err.value.unmarshal_message == message


def test_wrong_type_at_the_root() -> None:
    with pytest.raises(GoDecodeError) as err:
        decode([], "VirtualMachine")
    assert err.value.path == ""
    assert str(err.value) == "json: cannot unmarshal array into Go value of type v1.VirtualMachine"


def test_decode_by_full_type_name() -> None:
    assert decode({"cores": 2, "x": 1}, "kubevirt.io/api/core/v1.CPU") == {"cores": 2}
    with pytest.raises(KeyError):
        decode({}, "NoSuchThing")


# --- check -------------------------------------------------------------------------------------------------


def test_check_reports_every_problem_with_its_path() -> None:
    vm = _domain(cpu={"corez": 4, "cores": "2"}, memory={"guest": "1 Gi"}, devices={"disks": [{"disk": {}}]})
    vm["metadata"]["labelz"] = {}
    vm["spec"]["RunStrategy"] = "Always"
    problems = {(p.path, p.reason) for p in check(vm, "VirtualMachine")}
    assert problems == {
        ("metadata.labelz", "FieldValueUnknownField"),
        ("spec.RunStrategy", "FieldValueUnknownField"),
        ("spec.template.spec.domain.cpu.corez", "FieldValueUnknownField"),
        ("spec.template.spec.domain.cpu.cores", "FieldValueTypeInvalid"),
        ("spec.template.spec.domain.memory.guest", "FieldValueInvalid"),
        ("spec.template.spec.domain.devices.disks[0].name", "FieldValueRequired"),
    }
    unknown = next(p for p in check(vm, "VirtualMachine") if p.path.endswith("corez"))
    assert unknown.message == 'unknown field "spec.template.spec.domain.cpu.corez"'
    assert unknown.to_dict() == {
        "reason": "FieldValueUnknownField",
        "message": unknown.message,
        "field": unknown.path,
    }


def test_check_accepts_valid_documents() -> None:
    assert check(_domain(cpu={"cores": 2}, resources={"requests": {"memory": "1Gi"}}), "VirtualMachine") == []
    missing = check({"metadata": {"name": "x"}}, "VirtualMachine")
    assert [(p.path, p.reason, p.message) for p in missing] == [
        ("spec", "FieldValueRequired", "Required value")
    ]


@needs_corpus
def test_check_passes_every_corpus_output_and_flags_only_sloppy_inputs() -> None:
    """Go's output is always schema-clean. Some corpus inputs lean on Go's leniency: case-mismatched
    member names (``dedicatedCPUPlacement``) and inputs without the required ``type``."""
    sloppy = set()
    for path in CASES:
        case = _load(path)
        expanded = case["expected"].get("expanded")
        if expanded is not None:
            assert check(expanded, "VirtualMachine") == [], path.name
        for problem in check(case["input"]["vm"], "VirtualMachine"):
            sloppy.add((problem.reason, problem.path.rpartition(".")[2]))
    assert sloppy == {("FieldValueUnknownField", "dedicatedCPUPlacement"), ("FieldValueRequired", "type")}


def test_encode_canonicalises_quantities_written_by_the_renderer_and_is_idempotent() -> None:
    edited = decode(_domain(memory={"guest": "1Gi"}), "VirtualMachine")
    edited["spec"]["template"]["spec"]["domain"]["memory"]["guest"] = "1024Mi"
    edited["spec"]["template"]["spec"]["domain"]["resources"] = {"requests": {"memory": 805306368}}
    once = encode(edited, "VirtualMachine")
    assert _dom(once)["memory"] == {"guest": "1Gi"}
    assert _dom(once)["resources"] == {"requests": {"memory": "805306368"}}
    assert dumps(encode(decode(once, "VirtualMachine"), "VirtualMachine")) == dumps(once)


def test_error_types() -> None:
    assert gojson.DecodeError is GoDecodeError
    assert issubclass(GoDecodeError, ValueError)


def test_each_codec_is_compiled_once_even_for_a_list_of_thousands() -> None:
    """The generated encoders and decoders compile on first use. A list's elements reached the stand-in
    again and again (each call compiled anew): a VM with 55,000 volumes took 94 s to expand."""
    import subprocess
    import sys

    script = """
import builtins, json
calls = []
real_compile = builtins.compile
def counting(source, filename, *args, **kwargs):
    if str(filename).startswith("<gojson"):
        calls.append(filename)
    return real_compile(source, filename, *args, **kwargs)
builtins.compile = counting
from apiserver import expand_vm
volumes = [{"name": f"v{i}", "containerDisk": {"image": "img"}} for i in range(3000)]
it = {"apiVersion": "instancetype.kubevirt.io/v1beta1", "kind": "VirtualMachineInstancetype",
      "metadata": {"name": "it", "namespace": "default"},
      "spec": {"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}}}
vm = {"kind": "VirtualMachine", "metadata": {"name": "many", "namespace": "default"},
      "spec": {"instancetype": {"kind": "VirtualMachineInstancetype", "name": "it"},
               "template": {"spec": {"domain": {"devices": {}}, "volumes": volumes}}}}
out = expand_vm(vm, [it])
print(json.dumps([len(calls), len(set(calls)), len(out["spec"]["template"]["spec"]["domain"]["devices"]["disks"])]))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    compiled, distinct, disks = json.loads(proc.stdout)
    assert disks == 3000
    assert compiled == distinct  # no struct compiled twice


FIRST_DECODES = """\
import builtins, json, sys
import yaml
from apiserver.render.golang.gojson import decode, encode

compiled = []
compile_ = builtins.compile
builtins.compile = lambda source, name, *a, **k: (compiled.append(name), compile_(source, name, *a, **k))[1]
vms = [d for path in sys.argv[1:] for d in yaml.safe_load_all(open(path)) if d and d["kind"] == "VirtualMachine"]
decode(vms[0], "VirtualMachine")
first = list(compiled)
rounds = [[decode(vm, "VirtualMachine") for vm in vms] for _ in range(3)]
print(json.dumps({
    "first": first,
    "compiled": compiled,
    "decoded": rounds,
    "encoded": [json.dumps([encode(d, "VirtualMachine") for d in r]) for r in rounds],
}))
"""


def test_a_types_first_decode_uses_its_closure_and_gives_what_its_generated_decoder_gives() -> None:
    """The first decode of a struct type goes through its closure (nothing compiled: a command-line run on
    one VM decodes most types once), later ones through its generated decoder: the same values, and the
    same encoded bytes. In a fresh interpreter, as the generated decoders are kept for the process."""
    examples = sorted(str(p) for p in (Path(__file__).parents[3] / "examples").glob("vm-*.yaml"))
    proc = subprocess.run(
        [sys.executable, "-c", FIRST_DECODES, *examples],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    answer = json.loads(proc.stdout)
    assert [name for name in answer["first"] if "decoder" in name] == []
    assert "<gojson decoder kubevirt.io/api/core/v1.VirtualMachine>" in answer["compiled"]
    closures, compiling, generated = answer["decoded"]
    assert closures == compiling == generated
    assert len(set(answer["encoded"])) == 1
    assert [vm["metadata"]["name"] for vm in closures] == ["fedora-cluster", "fedora-pinned", "fedora"]
