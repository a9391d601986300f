"""virt-api's VMI webhook on CREATE: the generated SetObjectDefaults_VirtualMachineInstance defaults and the
Hyper-V feature dependencies, as the stored VMI shows them (KubeVirt's zz_generated.defaults.go,
defaults.go and pkg/defaults/hyperv.go)."""

from __future__ import annotations

import copy
from typing import Any

from apiserver.render.templateservice.config import launcher_config
from apiserver.render.vmimutation.defaults import set_hyperv_feature_dependencies, set_object_defaults
from apiserver.render.vmimutation.mutate import mutate_vmi

JSON = dict[str, Any]


def vmi(domain: JSON, **spec: Any) -> JSON:
    return {"metadata": {"name": "v", "namespace": "ns"}, "spec": {"domain": domain, **spec}}


def test_an_empty_domain_gets_firmware_and_acpi() -> None:
    got = vmi({})
    set_object_defaults(got)
    assert got["spec"]["domain"] == {"firmware": {}, "features": {"acpi": {"enabled": True}}, "devices": {}}


def test_an_explicit_acpi_stays() -> None:
    got = vmi({"features": {"acpi": {"enabled": False}}})
    set_object_defaults(got)
    assert got["spec"]["domain"]["features"] == {"acpi": {"enabled": False}}


