"""CPU seats: the event loop's turns of heavy work, handed out fairly among people.

One event loop serves every request, and it runs what is ready in arrival order. One user's 32
concurrent distinct PUTs (each a few milliseconds of parsing, rendering and encoding) filled every
turn of the loop: another user's GET, answered in microseconds once it runs, waited behind all 32,
p50 1.8 -> 209 ms straight to the port (issue 37, finding 4). kube-apiserver's API Priority and
Fairness answers this with seats (a bounded number of requests executing), a queue per flow (shuffle
sharded by user) that waits for them, and fair queuing among the queues, so that a flow's requests wait
behind its own.

Here the scarce thing is not concurrency but the loop's turns, and a request holds one only while its
synchronous work runs: a seat held across an await (a SubjectAccessReview, a read from kube-apiserver)
would let a slow cluster stall everyone. So each CPU-heavy step of a request (parsing a body, a
rendering pass, encoding the answer) asks for a seat just before it runs, and:

- a step that finds a seat free and nobody waiting runs at once (no await: nothing changes for a server
  that is not contended);
- a seat stays the request's until the loop's next turn: its steps that follow in the same turn run in
  it, and the other requests already made ready in this turn (one user's burst of PUTs, all arrived
  together) cannot run their steps one after another in it: they wait, each in the queue of its person;
- at the loop's next turn the seat goes to the waiting step of the person who has had the fewest lately
  (start-time fair queuing, each step costing one: APF's fair queuing, with one queue per person
  instead of shuffle-sharded ones), which runs in the turn after; one person's steps run in the order
  they came. A step after an await of I/O asks for a seat anew.

So the loop runs at most ``seats`` requests' heavy work a turn; another user's request (which takes a
seat only for steps of its own, and none when answered at once from a cache) waits for the work already
handed out, not for one user's whole backlog. People are those of the other shares
(:func:`apiserver.http.transport.budget.person_of`: a user, or all the ServiceAccounts of one
namespace, which whoever may impersonate one of them mints without end). A request asking for its first
seat while ``per_person`` steps of its person wait is refused: 429 with ``Retry-After`` (APF's answer
when a queue is full). A request that has had a seat always gets the next one it asks for, in turn: it
is not refused half done.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Callable
from typing import TypeVar

from apiserver.http.errors import StatusError
from apiserver.http.metrics import Metrics
from apiserver.render.kubernetes.errors import status

T = TypeVar("T")


class Seats:
    """``seats`` seats (0: off, every step runs at once), and the steps waiting for one, by person."""

    def __init__(self, seats: int, per_person: int) -> None:
        if seats < 0 or per_person < 1:
            raise ValueError("seats must not be negative, and each person may queue at least one request")
        self.seats = seats
        self.per_person = per_person
        self.taken = 0  # seats handed out, or given back in this turn of the loop
        # Steps waiting, by start tag: (start, arrival, person, future). A cancelled one stays until it
        # comes up, and is skipped then.
        self._heap: list[tuple[int, int, str, asyncio.Future[None]]] = []
        self._queued: dict[str, int] = {}  # person -> steps waiting
        self._finish: dict[str, int] = {}  # person -> finish tag of its latest step
        self._now = 0  # virtual time: the start tag of the latest step handed a seat
        self._arrivals = 0
        self._freeing = False  # a call at the loop's next turn frees the seats given back in this one
        self._given_back: list[Ticket | None] = []
        self.waiting = 0
        self.waited = 0  # steps that waited for a seat
        self.wait_seconds = 0.0
        self.refused = 0

    @property
    def enabled(self) -> bool:
        return self.seats > 0

    def people_waiting(self) -> int:
        return len(self._queued)

    def queued_by(self, person: str) -> int:
        return self._queued.get(person, 0)

    def ticket(self, person: str) -> Ticket:
        """The seats for one request of ``person``."""
        return Ticket(self, person)

    def _tag(self, person: str) -> int:
        """A new step's start tag (start-time fair queuing, each step costing one): a person's steps
        follow each other, and a person who has had none lately starts at the present."""
        start = max(self._now, self._finish.get(person, 0))
        finish = self._finish
        if len(finish) > 4096 and person not in finish:  # people who left long ago: nothing to keep
            now = self._now
            for old in [p for p, tag in finish.items() if tag <= now]:
                del finish[old]
        finish[person] = start + 1
        return start

    async def _take(self, person: str, first: bool) -> None:
        """A seat for a step of ``person``'s; ``first``: the request has not had one yet (it may be
        refused when its person's queue is full)."""
        if self.taken < self.seats and not self.waiting:
            self.taken += 1
            self._now = self._tag(person)
            return
        queued = self._queued.get(person, 0)
        if first and queued >= self.per_person:
            self.refused += 1
            raise _refusal(self.per_person)
        self._queued[person] = queued + 1
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._arrivals += 1
        heapq.heappush(self._heap, (self._tag(person), self._arrivals, person, future))
        self.waiting += 1
        self.waited += 1
        start = time.perf_counter()
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._give_back()  # handed to it just as it was cancelled: pass it on
            else:
                future.cancel()
                self._left(person)  # it held nothing: out of the count, skipped when it comes up
            raise
        finally:
            self.wait_seconds += time.perf_counter() - start

    def _left(self, person: str) -> None:
        self.waiting -= 1
        queued = self._queued[person] - 1
        if queued:
            self._queued[person] = queued
        else:
            del self._queued[person]

    def _give_back(self, ticket: Ticket | None = None) -> None:
        """A request's seat is free from the loop's next turn on (see the module's docstring); until
        then its ``ticket`` keeps it for the request's next steps."""
        self._given_back.append(ticket)
        if not self._freeing:
            self._freeing = True
            asyncio.get_running_loop().call_soon(self._free)

    def _free(self) -> None:
        """The loop's next turn: the seats given back go to the steps waiting, else are free."""
        self._freeing = False
        tickets, self._given_back = self._given_back, []
        for ticket in tickets:
            if ticket is not None:
                ticket._holding = False  # noqa: SLF001
            if not self._hand_on():
                self.taken -= 1

    def _hand_on(self) -> bool:
        """Hand a seat to the waiting step with the lowest start tag; False when none waits."""
        heap = self._heap
        while heap:
            start, _, person, future = heapq.heappop(heap)
            if future.done():  # cancelled while it waited: already out of the count
                continue
            self._left(person)
            self._now = start
            future.set_result(None)
            return True
        return False


