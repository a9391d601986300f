#!/usr/bin/env python3
"""Differential test: the same inputs through KubeVirt's own expand (the oracle) and through ours.

    .venv/bin/python -m hack.oracle.diff_expand [--composed N] [--mutated N] [--corpus] [--seed S]
                                         [--oracle PATH] [--save DIR] [--replay FILE]

Inputs come from three places: every golden case as it is (``--corpus``); golden inputs mutated at
random (``--mutated``: members dropped, values changed within their JSON type, quantities respelled,
object members in another case, kinds spelled otherwise, configurations broken); and inputs composed
from scratch from the Go type graph (``--composed``: instancetypes and preferences with any of their
fields, matchers in many spellings, revisions, VMs that conflict or not, KubeVirt configurations).
Each goes to ``expand-oracle`` (../shared/oracle, KubeVirt at the commit the golden cases match) and
to :func:`apiserver.expand` at ``field_validation="Ignore"`` (what KubeVirt's decoder lets through).

Answers are compared as the conformance tests compare them: the expanded VM (value and member
order), or the error (conflict paths, exact message or prefix). Counts go by outcome; a difference
is printed with its input's source and, with ``--save DIR``, written to DIR/<category>.jsonl (inputs
one per line, ready for ``--replay`` or for the oracle itself). Exit 1 when any difference is not one
of the known ones below.

Known differences, counted apart and not failures:
* ``go-panic``: KubeVirt panics (nil template, spread ratio 0), we answer 422;
* ``harness``: where the oracle's fake clients differ from a real cluster (see the oracle README): a
  matcher with an empty name; an object or CR that no cluster could hold (a type error), which the
  oracle refuses up front while our expansion never reads it;
* ``go-input-error``: KubeVirt's decoder refuses the input (a type error); we refuse it too;
* ``handler validation``: a body that is not a VirtualMachine (another kind, no spec), which
  virt-api's expand-vm-spec handler refuses before expanding (the oracle runs expand alone);
* ``legacy revision``: a ControllerRevision in a pre-v1beta1 format, which KubeVirt v1.7+ refuses
  and we decode as v1.6 did (deliberately; the golden cases' legacy area);
* ``invalid name``: a reference whose name (or namespace) no object can have, which we refuse with a
  422 on its field and apimachinery's validation text before anything is read (docs/security.md),
  where KubeVirt asks the API server and answers not found.

VirtualMachineInstancePresets are left out of every input (expand does not read them; the oracle
does not take them).

Not for CI (the oracle needs KubeVirt's source and a Go build); without the binary the script says so
and exits 0.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from apiserver import ExpandError, expand
from apiserver.render.golang.gojson.types import INT_RANGES, STRUCTS, resolve_root
from apiserver.render.kubernetes.fieldvalidation import FieldValidationError
from tests.support.conformance import case_files, error_matches, load
from tests.support.oracle import find_oracle, where

REPO = Path(__file__).resolve().parents[2]


JSON = dict[str, Any]
IT = "instancetype.kubevirt.io/v1beta1"
NAMESPACE = "default"

# --- values --------------------------------------------------------------------------------------

# Strings by the Go type that holds them (enums), then by member name; the values KubeVirt knows,
# near misses, and nonsense.
ENUMS: dict[str, list[str]] = {
    "v1.DiskBus": ["virtio", "sata", "scsi", "usb", "ide", "Virtio", "bogus"],
    "v1.InputBus": ["usb", "virtio", "ps2", "bogus"],
    "v1.InputType": ["tablet", "keyboard", "mouse", "bogus"],
    "v1.IOThreadsPolicy": ["shared", "auto", "supplementalPool", "dedicated"],
    "v1.EvictionStrategy": ["None", "LiveMigrate", "LiveMigrateIfPossible", "External", "bogus"],
    "v1.PullPolicy": ["Always", "Never", "IfNotPresent", "Bogus", "always"],
    "v1.DriverCache": ["none", "writethrough", "writeback"],
    "v1.DriverIO": ["native", "threads"],
    "v1.PanicDeviceModel": ["hyperv", "isa", "pvpanic"],
    "v1.VirtualMachineRunStrategy": ["Always", "Halted", "Manual", "RerunOnFailure", "Once"],
    "v1beta1.PreferredCPUTopology": [
        "sockets",
        "cores",
        "threads",
        "spread",
        "any",
        "preferSockets",
        "preferCores",
        "preferThreads",
        "preferSpread",
        "preferAny",
        "Sockets",
        "bogus",
    ],
    "v1beta1.SpreadAcross": ["SocketsCores", "CoresThreads", "SocketsCoresThreads", "socketscores", "bogus"],
    "v1.ClockOffsetTimezone": ["UTC", "Europe/Berlin"],
}
BY_NAME: dict[str, list[str]] = {
    "architecture": ["amd64", "arm64", "s390x", "ppc64le", ""],
    "preferredArchitecture": ["amd64", "arm64", "s390x", "ppc64le"],
    "defaultArchitecture": ["amd64", "arm64", "s390x"],
    "machineType": ["q35", "pc", "pc-q35-rhel9.2.0", "virt", "s390-ccw-virtio", ""],
    "preferredMachineType": ["q35", "pc", "pc-q35-rhel9.2.0", "virt"],
    "type": ["q35", "pc", "virtio", "tablet"],
    "model": ["host-passthrough", "host-model", "Haswell", "virtio", "e1000", ""],
    "preferredInterfaceModel": ["virtio", "e1000", "e1000e", "rtl8139"],
    "preferredSoundModel": ["ich9", "ac97"],
    "defaultNetworkInterface": ["bridge", "masquerade", "slirp", "passt", "Bridge", ""],
    "schedulerName": ["my-scheduler", ""],
    "preferredSubdomain": ["sub", ""],
    "deviceName": ["nvidia.com/GV100GL_Tesla_V100", "x/y"],
    "name": ["a", "b", "default", "disk0", "gpu1"],
    "image": ["quay.io/containerdisks/fedora:latest", "registry/img", "img@sha256:abc", "img:1.0"],
    "pageSize": ["2Mi", "1Gi", " 2Mi", "bogus"],
    "policy": ["require", "disable", "optional", "forbid"],
    "evictionStrategy": ["None", "LiveMigrate", "External"],
}
STRINGS = ["", "a", "x-y", "virtio", "Always", "1Gi", "true", "ΟΔΟΣ", "İ", "\u212a"]

SUFFIXES = [
    "",
    "",
    "Ki",
    "Mi",
    "Gi",
    "Ti",
    "k",
    "M",
    "G",
    "T",
    "m",
    "n",
    "u",
    "e3",
    "e9",
    "E6",
    "e-3",
    "e19",
    "Pi",
    "Ei",
]


def quantity_text(rnd: random.Random) -> str | int | float:
    r = rnd.random()
    if r < 0.08:
        return rnd.choice([1, 2, 1024, 1073741824, 1.5, 0.5, 2**63, 10**20])
    sign = rnd.choice(["", "", "", "", "+", "-"]) if r > 0.15 else ""
    whole = str(
        rnd.choice([0, 1, 1, 2, 3, 4, 8, 16, 100, 128, 512, 1000, 1024, 1536, 10**6, 10**18, 10**20, 10**30])
    )
    if rnd.random() < 0.2:
        whole = str(rnd.randrange(1, 10 ** rnd.randint(1, 25)))
    frac = ""
    if rnd.random() < 0.25:
        frac = "." + "".join(rnd.choice("0123456789") for _ in range(rnd.randint(0, 12)))
    text = sign + whole + frac + rnd.choice(SUFFIXES)
    if rnd.random() < 0.02:
        text = rnd.choice([" ", "\t"]) + text
    return text


def small_int(rnd: random.Random, kind: str) -> int:
    lo, hi = INT_RANGES[kind]
    r = rnd.random()
    if r < 0.75:
        return max(lo, min(hi, rnd.choice([0, 1, 1, 2, 2, 3, 4, 5, 6, 8, 12, 16, 64, 100])))
    if r < 0.9:
        return max(lo, min(hi, rnd.randint(-5, 300)))
    return rnd.choice([lo, hi, max(lo, -1), min(hi, 2**31), min(hi, 2**32 - 1)])


class Composer:
    """Random values of Go types from the type graph (apiserver/render/golang/gojson/gotypes.json)."""

    def __init__(self, rnd: random.Random, presence: float = 0.35, most_depth: int = 6) -> None:
        self.rnd = rnd
        self.presence = presence
        self.most_depth = most_depth

    def struct(self, type_name: str, depth: int = 0, presence: float | None = None) -> JSON:
        p = self.presence if presence is None else presence
        out: JSON = {}
        for name, ref, _omit in STRUCTS[type_name]["fields"]:
            if name in ("status", "metadata", "apiVersion", "kind") and depth == 0:
                continue
            if self.rnd.random() < p / (1 + depth * 0.6):
                value = self.value(ref, name, depth + 1)
                if value is not _SKIP:
                    out[name] = value
        return out

    def value(self, ref: dict[str, Any], name: str, depth: int) -> Any:
        rnd = self.rnd
        kind = ref["k"]
        if kind == "struct":
            if depth > self.most_depth:
                return _SKIP
            return self.struct(ref["t"], depth)
        if kind == "custom":
            custom = ref["c"]
            if custom == "quantity":
                return quantity_text(rnd)
            if custom == "time":
                return "2024-05-01T10:00:00Z"
            if custom == "duration":
                return rnd.choice(["1h", "30s", "1m30s"])
            if custom == "intorstring":
                return rnd.choice([1, "1", "50%"])
            return {"a": 1}
        if kind == "string":
            choices = ENUMS.get(ref["g"]) or BY_NAME.get(name) or STRINGS
            return rnd.choice(choices)
        if kind == "bool":
            return rnd.random() < 0.5
        if kind in INT_RANGES:
            return small_int(rnd, kind)
        if kind == "float32":
            return rnd.choice([0, 1, 0.5, 2.5])
        if kind == "slice":
            if depth > self.most_depth:
                return _SKIP
            n = rnd.choice([0, 1, 1, 2, 3])
            items = [self.value(ref["elem"], name, depth + 1) for _ in range(n)]
            return [i for i in items if i is not _SKIP]
        if kind == "map":
            if depth > self.most_depth:
                return _SKIP
            keys = rnd.sample(["a", "b", "c", "kubevirt.io/x", "cpu", "memory"], rnd.randint(0, 3))
            out = {k: self.value(ref["elem"], k, depth + 1) for k in keys}
            return {k: v for k, v in out.items() if v is not _SKIP}
        raise TypeError(kind)


_SKIP = object()

INSTANCETYPE_SPEC = resolve_root("kubevirt.io/api/instancetype/v1beta1.VirtualMachineInstancetypeSpec")
PREFERENCE_SPEC = resolve_root("kubevirt.io/api/instancetype/v1beta1.VirtualMachinePreferenceSpec")
VMI_SPEC = resolve_root("kubevirt.io/api/core/v1.VirtualMachineInstanceSpec")
DOMAIN_SPEC = resolve_root("kubevirt.io/api/core/v1.DomainSpec")

KIND_SPELLINGS = {
    "VirtualMachineInstancetype": [
        "VirtualMachineInstancetype",
        "virtualmachineinstancetype",
        "virtualmachineinstancetypes",
        "VIRTUALMACHINEINSTANCETYPES",
        "VİrtualMachineİnstancetype",
    ],
    "VirtualMachineClusterInstancetype": [
        "VirtualMachineClusterInstancetype",
        "virtualmachineclusterinstancetype",
        "VirtualMachineClusterInstancetypes",
        "",
        "VirtualMachineClusterİnstancetype",
        "Instancetype",
    ],
    "VirtualMachinePreference": [
        "VirtualMachinePreference",
        "virtualmachinepreference",
        "VirtualMachinePreferences",
        "VİrtualMachinePreference",
    ],
    "VirtualMachineClusterPreference": [
        "VirtualMachineClusterPreference",
        "virtualmachineclusterpreferences",
        "",
        "VirtualMachineClusterPreferenc\u0395",  # a Greek capital epsilon
    ],
}


def compose(rnd: random.Random) -> JSON:
    """An input composed from scratch."""
    gen = Composer(rnd)
    objects: list[JSON] = []
    vm_spec: JSON = {"runStrategy": "Always"}
    status: JSON = {}

    template_spec = gen.struct(VMI_SPEC, depth=2, presence=0.12)
    domain = gen.struct(DOMAIN_SPEC, depth=1, presence=0.15)
    domain.setdefault("devices", {})
    template_spec["domain"] = domain
    vm_spec["template"] = {"metadata": {"labels": {"app": "x"}}, "spec": template_spec}
    if rnd.random() < 0.1:
        vm_spec["template"]["metadata"]["annotations"] = {"a": "1"}

    for family, spec_type, kinds, ref_member in (
        (
            "instancetype",
            INSTANCETYPE_SPEC,
            ("VirtualMachineClusterInstancetype", "VirtualMachineInstancetype"),
            "instancetypeRef",
        ),
        (
            "preference",
            PREFERENCE_SPEC,
            ("VirtualMachineClusterPreference", "VirtualMachinePreference"),
            "preferenceRef",
        ),
    ):
        if rnd.random() < (0.25 if family == "instancetype" else 0.3):
            continue
        kind = rnd.choice(kinds)
        name = rnd.choice(["small", "big"])
        spec = gen.struct(spec_type, presence=0.45)
        if family == "instancetype":
            spec.setdefault("cpu", {})["guest"] = rnd.choice([1, 1, 2, 3, 4, 6, 8, 16, 0, 4294967295])
            spec.setdefault("memory", {})["guest"] = quantity_text(rnd)
            if rnd.random() < 0.3:
                spec["memory"]["overcommitPercent"] = rnd.choice([0, 1, 10, 20, 25, 50, 99, 100])
        obj: JSON = {"apiVersion": IT, "kind": kind, "metadata": {"name": name}, "spec": spec}
        if "Cluster" not in kind:
            obj["metadata"]["namespace"] = NAMESPACE
        objects.append(obj)
        matcher: JSON = {"name": name if rnd.random() < 0.92 else "missing"}
        spelling = rnd.choice(KIND_SPELLINGS[kind])
        if spelling or "Cluster" not in kind:
            matcher["kind"] = spelling
        r = rnd.random()
        if r < 0.15:
            revision = f"{name}-{family}-rev"
            objects.append(_revision(revision, obj))
            matcher["revisionName"] = revision
        elif r < 0.25:
            revision = f"{name}-{family}-status"
            objects.append(_revision(revision, obj, labelled=rnd.choice([name, name, "other"])))
            status[ref_member] = {"name": name, "kind": kind, "controllerRevisionRef": {"name": revision}}
        vm_spec[family] = matcher

    vm: JSON = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": "vm", "namespace": NAMESPACE},
        "spec": vm_spec,
    }
    if status:
        vm["status"] = status
    return {"vm": vm, "objects": objects, "kubevirt": _kubevirt(rnd, gen)}


def _revision(name: str, obj: JSON, labelled: str | None = None) -> JSON:
    data = {**obj, "metadata": {"name": obj["metadata"]["name"]}}
    meta: JSON = {"name": name, "namespace": NAMESPACE}
    if labelled is not None:
        meta["labels"] = {"instancetype.kubevirt.io/object-name": labelled}
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": meta,
        "data": data,
        "revision": 1,
    }


def _kubevirt(rnd: random.Random, gen: Composer) -> JSON | None:
    if rnd.random() < 0.55:
        return None
    conf: JSON = {}
    if rnd.random() < 0.3:
        conf["network"] = {"defaultNetworkInterface": rnd.choice(BY_NAME["defaultNetworkInterface"])}
        if rnd.random() < 0.3:
            conf["network"]["permitBridgeInterfaceOnPodNetwork"] = rnd.random() < 0.5
    if rnd.random() < 0.3:
        conf["developerConfiguration"] = {
            key: rnd.choice([-1, 0, 1, 10, 100, 101, 150])
            for key in ("memoryOvercommit", "cpuAllocationRatio", "pvcTolerateLessSpaceUpToPercent")
            if rnd.random() < 0.5
        }
    if rnd.random() < 0.2:
        conf["imagePullPolicy"] = rnd.choice(ENUMS["v1.PullPolicy"])
    if rnd.random() < 0.3:
        conf["machineType"] = rnd.choice(BY_NAME["machineType"])
    if rnd.random() < 0.3:
        arch: JSON = {"defaultArchitecture": rnd.choice(BY_NAME["defaultArchitecture"])}
        for a in ("amd64", "arm64", "s390x"):
            if rnd.random() < 0.3:
                arch[a] = {"machineType": rnd.choice(BY_NAME["machineType"])}
        conf["architectureConfiguration"] = arch
    if rnd.random() < 0.3:
        conf["cpuRequest"] = quantity_text(rnd)
    if rnd.random() < 0.2:
        conf["evictionStrategy"] = rnd.choice(ENUMS["v1.EvictionStrategy"])
    return {"spec": {"configuration": conf}} if rnd.random() < 0.5 else conf


# --- mutation ------------------------------------------------------------------------------------


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*path, i))


def _parent(root: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        root = root[step]
    return root


def mutate(rnd: random.Random, inp: JSON) -> JSON:
    """A golden input with 1-3 changes that keep its JSON types (mostly)."""
    inp = json.loads(json.dumps(inp))
    if inp.get("kubevirt") is None and rnd.random() < 0.2:
        inp["kubevirt"] = _kubevirt(rnd, Composer(rnd)) or {}
    for _ in range(rnd.randint(1, 3)):
        part = rnd.choice(["vm", "vm", "objects", "objects", "kubevirt"])
        root = inp.get(part)
        if root is None:
            continue
        candidates = [
            (p, v)
            for p, v in _paths(root)
            if p
            and not (part == "objects" and (len(p) < 2 or p[1] in ("kind", "apiVersion")))
            and "namespace" not in p
        ]
        if not candidates:
            continue
        path, value = rnd.choice(candidates)
        parent = _parent(root, path)
        key = path[-1]
        r = rnd.random()
        if r < 0.25 and isinstance(parent, dict):
            del parent[key]
        elif (
            r < 0.35
            and isinstance(parent, dict)
            and part != "vm"
            and isinstance(key, str)
            and key != key.swapcase()
        ):
            # another case of an object's member name: KubeVirt's decoder does not see it
            flipped = "".join(c.swapcase() if rnd.random() < 0.5 else c for c in key) or key
            if flipped != key and flipped not in parent:
                parent[flipped] = parent.pop(key)
        elif r < 0.45 and key == "kind" and isinstance(value, str):
            for spellings in KIND_SPELLINGS.values():
                if value in spellings:
                    parent[key] = rnd.choice(spellings)
        else:
            parent[key] = _similar(rnd, key, value)
    return inp


def _similar(rnd: random.Random, key: Any, value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rnd.choice([0, 1, 2, 3, value + 1, max(0, value - 1), value * 2, 4294967295, 2**31 - 1])
    if isinstance(value, float):
        return rnd.choice([0.5, 1.5, value * 2])
    if isinstance(value, str):
        if key in ("guest", "memory", "cpu", "maxGuest", "cpuRequest", "pageSize") or (
            value[:1].isdigit() and len(value) < 20
        ):
            return quantity_text(rnd)
        choices = BY_NAME.get(str(key)) or [v for vs in ENUMS.values() if value in vs for v in vs] or STRINGS
        return rnd.choice(choices)
    if isinstance(value, list):
        return value + value[:1] if value and rnd.random() < 0.5 else value[:-1]
    if isinstance(value, dict):
        return {} if rnd.random() < 0.3 else value
    return value


# --- the oracle ----------------------------------------------------------------------------------


def go_json_line(value: Any) -> bytes:
    """JSON as Go's encoder writes it (kubectl and the API server write what KubeVirt reads): UTF-8
    as it is, U+2028/U+2029 escaped; integers beyond 64 bits too (orjson refuses them)."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode() + b"\n"


