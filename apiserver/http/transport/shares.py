"""Places for long-running requests (watches, and request bodies still arriving), shared fairly among users.

Through the aggregator every request comes from kube-apiserver's address over HTTP/1.1, one connection
per request in flight: fairness by peer address is fairness among nobody, and a watch holds its
connection for up to an hour. One user with 70 watches took every place of a server capped at 60
connections, and every other user's GET was reset until the watches ended. So long-running requests
take a place of their own kind, counted per user (as authenticated; an address where nothing
authenticates):

- at most ``per_user`` places per user: over it, 429 with ``Retry-After``;
- at most ``capacity`` in all, well under ``--max-connections``, so that short requests always find a
  connection however the places are held;
- when all are taken, a newcomer takes the place of the largest holder's oldest request, as long as
  that holder holds at least two more than the newcomer (:class:`~apiserver.http.transport.fairpool.FairPool`): a
  watch then ends as at its timeout (the client watches again from its last resourceVersion, as
  client-go's reflectors do every few minutes anyway), a body still arriving is cut with 429. Shares
  converge to equal ones under contention, so no handful of users, however many identities they mint,
  keeps a newcomer out.

kube-apiserver has no per-user cap on watches (API Priority and Fairness counts a watch only while it
starts); the caps here are documented with their figures in docs/http-api.md.
"""

from __future__ import annotations

from collections.abc import Callable

from apiserver.http.errors import StatusError
from apiserver.http.metrics import Metrics
from apiserver.http.transport.fairpool import FairPool
from apiserver.render.kubernetes.errors import status


class Place:
    """One long-running request's place; ``end`` stops the request gracefully when it is displaced."""

    __slots__ = ("_end", "held", "user")

    def __init__(self, user: str, end: Callable[[], None]) -> None:
        self.user = user
        self._end = end
        self.held = True

    def displaceable(self) -> bool:
        return True

    def end(self) -> None:
        self._end()


class Shares:
    """The places of one kind (``what``: "watches", "request bodies still arriving"), with their flags'
    names for the 429's message."""

    def __init__(self, what: str, capacity: int, per_user: int, *, flags: tuple[str, str]) -> None:
        self.what = what
        self.per_user = per_user
        self.flags = flags
        self._pool: FairPool[Place] = FairPool(capacity)
        self.refused = 0
        self.displaced = 0

    @property
    def capacity(self) -> int:
        return self._pool.capacity

    @property
    def held(self) -> int:
        return self._pool.size

    def held_by(self, user: str) -> int:
        return self._pool.held_by(user)

    def users(self) -> int:
        return self._pool.peers()

    def hold(self, user: str, end: Callable[[], None]) -> Place:
        """A place for ``user``'s request, displacing the largest holder's oldest when all are taken
        and that is fair; else the 429 Status to answer."""
        pool = self._pool
        if pool.held_by(user) >= self.per_user:
            self.refused += 1
            raise self._refusal(
                f"{self.what} of this user at once: at most {self.per_user} ({self.flags[1]})"
            )
        if pool.full():
            victim = pool.victim(user)
            if victim is None:
                self.refused += 1
                raise self._refusal(f"{self.what} at once: at most {pool.capacity} ({self.flags[0]})")
            self.release(victim)
            self.displaced += 1
            victim.end()
        place = Place(user, end)
        pool.add(user, place)
        return place

    def release(self, place: Place) -> None:
        """Give the place back (idempotent)."""
        if place.held:
            place.held = False
            self._pool.discard(place.user, place)

    @staticmethod
    def _refusal(what: str) -> StatusError:
        body = status(
            429,
            "TooManyRequests",
            f"Too many requests, please try again later: too many {what}",
            details={"retryAfterSeconds": 1},
        )
        return StatusError(body, {"Retry-After": "1"})


def export_shares(metrics: Metrics, name: str, shares: Shares) -> None:
    """``kubevirt_expand_<name>_held``, ``_users``, ``_refused_total`` and ``_displaced_total``."""
    metrics.read_at_scrape(f"{name}_held", f"Places held among {shares.what}.", lambda: shares.held)
    metrics.read_at_scrape(f"{name}_users", f"Users holding places among {shares.what}.", shares.users)
    metrics.read_at_scrape(
        f"{name}_refused",
        f"Requests refused a place among {shares.what} (429).",
        lambda: shares.refused,
        counter=True,
    )
    metrics.read_at_scrape(
        f"{name}_displaced",
        f"Requests ended to give their place among {shares.what} to a user holding fewer.",
        lambda: shares.displaced,
        counter=True,
    )
