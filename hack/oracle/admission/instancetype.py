"""Instancetypes and preferences: references, conflicts, spread topologies, preference requirements, and
what an applied instancetype or preference hands to the later checks
(``apiserver/render/admission/instancetype.py``)."""

from __future__ import annotations

from hack.oracle.admission.base import (
    INV,
    JSON,
    LIVE_UPDATE_OFF,
    LIVE_UPDATE_ON,
    NF,
    add_disk,
    check,
    cpu,
    devices,
    domain,
    go_file,
    memory,
    resources,
    setp,
    sweep,
    tmeta,
    tspec,
    variant,
)


def _it(name: str, spec: JSON, cluster: bool = True) -> JSON:
    kind = "VirtualMachineClusterInstancetype" if cluster else "VirtualMachineInstancetype"
    meta: JSON = {"name": name} if cluster else {"name": name, "namespace": "default"}
    return {"apiVersion": "instancetype.kubevirt.io/v1beta1", "kind": kind, "metadata": meta, "spec": spec}


def _pref(name: str, spec: JSON, cluster: bool = True) -> JSON:
    kind = "VirtualMachineClusterPreference" if cluster else "VirtualMachinePreference"
    meta: JSON = {"name": name} if cluster else {"name": name, "namespace": "default"}
    return {"apiVersion": "instancetype.kubevirt.io/v1beta1", "kind": kind, "metadata": meta, "spec": spec}


def _use(vm: JSON, it: str | None, pref: str | None) -> None:
    vm["spec"].pop("instancetype", None)
    vm["spec"].pop("preference", None)
    if it:
        vm["spec"]["instancetype"] = {"kind": "VirtualMachineClusterInstancetype", "name": it}
        domain(vm).pop("resources", None)
        domain(vm).pop("memory", None)
        domain(vm).pop("cpu", None)
    if pref:
        vm["spec"]["preference"] = {"kind": "VirtualMachineClusterPreference", "name": pref}


