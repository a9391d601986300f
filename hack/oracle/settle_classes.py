#!/usr/bin/env python3
"""Issue 36's classes of the change preview against KubeVirt's own VM controller, on generated inputs.

Four classes, each a few hundred running VMs and a change (their VMIs made by KubeVirt's own
``startVMI`` and VMI webhook, the ``expand-launcher`` oracle, as hack/oracle/restart_corpus.py makes
them):

* ``null-empty``: nodeSelector, affinity, tolerations set at start, then removed, emptied or changed
  (and the same through an instancetype's nodeSelector);
* ``migration``: ``updateVolumesStrategy: Migration`` with PVC and DataVolume claims changed, the
  destination and source claims there or not, RWO and RWX, filesystems, shareable and LUN disks, a VMI
  that is not storage-migratable, a migration already under way (reverted or changed again);
* ``hotplug``: interfaces hot-plugged and unplugged into VMs with and without a preference that sets
  the interface model;
* ``mix``: the families of the corpus (instancetype and preference switches, revision upgrades, CPU and
  memory, volumes, interfaces, firmware, stale conditions, scheduling).

Every input goes to ``expand-restart`` (one sync pass, compared with ``decide``) and to
``expand-settle`` (the passes until the VM settles, compared with ``decide(settled=True)``), and the
counts of equal and differing answers are printed per class:

    .venv/bin/python -m hack.oracle.settle_classes [--seed N] [--per-class N] [--show N] [--write]

``--write`` records the cases and both answers (the members compared) under
tests/render/vmcontroller/settle/ (one gzipped JSON-lines file per class), which
tests/render/vmcontroller/test_settle.py replays without the oracles.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hack.oracle import restart_corpus as G

JSON = dict[str, Any]
RECORDED = G.REPO / "tests" / "render" / "vmcontroller" / "settle"
SETTLE_ENV = "KUBEVIRT_EXPAND_SETTLE_ORACLE"
COMPARED = (
    "restartRequired",
    "message",
    "outcome",
    "liveUpdates",
    "vmPatches",
    "syncErrorReason",
    "syncError",
)
NOW = "<now>"

AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
        }
    }
}
POD_AFFINITY = {
    "podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}
        ]
    }
}
TOLERATIONS = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
SCHEDULING: dict[str, list[Any]] = {
    "nodeSelector": [{"zone": "a"}, {"zone": "b", "disk": "ssd"}],
    "affinity": [AFFINITY, POD_AFFINITY],
    "tolerations": [TOLERATIONS, [{"key": "x", "operator": "Equal", "value": "y"}]],
}


def _t(vm: JSON) -> JSON:
    return vm["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def _d(vm: JSON) -> JSON:
    return _t(vm)["domain"]  # type: ignore[no-any-return]


def _strategy(rng: random.Random) -> str | None:
    return rng.choice([G.LU, G.LU, G.LU, G.ST, None])


# --- null-empty ----------------------------------------------------------------------------------------


def cls_null_empty(rng: random.Random, count: int) -> Iterator[G.Case]:
    for i in range(count):
        start = G.new_vm("vm-null", G.base_tspec(memory="2Gi"))
        objects: list[JSON] = []
        with_instancetype = rng.random() < 0.3
        # the VM webhook refuses a template nodeSelector beside an instancetype's
        fields = [f for f in SCHEDULING if not (with_instancetype and f == "nodeSelector")]
        field = rng.choice(fields)
        if with_instancetype:
            # an instancetype that sets (or empties) the node selector
            selector = rng.choice([{"pool": "big"}, {}])
            it = G.instancetype("u1.large", nodeSelector=selector)
            G.with_refs(start, it, None, objects)
            objects.append(it)
            _d(start).pop("memory")
        initial = rng.choice(SCHEDULING[field])
        _t(start)[field] = copy.deepcopy(initial)
        others = [f for f in fields if f != field and rng.random() < 0.3]
        for other in others:
            _t(start)[other] = copy.deepcopy(rng.choice(SCHEDULING[other]))
        proposed = copy.deepcopy(start)
        how = rng.choice(["removed", "emptied", "emptied", "changed", "all emptied"])
        if how == "removed":
            del _t(proposed)[field]
        elif how == "emptied":
            _t(proposed)[field] = {} if isinstance(initial, dict) else []
        elif how == "changed":
            _t(proposed)[field] = copy.deepcopy(rng.choice(SCHEDULING[field]))
        else:
            for member in [field, *others]:
                _t(proposed)[member] = {} if isinstance(_t(start)[member], dict) else []
        migrating = rng.random() < 0.1
        status = {"migrationState": {"startTimestamp": "2024-01-01T00:00:00Z"}} if migrating else {}
        yield G.Case(
            "null-empty",
            f"#{i} {field} {how}{' with instancetype' if objects else ''}",
            start,
            proposed,
            objects,
            G.kubevirt(_strategy(rng)),
            vmi_status=status,
        )


# --- migration -----------------------------------------------------------------------------------------


def pvc(
    name: str, *, modes: tuple[str, ...] = ("ReadWriteOnce",), block: bool = False, populated: bool = False
) -> JSON:
    out: JSON = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": G.NS},
        "spec": {
            "accessModes": list(modes),
            "volumeMode": "Block" if block else "Filesystem",
            "resources": {"requests": {"storage": "10Gi"}},
        },
        "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}},
    }
    if populated:
        out["spec"]["dataSourceRef"] = {
            "apiGroup": "cdi.kubevirt.io",
            "kind": "VolumeImportSource",
            "name": name,
        }
    return out


def data_volume(name: str, phase: str) -> JSON:
    return {
        "apiVersion": "cdi.kubevirt.io/v1beta1",
        "kind": "DataVolume",
        "metadata": {"name": name, "namespace": G.NS},
        "spec": {"storage": {"resources": {"requests": {"storage": "10Gi"}}}},
        "status": {"phase": phase},
    }


def _source(kind: str, claim: str) -> JSON:
    return (
        {"dataVolume": {"name": claim}} if kind == "dv" else {"persistentVolumeClaim": {"claimName": claim}}
    )


def cls_migration(rng: random.Random, count: int) -> Iterator[G.Case]:
    for i in range(count):
        start = G.new_vm("vm-mig", G.base_tspec(memory="2Gi"))
        objects: list[JSON] = []
        n = rng.choice([1, 1, 2, 3])
        names = [f"vol{k}" for k in range(n)]
        kinds = [rng.choice(["pvc", "pvc", "dv"]) for _ in names]
        rwx = rng.random() < 0.3
        block = rng.random() < 0.3
        for name, kind in zip(names, kinds, strict=True):
            _t(start)["volumes"].append({"name": name, **_source(kind, f"{name}-old")})
            device = rng.choices(["disk", "lun", "shareable", "fs"], weights=[8, 1, 1, 1])[0]
            if device == "fs":
                _d(start)["devices"].setdefault("filesystems", []).append({"name": name, "virtiofs": {}})
            elif device == "lun":
                _d(start)["devices"]["disks"].append({"name": name, "lun": {}})
            else:
                disk: JSON = {"name": name, "disk": {"bus": "virtio"}}
                if device == "shareable":
                    disk["shareable"] = True
                    disk["cache"] = "none"
                _d(start)["devices"]["disks"].append(disk)
            modes = ("ReadWriteMany",) if rwx else ("ReadWriteOnce",)
            if rng.random() < 0.9:
                objects.append(pvc(f"{name}-old", modes=modes, block=block))
        proposed = copy.deepcopy(start)
        proposed["spec"]["updateVolumesStrategy"] = rng.choice(["Migration"] * 8 + ["Replacement", "Bogus"])
        changed = [name for name in names if rng.random() < 0.7] or names[:1]
        for name, kind in zip(names, kinds, strict=True):
            if name not in changed:
                continue
            new_kind = kind if rng.random() < 0.8 else ("dv" if kind == "pvc" else "pvc")
            claim = f"{name}-new"
            for vol in _t(proposed)["volumes"]:
                if vol["name"] == name:
                    vol.pop("dataVolume", None)
                    vol.pop("persistentVolumeClaim", None)
                    vol.update(_source(new_kind, claim))
            roll = rng.random()
            if new_kind == "dv":
                if roll < 0.85:
                    phase = rng.choice(["Succeeded", "ImportInProgress"])
                    objects.append(data_volume(claim, phase))
                    # the DataVolume's PVC: there or not, populated or not
                    with_pvc = (phase != "Succeeded" or rng.random() < 0.5) and rng.random() < 0.85
                    if with_pvc:
                        modes = ("ReadWriteMany",) if rwx else ("ReadWriteOnce",)
                        objects.append(pvc(claim, modes=modes, populated=rng.random() < 0.6))
            elif roll < 0.85:
                objects.append(
                    pvc(claim, modes=("ReadWriteMany",) if rwx else ("ReadWriteOnce",), block=block)
                )
        if rng.random() < 0.15:
            # another change beside the volumes
            _t(proposed)["hostname"] = "other"
        conds: list[JSON] = []
        status: JSON = {}
        roll = rng.random()
        if roll < 0.1:
            conds.append({"type": "StorageLiveMigratable", "status": "False", "message": "not this time"})
        elif roll < 0.25:
            # a volume migration already under way: reverted to the old claims, or changed again
            conds.append({"type": "VolumesChange", "status": "True"})
            reverted = rng.random() < 0.5
            status["migratedVolumes"] = [
                {
                    "volumeName": name,
                    "sourcePVCInfo": {"claimName": f"{name}-new" if reverted else f"{name}-older"},
                    "destinationPVCInfo": {"claimName": f"{name}-old"},
                }
                for name in changed
            ]
        if rng.random() < 0.4:
            status["volumeStatus"] = [
                {
                    "name": name,
                    "target": "",
                    "persistentVolumeClaimInfo": {
                        "claimName": f"{name}-old",
                        "accessModes": ["ReadWriteMany"] if rwx else ["ReadWriteOnce"],
                    },
                }
                for name in names
            ]
        yield G.Case(
            "migration",
            f"#{i} {n} volumes ({','.join(kinds)}), {len(changed)} changed, {proposed['spec']['updateVolumesStrategy']}",
            start,
            proposed,
            objects,
            G.kubevirt(_strategy(rng)),
            migratable=rng.random() < 0.85,
            vmi_conditions=conds,
            vmi_status=status,
        )


# --- hotplug -------------------------------------------------------------------------------------------

MODEL_PREFERENCES: dict[str, JSON] = {
    "p-virtio": {"devices": {"preferredInterfaceModel": "virtio"}},
    "p-e1000e": {"devices": {"preferredInterfaceModel": "e1000e"}},
    "p-sata": {"devices": {"preferredDiskBus": "sata"}},
    "p-cores": {"cpu": {"preferredCPUTopology": "cores"}},
}


def cls_hotplug(rng: random.Random, count: int) -> Iterator[G.Case]:
    for i in range(count):
        start = G.new_vm("vm-hp", G.base_tspec(memory="2Gi"))
        objects: list[JSON] = []
        pname = rng.choice([*MODEL_PREFERENCES, None, None])
        it = G.instancetype("u1.medium") if rng.random() < 0.3 else None
        pref = (
            G.preference(pname, spec=MODEL_PREFERENCES[pname], cluster=rng.random() < 0.7) if pname else None
        )
        G.with_refs(start, it, pref, objects)
        objects += [o for o in (it, pref) if o is not None]
        if it is not None:
            _d(start).pop("memory")
        existing = rng.random() < 0.4
        if existing:
            _d(start)["devices"]["interfaces"].append({"name": "sec0", "bridge": {}})
            _t(start)["networks"].append({"name": "sec0", "multus": {"networkName": "nad-0"}})
        proposed = copy.deepcopy(start)
        what = rng.choice(["bridge", "bridge", "sriov", "model set", "two", "unplug", "masquerade"])
        if what == "unplug" and existing:
            _d(proposed)["devices"]["interfaces"][-1]["state"] = "absent"
        else:
            binding = "sriov" if what == "sriov" else "masquerade" if what == "masquerade" else "bridge"
            iface: JSON = {"name": "sec1", binding: {}}
            if what == "model set":
                iface["model"] = rng.choice(["virtio", "e1000e"])
            _d(proposed)["devices"]["interfaces"].append(iface)
            _t(proposed)["networks"].append({"name": "sec1", "multus": {"networkName": "nad-1"}})
            if what == "two":
                _d(proposed)["devices"]["interfaces"].append({"name": "sec2", "bridge": {}})
                _t(proposed)["networks"].append({"name": "sec2", "multus": {"networkName": "nad-2"}})
        statuses = [{"name": "default", "podInterfaceName": "eth0"}]
        if existing:
            statuses.append({"name": "sec0", "podInterfaceName": rng.choice(["pod1234abcd", "net1"])})
        yield G.Case(
            "hotplug",
            f"#{i} {what} (preference {pname}{', instancetype' if it else ''}, existing={existing})",
            start,
            proposed,
            objects,
            G.kubevirt(_strategy(rng)),
            migratable=rng.random() < 0.8,
            vmi_status={"interfaces": statuses},
        )


def cls_mix(rng: random.Random, count: int) -> Iterator[G.Case]:
    cases = [c for fam in G.FAMILIES.values() for c in fam(rng)]
    for case in rng.sample(cases, min(count, len(cases))):
        case.family = "mix"
        yield case


CLASSES: dict[str, Callable[[random.Random, int], Iterator[G.Case]]] = {
    "null-empty": cls_null_empty,
    "migration": cls_migration,
    "hotplug": cls_hotplug,
    "mix": cls_mix,
}


# --- running and comparing -----------------------------------------------------------------------------


def _mask_times(value: Any) -> Any:
    """A VMI condition's ``lastTransitionTime`` is the controller's clock (``metav1.Now()``): compared as
    present or not."""
    if isinstance(value, dict):
        out = {k: _mask_times(v) for k, v in value.items()}
        if out.get("lastTransitionTime") is not None and "type" in out:
            out["lastTransitionTime"] = NOW
        return out
    if isinstance(value, list):
        return [_mask_times(v) for v in value]
    return value


def comparable(answer: JSON) -> JSON:
    """The members compared, of an oracle's answer or ours in the oracle's shape."""
    out = {k: answer.get(k) for k in COMPARED}
    out["liveUpdates"] = _mask_times(out["liveUpdates"] or {})
    out["vmPatches"] = out["vmPatches"] or {}
    out["volumeUpdateState"] = (answer.get("vmStatus") or {}).get("volumeUpdateState")
    return out


def ours(inp: JSON, *, settled: bool) -> JSON:
    from apiserver.render.objects import ObjectIndex
    from apiserver.render.vmcontroller.preview import decide, oracle_answer

    result = decide(
        inp["vm"],
        ObjectIndex(inp.get("objects") or ()),
        vmi=inp.get("vmi"),
        start_vm=inp.get("startVM"),
        kubevirt=inp.get("kubevirt"),
        settled=settled,
    )
    return oracle_answer(result)


def differs(record: JSON, *, settled: bool) -> tuple[JSON, JSON] | None:
    """None when the engine answers as KubeVirt did (``record["settled"]`` or ``record["pass"]``)."""
    theirs = comparable(record["settled" if settled else "pass"])
    mine = comparable(ours(record["input"], settled=settled))
    if not settled:
        theirs.pop("volumeUpdateState")
        mine.pop("volumeUpdateState")
    return None if theirs == mine else (theirs, mine)


def _launcher_input(case: G.Case) -> JSON:
    """The start VM for ``expand-launcher``, which reads no DataVolumes (it takes them as Succeeded)."""
    inp = case.launcher_input()
    inp["objects"] = [o for o in inp["objects"] if o.get("kind") != "DataVolume"]
    return inp


def build(
    restart: Path, settle: Path, launcher: Path, *, seed: int, per_class: int
) -> tuple[dict[str, list[JSON]], list[str]]:
    """Every class's records ``{"name", "input", "pass", "settled"}`` and the inputs skipped, with why."""
    rng = random.Random(seed)
    cases = [c for make in CLASSES.values() for c in make(rng, per_class)]
    ready, skipped = G.restart_inputs(launcher, cases, _launcher_input)
    inputs = [inp for _, inp in ready]
    passes = G.run_oracle(restart, inputs)
    settled = G.run_oracle(settle, inputs)
    classes: dict[str, list[JSON]] = {name: [] for name in CLASSES}
    for (case, inp), one, many in zip(ready, passes, settled, strict=True):
        if "restartRequired" not in one or "restartRequired" not in many:
            skipped.append(f"{case.family}: {case.name}: {one if 'restartRequired' not in one else many}")
            continue
        classes[case.family].append({"name": case.name, "input": inp, "pass": one, "settled": many})
    return classes, skipped


