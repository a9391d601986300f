"""One item of the collection: a VM's rendering, encoded once, with what list, Table and watch need.

The item's JSON is built so that the rendered VM is its last member: GET expand-spec answers with the
slice of the item's bytes that is the rendered VM (``vm_span``), so one encoding serves the item, the
list (items joined) and expand-spec, and nothing is encoded per request.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from apiserver.render import ExpandError
from apiserver.render.kubernetes.quantitymath import readable_bytes
from apiserver.render.launcher import launch
from apiserver.render.objects import ObjectRef
from apiserver.render.summary import summarize
from apiserver.render.virtconfig import cluster_config
from apiserver.render.vmcontroller.drift import VMDrift
from apiserver.sources.access import Reviews, reviews_of

GROUP = "expand.kubevirt-expand.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "ExpandedVirtualMachine"
LIST_KIND = "ExpandedVirtualMachineList"
PLURAL = "expandedvirtualmachines"
SINGULAR = "expandedvirtualmachine"
SHORT_NAMES = ("evm", "evms")

Key = tuple[str, str]  # (namespace, name)


def dumps(obj: Any) -> bytes:
    """Compact JSON as the server writes it everywhere (orjson; the standard library for integers
    beyond 64 bits, which only a request body can carry)."""
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def etag_of(body: bytes | memoryview) -> str:
    """A strong validator computed from the exact response bytes."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


@dataclass(slots=True, eq=False)
class Item:
    """A VM's rendering as the collection serves it. Immutable once made (a change makes a new one)."""

    key: Key
    vm: Mapping[str, Any]  # the VM instance of the cache it was rendered from
    labels: Mapping[str, str]
    created: str  # creationTimestamp of the VM ("" if none)
    version: str  # resourceVersion (text) of the change that made this item
    body: bytes  # the item's JSON
    vm_span: tuple[int, int] | None  # where the rendered VM is in ``body``; None when rendering failed
    etag: str  # of the rendered VM's bytes (GET expand-spec's ETag)
    warnings: tuple[str, ...]
    error: ExpandError | None
    cells: tuple[Any, ...]  # Table cells but NAME and AGE (see TABLE_COLUMNS)
    # The values field selectors read beyond the key (see apiserver.sources.rendered.selectors.FIELDS).
    fields: Mapping[str, str]
    # What a caller must pass to be shown the rendering (the tenancy model, apiserver.sources.access:
    # the PVC and the like inferFromVolume read, a revision holding no instancetype or preference; with
    # --authorize-references every object read).
    reviews: Reviews
    # GET expand-spec's reviews when they differ from ``reviews``: the rendering's reads alone. The drift's
    # live objects (a VM pinned to a revision) are the collection's business; KubeVirt's expand-spec of
    # such a VM reads only its revisions, so a caller is not reviewed for what GET never shows.
    rendering_reviews: Reviews | None = None
    # The resourceVersion of the item as shown redacted ("": ``version``): that of the last change of what
    # :func:`redacted` leaves of it, set by the store when it replaces an item. A change of only what a
    # caller shown it redacted may not read (another namespace's DataSource, an instancetype its label
    # names) gives a new ``version`` but keeps this one, so the caller sees no new version and no event.
    redacted_version: str = ""

    @property
    def shown_redacted_version(self) -> str:
        """The resourceVersion a caller shown this item redacted sees."""
        return self.redacted_version or self.version

    @property
    def get_reviews(self) -> Reviews:
        """What a caller must pass to be shown GET expand-spec's answer from this item."""
        return self.reviews if self.rendering_reviews is None else self.rendering_reviews

    @property
    def rendered(self) -> bytes | None:
        """GET expand-spec's body: the rendered VM."""
        if self.vm_span is None:
            return None
        start, end = self.vm_span
        return self.body[start:end]

    def with_version(self, version: str) -> bytes:
        """The item's JSON under another resourceVersion (a watch event's copy)."""
        old = b'"resourceVersion":"' + self.version.encode() + b'"'
        return self.body.replace(old, b'"resourceVersion":"' + version.encode() + b'"', 1)