_TOPOLOGIES = (
    "sockets",
    "cores",
    "threads",
    "spread",
    "any",
    "preferSockets",
    "preferCores",
    "preferThreads",
    "preferAny",
    None,
)
_IT_FULL: JSON = {
    "cpu": {
        "guest": 2,
        "dedicatedCPUPlacement": True,
        "isolateEmulatorThread": True,
        "model": "host-passthrough",
        "numa": {"guestMappingPassthrough": {}},
        "realtime": {},
    },
    "memory": {"guest": "2Gi", "hugepages": {"pageSize": "2Mi"}},
    "gpus": [{"name": "g", "deviceName": "nvidia.com/A"}],
    "hostDevices": [{"name": "h", "deviceName": "vendor.com/x"}],
    "ioThreadsPolicy": "auto",
    "launchSecurity": {"sev": {}},
    "annotations": {"a": "b"},
    "nodeSelector": {"k": "v"},
    "schedulerName": "s",
}
_PREFERENCES: list[JSON] = [
    {"devices": {"preferredDiskBus": "ide"}},
    {"devices": {"preferredDiskBus": "sata", "preferredCdromBus": "virtio", "preferredLunBus": "ide"}},
    {"devices": {"preferredInterfaceModel": "bogus"}},
    {"devices": {"preferredDiskDedicatedIoThread": True, "preferredDiskBus": "sata"}},
    {"devices": {"preferredInputBus": "ps2", "preferredInputType": "mouse"}},
    {"devices": {"preferredAutoattachInputDevice": True}},
    {"devices": {"preferredSoundModel": "bogus"}},
    {"devices": {"preferredDiskIO": "bogus", "preferredDiskCache": "bogus"}},
    {"devices": {"preferredBlockMultiQueue": True, "preferredNetworkInterfaceMultiQueue": True}},
    {"devices": {"preferredDiskBlockSize": {"custom": {"logical": 1000, "physical": 1000}}}},
    {"firmware": {"preferredUseSecureBoot": True}},
    {"firmware": {"preferredUseEfi": True, "preferredUseBios": True}},
    {
        "firmware": {"preferredUseSecureBoot": True, "preferredUseEfi": True},
        "features": {"preferredSmm": {"enabled": False}},
    },
    {"machine": {"preferredMachineType": "bogus"}},
    {"preferredTerminationGracePeriodSeconds": 5},
    {"preferredSubdomain": "Bad_Sub"},
    {"cpu": {"preferredCPUFeatures": [{"name": "x", "policy": "bogus"}]}},
    {"preferredArchitecture": "arm64"},
    {"clock": {"preferredClockOffset": {"utc": {}}}},
    {"volumes": {"preferredStorageClassName": "fast"}},
]
# An instancetype's spec lands in the VMI spec the later stages validate: each of these sets something a
# rule of ValidateVirtualMachineInstanceSpec (or live update) reads, alone and beside a preference.
_IT_APPLIED: list[tuple[str, JSON, tuple[JSON, ...]]] = [
    ("hugepages 3Mi", {"memory": {"guest": "1Gi", "hugepages": {"pageSize": "3Mi"}}}, ()),
    ("hugepages larger than guest", {"memory": {"guest": "1Gi", "hugepages": {"pageSize": "2Gi"}}}, ()),
    ("hugepages not a multiple", {"memory": {"guest": "1001Mi", "hugepages": {"pageSize": "2Mi"}}}, ()),
    ("guest 1Mi", {"memory": {"guest": "1Mi"}}, ()),
    ("guest 0", {"memory": {"guest": "0"}}, ()),
    ("maxGuest below guest", {"memory": {"guest": "2Gi", "maxGuest": "1Gi"}}, (LIVE_UPDATE_ON,)),
    ("maxGuest not aligned", {"memory": {"guest": "1Gi", "maxGuest": "3000Mi"}}, (LIVE_UPDATE_ON,)),
    ("maxGuest with guest 512Mi", {"memory": {"guest": "512Mi", "maxGuest": "4Gi"}}, (LIVE_UPDATE_ON,)),
    (
        "maxGuest with realtime",
        {"memory": {"guest": "2Gi", "maxGuest": "4Gi"}, "cpu": {"guest": 2, "realtime": {}}},
        (LIVE_UPDATE_ON,),
    ),
    ("maxSockets below sockets", {"cpu": {"guest": 8, "maxSockets": 2}}, (LIVE_UPDATE_ON,)),
    ("maxSockets 0", {"cpu": {"guest": 4, "maxSockets": 0}}, (LIVE_UPDATE_ON,)),
    ("cpu guest 0", {"cpu": {"guest": 0}}, ()),
    ("cpu guest 1000", {"cpu": {"guest": 1000}}, (LIVE_UPDATE_ON, LIVE_UPDATE_OFF)),
    ("dedicated without memory", {"cpu": {"guest": 2, "dedicatedCPUPlacement": True}}, ()),
    ("isolateEmulatorThread alone", {"cpu": {"guest": 2, "isolateEmulatorThread": True}}, ()),
    ("numa without dedicated", {"cpu": {"guest": 2, "numa": {"guestMappingPassthrough": {}}}}, ()),
    (
        "numa without hugepages",
        {"cpu": {"guest": 2, "dedicatedCPUPlacement": True, "numa": {"guestMappingPassthrough": {}}}},
        (),
    ),
    ("realtime without dedicated", {"cpu": {"guest": 2, "realtime": {"mask": "0"}}}, ()),
    (
        "realtime bad mask",
        {"cpu": {"guest": 2, "dedicatedCPUPlacement": True, "realtime": {"mask": "x-y"}}},
        (),
    ),
    (
        "model host-model with dedicated",
        {"cpu": {"guest": 2, "model": "host-model", "dedicatedCPUPlacement": True}},
        (),
    ),
    ("ioThreadsPolicy supplementalPool no count", {"ioThreadsPolicy": "supplementalPool"}, ()),
    (
        "ioThreadsPolicy supplementalPool count 0",
        {"ioThreadsPolicy": "supplementalPool", "ioThreads": {"supplementalPoolThreadCount": 0}},
        (),
    ),
    ("ioThreadsPolicy bogus", {"ioThreadsPolicy": "bogus"}, ()),
    ("launchSecurity sev without efi", {"launchSecurity": {"sev": {}}}, ()),
    ("launchSecurity empty", {"launchSecurity": {}}, ()),
    (
        "gpus duplicate names",
        {"gpus": [{"name": "g", "deviceName": "a"}, {"name": "g", "deviceName": "b"}]},
        (),
    ),
    ("gpus with a claim", {"gpus": [{"name": "g", "claimName": "c", "requestName": "r"}]}, ()),
    ("hostDevices without the gate", {"hostDevices": [{"name": "h", "deviceName": "vendor.com/x"}]}, ()),
    ("annotations with ignition data", {"annotations": {"kubevirt.io/ignitiondata": "{}"}}, ()),
    ("annotations with a sidecar hook", {"annotations": {"hooks.kubevirt.io/hookSidecars": "[]"}}, ()),
    ("nodeSelector bad key", {"nodeSelector": {"Bad Key!": "v"}}, ()),
    ("schedulerName", {"schedulerName": "my-scheduler"}, ()),
]
# A preference fills what the VM leaves unset; the rules then judge the VM with it.
_PREF_APPLIED: list[JSON] = [
    {"devices": {"preferredCdromBus": "virtio"}},
    {"devices": {"preferredDiskBus": "virtio", "preferredDiskDedicatedIoThread": True}},
    {"devices": {"preferredDiskBus": "sata", "preferredDiskDedicatedIoThread": True}},
    {"devices": {"preferredInterfaceModel": "e1000", "preferredInterfaceMasquerade": {}}},
    {"devices": {"preferredNetworkInterfaceMultiQueue": True}},
    {"devices": {"preferredUseVirtioTransitional": True, "preferredDiskBus": "scsi"}},
    {"devices": {"preferredVirtualGPUOptions": {"display": {"enabled": True, "ramFB": {"enabled": True}}}}},
    {"devices": {"preferredSoundModel": "ich9"}},
    {"devices": {"preferredAutoattachGraphicsDevice": False}},
    {"devices": {"preferredAutoattachGraphicsDevice": False, "preferredAutoattachSerialConsole": False}},
    {"devices": {"preferredAutoattachPodInterface": False}},
    {"devices": {"preferredTPM": {"persistent": True}}},
    {"features": {"preferredSmm": {"enabled": False}}, "firmware": {"preferredUseSecureBoot": True}},
    {"features": {"preferredHyperv": {"evmcs": {}}}},
    {"features": {"preferredHyperv": {"evmcs": {"enabled": True}, "vapic": {"enabled": False}}}},
    {"firmware": {"preferredEfi": {"secureBoot": True}, "preferredUseBios": True}},
    {"firmware": {"preferredUseBiosSerial": True}},
    {"cpu": {"preferredCPUTopology": "threads"}},
    {"cpu": {"preferredCPUTopology": "sockets"}, "requirements": {"cpu": {"guest": 3}}},
    {"preferredArchitecture": "s390x"},
    {"preferredArchitecture": "arm64", "firmware": {"preferredUseBios": True}},
    {"machine": {"preferredMachineType": "pc-i440fx-2.0"}},
    {
        "clock": {
            "preferredClockOffset": {"utc": {"offsetSeconds": 5}},
            "preferredTimer": {"hpet": {"present": False}},
        }
    },
    {"preferredTerminationGracePeriodSeconds": -1},
    {"preferredSubdomain": "a" * 70},
    {"annotations": {"kubevirt.io/ignitiondata": "{}"}},
    {"preferSpreadSocketToCoreRatio": 0, "cpu": {"preferredCPUTopology": "spread"}},
]