class Oracle:
    """expand-oracle kept running: one JSON line in, one out."""

    def __init__(self, binary: Path) -> None:
        self.proc = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=1 << 20
        )

    def ask_all(self, inputs: list[JSON]) -> list[JSON]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        lines = [go_json_line(i) for i in inputs]
        stdin = self.proc.stdin

        def feed() -> None:
            for line in lines:
                stdin.write(line)
            stdin.flush()

        writer = threading.Thread(target=feed)
        writer.start()
        answers = [orjson.loads(self.proc.stdout.readline()) for _ in lines]
        writer.join()
        return answers

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


# --- judging -------------------------------------------------------------------------------------


def _legacy_revision(inp: JSON) -> bool:
    """Whether a ControllerRevision holds anything but a v1beta1 object: KubeVirt v1.7+ refuses those,
    we decode them as v1.6 did (the golden cases' legacy area records that)."""
    for obj in inp.get("objects") or []:
        if isinstance(obj, dict) and obj.get("kind") == "ControllerRevision":
            data = obj.get("data")
            if not (isinstance(data, dict) and data.get("apiVersion") == IT):
                return True
    return False


def judge(inp: JSON, go: JSON) -> tuple[str, str]:
    """(category, detail): ``same``, a known difference, or ``DIFF ...``."""
    if go.get("errorPrefix") and _legacy_revision(inp):
        return "legacy revision (decoded as KubeVirt v1.6)", ""
    try:
        ours = expand(inp["vm"], inp.get("objects") or [], inp.get("kubevirt"), field_validation="Ignore")
    except ExpandError as err:
        return _judge_error(inp, go, err)
    except Exception as err:  # a crash is what the harness is for
        return "DIFF crash", f"{type(err).__name__}: {err}"
    if "inputError" in go:
        if _unread(inp, go["inputError"], ours.vm):
            return "harness (Go decodes an input expand does not read)", ""
        return "DIFF we expand what Go cannot decode", go["inputError"][:300]
    if "expanded" not in go:
        if go.get("kind") == "panic":
            return "DIFF go panics, we expand", go.get("error", "")[:300]
        return "DIFF we expand, Go fails", go.get("error", "")[:300]
    if ours.vm != go["expanded"]:
        return "DIFF expanded", _first_difference(go["expanded"], ours.vm)
    if json.dumps(ours.vm) != json.dumps(go["expanded"]):
        return "DIFF member order", ""
    return "same (expanded)", ""


