"""What the template service asks of a VMI.

Mirrors the predicates it calls: ``VirtualMachineInstance.IsCPUDedicated`` and
``WantsToHaveQOSGuaranteed`` (``kubevirt.io/api/core/v1/types.go``), ``hardware.GetNumberOfVCPUs``
(uint32 arithmetic), ``vmitrait.HasVFIO``, ``downwardmetrics.HasDownwardMetricDisk``, ``tpm.HasDevice``,
``util.IsSEVVMI``/``IsSEVSNPVMI``/``IsSEVESVMI``/``IsTDXVMI``/``IsAutoAttachVSOCK``/
``RequiresMemoryOverheadReservation``/``HasKernelBootContainerImage``, ``vmispec.RequiresTunDevice``/
``RequiresVirtioNetDevice``, ``reservation.HasVMIPersistentReservation``.
"""

from __future__ import annotations

from typing import Any

from apiserver.render.kubernetes.quantity import Quantity
from apiserver.render.kubernetes.quantitymath import ResourceList, cpu_of, memory_of, resource_list

JSON = dict[str, Any]

_UINT32 = 0xFFFFFFFF


def spec_of(vmi: JSON) -> JSON:
    spec = vmi.get("spec")
    return spec if isinstance(spec, dict) else {}


def domain_of(vmi: JSON) -> JSON:
    domain = spec_of(vmi).get("domain")
    return domain if isinstance(domain, dict) else {}


def devices_of(vmi: JSON) -> JSON:
    devices = domain_of(vmi).get("devices")
    return devices if isinstance(devices, dict) else {}


def requests_of(vmi: JSON) -> ResourceList:
    return resource_list((domain_of(vmi).get("resources") or {}).get("requests"))


def limits_of(vmi: JSON) -> ResourceList:
    return resource_list((domain_of(vmi).get("resources") or {}).get("limits"))


def memory_request(vmi: JSON) -> Quantity:
    """``vmi.Spec.Domain.Resources.Requests.Memory()``."""
    return memory_of(requests_of(vmi))


def number_of_vcpus(cpu: JSON) -> int:
    """``hardware.GetNumberOfVCPUs``: cores x sockets x threads, a zero factor skipped, in uint32."""
    vcpus = int(cpu.get("cores") or 0)
    for key in ("sockets", "threads"):
        factor = int(cpu.get(key) or 0)
        if factor:
            vcpus = factor if vcpus == 0 else (vcpus * factor) & _UINT32
    return vcpus


def is_cpu_dedicated(vmi: JSON) -> bool:
    cpu = domain_of(vmi).get("cpu")
    return isinstance(cpu, dict) and bool(cpu.get("dedicatedCpuPlacement"))


def wants_guaranteed_qos(vmi: JSON) -> bool:
    requests, limits = requests_of(vmi), limits_of(vmi)
    req_mem, lim_mem = memory_of(requests), memory_of(limits)
    memory_wants = (req_mem.is_zero() and not lim_mem.is_zero()) or (
        not req_mem.is_zero() and req_mem == lim_mem
    )
    req_cpu = cpu_of(requests)
    cpu_wants = not req_cpu.is_zero() and req_cpu == cpu_of(limits)
    return memory_wants and cpu_wants


def has_vfio(vmi: JSON) -> bool:
    devices = devices_of(vmi)
    return (
        bool(devices.get("hostDevices"))
        or bool(devices.get("gpus"))
        or any(i.get("sriov") is not None for i in devices.get("interfaces") or ())
    )


def has_downward_metrics_disk(vmi: JSON) -> bool:
    return any(v.get("downwardMetrics") is not None for v in spec_of(vmi).get("volumes") or ())


def has_tpm(vmi: JSON) -> bool:
    tpm = devices_of(vmi).get("tpm")
    return tpm is not None and tpm.get("enabled") in (None, True)


def _launch_security(vmi: JSON) -> JSON | None:
    got = domain_of(vmi).get("launchSecurity")
    return got if isinstance(got, dict) else None


def is_sev_vmi(vmi: JSON) -> bool:
    """``util.IsSEVVMI``: SEV or SNP."""
    ls = _launch_security(vmi)
    return ls is not None and (ls.get("sev") is not None or ls.get("snp") is not None)


def is_sev(vmi: JSON) -> bool:
    """``IsSEVVMI || IsSEVSNPVMI || IsSEVESVMI``."""
    ls = _launch_security(vmi)
    if ls is None:
        return False
    es = (((ls.get("sev") or {}).get("policy") or {}).get("encryptedState")) is True
    return ls.get("sev") is not None or ls.get("snp") is not None or es


def is_tdx(vmi: JSON) -> bool:
    ls = _launch_security(vmi)
    return ls is not None and ls.get("tdx") is not None


def reserved_added_overhead(vmi: JSON) -> Quantity | None:
    """``spec.domain.memory.reservedOverhead.addedOverhead`` when ``RequiresMemoryOverheadReservation``."""
    memory = domain_of(vmi).get("memory") or {}
    added = (memory.get("reservedOverhead") or {}).get("addedOverhead")
    if added is None:
        return None
    return resource_list({"m": added}).get("m")


def requires_tun(vmi: JSON) -> bool:
    devices = devices_of(vmi)
    return bool(devices.get("interfaces")) or devices.get("autoattachPodInterface") in (None, True)


def requires_vhost_net(vmi: JSON, allow_emulation: bool) -> bool:
    interfaces = devices_of(vmi).get("interfaces") or ()
    return any(i.get("model", "") in ("", "virtio") for i in interfaces) and not allow_emulation


def auto_attach_vsock(vmi: JSON) -> bool:
    return devices_of(vmi).get("autoattachVSOCK") is True


def has_persistent_reservation(vmi: JSON) -> bool:
    return any(bool((d.get("lun") or {}).get("reservation")) for d in devices_of(vmi).get("disks") or ())


def has_kernel_boot_container(vmi: JSON) -> bool:
    firmware = domain_of(vmi).get("firmware") or {}
    return (firmware.get("kernelBoot") or {}).get("container") is not None


def has_hugepages(vmi: JSON) -> bool:
    memory = domain_of(vmi).get("memory")
    return isinstance(memory, dict) and memory.get("hugepages") is not None
