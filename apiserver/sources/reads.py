"""A source as request handlers hold it: read only within a request's :class:`~apiserver.sources.scope.Scope`.

The server reads the cluster with its own account, which sees every namespace; a handler must not.
:class:`Reads` keeps the source to itself and offers one thing, :meth:`Reads.within`, which takes the
request's scope: the VM it names, and renderings of VMs of its namespace through the caller's tenancy
gate (which reviews every namespaced object outside the scope, whatever its kind). The next readers of
the cluster on a caller's behalf (running VMIs, start revisions, quotas) belong here, behind the same
scope.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from apiserver.render import ExpandResult
from apiserver.render.kubernetes.errors import status
from apiserver.sources.access import AccessRefused, Read
from apiserver.sources.base import MISSING, Missing, Source
from apiserver.sources.gather import Rendered, peekable, render_and_record
from apiserver.sources.scope import Scope


class OutOfScope(AccessRefused):
    """A read the request's scope does not cover: a bug of the caller, refused like any other read."""

    def __init__(self, scope: Scope, namespace: str, name: str) -> None:
        read = Read(scope.verb, scope.group, scope.resource, namespace, name)
        body = status(403, "Forbidden", f"{read.describe()}: outside the request's scope")
        super().__init__(read, body)


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
            await gate.review(Read("get", "", "namespaces", "", namespace))
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