def _unread(inp: JSON, input_error: str, expanded: JSON) -> bool:
    """Whether the part the oracle could not decode (it decodes every object and the CR up front;
    a cluster could not hold them) is one our expansion never reads: without it we answer the same."""
    objects = list(inp.get("objects") or [])
    kubevirt = inp.get("kubevirt")
    if input_error.startswith("kubevirt"):
        kubevirt = None
    elif input_error.startswith("objects["):
        index = int(input_error[len("objects[") : input_error.index("]")])
        del objects[index]
    else:
        return False
    try:
        again = expand(inp["vm"], objects, kubevirt, field_validation="Ignore")
    except ExpandError:
        return False
    return bool(again.vm == expanded)


def _judge_error(inp: JSON, go: JSON, err: ExpandError) -> tuple[str, str]:
    if isinstance(err, FieldValidationError):
        return "handler validation (not a VirtualMachine)", ""
    if err.message == "resource name may not be empty":
        # A real API server says so; the oracle's fake store looks the empty name up (and may even
        # hold an object stored under it)
        return "harness (empty matcher name)", ""
    if "inputError" in go:
        return "go-input-error (both refuse)", ""
    if go.get("kind") == "panic":
        return "go-panic (we answer 422)", go.get("error", "")[:120]
    if "expanded" in go:
        return "DIFF we fail, Go expands", err.message[:300]
    if go.get("kind") == "notfound" and '"" not found' in go.get("error", ""):
        return "harness (empty matcher name)", ""
    if go.get("kind") == "notfound" and _invalid_name(err):
        return "invalid name (we answer 422 on the field, KubeVirt not found)", ""
    if error_matches(go, err.message):
        if go.get("kind") == "conflict":
            fields = sorted(c.get("field", "") for c in err.causes)
            if fields != sorted(go.get("fields") or []):
                return "DIFF conflict fields", f"{go.get('fields')} vs {fields}"
        return "same (error)", ""
    return "DIFF error message", f"go: {go.get('error')!r}\nus: {err.message!r}"