# name, type, format, description, priority (1: -o wide only), as metav1.TableColumnDefinition.
TABLE_COLUMNS: tuple[tuple[str, str, str, str, int], ...] = (
    ("Name", "string", "name", "Name of the VirtualMachine", 0),
    ("Instancetype", "string", "", "Instancetype the VM references", 0),
    ("Preference", "string", "", "Preference the VM references", 0),
    ("CPU", "integer", "", "vCPUs of the rendered VM (sockets x cores x threads)", 0),
    ("Memory", "string", "", "Guest memory of the rendered VM", 0),
    ("CPU-Request", "string", "", "CPU the VM's virt-launcher pod requests (KubeVirt's template service)", 0),
    (
        "Memory-Request",
        "string",
        "",
        "Memory the VM's virt-launcher pod requests, its overhead included, in binary units (rounded up to "
        "a whole Mi where it is none; summary.launcherPod has the exact quantity)",
        0,
    ),
    ("Status", "string", "", "Rendered, or the reason the rendering failed", 0),
    (
        "Stale",
        "boolean",
        "",
        "Whether the live instancetype or preference changed since the revision the VM captured was taken",
        0,
    ),
    (
        "Upgrade",
        "string",
        "",
        "For a stale VM, what taking the latest revisions would do: live, restart, refused or error",
        0,
    ),
    ("Age", "string", "", "Time since the VM was created", 0),
    ("Topology", "string", "", "sockets/cores/threads", 1),
    ("Instancetype-Source", "string", "", "ControllerRevision the instancetype was read from, or live", 1),
    ("Preference-Source", "string", "", "ControllerRevision the preference was read from, or live", 1),
    ("Message", "string", "", "Why the rendering failed", 1),
)


def _matcher_cell(found: Mapping[str, Any] | None) -> str:
    if not found:
        return "<none>"
    name = found.get("name")
    if name:
        return str(name)
    return "<inferFromVolume>" if found.get("inferFromVolume") else "<none>"


def _source_cell(found: Mapping[str, Any] | None) -> str:
    if not found:
        return "<none>"
    return str(found.get("revisionName") or "live")


def table_cells(summary: Mapping[str, Any], condition: Mapping[str, Any]) -> tuple[Any, ...]:
    cpu = summary.get("cpu")
    memory = summary.get("memory") or {}
    ok = condition.get("status") == "True"
    return (
        _matcher_cell(summary.get("instancetype")),
        _matcher_cell(summary.get("preference")),
        cpu["vcpus"] if cpu else None,  # an integer column: null where there is none, as kube-apiserver sends
        memory.get("guest") or "<none>",
        "Rendered" if ok else str(condition.get("reason") or "Failed"),
        f"{cpu['sockets']}/{cpu['cores']}/{cpu['threads']}" if cpu else "<none>",
        _source_cell(summary.get("instancetype")),
        _source_cell(summary.get("preference")),
        "" if ok else str(condition.get("message") or ""),
        _request_cell(summary, "cpu"),
        _readable(_request_cell(summary, "memory")),
        _stale_cell(summary),
        _upgrade_cell(summary),
    )


def _stale_cell(summary: Mapping[str, Any]) -> bool | None:
    """A boolean column: null for a VM with neither matcher (and for an item shown redacted)."""
    stale = summary.get("stale")
    return stale if isinstance(stale, bool) else None


def _upgrade_cell(summary: Mapping[str, Any]) -> str | None:
    upgrade = summary.get("upgrade")
    return str(upgrade.get("verdict")) if isinstance(upgrade, Mapping) else None


def _readable(memory: str | None) -> str | None:
    return readable_bytes(memory) if memory is not None else None


def _request_cell(summary: Mapping[str, Any], name: str) -> str | None:
    """The pod's total request of ``name``; null when the pod could not be rendered."""
    pod = summary.get("launcherPod")
    if not isinstance(pod, Mapping):
        return None
    got = ((pod.get("total") or {}).get("requests") or {}).get(name)
    return str(got) if got is not None else None


