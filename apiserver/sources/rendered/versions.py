"""resourceVersions of the collection, derived from kube-apiserver's and meaningful on every replica.

The collection's state is a function of what each watched input collection holds: the VMs, the four
instancetype and preference kinds, the presets, the KubeVirt CRs (and the legacy flavor kinds). Each
watch reaches a resourceVersion of kube-apiserver's (an etcd revision) independently, so the state is
named by the vector of the watched collections' versions, not by one number: two replicas that have
seen the same events are in the same state whatever order the watches delivered them in, and a
replica that has not yet seen an event another one has is recognisably behind. A per-process counter
would mean nothing to the other replica behind the same Service; the maximum of the versions would
claim changes of a slow watch that had not arrived yet.

The text form is the components in a fixed order (:data:`COMPONENTS`) joined by dots, e.g.
``5123.5001.0.4800.0.0.4100.0.0``: opaque to clients, as resourceVersions are by contract, and parsed
back by any replica of the same version of this server. 0 stands for a collection never seen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from apiserver.render import objects as o

# The watched collections, in the order of the text form. Never reorder: a replica of another
# version would read the versions of one collection as another's. New ones go at the end.
COMPONENTS: tuple[str, ...] = (
    o.VIRTUAL_MACHINE,
    o.INSTANCETYPE,
    o.CLUSTER_INSTANCETYPE,
    o.PREFERENCE,
    o.CLUSTER_PREFERENCE,
    o.PRESET,
    o.KUBEVIRT,
    o.FLAVOR,
    o.CLUSTER_FLAVOR,
)
INDEX: Mapping[str, int] = {kind: i for i, kind in enumerate(COMPONENTS)}
_MAX_DIGITS = 20  # an etcd revision is an int64


class InvalidVersion(ValueError):
    """Not a resourceVersion of this collection."""


class Vector(tuple[int, ...]):
    """The versions of the watched collections, one per :data:`COMPONENTS` entry."""

    __slots__ = ()

    @classmethod
    def zero(cls) -> Vector:
        return cls((0,) * len(COMPONENTS))

    @classmethod
    def parse(cls, text: str) -> Vector:
        """The vector of a resourceVersion this server gave out; :class:`InvalidVersion` otherwise."""
        parts = text.split(".")
        if len(parts) != len(COMPONENTS) or not all(
            p.isascii() and p.isdigit() and len(p) <= _MAX_DIGITS for p in parts
        ):
            raise InvalidVersion(
                f"invalid resource version {text!r}: not a resourceVersion of this collection "
                f"({len(COMPONENTS)} numbers joined by dots, as list and watch answers carry them)"
            )
        return cls(int(p) for p in parts)

    def __str__(self) -> str:
        return ".".join(map(str, self))

    def with_component(self, kind: str, version: int) -> Vector:
        i = INDEX[kind]
        return Vector((*self[:i], version, *self[i + 1 :]))

    def covers(self, other: Iterable[int]) -> bool:
        """Every component at least ``other``'s: this state has seen all that ``other`` had."""
        return all(a >= b for a, b in zip(self, other, strict=True))

    def includes(self, kind: str, version: int) -> bool:
        """Whether a change of ``kind`` at ``version`` is part of this state."""
        return self[INDEX[kind]] >= version
