"""A source as request handlers hold it: read only within a request's :class:`~apiserver.sources.scope.Scope`.

The server reads the cluster with its own account, which sees every namespace; a handler must not.
:class:`Reads` keeps the source to itself and offers one thing, :meth:`Reads.within`, which takes the
request's scope: the VM it names, and renderings of VMs of its namespace through the caller's tenancy
gate (which reviews every namespaced object outside the scope, whatever its kind); a VM as it runs
(:meth:`ScopedReads.running_vm`: the VM, its VMI and its start revision) and any pure evaluation over the
source (:meth:`ScopedReads.evaluate`, the change preview's); the fleet as the caller may read it
(:meth:`ScopedReads.fleet`, the catalog change preview's: the VMs of the namespaces where they may list
VMs, and a count of the others' that no namespace can be told from). The next readers of the cluster on
a caller's behalf belong here, behind the same scope.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from apiserver.render import ExpandError, ExpandResult, expand
from apiserver.render.catalogchange import used_objects
from apiserver.render.kubernetes.errors import VM_GROUP, status
from apiserver.render.objects import CONTROLLER_REVISION, VIRTUAL_MACHINE_INSTANCE, ObjectLookup, ObjectRef
from apiserver.render.vmcontroller.revision import is_start_revision_of, revision_name
from apiserver.sources.access import AccessRefused, Read
from apiserver.sources.base import MISSING, HoldsFleet, Missing, Source, SourceUnavailable
from apiserver.sources.gather import (
    Rendered,
    evaluate_and_record,
    evaluate_with_source,
    peekable,
    render_and_record,
)
from apiserver.sources.scope import Scope

T = TypeVar("T")


class OutOfScope(AccessRefused):
    """A read the request's scope does not cover: a bug of the caller, refused like any other read."""

    def __init__(self, scope: Scope, namespace: str, name: str) -> None:
        read = Read(scope.verb, scope.group, scope.resource, namespace, name)
        body = status(403, "Forbidden", f"{read.describe()}: outside the request's scope")
        super().__init__(read, body)


@dataclass(frozen=True, slots=True)
class RunningVM:
    """A stored VM as it runs: the VM, its running VMI (None: stopped) and its start revision (None:
    none found), read for a caller."""

    vm: Mapping[str, Any]
    vmi: Mapping[str, Any] | None
    start_revision: Mapping[str, Any] | None


def start_revision_name(vm: Mapping[str, Any], vmi: Mapping[str, Any]) -> str | None:
    """The ControllerRevision ``revision-start-vm-<uid>-<generation>`` the running VMI was started from:
    named by the VMI's ``status.virtualMachineRevisionName``, else by the VM generation virt-controller
    wrote on it (``kubevirt.io/vm-generation``)."""
    status = vmi.get("status") or {}
    named = status.get("virtualMachineRevisionName") if isinstance(status, Mapping) else None
    if isinstance(named, str) and named:
        return named
    meta = vmi.get("metadata") or {}
    annotations = meta.get("annotations") or {} if isinstance(meta, Mapping) else {}
    generation = annotations.get("kubevirt.io/vm-generation") if isinstance(annotations, Mapping) else None
    uid = (vm.get("metadata") or {}).get("uid")
    if isinstance(generation, str) and generation.isdigit() and isinstance(uid, str) and uid:
        return revision_name(uid, int(generation))
    return None


VMS_READ = ("kubevirt.io", "virtualmachines")
VOLUME_KINDS = frozenset({"PersistentVolumeClaim", "DataVolume", "DataSource", "VolumeSnapshot"})


def list_vms(namespace: str) -> Read:
    """The review that decides whether a caller reads the VMs of ``namespace`` ("": every namespace)."""
    return Read("list", *VMS_READ, namespace)


@dataclass(frozen=True, slots=True)
class LiveFleet:
    """The fleet as one caller may read it: ``vms`` of the namespaces ``readable`` (None: every one),
    the live ``catalog`` (the cluster kinds, and the namespaced kinds of those namespaces only), and of
    the other namespaces only what :meth:`hidden` counts."""

    vms: dict[tuple[str, str], Mapping[str, Any]]
    catalog: list[Mapping[str, Any]]
    readable: frozenset[str] | None
    # For each VM the caller may not read: the cluster-wide objects it names (no VM, no namespace).
    _hidden_uses: tuple[frozenset[ObjectRef], ...] = field(default=(), repr=False)

    def hidden(self, touched: Collection[ObjectRef]) -> int:
        """How many VMs of the namespaces the caller may not read name one of the cluster-wide objects
        ``touched``: one total, from names alone (nothing of them is rendered or read for the caller)."""
        wide = {ref for ref in touched if not ref.namespace}
        return sum(1 for uses in self._hidden_uses if uses & wide)