def launcher_pod(rendered: Mapping[str, Any], kubevirt: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The resources of the virt-launcher pod KubeVirt would create for the rendered VM (no quota or
    namespace labels assumed: they change limits only; the PVCs its volumes name taken as existing: the
    store does not read them, and they change no resource), or None where KubeVirt would create none."""
    try:
        arch = cluster_config(kubevirt).default_architecture or "amd64"
        return launch(rendered, kubevirt, arch=arch, assume_pvcs=True).pod.to_json()
    except ExpandError:
        return None


def add_upgrade_requests(
    summary: dict[str, Any], pod: Mapping[str, Any], upgraded: Mapping[str, Any] | None
) -> None:
    """What taking the latest revisions changes in the pod's requests (``upgrade.requests``: before and
    after), for a stale VM whose upgrade renders; nothing when they are the same."""
    before = dict((pod.get("total") or {}).get("requests") or {})
    after = dict(((upgraded or {}).get("total") or {}).get("requests") or {})
    if upgraded is not None and before != after and isinstance(summary.get("upgrade"), dict):
        summary["upgrade"]["requests"] = {"before": before, "after": after}


def make_item(
    key: Key,
    vm: Mapping[str, Any],
    rendered: Mapping[str, Any] | None,
    error: ExpandError | None,
    warnings: Sequence[str],
    objects: Mapping[ObjectRef, Any],
    version: str,
    kubevirt: Mapping[str, Any] | None = None,
    drift: VMDrift | None = None,
    drift_read: Mapping[ObjectRef, Any] | None = None,
) -> Item:
    """Encode one item; ``rendered`` is the VM GET expand-spec returns, None when ``error`` says why not.
    ``drift``: the VM's drift; ``drift_read``: the objects computing it read beyond the rendering's
    (the live objects of pinned VMs), which a caller must pass the reviews of as well."""
    meta = vm.get("metadata") or {}
    labels = meta.get("labels") or {}
    created = meta.get("creationTimestamp") or ""
    out_meta: dict[str, Any] = {"name": key[1], "namespace": key[0], "resourceVersion": version}
    if created:
        out_meta["creationTimestamp"] = created
    if labels:
        out_meta["labels"] = labels
    parts = summarize(vm, rendered, error, objects)
    rendering = reviews_of(objects)
    if drift is not None:
        add_drift(parts, drift)
    if rendered is not None:
        pod = launcher_pod(rendered, kubevirt)
        if pod is not None:
            parts["summary"]["launcherPod"] = pod
            upgraded = drift.upgrade.rendered if drift is not None and drift.upgrade is not None else None
            if upgraded is not None:
                add_upgrade_requests(parts["summary"], pod, launcher_pod(upgraded, kubevirt))
    head_doc = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": out_meta,
        "summary": parts["summary"],
        "status": {"conditions": parts["conditions"]},
    }
    head = dumps(head_doc)
    if rendered is None:
        # A copy: orjson's answer keeps the capacity it was written into (4 KiB however short it is).
        body, span, etag = bytes(memoryview(head)), None, ""
    else:
        vm_bytes = dumps(rendered)
        prefix = head[:-1] + b',"virtualMachine":'
        body = prefix + vm_bytes + b"}"
        span = (len(prefix), len(prefix) + len(vm_bytes))
        etag = etag_of(vm_bytes)
    return Item(
        key=key,
        vm=vm,
        labels=labels if isinstance(labels, Mapping) else {},
        created=str(created),
        version=version,
        body=body,
        vm_span=span,
        etag=etag,
        warnings=tuple(warnings),
        error=error,
        cells=table_cells(parts["summary"], parts["conditions"][0]),
        fields=selectable(parts["summary"]),
        reviews=reviews_of({**objects, **drift_read}) if drift_read else rendering,
        rendering_reviews=rendering if drift_read else None,
    )


def add_drift(parts: dict[str, Any], drift: VMDrift) -> None:
    """The drift into an item's summary (each matcher's ``stale``, the VM's ``stale`` and, when stale,
    ``upgrade``) and its ``Stale`` condition; nothing for a VM with neither matcher."""
    condition = drift.condition()
    if condition is None:
        return
    summary = parts["summary"]
    for member in ("instancetype", "preference"):
        found, shown = drift.of(member), summary.get(member)
        if found is not None and isinstance(shown, dict):
            shown["stale"] = found.stale
    summary["stale"] = drift.stale
    if drift.upgrade is not None:
        summary["upgrade"] = {"verdict": drift.upgrade.verdict, "message": drift.upgrade.message}
    parts["conditions"].append(condition)


# Items of VMs on the same objects in the same state carry one mapping: a dict of five strings per item
# would be ~650 bytes of each VM's ~4 KiB.
_FIELDS: dict[tuple[str, ...], Mapping[str, str]] = {}
_FIELDS_SIZE = 4096
_FIELD_NAMES = (
    "status.stale",
    "spec.instancetype.name",
    "spec.instancetype.kind",
    "spec.preference.name",
    "spec.preference.kind",
)


def selectable(summary: Mapping[str, Any]) -> Mapping[str, str]:
    """The field selectors' values of an item (``""`` where the VM has no such matcher)."""
    values = ["true" if summary.get("stale") is True else "false"]
    for member in ("instancetype", "preference"):
        found = summary.get(member)
        found = found if isinstance(found, Mapping) else {}
        name = str(found.get("name") or "")
        values += [name, str(found.get("kind") or "") if name else ""]
    key = tuple(values)
    known = _FIELDS.get(key)
    if known is None:
        if len(_FIELDS) >= _FIELDS_SIZE:
            _FIELDS.clear()
        known = _FIELDS[key] = dict(zip(_FIELD_NAMES, key, strict=True))
    return known


