"""What the server may read on a caller's behalf: the tenancy model, held here for every source.

The server reads the cluster with its own account, which can read every namespace. What a caller may
learn through an answer follows KubeVirt's own model, and nothing more:

* **Instancetypes and preferences** a VM references (the namespaced kinds in the VM's namespace, the
  cluster kinds), and **ControllerRevisions that hold one** (what KubeVirt writes for a VM: data that
  decodes to one of the four kinds, or a legacy spec wrapper) are used without asking: a caller who may
  expand, or create VMs, in a namespace can learn their specs through the VM they render, as with
  KubeVirt's own expand-spec and admission.
* **Everything else** is read only after a SubjectAccessReview says the caller may read it, with the
  verb kube-apiserver would authorize: ``get`` on the PersistentVolumeClaim, DataVolume, DataSource or
  VolumeSnapshot that ``inferFromVolume`` follows (in any namespace the VM names), ``get`` on a
  ControllerRevision that holds no instancetype or preference (a StatefulSet's, a DaemonSet's, damaged
  data) or does not exist, ``list`` on the VirtualMachineInstancePresets of the namespace
  (``?presets=true``).
* With ``--authorize-references`` every referenced object is reviewed (``get``), the instancetype and
  preference kinds (cluster kinds included) and every ControllerRevision too, before it is read.

A review comes before anything of the object can show in the answer, and before the object is read at
all where its kind alone calls for one: a refusal is kube-apiserver's 403 for that read, whether the
object exists or not (refused and missing look the same to a caller who may not read it; both are that
403). A ControllerRevision is read first (with the server's account) to see whether it holds an
instancetype or preference; one that does not is answered as if it did not exist unless the caller may
read it. The one difference a caller without rights can tell is "holds an instancetype or preference",
which KubeVirt's model shows anyway.

:class:`ReadAccess` is the caller's side (one per request, bound to the caller's identity: the auth
layer's :class:`~apiserver.auth.access.CallerAccess`); :class:`AccessGate` is the policy above over it,
which :mod:`apiserver.sources.gather` consults for every object a rendering asks for.

A rendering made with the server's account and no caller (the collection's store renders every VM
ahead of any request) carries its :class:`Reviews`: the same model applied to what it read, once for the
default and once for ``--authorize-references``. A caller is shown it (a list item, GET expand-spec's
answer from the store) only after passing :meth:`AccessGate.due` of them, through the same
:class:`ReadAccess` and so the same cached SubjectAccessReviews as a rendering made for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from apiserver.render import objects as o
from apiserver.render.instancetype.revision import holds_spec
from apiserver.render.kubernetes.errors import status
from apiserver.render.objects import ObjectRef

# Kinds whose objects a rendering uses as KubeVirt would, without a review (unless all are reviewed).
SPEC_KINDS = frozenset({o.INSTANCETYPE, o.CLUSTER_INSTANCETYPE, o.PREFERENCE, o.CLUSTER_PREFERENCE})


@dataclass(frozen=True, slots=True)
class Read:
    """One read on a caller's behalf, in the terms of a SubjectAccessReview's ``resourceAttributes``."""

    verb: str  # get | list
    group: str
    resource: str
    namespace: str
    name: str = ""

    def describe(self) -> str:
        where = f" in namespace {self.namespace}" if self.namespace else ""
        what = f"{self.resource}.{self.group}" if self.group else self.resource
        return f"{self.verb} {what} {self.name!r}{where}" if self.name else f"{self.verb} {what}{where}"


def read_of(ref: ObjectRef) -> Read:
    """The ``get`` a caller would need to read ``ref`` themselves (a kind the renderer has no resource
    name for: a read of resource ``kind``, which no RBAC rule grants)."""
    qualified = o.RESOURCE_NAMES.get(ref.kind, ref.kind)
    resource, _, group = qualified.partition(".")
    return Read("get", group, resource, ref.namespace, ref.name)


def needs_review(ref: ObjectRef, found: Mapping[str, Any] | None, *, all_references: bool = False) -> bool:
    """The model for one object: whether what was read for ``ref`` (``found``; None: missing) may
    reach a caller's answer only after their review (see the module docstring)."""
    kind = ref.kind
    if kind in SPEC_KINDS:
        return all_references
    if kind == o.CONTROLLER_REVISION:
        return all_references or found is None or not holds_spec(found)
    return True


def presets_read(namespace: str) -> Read:
    """The ``list`` a caller would need to read the presets of ``namespace``."""
    resource, _, group = o.RESOURCE_NAMES[o.PRESET].partition(".")
    return Read("list", group, resource, namespace)


class ReadAccess(Protocol):
    """The caller's side of the gate: may they make ``read``? One per request, bound to the caller."""

    async def review(self, read: Read, *, quiet: bool = False) -> Mapping[str, Any] | None:
        """None when the caller may; else the Status to answer instead: kube-apiserver's 403 for that
        read, or a 503 (with ``details.retryAfterSeconds``) when no decision could be made. ``quiet``:
        a refusal is routine (an item shown without its rendering), not worth a line at info level."""


