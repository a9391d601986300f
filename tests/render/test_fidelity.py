"""Equal to KubeVirt beyond the golden cases (issue 18): the five causes of a different answer that a
differential run against KubeVirt's own code found, each with its minimal input, and a property where
the cause is general. The figures are what KubeVirt's Go code (the oracle, ../shared/oracle) answers.

1. quantities keep the form Go parsed them into (format, int64 or inf.Dec) through every computation;
2. an invalid KubeVirt configuration is ignored as a whole, as ``validateConfig`` and ``GetConfig`` do;
3. kinds are lower-cased rune by rune as Go's ``strings.ToLower`` does;
4. quantities beyond int64 give what apimachinery's ``Value()`` gives (0 or a wrapped number);
5. objects (instancetypes, preferences, the KubeVirt CR) are decoded with exact member names, as
   client-go decodes them; the VM of a request keeps ``encoding/json``'s case-insensitive match.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apiserver.api import Expanded, expand
from apiserver.render.golang.gotext import go_lower
from apiserver.render.instancetype.apply_instancetype import overcommitted_request
from apiserver.render.kubernetes.errors import ExpandError
from apiserver.render.kubernetes.quantity import format_int, parse_quantity
from apiserver.render.virtconfig import DEFAULT_CONFIG, cluster_config
from apiserver.sources.folder import FolderSource
from apiserver.sources.gather import render_from_source
from tests.support.fuzzing import count, fuzz

REPO = Path(__file__).resolve().parents[2]

IT_V1BETA1 = "instancetype.kubevirt.io/v1beta1"


def vm(
    *, instancetype: dict[str, Any] | None = None, preference: dict[str, Any] | None = None, **domain: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"domain": {"devices": {}, **domain}}}}
    if instancetype is not None:
        spec["instancetype"] = instancetype
    if preference is not None:
        spec["preference"] = preference
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": "default"},
        "spec": spec,
    }


def cluster_instancetype(spec: dict[str, Any], name: str = "it") -> dict[str, Any]:
    return {
        "apiVersion": IT_V1BETA1,
        "kind": "VirtualMachineClusterInstancetype",
        "metadata": {"name": name},
        "spec": spec,
    }


def cluster_preference(spec: dict[str, Any], name: str = "pref") -> dict[str, Any]:
    return {
        "apiVersion": IT_V1BETA1,
        "kind": "VirtualMachineClusterPreference",
        "metadata": {"name": name},
        "spec": spec,
    }


def render(the_vm: dict[str, Any], objects: list[dict[str, Any]], kubevirt: Any = None) -> Expanded:
    return expand(the_vm, objects, kubevirt, field_validation="Ignore")


def domain_of(result: Expanded) -> dict[str, Any]:
    domain: dict[str, Any] = result.vm["spec"]["template"]["spec"]["domain"]
    return domain


def memory_request(guest: str | int, percent: int) -> str:
    it = cluster_instancetype({"cpu": {"guest": 1}, "memory": {"guest": guest, "overcommitPercent": percent}})
    result = render(vm(instancetype={"name": "it"}), [it])
    request: str = domain_of(result)["resources"]["requests"]["memory"]
    return request


# --- 1 and 4: quantities as Go holds them -------------------------------------------------------


def test_overcommit_request_keeps_the_guest_format() -> None:
    # The guest prints as 1288490188800m, which reads back as DecimalSI; Go keeps the parsed BinarySI.
    assert memory_request("1.2Gi", 20) == "1006633Ki"


def test_overcommit_of_a_guest_beyond_int64() -> None:
    # inf.Dec's Value() keeps the low 64 bits; float32 and NewQuantity take it from there.
    assert memory_request("123456789012345678901234567890", 20) == "-3490316924124921856"


def test_overcommit_request_in_binary_si_not_a_multiple_of_1024() -> None:
    # NewQuantity(144918000, BinarySI) prints 144918000; the text alone would read back as DecimalSI (144918k)
    assert memory_request("142951Ki", 1) == "144918000"


def test_guest_from_the_hugepage_size_keeps_its_format() -> None:
    # the guest is the parsed page size (BinarySI 2000 prints 2000); written as text it became 2k
    the_vm = vm(preference={"name": "pref"})
    the_vm["spec"]["template"]["spec"]["domain"]["memory"] = {"hugepages": {"pageSize": "1.953125Ki"}}
    memory = domain_of(render(the_vm, [cluster_preference({})]))["memory"]
    assert memory == {"hugepages": {"pageSize": "1.953125Ki"}, "guest": "2000"}


def test_topology_from_a_cpu_limit_beyond_int64() -> None:
    # Value() of the int64 amount 1e19 is 0: KubeVirt writes no sockets (omitempty) instead of 2**32-1.
    result = render(
        vm(preference={"name": "pref"}, resources={"limits": {"cpu": "1e19"}}), [cluster_preference({})]
    )
    assert domain_of(result)["cpu"] == {"cores": 1, "threads": 1}


def test_topology_from_an_inf_dec_cpu_limit() -> None:
    # 10000000000000000000 prints as 10E, whose int64 form gives 0; the inf.Dec Go parsed wraps instead.
    the_vm = vm(preference={"name": "pref"}, resources={"limits": {"cpu": "10000000000000000000"}})
    cpu = domain_of(render(the_vm, [cluster_preference({})]))["cpu"]
    assert cpu["sockets"] == (-8446744073709551616) & 0xFFFFFFFF


_GUESTS = st.one_of(
    st.builds(
        lambda whole, frac, suffix: f"{whole}{'.' + frac if frac else ''}{suffix}",
        st.integers(1, 10**30),
        st.text("0123456789", max_size=12),
        st.sampled_from(["", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti", "Pi", "e3", "e9", "E6", "m"]),
    ),
    st.integers(1, 2**70),
)


@fuzz("fidelity: overcommit from the guest as parsed", ci_examples=150)
@given(_GUESTS, st.integers(1, 100))
def test_overcommit_follows_the_guest_as_parsed_not_as_printed(guest: str | int, percent: int) -> None:
    """From a live object the request is computed from the guest as written; from a revision KubeVirt
    wrote, from the guest's printed text. Both as the Go arithmetic pinned in test_engine_units."""
    count("fidelity: overcommit from the guest as parsed")
    parsed = parse_quantity(guest)
    expected = format_int(overcommitted_request(parsed.value_ceil(), percent), parsed.format)
    assert memory_request(guest, percent) == expected
    printed = parse_quantity(parsed.canonical())
    expected = format_int(overcommitted_request(printed.value_ceil(), percent), printed.format)
    assert memory_request(parsed.canonical(), percent) == expected