def _invalid_name(err: ExpandError) -> bool:
    """Whether we refused a reference's name or namespace as Kubernetes validates names (render/names.py)."""
    return any(
        cause.get("reason") == "FieldValueInvalid" and "a lowercase RFC 1123" in cause.get("message", "")
        for cause in err.causes
    )


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k, _SKIP) != b.get(k, _SKIP):
                return _first_difference(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}")
        return path
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f"{path}: go {json.dumps(a)[:200]} / us {json.dumps(b)[:200]}"


# --- main ----------------------------------------------------------------------------------------


def _without_presets(inp: JSON) -> JSON:
    objects = [o for o in inp.get("objects") or [] if o.get("kind") != "VirtualMachineInstancePreset"]
    return {**inp, "objects": objects}


def sources(args: argparse.Namespace, rnd: random.Random) -> Iterator[tuple[str, JSON]]:
    if args.replay:
        for line in Path(args.replay).read_text().splitlines():
            if line.strip():
                yield "replay", json.loads(line)
        return
    golden = [_without_presets(load(p).input) for p in case_files()]
    if args.corpus:
        for inp in golden:
            yield "corpus", inp
    for _ in range(args.mutated):
        yield "mutated", mutate(rnd, rnd.choice(golden))
    for _ in range(args.composed):
        yield "composed", compose(rnd)


