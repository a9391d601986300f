"""Places for long-running requests (watches, and request bodies still arriving), shared fairly among people.

Through the aggregator every request comes from kube-apiserver's address over HTTP/1.1, one connection
per request in flight: fairness by peer address is fairness among nobody, and a watch holds its
connection for up to an hour. One user with 70 watches took every place of a server capped at 60
connections, and every other user's GET was reset until the watches ended. So long-running requests
take a place of their own kind, counted per user (as authenticated; an address where nothing
authenticates) and per person (:func:`apiserver.auth.identity.person`: a user, or all the
ServiceAccounts of one namespace, which whoever may impersonate one of them mints without end):

- at most ``per_user`` places per user and per person: over it, 429 with ``Retry-After``;
- at most ``capacity`` in all, well under ``--max-connections``, so that short requests always find a
  connection however the places are held;
- when all are taken, a newcomer takes the place of the oldest request of the largest holder of the
  person holding the most, as long as that person holds at least two more than the newcomer's
  (:class:`~apiserver.http.transport.fairpool.FairPool`; within one person, between its users): a
  watch then ends as at its timeout (the client watches again from its last resourceVersion, as
  client-go's reflectors do every few minutes anyway), a body still arriving is cut with 429. Shares
  converge to equal ones among people under contention: 500 ServiceAccounts minted in one namespace
  are one person, and another user's first watch takes a place of theirs. (Per person, not per name:
  comparing names, one name holding one place each, nobody held two more than a newcomer, and every
  other user's watch got 429 while they held all the places.)

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

    def held_by_person(self, person: str) -> int:
        return self._pool.held_by_group(person)

    def users(self) -> int:
        return self._pool.peers()

    def people(self) -> int:
        return self._pool.groups()

    def hold(self, user: str, end: Callable[[], None], person: str | None = None) -> Place:
        """A place for the request of ``user`` (of ``person``: the user itself when None), displacing
        the largest holder's oldest when all are taken and that is fair; else the 429 Status to answer."""
        pool = self._pool
        if pool.held_by(user) >= self.per_user:
            self.refused += 1
            raise self._refusal(
                f"{self.what} of this user at once: at most {self.per_user} ({self.flags[1]})"
            )
        if person is not None and person != user and pool.held_by_group(person) >= self.per_user:
            self.refused += 1
            whose = _whose(person)
            raise self._refusal(f"{self.what} of {whose} at once: at most {self.per_user} ({self.flags[1]})")
        if pool.full():
            victim = pool.victim(user, person)
            if victim is None:
                self.refused += 1
                raise self._refusal(f"{self.what} at once: at most {pool.capacity} ({self.flags[0]})")
            self.release(victim)
            self.displaced += 1
            victim.end()
        place = Place(user, end)
        pool.add(user, place, person)
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


def _whose(person: str) -> str:
    """The 429's words for a person: ``the ServiceAccounts of namespace "ns-a"``, ``this user``."""
    kind, _, name = person.partition(":")
    if kind == "namespace":
        return f'the ServiceAccounts of namespace "{name}" together'
    return "this user"


def export_shares(metrics: Metrics, name: str, shares: Shares) -> None:
    """``kubevirt_expand_<name>_held``, ``_users``, ``_refused_total`` and ``_displaced_total``."""
    metrics.read_at_scrape(f"{name}_held", f"Places held among {shares.what}.", lambda: shares.held)
    metrics.read_at_scrape(f"{name}_users", f"Users holding places among {shares.what}.", shares.users)
    metrics.read_at_scrape(
        f"{name}_people",
        f"People (a user, or the ServiceAccounts of one namespace) holding places among {shares.what}.",
        shares.people,
    )
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