# What a redacted item says, the same for every item and caller: which objects its rendering read, or
# even of which kinds, would tell whether objects of another namespace exist (a DataSource that points
# to a PVC is one more read than a DataSource that does not exist).
REDACTED_MESSAGE = (
    "rendering this VM reads objects you may not get; GET expand-spec renders it with your rights"
)


def redacted(item: Item, version: str | None = None) -> bytes:
    """The item for a caller who may not read everything its rendering read: the VM's name, labels and
    matchers (what the VM itself says), no rendering, and a condition that says why in words that do
    not vary with what exists or what an unreadable object holds. ``version``: the resourceVersion to
    carry (a watch event's); by default :attr:`Item.shown_redacted_version`, which moves only when
    this redacted form changes."""
    doc = orjson.loads(item.body)
    doc.pop("virtualMachine", None)
    summary = doc.get("summary") or {}
    summary.pop("cpu", None)
    summary.pop("memory", None)
    summary.pop("launcherPod", None)
    summary.pop("stale", None)  # the live objects' state, which the caller may not read
    summary.pop("upgrade", None)
    for key in ("instancetype", "preference"):  # which was found (a pinned revision, or live) is not told
        matcher = summary.get(key)
        if isinstance(matcher, dict):
            matcher.pop("source", None)
            matcher.pop("revisionName", None)
            matcher.pop("deprecated", None)  # a label of an object the caller may not read
            matcher.pop("stale", None)
    doc["status"] = {
        "conditions": [
            {"type": "Rendered", "status": "Unknown", "reason": "Forbidden", "message": REDACTED_MESSAGE}
        ]
    }
    doc["metadata"]["resourceVersion"] = item.shown_redacted_version if version is None else version
    return orjson.dumps(doc)


def may_be_redacted(item: Item) -> bool:
    """Whether any caller can be shown ``item`` redacted: its rendering read something some caller
    must pass a review for (with ``--authorize-references``, anything at all)."""
    return bool(item.reviews.every or item.reviews.model)


def same_redacted(a: Item, b: Item) -> bool:
    """Whether two renderings of a VM look the same redacted (everything but the resourceVersion).

    What :func:`redacted` leaves is the VM's own (its name, labels, creation time and matchers): two
    renderings of the very same VM instance, as when an object the VM depends on changed, or of VMs
    alike in those, look the same without encoding either (a redaction costs about as much as a
    rendering); only VMs that differ there are compared redacted."""
    if a.vm is b.vm or _redaction_inputs(a) == _redaction_inputs(b):
        return True
    return redacted(a, "") == redacted(b, "")


def _redaction_inputs(item: Item) -> tuple[Any, ...]:
    """What of the VM :func:`redacted` keeps: equal inputs, equal redacted forms."""
    vm = item.vm
    meta = vm.get("metadata")
    spec = vm.get("spec")
    labels = meta.get("labels") if isinstance(meta, Mapping) else None
    if not isinstance(spec, Mapping):
        return (labels, item.created, None, None)
    return (labels, item.created, spec.get("instancetype"), spec.get("preference"))


def same_content(a: Item, b: Item) -> bool:
    """Whether two renderings of a VM answer the same (everything but the resourceVersion)."""
    if a.warnings != b.warnings:
        return False
    return a.body == b.body or a.body == b.with_version(a.version)
