"""A common-instancetypes upgrade (v1.6.0 -> v1.7.0) previewed across a live fleet, then taken on KubeVirt's own
control plane, VM by VM (issue 40).

A seeded fleet (:func:`make_fleet`: a few dozen VMs in three namespaces, one with a ResourceQuota, on common
instancetypes and preferences, some with ``architecture: arm64`` or ``s390x`` against preferences v1.7.0 makes
amd64-only, running and halted) is written through KubeVirt's webhooks under v1.6.0, and virt-controller
captures its revisions and starts the running VMs. Then:

1. the fleet is read back from kube-apiserver (VMs, Namespaces, ResourceQuotas, the KubeVirt CR) and previewed
   offline against v1.7.0 (:func:`preview_catalog_change`);
2. the same fleet as its user wrote it (files, no status) is previewed by the command line;
3. v1.7.0 is applied (``kubectl apply``, as virt-operator updates the objects it owns) and each VM upgraded as
   KubeVirt takes an upgrade at this commit: the ``controllerRevisionRef`` of ``status.instancetypeRef`` and
   ``status.preferenceRef`` removed (``syncStatusWithMatcher`` then captures the objects as they are now). What
   KubeVirt does is recorded: the revision names captured, virt-api's expand-spec before and after, the
   ``RestartRequired`` condition and its message, failure conditions, the running VMI's spec, and the VM
   webhook's answer to the next write of the VM (the VM stored again unchanged: the webhook checks the
   preference's requirements against the revision now captured).

Each test compares, VM by VM, and lists every difference.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from apiserver.cli.inputs import read_catalog
from apiserver.render.catalogchange import UNAFFECTED, UNCHANGED, preview_catalog_change
from apiserver.render.kubernetes.quantity import QuantityError, cmp, parse_quantity
from apiserver.render.kubernetes.quantitymath import (
    ResourceList,
    add,
    resource_list,
    resource_text,
    sub,
    zero,
)
from devcluster.controlplane import ControlPlane
from devcluster.kubevirt import CR_NAME, NAMESPACE, KubeVirtPlane
from devcluster.paths import REPO
from devcluster.patience import patience
from tests.support.shared import SHARED
from tests.virtapi.sides import VIRT_API, Answer, Kube

CATALOGS = SHARED / "catalogs" / "common-instancetypes"
BEFORE, AFTER = CATALOGS / "v1.6.0", CATALOGS / "v1.7.0"
SEED = 40
RELEASE_LABEL = "catalog.example.com/release"
SIZE = 36
VM_PATH = "/apis/kubevirt.io/v1/namespaces/{ns}/virtualmachines"
VMI_PATH = "/apis/kubevirt.io/v1/namespaces/{ns}/virtualmachineinstances/{name}"
REFS = ("instancetypeRef", "preferenceRef")
_MEMBERS = {"instancetypeRef": "instancetype", "preferenceRef": "preference"}
TALLY: Counter[str] = Counter()

# Preferences v1.7.0 edits (requirements.architecture and preferredArchitecture; preferredVideoType for the
# Windows ones), one it leaves alone, and their minimum sizes.
PREFERENCES = {
    "fedora": ("u1.small", "u1.medium", "o1.medium", "cx1.large", "d1.medium"),
    "rhel.9": ("u1.small", "u1.medium", "o1.medium", "n1.medium"),
    "fedora.arm64": ("u1.small", "u1.medium", "o1.medium"),
    "rhel.9.arm64": ("u1.small", "u1.large"),
    "fedora.s390x": ("u1.small", "u1.medium"),
    "windows.10.virtio": ("u1.large", "o1.large", "cx1.large"),
    "windows.2k19.virtio": ("u1.large", "d1.large"),
    "windows.11.virtio": ("u1.large",),  # a persistent TPM and EFI: halted (no storage class here)
    "alpine": ("u1.small", "o1.medium"),
}
STATEFUL = {"windows.11.virtio"}


def _vm(
    name: str, ns: str, *, pref: str | None, it: str | None, arch: str | None, running: bool
) -> dict[str, Any]:
    spec: dict[str, Any] = {"runStrategy": "Always" if running else "Halted"}
    domain: dict[str, Any] = {"devices": {}}
    if it is not None:
        spec["instancetype"] = {"name": it}
    else:  # no instancetype: the VM's own CPU and memory, enough for the preference's requirements
        domain["cpu"] = {"sockets": 2}
        domain["memory"] = {"guest": "4Gi"}
    if pref is not None:
        spec["preference"] = {"name": pref}
    tspec: dict[str, Any] = {
        "domain": domain,
        "volumes": [
            {"name": "containerdisk", "containerDisk": {"image": "quay.io/containerdisks/fedora:41"}}
        ],
    }
    if arch is not None:
        tspec["architecture"] = arch
    spec["template"] = {"metadata": {"labels": {"app": name}}, "spec": tspec}
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def make_fleet(namespaces: list[str], size: int = SIZE, seed: int = SEED) -> list[dict[str, Any]]:
    """VMs as their users write them: the first few cover each case once, the rest are seeded choices."""
    rng = random.Random(seed)
    fixed: list[tuple[str | None, str | None, str | None, bool]] = [
        ("fedora", "u1.medium", "arm64", True),  # amd64-only after the upgrade: refused
        ("rhel.9", "u1.small", "s390x", True),
        ("fedora.arm64", "u1.small", None, True),  # arm64-only after it, the template amd64 by default
        ("fedora.arm64", "u1.medium", "arm64", True),
        ("windows.10.virtio", "u1.large", None, True),  # gains a virtio video device: restart
        ("windows.11.virtio", "u1.large", None, False),
        ("windows.2k19.virtio", None, None, True),
        ("fedora", "u1.medium", None, False),
        (None, "u1.small", None, True),
        ("alpine", "o1.medium", None, True),
    ]
    vms = []
    for i in range(size):
        ns = namespaces[i % len(namespaces)]
        if i < len(fixed):
            pref, it, arch, running = fixed[i]
        else:
            pref = rng.choice([*PREFERENCES, None])
            it = rng.choice(
                PREFERENCES[pref] if pref else ("u1.small", "u1.medium", "cx1.large", "o1.medium")
            )
            arch = rng.choices([None, "arm64", "s390x"], [70, 20, 10])[0]
            running = rng.random() < 0.7 and pref not in STATEFUL
        vms.append(_vm(f"vm-{i:02d}", ns, pref=pref, it=it, arch=arch, running=running))
    return vms


def _failure(vm: dict[str, Any]) -> str | None:
    status = vm.get("status") or {}
    if str(status.get("printableStatus", "")).startswith("Error"):
        return str(status["printableStatus"])
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Failure" and condition.get("status") == "True":
            return f"{condition.get('reason')}: {condition.get('message')}"
    return None


def _restart_required(vm: dict[str, Any]) -> str | None:
    for condition in (vm.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "RestartRequired" and condition.get("status") == "True":
            return str(condition.get("message", ""))
    return None


def _captured(vm: dict[str, Any]) -> dict[str, str]:
    status = vm.get("status") or {}
    return {
        ref: str(status[ref]["controllerRevisionRef"]["name"])
        for ref in REFS
        if ((status.get(ref) or {}).get("controllerRevisionRef") or {}).get("name")
    }


def _matchers(vm: dict[str, Any]) -> set[str]:
    return {
        ref
        for member, ref in zip(("instancetype", "preference"), REFS, strict=True)
        if vm["spec"].get(member)
    }


def _causes(body: Any) -> list[tuple[str, str]]:
    causes = ((body if isinstance(body, dict) else {}).get("details") or {}).get("causes") or []
    return sorted((str(c.get("field", "")), str(c.get("message", ""))) for c in causes)


@dataclass
class Observed:
    """What KubeVirt did with one VM."""

    ns: str
    name: str
    revisions_before: dict[str, str]
    revisions_after: dict[str, str] = field(default_factory=dict)
    revision_specs: dict[str, Any] = field(default_factory=dict)  # the spec each new revision captured
    expanded_before: Any = None
    expanded_after: Any = None
    vmi_before: Any = None
    vmi_after: Any = None
    restart: str | None = None
    failure: str | None = None
    write: Answer | None = None  # the webhook's answer to the VM stored again unchanged
    write_before: Answer | None = None  # the same before the change

    @property
    def refused(self) -> bool:
        """The webhook refuses the VM's next write because of the change (not one it refused before the
        change already, and the change left alone)."""
        if self.write is None or self.write.status in (200, 201):
            return False
        before = self.write_before is not None and self.write_before.status not in (200, 201)
        return not before or self.revisions_after != self.revisions_before

    @property
    def verdict(self) -> str:
        """KubeVirt's behaviour in the preview's words."""
        return "refused" if self.refused else self.upgrade

    @property
    def upgrade(self) -> str:
        """How KubeVirt took the upgrade (through the VM's status, which the webhook does not see)."""
        if self.failure is not None:
            return "error"
        if self.expanded_before == self.expanded_after:
            return UNAFFECTED if self.revisions_before == self.revisions_after else UNCHANGED
        if self.vmi_before is None:
            return "stopped"
        return "restart" if self.restart is not None else "live"


@dataclass
class Taken:
    """One catalog change: the fleet read back under the first catalog and previewed, then what KubeVirt did
    once the second was applied and each VM upgraded."""

    readback: dict[tuple[str, str], dict[str, Any]]
    objects: list[dict[str, Any]]  # the Namespaces and the ResourceQuota, read back
    preview: dict[tuple[str, str], dict[str, Any]]
    summaries: list[dict[str, Any]]  # the preview's namespaces
    observed: dict[tuple[str, str], Observed]
    live: dict[str, dict[str, Any]]  # the cluster instancetypes' and preferences' specs once applied, by ref
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class Upgrade:
    namespaces: list[str]
    written: list[dict[str, Any]]  # the VMs as their users wrote them, admitted by KubeVirt
    refused_at_create: dict[str, Answer]
    kubevirt: dict[str, Any]
    taken: Taken  # v1.6.0 -> v1.7.0
    after_file: Path  # the catalog applied: v1.7.0 stamped (:func:`_stamped`)
    kubectl_dir: Path  # kubectl's read-back of the fleet before the upgrade
    pods: list[dict[str, Any]]  # the quota's namespace's virt-launcher pods
    starts: dict[tuple[str, str], subprocess.CompletedProcess[str]]  # virtctl start of each halted refused VM

    @property
    def readback(self) -> dict[tuple[str, str], dict[str, Any]]:
        return self.taken.readback

    @property
    def objects(self) -> list[dict[str, Any]]:
        return self.taken.objects

    @property
    def preview(self) -> dict[tuple[str, str], dict[str, Any]]:
        return self.taken.preview

    @property
    def summaries(self) -> list[dict[str, Any]]:
        return self.taken.summaries


def _get(kube: Kube, path: str) -> dict[str, Any]:
    answer = kube.call("GET", path)
    return dict(answer.body) if answer.status == 200 else {}


def _expanded(kube: Kube, ns: str, name: str) -> Any:
    answer = kube.call("GET", f"{VIRT_API}/namespaces/{ns}/virtualmachines/{name}/expand-spec")
    return answer.body.get("spec") if answer.status == 200 else answer.shown()


def _wait(what: str, done: Any, seconds: float = 180) -> None:
    deadline = time.monotonic() + patience(seconds)
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(1)


def _quiet(kube: Kube, keys: list[tuple[str, str]], seconds: float = 4.0) -> None:
    """Until no VM or VMI of ``keys`` changed for ``seconds`` (virt-controller's passes after a change)."""
    last: list[str] | None = None
    since = time.monotonic()
    deadline = time.monotonic() + patience(60)
    while time.monotonic() < deadline:
        now = []
        for ns, name in keys:
            vm = _get(kube, f"{VM_PATH.format(ns=ns)}/{name}")
            vmi = _get(kube, VMI_PATH.format(ns=ns, name=name))
            now.append(
                f"{vm['metadata']['resourceVersion']}/{(vmi.get('metadata') or {}).get('resourceVersion')}"
            )
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= seconds:
            return
        time.sleep(0.5)


def _list(kube: Kube, path: str, kind: str, namespaces: list[str]) -> list[dict[str, Any]]:
    """The items of ``namespaces`` (or those namespaces), each with its kind, as ``kubectl get -o yaml``
    prints a list."""
    listed = _get(kube, path)
    return [
        {"apiVersion": listed["apiVersion"], "kind": kind, **item}
        for item in listed.get("items") or []
        if (item["metadata"].get("namespace") or item["metadata"]["name"]) in namespaces
    ]


def _catalog(path: Path) -> list[dict[str, Any]]:
    return list(read_catalog([str(path)], namespace="default").objects)


def _stamped(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``objects`` with the release label a deployment pipeline stamps on every object it applies: the 98
    objects v1.7.0 leaves alone change too, in their metadata only (no new generation: KubeVirt captures
    them again under the same revision names)."""
    out: list[dict[str, Any]] = json.loads(json.dumps(objects))
    for obj in out:
        obj["metadata"].setdefault("labels", {})[RELEASE_LABEL] = "v1.7.0"
    return out


@pytest.fixture(scope="module")
def upgrade(
    kv_cluster: ControlPlane, plane: KubeVirtPlane, kube: Kube, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Upgrade]:
    seconds: dict[str, float] = {}
    began = time.monotonic()
    kv_cluster.kubectl("apply", "-f", str(BEFORE))
    namespaces = [plane.new_namespace(f"catup-{letter}") for letter in "abc"]
    quota: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "compute", "namespace": namespaces[0]},
        "spec": {"hard": {"requests.cpu": "40", "requests.memory": "200Gi"}},
    }
    kv_cluster.apply(quota)
    # No controller-manager: the quota's status written as its controller would (kube-apiserver's quota
    # admission refuses pods under a quota without status.hard, and counts each pod it admits into status.used).
    status = {
        "status": {"hard": quota["spec"]["hard"], "used": {"requests.cpu": "0", "requests.memory": "0"}}
    }
    kv_cluster.kubectl(
        "patch",
        "resourcequota",
        "compute",
        "-n",
        namespaces[0],
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(status),
    )
    written, refused = [], {}
    for vm in make_fleet(namespaces):
        ns = vm["metadata"]["namespace"]
        answer = kube.call("POST", VM_PATH.format(ns=ns), json.dumps(vm).encode(), "application/json")
        if answer.status == 201:
            written.append(vm)
        else:
            refused[vm["metadata"]["name"]] = answer
    keys = [(vm["metadata"]["namespace"], vm["metadata"]["name"]) for vm in written]

    def settled() -> bool:
        for vm in written:
            ns, name = vm["metadata"]["namespace"], vm["metadata"]["name"]
            stored = _get(kube, f"{VM_PATH.format(ns=ns)}/{name}")
            if _failure(stored):
                continue
            if set(_captured(stored)) != _matchers(vm):
                return False
            if vm["spec"]["runStrategy"] == "Always" and not (stored.get("status") or {}).get("created"):
                return False
        return True

    _wait("virt-controller to capture the revisions and start the running VMs", settled)
    _quiet(kube, keys)
    seconds["create"] = time.monotonic() - began

    kubevirt_cr = _get(kube, f"/apis/kubevirt.io/v1/namespaces/{NAMESPACE}/kubevirts/{CR_NAME}")
    kubevirt_cr.setdefault("kind", "KubeVirt")
    after = _stamped(_catalog(AFTER))
    after_file = tmp_path_factory.mktemp("catalog") / "v1.7.0-stamped.yaml"
    after_file.write_text(yaml.safe_dump_all(after))
    kubectl_dir = tmp_path_factory.mktemp("kubectl")
    for ns in namespaces:
        listed = kv_cluster.kubectl("get", "vm,resourcequota", "-n", ns, "-o", "yaml").stdout
        (kubectl_dir / f"{ns}.yaml").write_text(listed)
    (kubectl_dir / "namespaces.yaml").write_text(
        kv_cluster.kubectl("get", "namespace", *namespaces, "-o", "yaml").stdout
    )
    pods = _get(kube, f"/api/v1/namespaces/{namespaces[0]}/pods").get("items") or []
    taken = _take(kv_cluster, kube, namespaces, kubevirt_cr, _catalog(BEFORE), after, after_file)
    taken.seconds["create"] = seconds["create"]
    # A halted VM the webhook now refuses, started as `virtctl start` starts it (virt-api writes its
    # runStrategy, which the webhook sees).
    starts = {
        key: kv_cluster.kubectl(
            "replace",
            "--raw",
            f"{VIRT_API}/namespaces/{key[0]}/virtualmachines/{key[1]}/start",
            "-f",
            "-",
            stdin="{}",
            check=False,
        )
        for key, seen in taken.observed.items()
        if seen.verdict == "refused" and seen.vmi_before is None
    }
    yield Upgrade(namespaces, written, refused, kubevirt_cr, taken, after_file, kubectl_dir, pods, starts)


def _write(kube: Kube, ns: str, name: str) -> Answer:
    """The next write of the VM, unchanged: the VM webhook's answer (retried over virt-controller's own
    writes)."""
    for _ in range(10):
        vm = _get(kube, f"{VM_PATH.format(ns=ns)}/{name}")
        answer = kube.call(
            "PUT", f"{VM_PATH.format(ns=ns)}/{name}", json.dumps(vm).encode(), "application/json"
        )
        if answer.status != 409:
            break
        time.sleep(0.2)
    return answer


def _take(
    kv_cluster: ControlPlane,
    kube: Kube,
    namespaces: list[str],
    kubevirt_cr: dict[str, Any],
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
    after_file: Path,
) -> Taken:
    """The fleet (running under ``before``) read back and previewed, then ``after_file`` (``after``) applied
    and each VM upgraded as KubeVirt takes an upgrade, and what KubeVirt did recorded."""
    seconds: dict[str, float] = {}
    readback = {
        (vm["metadata"]["namespace"], vm["metadata"]["name"]): vm
        for vm in _list(kube, "/apis/kubevirt.io/v1/virtualmachines", "VirtualMachine", namespaces)
    }
    objects = _list(kube, "/api/v1/namespaces", "Namespace", namespaces)
    objects += _list(kube, "/api/v1/resourcequotas", "ResourceQuota", namespaces)
    began = time.monotonic()
    # No VMI here is ever migratable (no virt-handler): KubeVirt hot-plugs no memory.
    change = preview_catalog_change(readback, objects, before, after, kubevirt_cr, migratable=False)
    seconds["preview"] = time.monotonic() - began
    preview = {(e["namespace"], e["name"]): e for e in change.entries}

    began = time.monotonic()
    observed: dict[tuple[str, str], Observed] = {}
    for (ns, name), vm in sorted(readback.items()):
        vmi = _get(kube, VMI_PATH.format(ns=ns, name=name))
        observed[(ns, name)] = Observed(
            ns,
            name,
            _captured(vm),
            expanded_before=_expanded(kube, ns, name),
            vmi_before=vmi.get("spec"),
        )
    for (ns, name), seen in observed.items():
        seen.write_before = _write(kube, ns, name)
    kv_cluster.kubectl("apply", "-f", str(after_file))
    for (ns, name), seen in observed.items():
        ops = [
            {"op": "remove", "path": f"/status/{ref}/controllerRevisionRef"} for ref in seen.revisions_before
        ]
        if not ops:
            continue
        patched = kube.call(
            "PATCH",
            f"{VM_PATH.format(ns=ns)}/{name}/status",
            json.dumps(ops).encode(),
            "application/json-patch+json",
        )
        assert patched.status == 200, patched.shown()

    def recaptured() -> bool:
        return all(
            set(_captured(_get(kube, f"{VM_PATH.format(ns=ns)}/{name}"))) == set(seen.revisions_before)
            for (ns, name), seen in observed.items()
        )

    _wait("virt-controller to capture the upgraded revisions", recaptured)
    _quiet(kube, list(observed))
    for (ns, name), seen in observed.items():
        vm = _get(kube, f"{VM_PATH.format(ns=ns)}/{name}")
        seen.revisions_after = _captured(vm)
        for ref, revision in seen.revisions_after.items():
            data = (
                _get(kube, f"/apis/apps/v1/namespaces/{ns}/controllerrevisions/{revision}").get("data") or {}
            )
            seen.revision_specs[ref] = data.get("spec")
        seen.restart = _restart_required(vm)
        seen.failure = _failure(vm)
        seen.expanded_after = _expanded(kube, ns, name)
        seen.vmi_after = _get(kube, VMI_PATH.format(ns=ns, name=name)).get("spec")
    for (ns, name), seen in observed.items():
        seen.write = _write(kube, ns, name)
    seconds["upgrade"] = time.monotonic() - began
    live = {}
    for ref, plural in (
        ("instancetypeRef", "virtualmachineclusterinstancetypes"),
        ("preferenceRef", "virtualmachineclusterpreferences"),
    ):
        listed = _get(kube, f"/apis/instancetype.kubevirt.io/v1beta1/{plural}").get("items") or []
        live[ref] = {o["metadata"]["name"]: o["spec"] for o in listed}
    return Taken(readback, objects, preview, change.namespaces, observed, live, seconds)


def _differences(taken: Taken, label: str) -> tuple[list[str], Counter[str]]:
    """VM by VM: the verdict, the VMs whose rendering changes, the refused ones with the webhook's causes, the
    restart ones with KubeVirt's message, live updates held by the VMI, the revisions captured anew exactly
    for the VMs that use an object the change edits, and each new revision holding the object as applied."""
    differences = []
    verdicts: Counter[str] = Counter()
    for key, seen in sorted(taken.observed.items()):
        entry = taken.preview[key]
        where = f"{key[0]}/{key[1]}"
        verdicts[entry["verdict"]] += 1
        if entry["verdict"] != seen.verdict:
            differences.append(
                f"{where}: preview {entry['verdict']} ({entry.get('message') or entry.get('refusal')}), "
                f"KubeVirt {seen.verdict}: restart={seen.restart!r} failure={seen.failure!r} "
                f"write={seen.write.shown()[:400] if seen.write else None} "
                f"expand changed={seen.expanded_before != seen.expanded_after}"
            )
            continue
        if seen.verdict == "refused":
            assert seen.write is not None
            ours = _causes(entry.get("refusal"))
            if ours != _causes(seen.write.body):
                differences.append(f"{where}: refused, causes {ours}; the webhook's: {seen.write.shown()}")
                continue
            outcome = entry.get("upgrade") or {}
            if outcome.get("verdict") != seen.upgrade:
                differences.append(
                    f"{where}: refused, upgraded all the same: preview {outcome.get('verdict')} "
                    f"({outcome.get('message')}), KubeVirt {seen.upgrade} (restart={seen.restart!r})"
                )
                continue
        else:
            outcome = entry
        wrong_outcome = _outcome_differs(outcome, seen)
        if wrong_outcome:
            differences.append(f"{where}: {seen.verdict}: {wrong_outcome}")
            continue
        anew = seen.revisions_after != seen.revisions_before
        if anew != (entry["verdict"] != UNAFFECTED):
            differences.append(
                f"{where}: {entry['verdict']}, KubeVirt captured {seen.revisions_before} -> {seen.revisions_after}"
            )
            continue
        spec = taken.readback[key]["spec"]
        wrong = [
            ref
            for ref, captured in seen.revision_specs.items()
            if not _same(captured, taken.live[ref].get(spec[_MEMBERS[ref]]["name"]))
        ]
        if wrong:
            differences.append(f"{where}: the new revisions of {wrong} do not hold the objects applied")
            continue
        TALLY[f"{label}: equal, {seen.verdict}"] += 1
    TALLY[f"{label}: differ"] += len(differences)
    kubevirt_did = Counter(
        f"{seen.verdict} ({seen.upgrade}): RestartRequired {seen.restart is not None}, "
        f"failure {seen.failure is not None}, "
        f"revisions anew {seen.revisions_after != seen.revisions_before}, "
        f"VMI {'none' if seen.vmi_before is None else 'changed' if seen.vmi_before != seen.vmi_after else 'same'}"
        for seen in taken.observed.values()
    )
    print(f"{label}: verdicts {dict(verdicts)}; seconds {taken.seconds}")
    for what, count in sorted(kubevirt_did.items()):
        print(f"{count:4d}  {what}")
    return differences, verdicts


def _outcome_differs(outcome: dict[str, Any], seen: Observed) -> str:
    """How the preview's ``outcome`` of the upgrade (an entry, or a refused entry's ``upgrade``) differs from
    what KubeVirt did, or ''."""
    if seen.upgrade == "restart" and outcome.get("message") != seen.restart:
        return f"restart, message {outcome.get('message')!r}; KubeVirt's {seen.restart!r}"
    if seen.upgrade != "live" and seen.vmi_before != seen.vmi_after:
        return f"{seen.upgrade}, yet KubeVirt changed the running VMI"
    if seen.upgrade == "live":
        held = {u["path"]: u.get("value") for u in outcome.get("liveUpdates") or []}
        if not held or any(_at({"spec": seen.vmi_after}, p) != v for p, v in held.items()):
            return f"live {held}; the VMI: {json.dumps(seen.vmi_after)[:600]}"
    changed = seen.expanded_before != seen.expanded_after
    if seen.upgrade != "error" and bool(outcome.get("patch")) != changed:
        return f"preview patch {outcome.get('patch')}; virt-api's expand-spec changed: {changed}"
    return ""


def test_the_preview_of_the_read_back_fleet_is_what_kubevirt_did(upgrade: Upgrade) -> None:
    """common-instancetypes v1.6.0 -> v1.7.0, VM by VM (:func:`_differences`)."""
    differences, verdicts = _differences(upgrade.taken, "catalog upgrade")
    for name, answer in upgrade.refused_at_create.items():
        TALLY["catalog upgrade: refused by KubeVirt under v1.6.0 (left out)"] += 1
        print(f"{name}: {answer.shown()[:300]}")
    total = len(upgrade.taken.observed)
    assert not differences, f"{len(differences)} of {total} differ:\n" + "\n".join(differences)
    assert total >= 24, upgrade.refused_at_create
    # the fleet shows each outcome the upgrade has
    for verdict in ("refused", "restart", "stopped", UNCHANGED, UNAFFECTED):
        assert verdicts[verdict], f"no VM {verdict}: {dict(verdicts)}"


_RESIZED = ({"name": "u1.small"}, {"name": "u1.medium"})


def test_a_halted_vm_the_webhook_now_refuses_cannot_be_started(upgrade: Upgrade) -> None:
    """What ``refused`` means for a halted VM: ``virtctl start`` (virt-api's start, which writes the VM's
    runStrategy) is refused with the webhook's message the preview gave."""
    assert upgrade.starts
    for key, run in sorted(upgrade.starts.items()):
        causes = (upgrade.preview[key].get("refusal") or {}).get("details", {}).get("causes") or [{}]
        said = str(causes[0].get("message"))
        assert run.returncode != 0 and said in run.stderr, (key, said, run.stdout, run.stderr)
    print({f"{k[0]}/{k[1]}": run.stderr.strip() for k, run in upgrade.starts.items()})