def test_disks_cdroms_inputs_and_probes() -> None:
    got = vmi(
        {
            "devices": {
                "disks": [
                    {"name": "a"},
                    {"name": "b", "cdrom": {}},
                    {"name": "c", "lun": {}, "blockSize": {"matchVolume": {}}},
                    {"name": "d", "cdrom": {"readonly": False, "tray": "open"}},
                ],
                "inputs": [{"name": "i"}, {"name": "j", "bus": "virtio", "type": "tablet"}],
            }
        },
        readinessProbe={"httpGet": {"port": 80}, "periodSeconds": 3},
    )
    set_object_defaults(got)
    devices = got["spec"]["domain"]["devices"]
    assert devices["disks"] == [
        {"name": "a", "disk": {}},
        {"name": "b", "cdrom": {"readonly": True, "tray": "closed"}},
        {"name": "c", "lun": {}, "blockSize": {"matchVolume": {"enabled": True}}},
        {"name": "d", "cdrom": {"readonly": False, "tray": "open"}},
    ]
    assert devices["inputs"] == [
        {"name": "i", "bus": "usb", "type": "tablet"},
        {"name": "j", "bus": "virtio", "type": "tablet"},
    ]
    assert got["spec"]["readinessProbe"] == {
        "httpGet": {"port": 80},
        "periodSeconds": 3,
        "timeoutSeconds": 1,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert "livenessProbe" not in got["spec"]


def test_timers_are_present_and_hyperv_features_enabled() -> None:
    got = vmi(
        {
            "clock": {"timer": {"hpet": {"present": False}, "pit": {"tickPolicy": "delay"}, "hyperv": {}}},
            "features": {
                "apic": {},
                "smm": {},
                "hyperv": {
                    "relaxed": {},
                    "spinlocks": {"spinlocks": 8191},
                    "synictimer": {"direct": {}},
                    "tlbflush": {"extended": {}},
                    "vendorid": {"vendorid": "x"},
                },
            },
            "devices": {"gpus": [{"name": "g", "virtualGPUOptions": {"display": {"ramFB": {}}}}]},
        }
    )
    set_object_defaults(got)
    domain = got["spec"]["domain"]
    assert domain["clock"]["timer"] == {
        "hpet": {"present": False},
        "pit": {"tickPolicy": "delay", "present": True},
        "hyperv": {"present": True},
    }
    features = domain["features"]
    assert features["apic"] == {"enabled": True}
    assert features["smm"] == {"enabled": True}
    assert features["hyperv"] == {
        "relaxed": {"enabled": True},
        "spinlocks": {"spinlocks": 8191, "enabled": True},
        "synictimer": {"direct": {"enabled": True}, "enabled": True},
        "tlbflush": {"extended": {"enabled": True}, "enabled": True},
        "vendorid": {"vendorid": "x", "enabled": True},
    }
    assert domain["devices"]["gpus"][0]["virtualGPUOptions"]["display"]["ramFB"] == {"enabled": True}


def test_spinlocks_get_their_retries_only_when_enabled() -> None:
    on = vmi({"features": {"hyperv": {"spinlocks": {}}}})
    off = vmi({"features": {"hyperv": {"spinlocks": {"enabled": False}}}})
    set_object_defaults(on)
    set_object_defaults(off)
    assert on["spec"]["domain"]["features"]["hyperv"]["spinlocks"] == {"enabled": True, "spinlocks": 4096}
    assert off["spec"]["domain"]["features"]["hyperv"]["spinlocks"] == {"enabled": False}


def hyperv_after(hyperv: JSON, cpu: JSON | None = None) -> JSON:
    spec: JSON = {"domain": {"features": {"hyperv": copy.deepcopy(hyperv)}}}
    if cpu is not None:
        spec["domain"]["cpu"] = cpu
    set_hyperv_feature_dependencies(spec)
    return spec["domain"]


def test_synictimer_brings_synic_which_brings_vpindex() -> None:
    got = hyperv_after({"synictimer": {"enabled": True}})
    assert got["features"]["hyperv"] == {
        "synictimer": {"enabled": True},
        "synic": {"enabled": True},
        "vpindex": {"enabled": True},
    }


def test_ipi_and_tlbflush_bring_vpindex_and_a_disabled_feature_brings_nothing() -> None:
    assert hyperv_after({"ipi": {"enabled": True}})["features"]["hyperv"]["vpindex"] == {"enabled": True}
    assert hyperv_after({"tlbflush": {"enabled": True}})["features"]["hyperv"]["vpindex"] == {"enabled": True}
    assert hyperv_after({"ipi": {"enabled": False}})["features"]["hyperv"] == {"ipi": {"enabled": False}}


def test_a_requirement_disabled_stops_there_keeping_what_was_set() -> None:
    # evmcs enables vapic first; ipi then finds vpindex disabled: synic is left alone, no vmx is added
    got = hyperv_after(
        {
            "evmcs": {"enabled": True},
            "ipi": {"enabled": True},
            "vpindex": {"enabled": False},
            "synic": {"enabled": True},
        }
    )
    assert got["features"]["hyperv"]["vapic"] == {"enabled": True}
    assert "cpu" not in got


def test_evmcs_requires_the_vmx_cpu_feature() -> None:
    assert hyperv_after({"evmcs": {"enabled": True}})["cpu"] == {
        "features": [{"name": "vmx", "policy": "require"}]
    }
    got = hyperv_after(
        {"evmcs": {"enabled": True}},
        cpu={"cores": 2, "features": [{"name": "pcid"}, {"name": "vmx", "policy": "optional"}]},
    )
    assert got["cpu"]["features"] == [{"name": "pcid"}, {"name": "vmx", "policy": "require"}]
    got = hyperv_after({"evmcs": {"enabled": True}}, cpu={"features": [{"name": "pcid"}]})
    assert got["cpu"]["features"] == [{"name": "pcid"}, {"name": "vmx", "policy": "require"}]


def test_the_webhook_gives_disks_their_bus_after_the_defaults_and_its_finalizer() -> None:
    config = launcher_config(None)
    got = mutate_vmi(
        config,
        {
            "metadata": {
                "name": "v",
                "namespace": "ns",
                "finalizers": ["kubevirt.io/virtualMachineControllerFinalize"],
            },
            "spec": {"domain": {"devices": {"disks": [{"name": "a"}]}, "memory": {"guest": "1Gi"}}},
        },
    )
    assert got["spec"]["domain"]["devices"]["disks"] == [{"name": "a", "disk": {"bus": "sata"}}]
    assert got["spec"]["domain"]["features"] == {"acpi": {"enabled": True}}
    assert got["metadata"]["finalizers"] == [
        "kubevirt.io/virtualMachineControllerFinalize",
        "kubevirt.io/foregroundDeleteVirtualMachine",
    ]
    assert got["status"]["phase"] == "Pending"
    assert got["status"]["guestOSInfo"] == {}
