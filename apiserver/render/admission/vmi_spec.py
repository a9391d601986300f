"""``ValidateVirtualMachineInstanceSpec`` (``vmi-create-admitter.go``): every VMI spec rule, in KubeVirt's call order.

The order is the webhook's: causes are collected from every rule and returned together, so a VM that
breaks several rules lists them exactly as KubeVirt does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.render.admission import (
    accesscredentials,
    cpu,
    devices,
    disks,
    dns,
    dra,
    firmware,
    hostdevices,
    launchsecurity,
    memory,
    network,
    probes,
    scheduling,
    volumes,
)
from apiserver.render.admission._go import Causes, items, obj, text
from apiserver.render.admission.clusterconfig import AdmissionConfig


def validate_vmi_spec(field: str, spec: Mapping[str, Any], config: AdmissionConfig) -> Causes:
    """``ValidateVirtualMachineInstanceSpec``: ``field`` is ``spec.template.spec`` for a VM."""
    causes: Causes = []
    causes += dns.validate_hostname(field, spec)
    causes += dns.validate_subdomain(field, spec)
    causes += memory.validate_requests_negative_or_null(field, spec)
    causes += memory.validate_limits_negative_or_null(field, spec)
    causes += memory.validate_hugepages(field, spec)
    causes += memory.validate_guest_memory_limit(field, spec, config)
    causes += firmware.validate_emulated_machine(field, spec, config)
    causes += firmware.validate_acpi(f"{field}.acpi", spec)
    causes += cpu.validate_request_not_negative(field, spec)
    causes += cpu.validate_limit_not_negative(field, spec)
    causes += cpu.validate_request_within_limit(field, spec)
    causes += cpu.validate_cpu_pinning(field, spec, config)
    causes += cpu.validate_numa(field, spec, config)
    causes += cpu.validate_isolate_emulator_thread(field, spec)
    causes += cpu.validate_feature_policies(field, spec)
    causes += cpu.validate_hotplug(field, spec)
    causes += devices.validate_start_strategy(field, spec)
    causes += cpu.validate_realtime(field, spec)
    causes += scheduling.validate_affinity(field, spec)
    causes += scheduling.validate_topology_spread_constraints(field, spec)
    causes += network.validate(field, spec, config)
    causes += dra.validate_creation(field, spec, config)
    causes += disks.validate_boot_order(field, spec, config)
    causes += devices.validate_inputs(field, spec)
    causes += devices.validate_iothreads_policy(field, spec)
    causes += probes.validate_probes(field, spec)
    causes += firmware.validate_domain_spec(f"{field}.domain", obj(spec, "domain") or {})
    causes += volumes.validate_volumes(f"{field}.volumes", items(spec, "volumes"), config)
    causes += disks.validate_container_disks(field, spec)
    causes += volumes.validate_utility_volumes_absent(field, spec)
    causes += accesscredentials.validate_access_credentials(f"{field}.accessCredentials", spec)
    policy = text(spec, "dnsPolicy")
    if policy:
        causes += dns.validate_dns_policy(policy, f"{field}.dnsPolicy")
    causes += dns.validate_pod_dns_config(obj(spec, "dnsConfig"), policy, f"{field}.dnsConfig")
    causes += devices.validate_live_migration(field, spec, config)
    causes += devices.validate_mdev_ramfb(field, spec)
    causes += devices.validate_host_devices_gate(field, spec, config)
    causes += hostdevices.validate_grace_io_virtualization(field, spec, config)
    causes += devices.validate_sound(field, spec)
    causes += launchsecurity.validate_launch_security(field, spec, config)
    causes += devices.validate_vsock(field, spec, config)
    causes += devices.validate_persistent_reservation(field, spec, config)
    causes += devices.validate_downward_metrics(field, spec, config)
    causes += volumes.validate_virtiofs_filesystems(field, spec, config)
    causes += devices.validate_video(field, spec)
    causes += devices.validate_panic_devices(field, spec, config)
    causes += devices.validate_reboot_policy(field, spec, config)
    causes += memory.validate_reserved_overhead_memlock(field, spec, config)
    causes += volumes.validate_service_account_name(field, spec)
    return causes