@fuzz("fidelity: sockets from the cpu limit as parsed", ci_examples=150)
@given(_GUESTS)
def test_sockets_follow_the_limit_as_parsed(limit: str | int) -> None:
    count("fidelity: sockets from the cpu limit as parsed")
    the_vm = vm(preference={"name": "pref"}, resources={"limits": {"cpu": limit}})
    cpu = domain_of(render(the_vm, [cluster_preference({})]))["cpu"]
    assert cpu.get("sockets", 0) == parse_quantity(limit).value_ceil() & 0xFFFFFFFF


# --- 2: configuration validated, falling back to the defaults -----------------------------------

# A valid configuration that changes what expand writes: interface, machine type, cpu request,
# eviction strategy.
_CUSTOM: dict[str, Any] = {
    "network": {"defaultNetworkInterface": "masquerade"},
    "machineType": "pc-q35-rhel9.2.0",
    "cpuRequest": "200m",
    "evictionStrategy": "LiveMigrate",
}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            {"developerConfiguration": {"pvcTolerateLessSpaceUpToPercent": 101}},
            "invalid lessPVCSpaceToleration",
        ),
        (
            {"developerConfiguration": {"pvcTolerateLessSpaceUpToPercent": -1}},
            "invalid lessPVCSpaceToleration",
        ),
        (
            {"network": {"defaultNetworkInterface": "passt"}},
            "invalid default-network-interface in config: passt",
        ),
        ({"imagePullPolicy": "Bogus"}, "invalid dev.imagePullPolicy in config: Bogus"),
        ({"developerConfiguration": {"memoryOvercommit": -5}}, "invalid memoryOvercommit in ConfigMap: -5"),
        (
            {"developerConfiguration": {"cpuAllocationRatio": -1}},
            "invalid cpu allocation ratio in ConfigMap: -1",
        ),
    ],
)
def test_invalid_configuration_falls_back_to_the_defaults(bad: dict[str, Any], message: str) -> None:
    objects = [cluster_instancetype({"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}})]
    the_vm = vm(instancetype={"name": "it"})
    custom = render(the_vm, objects, {"spec": {"configuration": _CUSTOM}})
    assert domain_of(custom)["devices"]["interfaces"] == [{"name": "default", "masquerade": {}}]
    broken = {**_CUSTOM, **bad}
    if "network" in bad:
        broken["network"] = {**_CUSTOM["network"], **bad["network"]}
    result = render(the_vm, objects, {"spec": {"configuration": broken}})
    assert result.vm == render(the_vm, objects).vm  # the whole default configuration
    assert domain_of(result)["machine"] == {"type": "q35"}
    assert len(result.warnings) == 1 and message in result.warnings[0]


def test_zero_values_keep_the_defaults_and_validate() -> None:
    # omitempty drops zeros before the merge over the defaults: 0 is not "invalid 0"
    zeros = {
        "developerConfiguration": {"memoryOvercommit": 0, "cpuAllocationRatio": 0},
        "imagePullPolicy": "",
    }
    assert cluster_config({"spec": {"configuration": zeros}}) == DEFAULT_CONFIG


def test_invalid_configuration_ignores_the_status_architecture() -> None:
    config = cluster_config(
        {
            "spec": {"configuration": {"imagePullPolicy": "Sometimes"}},
            "status": {"defaultArchitecture": "arm64"},
        }
    )
    assert config.default_architecture == "amd64" and config.invalid


def _cr(status: dict[str, Any] | None, arch: str | None = None) -> dict[str, Any]:
    conf = {"architectureConfiguration": {"defaultArchitecture": arch}} if arch else {}
    cr: dict[str, Any] = {"apiVersion": "kubevirt.io/v1", "kind": "KubeVirt", "spec": {"configuration": conf}}
    if status is not None:
        cr["status"] = status
    return cr


@pytest.mark.parametrize(
    ("kubevirt", "architecture"),
    [
        # issue 29: virt-api reads the status as it is once the CR has a phase; before virt-operator fills
        # the architecture in, the VM gets none (and the amd64 machine type)
        (_cr({"phase": "Deploying"}), None),
        (_cr({"phase": "Deployed"}, arch="arm64"), None),  # the status decides, not the spec
        (_cr({"phase": "Deployed", "defaultArchitecture": "s390x"}, arch="arm64"), "s390x"),
        # written by hand, no status (the folder source, --kubevirt): as virt-operator would publish it
        (_cr(None, arch="arm64"), "arm64"),
        (_cr(None), "amd64"),
        ({"architectureConfiguration": {"defaultArchitecture": "arm64"}}, "arm64"),  # a bare configuration
        (None, "amd64"),
    ],
)
def test_default_architecture_as_virt_api_reads_the_cr(kubevirt: Any, architecture: str | None) -> None:
    objects = [cluster_instancetype({"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}})]
    result = render(vm(instancetype={"name": "it"}), objects, kubevirt)
    template = result.vm["spec"]["template"]["spec"]
    assert template.get("architecture") == architecture
    machine = {"arm64": "virt", "s390x": "s390-ccw-virtio"}.get(architecture or "", "q35")
    assert domain_of(result)["machine"] == {"type": machine}


_RULES = st.fixed_dictionaries(
    {},
    optional={
        "imagePullPolicy": st.sampled_from(["Always", "Never", "IfNotPresent", "always", "Bogus", ""]),
        "developerConfiguration": st.fixed_dictionaries(
            {},
            optional={
                "memoryOvercommit": st.integers(-3, 300),
                "cpuAllocationRatio": st.integers(-3, 30),
                "pvcTolerateLessSpaceUpToPercent": st.integers(-3, 103),
            },
        ),
        "network": st.fixed_dictionaries(
            {},
            optional={
                "defaultNetworkInterface": st.sampled_from(["bridge", "masquerade", "slirp", "passt", ""])
            },
        ),
        "machineType": st.sampled_from(["pc-q35-rhel9.2.0", ""]),
    },
)


def _valid(conf: dict[str, Any]) -> bool:
    developer = conf.get("developerConfiguration", {})
    return (
        conf.get("imagePullPolicy", "") in ("", "Always", "Never", "IfNotPresent")
        and (developer.get("memoryOvercommit") or 100) > 0
        and (developer.get("cpuAllocationRatio") or 10) > 0
        and 0 <= (developer.get("pvcTolerateLessSpaceUpToPercent") or 10) <= 100
        and conf.get("network", {}).get("defaultNetworkInterface", "")
        in ("", "bridge", "masquerade", "slirp")
    )


@fuzz("fidelity: configuration rules", ci_examples=200)
@given(_RULES)
def test_a_configuration_is_used_exactly_when_every_rule_holds(conf: dict[str, Any]) -> None:
    count("fidelity: configuration rules")
    config = cluster_config({"spec": {"configuration": conf}})
    assert (config.invalid == "") == _valid(conf)
    if config.invalid:
        assert config == DEFAULT_CONFIG.__class__(invalid=config.invalid)


# --- 3: Go's case mapping -----------------------------------------------------------------------


def test_kind_lower_cased_as_go_does() -> None:
    # strings.ToLower maps U+0130 to "i"; Python's str.lower() gives "i" + U+0307.
    objects = [cluster_instancetype({"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}})]
    kind = "VirtualMachineClusterİnstancetype"
    result = render(vm(instancetype={"name": "it", "kind": kind}), objects)
    assert domain_of(result)["cpu"]["sockets"] == 2


def test_kind_with_a_final_sigma_is_refused_with_its_own_spelling() -> None:
    objects = [cluster_instancetype({"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}})]
    with pytest.raises(ExpandError) as err:
        render(vm(instancetype={"name": "it", "kind": "VirtualMachineΣ"}), objects)
    assert err.value.status["message"].endswith("got unexpected kind in InstancetypeMatcher: VirtualMachineΣ")


def test_go_lower() -> None:
    assert go_lower("İ") == "i"
    assert go_lower("ΟΔΟΣ") == "οδοσ"  # no final sigma: Go maps rune by rune
    assert go_lower("\u212a") == "k"  # the Kelvin sign
    assert go_lower("ABC") == "abc"


_KIND_SPELLINGS = st.builds(
    lambda kind, flips: "".join(
        ("İ" if ch == "i" and flip == 2 else ch.upper() if flip else ch)
        for ch, flip in zip(kind, flips, strict=False)
    ),
    st.sampled_from(["virtualmachineclusterinstancetype", "virtualmachineclusterinstancetypes"]),
    st.lists(st.integers(0, 2), min_size=34, max_size=34),
)


@fuzz("fidelity: kinds in any case", ci_examples=100)
@given(_KIND_SPELLINGS)
def test_any_go_spelling_of_the_kind_finds_the_cluster_instancetype(kind: str) -> None:
    count("fidelity: kinds in any case")
    objects = [cluster_instancetype({"cpu": {"guest": 3}, "memory": {"guest": "1Gi"}})]
    result = render(vm(instancetype={"name": "it", "kind": kind}), objects)
    assert domain_of(result)["cpu"]["sockets"] == 3


# --- 5: objects decoded with exact member names -------------------------------------------------

_IO_THREADS = {
    "cpu": {"guest": 1},
    "memory": {"guest": "1Gi"},
    "IoThreads": {"supplementalPoolThreadCount": 4},
}


def test_case_mismatched_object_member_is_ignored_python_api() -> None:
    result = render(vm(instancetype={"name": "it"}), [cluster_instancetype(_IO_THREADS)])
    assert "ioThreads" not in domain_of(result)


def test_case_mismatched_object_member_is_ignored_folder_source(tmp_path: Path) -> None:
    (tmp_path / "it.json").write_text(json.dumps(cluster_instancetype(_IO_THREADS)))

    async def run() -> dict[str, Any]:
        source = FolderSource(tmp_path, watch=False)
        await source.start()
        try:
            result, _ = await render_from_source(source, vm(instancetype={"name": "it"}))
        finally:
            await source.close()
        return result.vm

    assert "ioThreads" not in asyncio.run(run())["spec"]["template"]["spec"]["domain"]


def test_case_mismatched_object_member_is_ignored_command_line(tmp_path: Path) -> None:
    (tmp_path / "vm.json").write_text(json.dumps(vm(instancetype={"name": "it"})))
    (tmp_path / "it.json").write_text(json.dumps(cluster_instancetype(_IO_THREADS)))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "apiserver.cli",
            "expand",
            "-f",
            str(tmp_path / "vm.json"),
            "-f",
            str(tmp_path / "it.json"),
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ioThreads" not in json.loads(proc.stdout)["spec"]["template"]["spec"]["domain"]


def test_case_mismatched_configuration_member_is_ignored() -> None:
    assert cluster_config({"spec": {"configuration": {"MachineType": "pc"}}}) == DEFAULT_CONFIG


def test_the_request_vm_still_matches_names_case_insensitively() -> None:
    # virt-api decodes the body with encoding/json: "Domain" is domain (tests/test_conformance pins more)
    the_vm = vm(instancetype={"name": "it"})
    the_vm["spec"]["template"]["spec"] = {"Domain": {"Devices": {}, "ioThreadsPolicy": "shared"}}
    result = render(the_vm, [cluster_instancetype({"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}})])
    assert domain_of(result)["ioThreadsPolicy"] == "shared"


_MEMBERS = st.sampled_from(
    ["nodeSelector", "schedulerName", "ioThreadsPolicy", "annotations", "launchSecurity", "ioThreads"]
)
_VALUES = {
    "nodeSelector": {"a": "b"},
    "schedulerName": "s",
    "ioThreadsPolicy": "auto",
    "annotations": {"x": "y"},
    "launchSecurity": {"sev": {}},
    "ioThreads": {"supplementalPoolThreadCount": 2},
}


@fuzz("fidelity: objects with exact names", ci_examples=100)
@given(_MEMBERS, st.lists(st.booleans(), min_size=20, max_size=20))
def test_a_member_in_another_case_is_an_unknown_member(member: str, flips: list[bool]) -> None:
    count("fidelity: objects with exact names")
    spelled = "".join(ch.swapcase() if flip else ch for ch, flip in zip(member, flips, strict=False))
    base = {"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}}
    with_member = render(
        vm(instancetype={"name": "it"}), [cluster_instancetype({**base, spelled: _VALUES[member]})]
    )
    without = render(vm(instancetype={"name": "it"}), [cluster_instancetype(base)])
    if spelled == member:
        assert with_member.vm != without.vm
    else:
        assert with_member.vm == without.vm


def test_a_controller_revision_client_go_cannot_decode_is_refused() -> None:
    # Found by the differential run: a type error outside the revision's data (here its
    # creationTimestamp) means client-go holds no revision for KubeVirt to read.
    revision = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "r", "namespace": "default", "creationTimestamp": "yesterday"},
        "data": cluster_instancetype({"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}}),
    }
    with pytest.raises(ExpandError) as err:
        render(vm(instancetype={"name": "it", "revisionName": "r"}), [revision])
    assert err.value.code == 422
    assert err.value.message.startswith("cannot decode ControllerRevision 'r': parsing time \"yesterday\"")


def test_a_status_revision_client_go_cannot_decode_is_refused_whatever_its_label() -> None:
    # Found by the differential run (seed 20261126): a status ref's revision for another name is passed
    # over, but client-go had to decode it whole first; one it cannot decode fails KubeVirt's Get.
    revision = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "r", "namespace": "default", "creationTimestamp": "Always"},
        "data": cluster_instancetype({"cpu": {"guest": 2}, "memory": {"guest": "1Gi"}}),
    }
    the_vm = vm(instancetype={"name": "it"})
    the_vm["status"] = {"instancetypeRef": {"name": "it", "controllerRevisionRef": {"name": "r"}}}
    live = cluster_instancetype({"cpu": {"guest": 3}, "memory": {"guest": "1Gi"}})
    with pytest.raises(ExpandError) as err:
        render(the_vm, [revision, live])
    assert err.value.code == 422
    assert err.value.message.startswith("cannot decode ControllerRevision 'r': parsing time \"Always\"")
    assert [c["field"] for c in err.value.causes] == ["status.instancetypeRef.controllerRevisionRef.name"]
    # The same revision decoded cleanly is passed over for the live object, as before.
    del revision["metadata"]["creationTimestamp"]
    assert domain_of(render(the_vm, [revision, live]))["cpu"]["sockets"] == 3
