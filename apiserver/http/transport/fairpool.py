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

Finding the largest holder costs O(1): peers are kept in buckets by how many places they hold, as an
LFU cache keeps its keys.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar


class Member(Hashable, Protocol):
    """What the pool holds: anything hashable that can say whether it may be let go now."""

    def displaceable(self) -> bool: ...


M = TypeVar("M", bound=Member)


class FairPool(Generic[M]):
    """At most ``capacity`` members, grouped by peer, each peer's oldest first."""

    __slots__ = ("_by_count", "_held", "_most", "capacity", "size")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.size = 0
        self._held: dict[str, dict[M, None]] = {}  # peer -> its members, oldest first
        self._by_count: dict[int, dict[str, None]] = {}  # places held -> peers holding that many
        self._most = 0

    def full(self) -> bool:
        return self.size >= self.capacity

    def held_by(self, peer: str) -> int:
        held = self._held.get(peer)
        return len(held) if held is not None else 0

    def peers(self) -> int:
        return len(self._held)

    def members(self) -> list[M]:
        return [member for held in self._held.values() for member in held]

    def add(self, peer: str, member: M) -> None:
        held = self._held.get(peer)
        if held is None:
            held = self._held[peer] = {}
        count = len(held)
        held[member] = None
        self._move(peer, count, count + 1)
        self.size += 1

    def discard(self, peer: str, member: M) -> bool:
        """Remove ``member``; False when it was not held."""
        held = self._held.get(peer)
        if held is None or member not in held:
            return False
        del held[member]
        count = len(held)
        if not count:
            del self._held[peer]
        self._move(peer, count + 1, count)
        self.size -= 1
        return True

    def victim(self, peer: str) -> M | None:
        """The member to let go so that ``peer`` may join a full pool, or None: the oldest displaceable
        member of a peer holding at least two places more than ``peer`` does. (Never one of ``peer``'s
        own: a peer that reconnects whenever a connection of its closes would then keep the server busy
        with its handshakes; refused at accept, it costs next to nothing.)"""
        if self._most <= self.held_by(peer) + 1:
            return None
        for top in self._by_count[self._most]:
            for member in self._held[top]:
                if member.displaceable():
                    return member
        return None

    def _move(self, peer: str, old: int, new: int) -> None:
        if old:
            bucket = self._by_count[old]
            del bucket[peer]
            if not bucket:
                del self._by_count[old]
                if old == self._most:
                    self._most = new  # counts move by one: the peer that moved is now the largest holder
        if new:
            peers = self._by_count.get(new)
            if peers is None:
                peers = self._by_count[new] = {}
            peers[peer] = None
            if new > self._most:
                self._most = new