def _resized(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``objects`` with u1.small given a second vCPU and u1.medium 1Gi more memory."""
    out: list[dict[str, Any]] = json.loads(json.dumps(objects))
    for obj in out:
        if obj["kind"] == "VirtualMachineClusterInstancetype" and obj["metadata"]["name"] == "u1.small":
            obj["spec"]["cpu"]["guest"] = 2
        if obj["kind"] == "VirtualMachineClusterInstancetype" and obj["metadata"]["name"] == "u1.medium":
            obj["spec"]["memory"]["guest"] = "5Gi"
    return out


def test_a_second_change_resizing_two_instancetypes_is_previewed_as_kubevirt_takes_it(
    upgrade: Upgrade, kv_cluster: ControlPlane, kube: Kube, tmp_path: Path
) -> None:
    """After the upgrade, the platform team edits two instancetypes the fleet runs on: u1.small gets a second
    vCPU (KubeVirt adds a socket to the running VMI, within its maxSockets; an arm64 VM cannot hot-plug CPUs)
    and u1.medium 1Gi more memory (no VM here is migratable: a restart). The VMs that needed a restart after
    the first change use neither, so every VM the second touches runs as the preview assumes: as started
    under the first change's catalog."""
    restarting = [k for k, e in upgrade.preview.items() if e["verdict"] == "restart"]
    assert not [k for k in restarting if upgrade.readback[k]["spec"].get("instancetype") in _RESIZED], (
        restarting
    )
    after = _stamped(_catalog(AFTER))
    resized = _resized(after)
    resized_file = tmp_path / "v1.7.0-resized.yaml"
    resized_file.write_text(yaml.safe_dump_all(resized))
    taken = _take(kv_cluster, kube, upgrade.namespaces, upgrade.kubevirt, after, resized, resized_file)
    differences, verdicts = _differences(taken, "instancetypes resized")
    assert not differences, f"{len(differences)} of {len(taken.observed)} differ:\n" + "\n".join(differences)
    for verdict in ("live", "restart", UNAFFECTED):
        assert verdicts[verdict], f"no VM {verdict}: {dict(verdicts)}"


def _same(a: Any, b: Any) -> bool:
    """Equal, quantities by value (Go writes ``1.5Gi`` as ``1536Mi``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, str) and isinstance(b, str) and a != b:
        try:
            return cmp(parse_quantity(a), parse_quantity(b)) == 0
        except QuantityError:
            return False
    return bool(a == b)


def _at(obj: Any, pointer: str) -> Any:
    for part in pointer.lstrip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(obj, list):
            obj = obj[int(part)] if part.isdigit() and int(part) < len(obj) else None
        elif isinstance(obj, dict):
            obj = obj.get(part)
        else:
            return None
    return obj


def _cli(upgrade: Upgrade, fleet: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``kubevirt-expand preview --catalog-before v1.6.0 --catalog-after v1.7.0 -f fleet -o json``, the
    KubeVirt CR as ``kubectl get kubevirt -o yaml`` prints it."""
    kubevirt = tmp_path / "kubevirt.yaml"
    kubevirt.write_text(
        yaml.safe_dump({k: upgrade.kubevirt[k] for k in ("apiVersion", "kind", "metadata", "spec", "status")})
    )
    command = ["preview", "--catalog-before", str(BEFORE), "--catalog-after", str(upgrade.after_file)]
    command += ["-f", str(fleet), "--kubevirt", str(kubevirt), "-o", "json"]
    return subprocess.run(
        [sys.executable, "-m", "apiserver.cli", *command],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _answer(entry: dict[str, Any]) -> tuple[Any, ...]:
    upgrade = entry.get("upgrade") or {}
    return (
        entry["verdict"],
        entry.get("message"),
        _causes(entry.get("refusal")),
        entry.get("patch"),
        upgrade.get("verdict"),
        upgrade.get("message"),
    )


def _same_answers(upgrade: Upgrade, run: subprocess.CompletedProcess[str], source: str) -> None:
    """The command's answer equals the read-back fleet's preview: every VM's verdict, message, refusal causes
    and patch, the namespaces' summaries, the summary line, and exit status 1 (VMs to restart, refused)."""
    assert run.returncode == 1, run.stderr
    print(run.stderr.strip())
    counts = Counter(e["verdict"] for e in upgrade.preview.values())
    shown = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    assert f"catalog change: objects 21 edited; {len(upgrade.preview)} VMs: {shown} (" in run.stderr
    answer = json.loads(run.stdout)
    items = {(e["namespace"], e["name"]): e for e in answer["items"]}
    assert set(items) == set(upgrade.preview)
    differences = []
    for key, entry in sorted(upgrade.preview.items()):
        got = items[key]
        mine = _answer(got)
        read_back = _answer(entry)
        if mine != read_back:
            differences.append(f"{key[0]}/{key[1]}: {source} {mine}; read back {read_back}")
    if answer["namespaces"] != upgrade.summaries:
        differences.append(f"namespaces: {source} {answer['namespaces']}; read back {upgrade.summaries}")
    TALLY[f"catalog upgrade: {source}, same answer"] += len(items) - len(differences)
    TALLY[f"catalog upgrade: {source}, differ"] += len(differences)
    assert not differences, "\n".join(differences)


def test_the_same_fleet_from_its_files_gives_the_same_answers(upgrade: Upgrade, tmp_path: Path) -> None:
    """The fleet as its users wrote it (no status, no defaults), its namespaces and quota as written."""
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in upgrade.namespaces
    ]
    for obj in upgrade.objects:
        if obj["kind"] == "ResourceQuota":
            meta = {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"]}
            docs.append({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta, "spec": obj["spec"]})
    (fleet / "namespaces.yaml").write_text(yaml.safe_dump_all(docs))
    for ns in upgrade.namespaces:
        written = [vm for vm in upgrade.written if vm["metadata"]["namespace"] == ns]
        (fleet / f"{ns}.yaml").write_text(yaml.safe_dump_all(written))
    _same_answers(upgrade, _cli(upgrade, fleet, tmp_path), "from files")


def test_kubectls_read_back_through_the_command_line_gives_the_same_answers(
    upgrade: Upgrade, tmp_path: Path
) -> None:
    """The fleet as ``kubectl get vm,resourcequota -n NS -o yaml`` and ``kubectl get namespace -o yaml`` print
    it (``List`` documents, status included), read before v1.7.0 was applied: the command line's recipe."""
    _same_answers(upgrade, _cli(upgrade, upgrade.kubectl_dir, tmp_path), "kubectl's read-back")


def _bigger(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``objects`` with every u1 instancetype given 1Gi more guest memory: a change of what the pods
    request."""
    out: list[dict[str, Any]] = json.loads(json.dumps(objects))
    for obj in out:
        if obj["kind"] == "VirtualMachineClusterInstancetype" and obj["metadata"]["name"].startswith("u1."):
            guest = parse_quantity(obj["spec"]["memory"]["guest"])
            obj["spec"]["memory"]["guest"] = f"{int(guest.value) // 2**30 + 1}Gi"
    return out


def test_the_quota_the_preview_counts_is_what_kube_apiserver_counted(upgrade: Upgrade) -> None:
    """A further change that moves requests (the u1 instancetypes given 1Gi more), previewed on the fleet's files,
    whose quota has no status (the preview adds up the pods it renders for the running VMs), and on the
    read-back fleet, whose quota's ``status.used`` is what kube-apiserver's quota admission counted of the
    virt-launcher pods virt-controller created: the same change, the same verdict, and the same use but for
    one thing of this plane's kube-apiserver. KubeVirt makes ``guest-console-log`` an init container that keeps
    running (``restartPolicy: Always``, a sidecar whose requests Kubernetes adds to the pod's); kube-apiserver
    1.28, with SidecarContainers off, drops the field and counts it as an init container that ends, so the
    quota here counts each pod that much less than the preview (a cluster of Kubernetes 1.29 or later counts
    it)."""
    after = _stamped(_catalog(AFTER))
    bigger = _bigger(after)
    read_back = preview_catalog_change(upgrade.readback, upgrade.objects, after, bigger, upgrade.kubevirt)
    written = {(vm["metadata"]["namespace"], vm["metadata"]["name"]): vm for vm in upgrade.written}
    as_written = []
    for obj in upgrade.objects:
        meta = {k: obj["metadata"][k] for k in ("name", "namespace") if k in obj["metadata"]}
        written_obj = {"apiVersion": "v1", "kind": obj["kind"], "metadata": meta}
        if obj["kind"] == "ResourceQuota":
            written_obj["spec"] = obj["spec"]
        as_written.append(written_obj)
    from_files = preview_catalog_change(written, as_written, after, bigger, upgrade.kubevirt)
    ns = upgrade.namespaces[0]
    summaries = (
        {s["namespace"]: s for s in read_back.namespaces},
        {s["namespace"]: s for s in from_files.namespaces},
    )
    read, files = (by_ns.get(ns) or {} for by_ns in summaries)
    assert read.get("quotas") and files.get("quotas"), (read_back.namespaces, from_files.namespaces)
    print(f"{ns}: read back {read}\n  from files {files}")
    assert {k: v for k, v in read.items() if k != "quotas"} == {
        k: v for k, v in files.items() if k != "quotas"
    }
    quota, computed = read["quotas"][0], files["quotas"][0]
    assert (quota["fits"], quota["hard"]) == (computed["fits"], computed["hard"])
    counted = resource_list(
        next(o for o in upgrade.objects if o["kind"] == "ResourceQuota")["status"]["used"]
    )
    assert _same(quota["used"], resource_text(counted))
    dropped: ResourceList = {}
    for pod in upgrade.pods:
        for init in pod["spec"].get("initContainers") or []:
            if init["name"] == "guest-console-log" and init.get("restartPolicy") != "Always":
                for name, q in resource_list(init["resources"]["requests"]).items():
                    dropped[f"requests.{name}"] = add(dropped.get(f"requests.{name}", zero()), q)
    expected = {k: add(q, dropped.get(k, zero())) for k, q in counted.items()}
    assert _same(computed["used"], resource_text(expected)), (computed["used"], counted, dropped)
    moved = {
        k: sub(parse_quantity(computed["usedAfter"][k]), parse_quantity(computed["used"][k])) for k in counted
    }
    assert _same(quota["usedAfter"], resource_text({k: add(q, moved[k]) for k, q in counted.items()}))