class AccessRefused(Exception):
    """A rendering needs something the caller may not see: ``status`` is the whole answer."""

    def __init__(self, read: Read, status: Mapping[str, Any]) -> None:
        super().__init__(f"{read.describe()}: {status.get('message', '')}")
        self.read = read
        self.status = dict(status)


class AccessGate(NamedTuple):
    """The tenancy model over one caller's :class:`ReadAccess` (see the module docstring).

    ``all_references``: ``--authorize-references``, every referenced object is reviewed before it is
    read. The questions are synchronous and cheap (a kind look-up; for a revision, whether it holds a
    spec, remembered per object); only :meth:`review` awaits. A tuple, made per request (as a frozen
    dataclass it cost three times as much).
    """

    access: ReadAccess
    all_references: bool = False
    # The namespace of the request's scope (apiserver.sources.scope): a namespaced object anywhere else
    # is reviewed before it is read, whatever its kind. None: no namespace to keep to.
    namespace: str | None = None

    def _outside(self, ref: ObjectRef) -> bool:
        return self.namespace is not None and bool(ref.namespace) and ref.namespace != self.namespace

    def review_first(self, ref: ObjectRef) -> bool:
        """Whether ``ref`` needs a review before it is read at all: every kind but the instancetype
        and preference kinds and ControllerRevisions (those only with ``all_references``, or outside
        the scope's namespace)."""
        kind = ref.kind
        if kind in SPEC_KINDS or kind == o.CONTROLLER_REVISION:
            return self.all_references or self._outside(ref)
        return True

    def needs_review(self, ref: ObjectRef, found: Mapping[str, Any] | None) -> bool:
        """Whether what was read for ``ref`` (``found``; None: missing) may reach the renderer only
        after a review (:func:`needs_review` with this gate's ``all_references``; always outside the
        scope's namespace)."""
        return self._outside(ref) or needs_review(ref, found, all_references=self.all_references)

    def due(self, reviews: Reviews) -> tuple[Read, ...]:
        """The reviews this caller must pass to be shown a rendering made without them."""
        return reviews.every if self.all_references else reviews.model

    async def review(self, read: Read) -> None:
        """Raise :class:`AccessRefused` unless the caller may make ``read``."""
        refusal = await self.access.review(read)
        if refusal is not None:
            raise AccessRefused(read, refusal)

    async def allows(self, reads: Iterable[Read]) -> bool:
        """Whether the caller may make every read (a refusal, or a review that could not be made:
        no). For answers that show something else instead of refusing (a list's item)."""
        for read in reads:
            # One list redacts as many items as the caller may not see: no info line for each.
            if await self.access.review(read, quiet=True) is not None:
                return False
        return True


@dataclass(frozen=True, slots=True)
class Reviews:
    """What a caller must pass to see a rendering made without one (the store's): ``model`` under the
    tenancy model, ``every`` with ``--authorize-references`` (each object read, in the order read;
    the same reads, in the same order, a rendering for the caller would have reviewed)."""

    model: tuple[Read, ...] = ()
    every: tuple[Read, ...] = ()


NO_REVIEWS = Reviews()
# Renderings of many VMs read the same few objects: one Reviews (and Read) each, not one per VM. Memory,
# not speed: 20 against 578 bytes per rendering of a VM with an instancetype and a preference (tracemalloc
# over 10,000), about 55 MiB at 100,000 VMs; CPU 1.02-1.04x (hack/benchmarks/switches.py, interned-reviews).
_INTERNED: dict[tuple[tuple[ObjectRef, bool], ...], Reviews] = {}
_INTERNED_SIZE = 4096


def reviews_of(objects: Mapping[ObjectRef, Mapping[str, Any] | None]) -> Reviews:
    """The :class:`Reviews` of a rendering that read ``objects`` (each ref with what was found)."""
    if not objects:
        return NO_REVIEWS
    key = tuple((ref, needs_review(ref, found)) for ref, found in objects.items())
    known = _INTERNED.get(key)
    if known is None:
        if len(_INTERNED) >= _INTERNED_SIZE:
            _INTERNED.clear()
        every = tuple(read_of(ref) for ref, _ in key)
        model = tuple(read for read, (_, due) in zip(every, key, strict=True) if due)
        known = _INTERNED[key] = Reviews(model, every)
    return known


class _Open:
    async def review(self, read: Read, *, quiet: bool = False) -> None:
        return None


class _Closed:
    """Refuses everything: for a request whose caller is unknown where one is expected."""

    async def review(self, read: Read, *, quiet: bool = False) -> Mapping[str, Any]:
        return status(403, "Forbidden", f"{read.describe()}: the caller of this request is not known")


OPEN: ReadAccess = _Open()
CLOSED: ReadAccess = _Closed()