class Ticket:
    """One request's way to its seats: :meth:`run` a step in a seat. A seat taken is the request's
    until the loop's next turn: its steps that follow in the same turn (nothing awaited between them
    but the seat) run in it without waiting again; a step after an await of I/O waits for a seat anew."""

    __slots__ = ("_holding", "_person", "_seated", "_seats")

    def __init__(self, seats: Seats, person: str) -> None:
        self._seats = seats
        self._person = person
        self._seated = False  # has had a seat: never refused for a full queue from then on
        self._holding = False  # holds one now, until the loop's next turn

    async def run(self, step: Callable[[], T]) -> T:
        """``step()`` (synchronous, CPU-bound) in a seat: at once when one is free and nobody waits,
        or this request holds one in this turn."""
        seats = self._seats
        if not seats.seats or self._holding:
            return step()
        await seats._take(self._person, not self._seated)  # noqa: SLF001
        self._seated = self._holding = True
        seats._give_back(self)  # noqa: SLF001  (at the loop's next turn)
        return step()


def _refusal(per_person: int) -> StatusError:
    body = status(
        429,
        "TooManyRequests",
        "Too many requests, please try again later: too many requests of this user waiting for the "
        f"server's CPU: at most {per_person} (--cpu-queue-per-user)",
        details={"retryAfterSeconds": 1},
    )
    return StatusError(body, {"Retry-After": "1"})


def export_seats(metrics: Metrics, seats: Seats) -> None:
    """``kubevirt_expand_cpu_seats``, ``_cpu_waiting``, ``_cpu_waiting_people``, ``_cpu_waits_total``,
    ``_cpu_wait_seconds_total`` and ``_cpu_refused_total``."""
    metrics.read_at_scrape(
        "cpu_seats", "CPU seats: heavy steps the event loop runs a turn (0: off).", lambda: seats.seats
    )
    metrics.read_at_scrape("cpu_waiting", "Steps of requests waiting for a CPU seat.", lambda: seats.waiting)
    metrics.read_at_scrape(
        "cpu_waiting_people", "People with steps waiting for a CPU seat.", seats.people_waiting
    )
    metrics.read_at_scrape(
        "cpu_waits", "Steps of requests that waited for a CPU seat.", lambda: seats.waited, counter=True
    )
    metrics.read_at_scrape(
        "cpu_wait_seconds",
        "Time steps of requests waited for a CPU seat, in all.",
        lambda: seats.wait_seconds,
        counter=True,
    )
    metrics.read_at_scrape(
        "cpu_refused",
        "Requests refused (429) because their person's queue for CPU seats was full.",
        lambda: seats.refused,
        counter=True,
    )