def run(args: argparse.Namespace, oracle: Oracle, report: Callable[[str], None]) -> Counter[tuple[str, str]]:
    rnd = random.Random(args.seed)
    counts: Counter[tuple[str, str]] = Counter()
    shown: Counter[str] = Counter()
    saved: dict[str, list[JSON]] = {}
    batch: list[tuple[str, JSON]] = []
    done = 0
    started = time.monotonic()

    def flush() -> None:
        nonlocal done
        answers = oracle.ask_all([inp for _, inp in batch])
        for (origin, inp), go in zip(batch, answers, strict=True):
            category, detail = judge(inp, go)
            counts[(origin, category)] += 1
            if category.startswith("DIFF"):
                saved.setdefault(category, []).append(inp)
                if shown[category] < args.show:
                    shown[category] += 1
                    report(f"{category} [{origin}]: {detail}")
        done += len(batch)
        batch.clear()
        if done % 2000 < args.batch:
            report(f"... {done} inputs, {time.monotonic() - started:.0f}s")

    for item in sources(args, rnd):
        batch.append(item)
        if len(batch) >= args.batch:
            flush()
    if batch:
        flush()
    if args.save and saved:
        out = Path(args.save)
        out.mkdir(parents=True, exist_ok=True)
        for category, inputs in saved.items():
            name = category.removeprefix("DIFF ").replace(" ", "-").replace(",", "")
            (out / f"{name}.jsonl").write_text("".join(json.dumps(i) + "\n" for i in inputs))
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--composed", type=int, default=1000, help="inputs composed from scratch")
    parser.add_argument("--mutated", type=int, default=1000, help="golden inputs mutated")
    parser.add_argument("--corpus", action="store_true", help="also every golden case as it is")
    parser.add_argument("--seed", type=int, default=1, help="random seed (the run repeats with it)")
    parser.add_argument(
        "--oracle",
        help="expand-oracle binary (default: $KUBEVIRT_EXPAND_ORACLE, else where build.sh puts it)",
    )
    parser.add_argument("--save", help="write the differing inputs here, one JSONL file per category")
    parser.add_argument("--replay", help="run the inputs of a JSONL file instead")
    parser.add_argument("--show", type=int, default=3, help="differences printed per category")
    parser.add_argument("--batch", type=int, default=200, help="inputs per round trip to the oracle")
    args = parser.parse_args()

    binary = find_oracle(args.oracle)
    if binary is None:
        print(f"skipped: no expand-oracle at {args.oracle or where()} (../shared/oracle/README.md builds it)")
        return 0
    oracle = Oracle(binary)
    try:
        counts = run(args, oracle, lambda text: print(text, flush=True))
    finally:
        oracle.close()
    total = sum(counts.values())
    print(f"{total} inputs (seed {args.seed}), by source and outcome:")
    for (origin, category), n in sorted(counts.items()):
        print(f"  {origin:9s} {category:45s} {n:7d}")
    unexplained = sum(n for (_, category), n in counts.items() if category.startswith("DIFF"))
    print(f"differences not known: {unexplained}")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