class ScopedReads:
    """What one request may read from the source."""

    __slots__ = ("_peekable", "_source", "scope")

    def __init__(self, source: Source, scope: Scope) -> None:
        self._source = source
        self._peekable = peekable(source)
        self.scope = scope

    def _vm_key(self) -> tuple[str, str]:
        scope = self.scope
        if scope.namespace is None or scope.name is None:
            raise OutOfScope(scope, scope.namespace or "", scope.name or "")
        return scope.namespace, scope.name

    def peek_vm(self) -> Mapping[str, Any] | Missing | None:
        """The VM the scope names, when the source holds it without I/O (else MISSING)."""
        if self._peekable is None:
            return MISSING
        return self._peekable.peek_vm(*self._vm_key())

    async def get_vm(self) -> Mapping[str, Any] | None:
        """The VM the scope names, as stored (None: there is none)."""
        return await self._source.get_vm(*self._vm_key())

    async def render(
        self,
        vm: Mapping[str, Any],
        *,
        presets: bool = False,
        validate: bool = False,
        exact_names: bool = False,
        run: Callable[[Callable[[], ExpandResult]], Awaitable[ExpandResult]] | None = None,
    ) -> Rendered:
        """Render ``vm``, a VM of the scope's namespace, reading through the caller's gate."""
        namespace = str((vm.get("metadata") or {}).get("namespace") or "")
        if not self.scope.covers(namespace):
            raise OutOfScope(self.scope, namespace, "")
        return await render_and_record(
            self._source,
            vm,
            presets=presets,
            validate=validate,
            exact_names=exact_names,
            run=run,
            gate=self.scope.gate,
        )

    async def running_vm(self, name: str) -> RunningVM | None:
        """The VM ``name`` of the scope's namespace as it runs (None: no such VM). The caller must be
        allowed to ``get`` the VM, its VMI and the start revision the VMI names (each reviewed before it
        is read); a revision the VM does not own is no start revision."""
        scope = self.scope
        namespace = scope.namespace
        if namespace is None or not scope.covers(namespace, name):
            raise OutOfScope(scope, namespace or "", name)
        gate = scope.gate
        if gate is not None:
            await gate.review(Read("get", VM_GROUP, "virtualmachines", namespace, name))
        vm = await self._source.get_vm(namespace, name)
        if vm is None:
            return None
        if gate is not None:
            await gate.review(Read("get", VM_GROUP, "virtualmachineinstances", namespace, name))
        vmi = await self._source.get(ObjectRef(VIRTUAL_MACHINE_INSTANCE, namespace, name))
        revision = None
        if vmi is not None:
            named = start_revision_name(vm, vmi)
            if named:
                revision = await self._start_revision(vm, namespace, named)
        return RunningVM(vm, vmi, revision)

    async def _start_revision(
        self, vm: Mapping[str, Any], namespace: str, name: str
    ) -> Mapping[str, Any] | None:
        """The start revision the VMI names, for the caller: reviewed (``get controllerrevisions``) before
        it is read, and used only when it is that VM's own (:func:`is_start_revision_of`). Any other
        revision, a StatefulSet's say, is no start revision, as for virt-controller, and nothing of it
        reaches the answer."""
        gate = self.scope.gate
        if gate is not None:
            await gate.review(Read("get", "apps", "controllerrevisions", namespace, name))
        found = await self._source.get(ObjectRef(CONTROLLER_REVISION, namespace, name))
        return found if found is not None and is_start_revision_of(vm, found) else None

    async def evaluate(
        self,
        work: Callable[[ObjectLookup, Mapping[str, Any] | None], T],
        run: Callable[[Callable[[], T]], Awaitable[T]] | None = None,
    ) -> T:
        """Run the pure ``work`` over the source, every object it reads read through the caller's gate
        (each pass through ``run`` when given)."""
        return await evaluate_with_source(self._source, work, gate=self.scope.gate, run=run)

    async def fleet(self, namespaces: Sequence[str] | None = None, *, named: Iterable[str] = ()) -> LiveFleet:
        """The fleet for a request of the cluster scope (a catalog change preview). ``namespaces``: only
        those, each reviewed (``list virtualmachines`` there) before anything is read, a refusal being
        the whole answer; otherwise every namespace that holds a VM, each reviewed quietly, those refused
        left out (counted by :meth:`LiveFleet.hidden` only). ``named``: namespaces whose instancetypes
        and preferences the request names, each reviewed the same way (refused: the whole answer)."""
        scope = self.scope
        if scope.namespace is not None:
            raise OutOfScope(scope, scope.namespace, "")
        source = self._source
        if not isinstance(source, HoldsFleet):
            raise SourceUnavailable("this server does not hold the fleet (run it with --vm-cache)")
        every, catalog = source.fleet_vms(), source.catalog_objects()
        if every is None or catalog is None:
            raise SourceUnavailable("the fleet is not read yet (the VM and instancetype caches)")
        gate = scope.gate
        for namespace in (*(namespaces or ()), *named):
            if gate is not None:
                await gate.review(list_vms(namespace))
        readable: frozenset[str] | None
        if namespaces is not None:
            readable = frozenset(namespaces)
        elif gate is None or await gate.allows([list_vms("")]):
            readable = None
        else:
            allowed = set(named)
            for namespace in sorted({ns for ns, _ in every}):
                if namespace not in allowed and await gate.allows([list_vms(namespace)]):
                    allowed.add(namespace)
            readable = frozenset(allowed)
        vms: dict[tuple[str, str], Mapping[str, Any]] = {}
        hidden: list[frozenset[ObjectRef]] = []
        for key, vm in every.items():
            if readable is None or key[0] in readable:
                vms[key] = vm
            elif namespaces is None:
                uses = used_objects(vm, key[0]) or set()
                hidden.append(frozenset(ref for ref in uses if not ref.namespace))
        live = [
            obj
            for obj in catalog
            if readable is None
            or not (ns := str((obj.get("metadata") or {}).get("namespace") or ""))
            or ns in readable
        ]
        return LiveFleet(dict(sorted(vms.items())), live, readable, tuple(hidden))

    async def inferred_from(
        self, vm: Mapping[str, Any], kubevirt: Mapping[str, Any] | None
    ) -> list[Mapping[str, Any]]:
        """The volumes (PVCs, DataVolumes, DataSources, VolumeSnapshots) a VM of the fleet that infers its
        instancetype or preference reads, each reviewed (``get``) before it is read, as for any
        rendering; a refusal leaves them out, so the VM's answer is that of a missing volume (refused
        and missing look the same)."""
        namespace = str((vm.get("metadata") or {}).get("namespace") or "")
        if self.scope.namespace is not None and not self.scope.covers(namespace):
            raise OutOfScope(self.scope, namespace, "")

        def work(lookup: ObjectLookup, cr: Mapping[str, Any] | None) -> None:
            # what was read up to a failure is what the engine will read too
            with contextlib.suppress(ExpandError):
                expand(vm, lookup, kubevirt=cr, exact_names=True)

        try:
            _, read = await evaluate_and_record(self._source, work, gate=self.scope.gate, kubevirt=kubevirt)
        except AccessRefused:
            return []
        return [obj for ref, obj in read.items() if obj is not None and ref.kind in VOLUME_KINDS]

    async def quotas(self, namespace: str) -> Sequence[Mapping[str, Any]] | None:
        """The ResourceQuotas of ``namespace`` when the caller may list them (reviewed quietly before
        the read; None: they may not, and nothing is read)."""
        gate = self.scope.gate
        if gate is not None and not await gate.allows([Read("list", "", "resourcequotas", namespace)]):
            return None
        source = self._source
        if not isinstance(source, HoldsFleet):
            return None
        return list(await source.quotas(namespace))

    async def kubevirt(self) -> Mapping[str, Any] | None:
        """The KubeVirt CR (the cluster's configuration, as every rendering reads it)."""
        return await self._source.kubevirt()

    async def launch_objects(self) -> tuple[Mapping[str, Any] | None, list[Mapping[str, Any]], bool]:
        """The scope's Namespace and its ResourceQuotas, read through the caller's gate (``get
        namespaces``, ``list resourcequotas``), and whether the source could tell: a source that does not
        hold them (the cluster source, for now) gives (None, [], False)."""
        namespace = self.scope.namespace or ""
        read = getattr(self._source, "launch_objects", None)
        if read is None or not namespace:
            return None, [], False
        gate = self.scope.gate
        if gate is not None:
            # As kube-apiserver authorizes GET /api/v1/namespaces/NS: namespace NS, name NS (RBAC
            # lets a RoleBinding in NS grant it), not at the cluster scope.
            await gate.review(Read("get", "", "namespaces", namespace, namespace))
            await gate.review(Read("list", "", "resourcequotas", namespace))
        found, quotas = await read(namespace)
        return found, list(quotas), True


class Reads:
    """The source, read only within a scope."""

    __slots__ = ("_source",)

    def __init__(self, source: Source) -> None:
        self._source = source

    def within(self, scope: Scope) -> ScopedReads:
        return ScopedReads(self._source, scope)
