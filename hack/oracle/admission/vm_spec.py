"""The VM level: template, dataVolumeTemplates, running / runStrategy
(``apiserver/render/admission/vm_spec.py``)."""

from __future__ import annotations

from typing import Any

from hack.oracle.admission.base import (
    INV,
    JSON,
    REQ,
    VMS_ADMITTER,
    add_disk,
    append,
    check,
    go_file,
    sweep,
    variant,
)

_DVT_FILE = "pkg/storage/admitters/data-volume-template.go"


def add_dvt(vm: JSON, dvt: Any, ref: bool = True) -> None:
    """A dataVolumeTemplate and (``ref``) a disk whose dataVolume volume names it."""
    append(vm["spec"], "dataVolumeTemplates", dvt)
    if ref and isinstance(dvt, dict):
        name = (dvt.get("metadata") or {}).get("name", "")
        add_disk(vm, "dvtref", {}, {"dataVolume": {"name": name}})


# A storage request every template may take (the formatting and decoding variants use it too).
STORAGE = {"resources": {"requests": {"storage": "1Gi"}}}
_DVTS: list[Any] = [
    {"metadata": {"name": "t1"}, "spec": {"storage": STORAGE, "source": {"blank": {}}}},
    {"metadata": {"name": ""}, "spec": {"storage": STORAGE, "source": {"blank": {}}}},
    {"metadata": {}, "spec": {"storage": STORAGE, "source": {"blank": {}}}},
    {"metadata": {"name": "t1"}, "spec": {"source": {"blank": {}}}},
    {
        "metadata": {"name": "t1"},
        "spec": {"pvc": {"accessModes": ["ReadWriteOnce"]}, "storage": STORAGE, "source": {"blank": {}}},
    },
    {
        "metadata": {"name": "t1"},
        "spec": {
            "pvc": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            "source": {"blank": {}},
        },
    },
    {
        "metadata": {"name": "t1"},
        "spec": {
            "storage": {**STORAGE, "dataSource": {"kind": "PersistentVolumeClaim", "name": "x"}},
            "source": {"blank": {}},
        },
    },
    {
        "metadata": {"name": "t1"},
        "spec": {"storage": {**STORAGE, "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "x"}}},
    },
    {"metadata": {"name": "t1"}, "spec": {"storage": STORAGE}},
    {"metadata": {"name": "t1"}, "spec": {"storage": STORAGE, "source": {}}},
    {
        "metadata": {"name": "t1"},
        "spec": {"storage": STORAGE, "source": {"blank": {}, "http": {"url": "http://x"}}},
    },
    {
        "metadata": {"name": "t1"},
        "spec": {"storage": STORAGE, "sourceRef": {"kind": "DataSource", "name": "ds"}},
    },
    {
        "metadata": {"name": "t1"},
        "spec": {
            "storage": STORAGE,
            "sourceRef": {"kind": "DataSource", "name": "ds"},
            "source": {"blank": {}},
        },
    },
    {
        "metadata": {"name": "t1", "namespace": "other"},
        "spec": {"storage": STORAGE, "source": {"blank": {}}},
    },
    {
        "metadata": {"name": "t1", "namespace": "default"},
        "spec": {"storage": STORAGE, "source": {"blank": {}}},
    },
    {
        "metadata": {"name": "t1"},
        "spec": {"storage": STORAGE, "source": {"pvc": {"name": "p", "namespace": "n"}}},
    },
    {
        "metadata": {"name": "t1"},
        "spec": {
            "storage": STORAGE,
            "source": {"upload": {}, "imageio": {"url": "u", "secretRef": "s", "certConfigMap": "c"}},
        },
    },
    {
        "metadata": {"name": "t1"},
        "spec": {"storage": STORAGE, "source": {"snapshot": {"name": "s", "namespace": "n"}}},
    },
]


def set_run(vm: JSON, running: Any, strategy: Any) -> None:
    """Set ``running`` and ``runStrategy`` (``"-"``: leave the member out)."""
    vm["spec"].pop("running", None)
    vm["spec"].pop("runStrategy", None)
    if running != "-":
        vm["spec"]["running"] = running
    if strategy != "-":
        vm["spec"]["runStrategy"] = strategy


def data_volume_template_variants() -> None:
    """validateDataVolume, ValidateDataVolumeTemplate, the storage admitter's namespace check."""
    sweep("datavolumetemplates", "dataVolumeTemplate={}", _DVTS, lambda vm, v: add_dvt(vm, v))
    sweep(
        "datavolumetemplates",
        "dataVolumeTemplate={} unreferenced",
        _DVTS[:3],
        lambda vm, v: add_dvt(vm, v, ref=False),
    )
    variant(
        "datavolumetemplates",
        "dataVolumeTemplate referenced by a PVC volume",
        lambda vm: (
            add_dvt(vm, _DVTS[0], ref=False),
            add_disk(vm, "pvcref", {}, {"persistentVolumeClaim": {"claimName": "t1"}}),
        ),
    )
    variant(
        "datavolumetemplates",
        "two templates in another namespace, one unreferenced",
        lambda vm: (
            add_dvt(vm, _DVTS[13]),
            add_dvt(vm, {**_DVTS[13], "metadata": {"name": "t2", "namespace": "x"}}, ref=False),
        ),
    )
    variant(
        "datavolumetemplates",
        "template namespace other, VM without namespace",
        lambda vm: (vm["metadata"].pop("namespace", None), add_dvt(vm, _DVTS[13])),
    )
    variant(
        "datavolumetemplates",
        "template namespace default, VM namespace prod",
        lambda vm: (vm["metadata"].__setitem__("namespace", "prod"), add_dvt(vm, _DVTS[14])),
    )


def run_strategy_variants() -> None:
    """validateRunStrategy."""
    for running in ("-", True, False, None):
        for strategy in (
            "-",
            "Always",
            "Halted",
            "Manual",
            "RerunOnFailure",
            "Once",
            "WaitAsReceiver",
            "always",
            "",
            None,
            "Bogus",
        ):
            variant(
                "runstrategy",
                f"running={running} runStrategy={strategy}",
                lambda vm, r=running, s=strategy: set_run(vm, r, s),
                gates=("DecentralizedLiveMigration",) if strategy == "WaitAsReceiver" else (),
            )
    variant(
        "runstrategy",
        "WaitAsReceiver with gate disabled explicitly",
        lambda vm: set_run(vm, "-", "WaitAsReceiver"),
        configs=({"developerConfiguration": {"disabledFeatureGates": ["DecentralizedLiveMigration"]}},),
    )


def template_check() -> None:
    go_file(VMS_ADMITTER, "spec")
    check("vm.template", "ValidateVirtualMachineSpec", REQ, "missing virtual machine template.")


def data_volume_template_checks() -> None:
    go_file(_DVT_FILE, "datavolumetemplates")
    check(
        "dvt.name", "validateDataVolume", REQ, "'name' field must not be empty for DataVolumeTemplate entry"
    )
    check("dvt.no-storage", "validateDataVolume", INV, "Missing Data volume PVC or Storage")
    check("dvt.both-storage", "validateDataVolume", INV, "Duplicate storage definition")
    check(
        "dvt.external-and-source",
        "validateDataVolume",
        INV,
        "External population is incompatible with Source and SourceRef",
    )
    check(
        "dvt.no-source",
        "validateDataVolume",
        INV,
        "Data volume should have either Source, SourceRef, or be externally populated",
    )
    check("dvt.source-none", "validateNumberOfSources", INV, "Missing dataVolume valid source")
    check("dvt.source-many", "validateNumberOfSources", INV, "Multiple dataVolume sources")
    check(
        "dvt.unreferenced",
        "ValidateDataVolumeTemplate",
        REQ,
        "must be referenced in the VMI template's 'volumes' list",
    )


def run_strategy_checks() -> None:
    go_file(VMS_ADMITTER, "runstrategy")
    check("run.both", "validateRunStrategy", INV, "Running and RunStrategy are mutually exclusive")
    check("run.none", "validateRunStrategy", INV, "RunStrategy must be specified")
    check(
        "run.wait-as-receiver",
        "validateRunStrategy",
        INV,
        "DecentralizedLiveMigration feature gate is not enabled",
        gate="DecentralizedLiveMigration",
    )
    check("run.invalid", "validateRunStrategy", INV, "Invalid RunStrategy (")


def namespace_check() -> None:
    """The storage admitter's (stage 8 of VMsAdmitter.Admit)."""
    go_file(_DVT_FILE, "datavolumetemplates")
    check(
        "dvt.namespace",
        "Admitter.validateVirtualMachineDataVolumeTemplateNamespace",
        INV,
        "Embedded DataVolume namespace",
    )
