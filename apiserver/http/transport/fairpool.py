"""A bounded pool of places shared fairly among peers: when it is full, a newcomer takes the place of the
largest holder's oldest member that can be let go, so that one source cannot lock out every other.

A plain cap (``--max-connections``) lets whoever fills it first keep everyone else out: one host opening
a thousand connections that send nothing left the kubelet's probes and the aggregator refused. Here the
cap still bounds what the pool holds, but a full pool gives way to a peer holding fewer places: the
peer holding the most loses its oldest member that may be let go (a TLS handshake still under way, a
connection waiting for a request), as long as it would still hold at least as many as the newcomer's
peer. One source then gets all the places nobody else wants and never the places somebody else needs;
shares converge to equal ones under contention. (Many sources, each within its share, can still fill
the pool: that is what the cap is for.)

Peers may come in groups (a person: the ServiceAccounts of one namespace, which whoever may impersonate
one of them can mint without end): the comparison is then made between groups first, and only within
the newcomer's group between peers. A newcomer whose group holds two places fewer than the largest group
takes the place of that group's largest peer's oldest member, however many peers that group spreads its
places over; with no group given, a peer is a group of its own and the pool is as above.

Finding the largest holder costs O(1): groups, and peers within each group, are kept in buckets by how
many places they hold, as an LFU cache keeps its keys.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Generic, Protocol, TypeVar


class Member(Hashable, Protocol):
    """What the pool holds: anything hashable that can say whether it may be let go now."""

    def displaceable(self) -> bool: ...


M = TypeVar("M", bound=Member)


class _Tally:
    """Places held per key, bucketed by count: the largest holders in O(1)."""

    __slots__ = ("_by_count", "_count", "most")

    def __init__(self) -> None:
        self._count: dict[str, int] = {}
        self._by_count: dict[int, dict[str, None]] = {}  # places held -> keys holding that many
        self.most = 0

    def __bool__(self) -> bool:
        return bool(self._count)

    def __len__(self) -> int:
        return len(self._count)

    def count(self, key: str) -> int:
        return self._count.get(key, 0)

    def top(self) -> Iterable[str]:
        """The keys holding the most, longest there first (a view: not to be kept across changes)."""
        return self._by_count.get(self.most, {}).keys()

    def step(self, key: str, delta: int) -> None:
        """``key`` holds one more (``delta`` 1) or one fewer (-1)."""
        old = self._count.get(key, 0)
        new = old + delta
        if new:
            self._count[key] = new
        else:
            del self._count[key]
        if old:
            bucket = self._by_count[old]
            del bucket[key]
            if not bucket:
                del self._by_count[old]
                if old == self.most:
                    self.most = new  # counts move by one: the key that moved is now the largest holder
        if new:
            keys = self._by_count.get(new)
            if keys is None:
                keys = self._by_count[new] = {}
            keys[key] = None
            if new > self.most:
                self.most = new


class FairPool(Generic[M]):
    """At most ``capacity`` members, grouped by peer (and peers by group), each peer's oldest first."""

    __slots__ = ("_group_of", "_groups", "_held", "_within", "capacity", "size")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.size = 0
        self._held: dict[str, dict[M, None]] = {}  # peer -> its members, oldest first
        self._group_of: dict[str, str] = {}  # peer holding any -> its group
        self._groups = _Tally()  # places held per group
        self._within: dict[str, _Tally] = {}  # group -> places held per peer of it

    def full(self) -> bool:
        return self.size >= self.capacity

    def held_by(self, peer: str) -> int:
        held = self._held.get(peer)
        return len(held) if held is not None else 0

    def held_by_group(self, group: str) -> int:
        return self._groups.count(group)

    def peers(self) -> int:
        return len(self._held)

    def groups(self) -> int:
        return len(self._groups)

    def members(self) -> list[M]:
        return [member for held in self._held.values() for member in held]

    def add(self, peer: str, member: M, group: str | None = None) -> None:
        """Hold ``member`` for ``peer`` of ``group`` (``peer`` itself when None; a peer keeps the group
        it was first added with while it holds any)."""
        held = self._held.get(peer)
        if held is None:
            held = self._held[peer] = {}
            self._group_of[peer] = group = peer if group is None else group
        else:
            group = self._group_of[peer]
        held[member] = None
        self._groups.step(group, 1)
        within = self._within.get(group)
        if within is None:
            within = self._within[group] = _Tally()
        within.step(peer, 1)
        self.size += 1

    def discard(self, peer: str, member: M) -> bool:
        """Remove ``member``; False when it was not held."""
        held = self._held.get(peer)
        if held is None or member not in held:
            return False
        del held[member]
        group = self._group_of[peer]
        if not held:
            del self._held[peer]
            del self._group_of[peer]
        self._groups.step(group, -1)
        within = self._within[group]
        within.step(peer, -1)
        if not within:
            del self._within[group]
        self.size -= 1
        return True

    def victim(self, peer: str, group: str | None = None) -> M | None:
        """The member to let go so that ``peer`` of ``group`` may join a full pool, or None: the oldest
        displaceable member of the largest peer of a group holding at least two places more than
        ``peer``'s group does; else, within ``peer``'s group, of a peer holding at least two places more
        than ``peer`` does. (Never one of ``peer``'s own: a peer that reconnects whenever a connection
        of its closes would then keep the server busy with its handshakes; refused at accept, it costs
        next to nothing.)"""
        if group is None:
            group = self._group_of.get(peer, peer)
        if self._groups.most >= self._groups.count(group) + 2:
            for top in self._groups.top():
                found = self._oldest_of_largest(self._within[top])
                if found is not None:
                    return found
        within = self._within.get(group)
        if within is not None and within.most >= self.held_by(peer) + 2:
            return self._oldest_of_largest(within)
        return None

    def _oldest_of_largest(self, peers: _Tally) -> M | None:
        for top in peers.top():
            for member in self._held[top]:
                if member.displaceable():
                    return member
        return None