def variants() -> None:
    """The instancetype / preference stage (ApplyToVM, the preference requirements), then what it applies."""
    sweep(
        "instancetype",
        "instancetype=VirtualMachineClusterInstancetype c1.medium with template {}",
        [
            ("cpu.cores", 2),
            ("cpu.sockets", 1),
            ("cpu.threads", 1),
            ("memory.guest", "1Gi"),
            ("resources.requests.memory", "1Gi"),
            ("resources.limits.cpu", "1"),
            ("cpu.dedicatedCpuPlacement", True),
            ("cpu.model", "host-passthrough"),
            ("ioThreadsPolicy", "auto"),
        ],
        lambda vm, v: (
            vm["spec"].__setitem__(
                "instancetype", {"kind": "VirtualMachineClusterInstancetype", "name": "c1.medium"}
            ),
            setp(vm, "spec.template.spec.domain." + v[0], v[1]),
        ),
    )
    sweep(
        "instancetype",
        "instancetype ref={}",
        [
            {"name": "missing"},
            {"kind": "VirtualMachineInstancetype", "name": "c1.medium"},
            {"kind": "bogus", "name": "c1.medium"},
            {"name": ""},
            {"kind": "VirtualMachineClusterInstancetype", "name": "c1.medium", "revisionName": "nope"},
        ],
        lambda vm, v: vm["spec"].__setitem__("instancetype", v),
    )
    sweep(
        "instancetype",
        "preference ref={}",
        [
            {"name": "missing"},
            {"kind": "VirtualMachineClusterPreference", "name": "linux"},
            {"kind": "VirtualMachinePreference", "name": "linux"},
        ],
        lambda vm, v: vm["spec"].__setitem__("preference", v),
    )
    sweep(
        "instancetype",
        "preference requirements with template {}",
        [
            ("cpu.cores", 1),
            ("cpu.sockets", 2),
            ("cpu.threads", 1),
            ("memory.guest", "512Mi"),
            ("memory.guest", "2Gi"),
            ("resources.requests.memory", "512Mi"),
        ],
        lambda vm, v: (
            vm["spec"].pop("instancetype", None),
            vm["spec"].__setitem__("preference", {"kind": "VirtualMachinePreference", "name": "linux"}),
            domain(vm).pop("resources", None),
            domain(vm).pop("memory", None),
            domain(vm).pop("cpu", None),
            setp(vm, "spec.template.spec.domain." + v[0], v[1]),
        ),
    )
    # instancetypes and preferences of their own (objects given with the variant)
    for guest in (1, 2, 3, 4, 6, 8):
        for topology in ("spread", "preferSpread"):
            for opts in (
                None,
                {"across": "SocketsCores"},
                {"across": "SocketsCores", "ratio": 3},
                {"across": "CoresThreads"},
                {"across": "CoresThreads", "ratio": 4},
                {"across": "SocketsCoresThreads", "ratio": 2},
                {"across": "SocketsCoresThreads"},
            ):
                pref_cpu: JSON = {"preferredCPUTopology": topology}
                if opts is not None:
                    pref_cpu["spreadOptions"] = opts
                variant(
                    "instancetype",
                    f"spread guest={guest} {topology} {opts}",
                    lambda vm: _use(vm, "it-x", "pref-x"),
                    objects=(
                        _it("it-x", {"cpu": {"guest": guest}, "memory": {"guest": "1Gi"}}),
                        _pref("pref-x", {"cpu": pref_cpu}),
                    ),
                )
    for topology in _TOPOLOGIES:
        for cpu_members in (
            {"cores": 1},
            {"cores": 4, "sockets": 1, "threads": 1},
            {"sockets": 4},
            {"threads": 4, "cores": 1, "sockets": 1},
            {"sockets": 2, "cores": 2, "threads": 1},
            None,
        ):
            req_cpu: JSON = {"preferredCPUTopology": topology} if topology else {}
            variant(
                "instancetype",
                f"requirements cpu.guest=4 topology={topology} vm cpu={cpu_members}",
                lambda vm, c=cpu_members: (
                    _use(vm, None, "req-cpu"),
                    domain(vm).pop("cpu", None),
                    cpu(vm).update(c) if c is not None else None,
                ),
                objects=(_pref("req-cpu", {"cpu": req_cpu, "requirements": {"cpu": {"guest": 4}}}),),
            )
    for across in ("SocketsCores", "CoresThreads", "SocketsCoresThreads"):
        variant(
            "instancetype",
            f"requirements cpu.guest=8 spread across {across}, vm 2x2x1",
            lambda vm: (
                _use(vm, None, "req-spread"),
                domain(vm).pop("cpu", None),
                cpu(vm).update({"sockets": 2, "cores": 2, "threads": 1}),
            ),
            objects=(
                _pref(
                    "req-spread",
                    {
                        "cpu": {"preferredCPUTopology": "spread", "spreadOptions": {"across": across}},
                        "requirements": {"cpu": {"guest": 8}},
                    },
                ),
            ),
        )
    for it_guest in (1, 4):
        variant(
            "instancetype",
            f"requirements cpu.guest=2 with instancetype guest={it_guest}",
            lambda vm: _use(vm, "it-req", "pref-req"),
            objects=(
                _it("it-req", {"cpu": {"guest": it_guest}, "memory": {"guest": "1Gi"}}),
                _pref("pref-req", {"requirements": {"cpu": {"guest": 2}}}),
            ),
        )
    for mem in ("512Mi", "2Gi", "2048Mi", "1G", "2G"):
        variant(
            "instancetype",
            f"requirements memory.guest=2Gi with instancetype memory={mem}",
            lambda vm: _use(vm, "it-mem", "pref-mem"),
            objects=(
                _it("it-mem", {"cpu": {"guest": 1}, "memory": {"guest": mem}}),
                _pref("pref-mem", {"requirements": {"memory": {"guest": "2Gi"}}}),
            ),
        )
        variant(
            "instancetype",
            f"requirements memory.guest=2Gi with vm memory.guest={mem}",
            lambda vm, m=mem: (
                _use(vm, None, "pref-mem"),
                domain(vm).pop("memory", None),
                memory(vm).__setitem__("guest", m),
            ),
            objects=(_pref("pref-mem", {"requirements": {"memory": {"guest": "2Gi"}}}),),
        )
        variant(
            "instancetype",
            f"requirements memory.guest=2Gi with vm requests.memory={mem} only",
            lambda vm, m=mem: (
                _use(vm, None, "pref-mem"),
                domain(vm).pop("memory", None),
                domain(vm).pop("resources", None),
                resources(vm, "requests").__setitem__("memory", m),
            ),
            objects=(_pref("pref-mem", {"requirements": {"memory": {"guest": "2Gi"}}}),),
        )
    for arch in ("amd64", "arm64", "s390x", ""):
        for vm_arch in (None, "arm64", "amd64"):
            variant(
                "instancetype",
                f"requirements architecture={arch} vm architecture={vm_arch}",
                lambda vm, a=vm_arch: (
                    _use(vm, None, "pref-arch"),
                    tspec(vm).__setitem__("architecture", a) if a else tspec(vm).pop("architecture", None),
                ),
                objects=(_pref("pref-arch", {"requirements": {"architecture": arch}}),),
            )
    variant(
        "instancetype",
        "requirements cpu, memory and architecture all failing",
        lambda vm: (
            _use(vm, None, "pref-all"),
            domain(vm).pop("cpu", None),
            memory(vm).__setitem__("guest", "128Mi"),
        ),
        objects=(
            _pref(
                "pref-all",
                {
                    "requirements": {
                        "cpu": {"guest": 16},
                        "memory": {"guest": "64Gi"},
                        "architecture": "s390x",
                    }
                },
            ),
        ),
    )
    for member, value in (
        ("domain.cpu.cores", 2),
        ("domain.cpu.sockets", 2),
        ("domain.cpu.threads", 2),
        ("domain.cpu.model", "x"),
        ("domain.cpu.dedicatedCpuPlacement", True),
        ("domain.cpu.isolateEmulatorThread", True),
        ("domain.cpu.numa", {"guestMappingPassthrough": {}}),
        ("domain.cpu.realtime", {}),
        ("domain.memory.guest", "1Gi"),
        ("domain.memory.hugepages", {"pageSize": "1Gi"}),
        ("domain.resources.requests.memory", "1Gi"),
        ("domain.resources.limits.cpu", "1"),
        ("domain.devices.gpus", [{"name": "g2", "deviceName": "x"}]),
        ("domain.devices.hostDevices", [{"name": "h2", "deviceName": "x"}]),
        ("domain.ioThreadsPolicy", "shared"),
        ("domain.launchSecurity", {"sev": {}}),
        ("nodeSelector", {"a": "b"}),
        ("schedulerName", "x"),
        ("domain.cpu", {}),
        ("domain.memory", {}),
    ):
        variant(
            "instancetype",
            f"full instancetype, vm also sets {member}={value}",
            lambda vm, m=member, v=value: (_use(vm, "it-full", None), setp(vm, "spec.template.spec." + m, v)),
            objects=(_it("it-full", _IT_FULL),),
            gates=("WorkloadEncryptionSEV",),
        )
    variant(
        "instancetype",
        "full instancetype, vm sets cpu cores, memory guest and gpus",
        lambda vm: (
            _use(vm, "it-full", None),
            cpu(vm).update({"cores": 2, "sockets": 1}),
            memory(vm).__setitem__("guest", "1Gi"),
            devices(vm).__setitem__("gpus", []),
        ),
        objects=(_it("it-full", _IT_FULL),),
    )
    variant(
        "instancetype",
        "full instancetype, template annotation conflicts",
        lambda vm: (_use(vm, "it-full", None), tmeta(vm).__setitem__("annotations", {"a": "other"})),
        objects=(_it("it-full", _IT_FULL),),
    )
    for preference in _PREFERENCES:
        variant(
            "instancetype",
            f"preference {preference}",
            lambda vm: (
                _use(vm, None, "pref-dev"),
                add_disk(vm, "pd", {}, {"persistentVolumeClaim": {"claimName": "c"}}),
            ),
            objects=(_pref("pref-dev", preference),),
        )
    for label, extra, configs in _IT_APPLIED:
        spec: JSON = {"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}}
        for key, value in extra.items():
            spec[key] = {**spec[key], **value} if key in ("cpu", "memory") else value
        variant(
            "instancetype",
            f"instancetype applied: {label}",
            lambda vm: _use(vm, "it-applied", None),
            objects=(_it("it-applied", spec),),
            configs=configs,
            gates=("HostDevices", "ExperimentalIgnitionSupport", "Sidecar", "WorkloadEncryptionSEV"),
        )
        variant(
            "instancetype",
            f"namespaced instancetype applied with a preference: {label}",
            lambda vm: (
                _use(vm, "it-applied", "pref-applied"),
                vm["spec"]["instancetype"].update(kind="VirtualMachineInstancetype"),
                vm["spec"]["preference"].update(kind="VirtualMachinePreference"),
            ),
            objects=(
                _it("it-applied", spec, cluster=False),
                _pref(
                    "pref-applied",
                    {"cpu": {"preferredCPUTopology": "cores"}, "devices": {"preferredDiskBus": "sata"}},
                    cluster=False,
                ),
            ),
            configs=configs,
        )
    for preference in _PREF_APPLIED:
        for it_guest in (None, 3):
            variant(
                "instancetype",
                f"preference applied: {preference} instancetype guest={it_guest}",
                lambda vm, g=it_guest: (
                    _use(vm, "it-pa" if g else None, "pref-applied"),
                    add_disk(vm, "pc", {"cdrom": {}}, {"persistentVolumeClaim": {"claimName": "c"}}),
                    add_disk(vm, "pd", {}, {"persistentVolumeClaim": {"claimName": "d"}}),
                ),
                objects=(
                    _pref("pref-applied", preference),
                    _it("it-pa", {"cpu": {"guest": it_guest or 1}, "memory": {"guest": "1Gi"}}),
                ),
            )


def checks() -> None:
    go_file("pkg/instancetype", "instancetype")
    check(
        "instancetype.spread",
        "preference/validation CheckSpreadCPUTopology",
        INV,
        "vCPUs provided by the instance type are not divisible by",
    )
    check(
        "instancetype.conflict",
        "apply VMIApplier.ApplyToVMI (conflict.Conflicts)",
        INV,
        "conflicts with selected instance type",
    )
    # -- stage 5: preference requirements (instancetype/preference/requirements Check) ----------------------
    check(
        "requirements.cpu",
        "preference/requirements checkCPU",
        NF,
        "re:failure checking preference requirements: (insufficient CPU|no CPU)",
    )
    check(
        "requirements.memory",
        "preference/requirements checkMemory",
        NF,
        "failure checking preference requirements: insufficient Memory",
    )
    check(
        "requirements.arch",
        "preference/requirements checkArch",
        NF,
        "failure checking preference requirements: preference requires architecture",
    )