def tally(classes: dict[str, list[JSON]]) -> dict[str, dict[str, Any]]:
    """Per class: cases, and equal/differ for one pass and for the settled state (with the names)."""
    out: dict[str, dict[str, Any]] = {}
    for name, records in classes.items():
        row: dict[str, Any] = {"cases": len(records)}
        for mode, settled in (("pass", False), ("settled", True)):
            bad = [r["name"] for r in records if differs(r, settled=settled) is not None]
            row[mode] = {"equal": len(records) - len(bad), "differ": len(bad), "names": bad}
        out[name] = row
    return out


def _kept(answer: JSON) -> JSON:
    """An oracle's answer cut to what is compared (and the passes it took)."""
    out = {k: answer[k] for k in COMPARED if k in answer}
    state = (answer.get("vmStatus") or {}).get("volumeUpdateState")
    if state is not None:
        out["vmStatus"] = {"volumeUpdateState": state}
    if isinstance(answer.get("passes"), list):
        out["passes"] = len(answer["passes"])
    return out


def write(classes: dict[str, list[JSON]]) -> None:
    RECORDED.mkdir(parents=True, exist_ok=True)
    for name, records in classes.items():
        kept = [{**r, "pass": _kept(r["pass"]), "settled": _kept(r["settled"])} for r in records]
        text = "".join(json.dumps(r, separators=(",", ":"), sort_keys=True) + "\n" for r in kept)
        with gzip.GzipFile(RECORDED / f"{name}.jsonl.gz", "wb", mtime=0) as out:
            out.write(text.encode())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--per-class", type=int, default=150)
    parser.add_argument("--show", type=int, default=2, help="differences shown per class and mode")
    parser.add_argument("--write", action="store_true", help=f"record the cases under {RECORDED}")
    args = parser.parse_args(argv)
    restart = G.find_binary(G.RESTART_ENV, "expand-restart")
    settle = G.find_binary(SETTLE_ENV, "expand-settle")
    launcher = G.find_binary(G.LAUNCHER_ENV, "expand-launcher")
    if restart is None or settle is None or launcher is None:
        print(
            "expand-restart, expand-settle and expand-launcher are needed (../shared/oracle)", file=sys.stderr
        )
        return 2
    classes, skipped = build(restart, settle, launcher, seed=args.seed, per_class=args.per_class)
    for line in skipped:
        print("skipped", line, file=sys.stderr)
    if args.write:
        write(classes)
        print(f"{sum(len(r) for r in classes.values())} cases written to {RECORDED}")
    failed = False
    for name, row in tally(classes).items():
        one, many = row["pass"], row["settled"]
        print(
            f"{name}: {row['cases']} cases; one pass: {one['equal']} equal, {one['differ']} differ;"
            f" settled: {many['equal']} equal, {many['differ']} differ"
        )
        for mode, settled in (("pass", False), ("settled", True)):
            for shown in row[mode]["names"][: args.show]:
                record = next(r for r in classes[name] if r["name"] == shown)
                pair = differs(record, settled=settled)
                print(f"  {mode}: {shown}: {json.dumps(pair)[:1500]}")
        failed = failed or bool(one["differ"] or many["differ"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
