"""Bytes held on callers' behalf (request bodies, and large answers until they are sent), bounded in all
and shared fairly among callers.

A PUT reserves its declared length (or the body limit) before its body is read and keeps it until its
answer has been written out, since the body, what is parsed from it and the answer are held until then;
a large answer to a GET reserves its size until it is written out. One that would take the total over
``--max-body-bytes-in-flight`` is answered 429, as kube-apiserver answers requests over
``--max-requests-inflight``.

One pool per replica let a single caller hold all of it: 21 PUTs declaring 3 MiB each, sending a byte a
second, made every other caller's PUT a 429 for a minute. So each caller (a person, :func:`person_of`:
an authenticated user, or all the ServiceAccounts of one namespace together, which whoever may
impersonate one of them mints without end; else a peer address: through the aggregator every user is a
caller of their own) may hold at most half of the
budget, and a caller already holding bytes may not take the last quarter. (Half, not less: a UI backend
calls as one identity for all its users.) That alone did not hold against many identities (eight users
declaring 3 MiB bodies and sending nothing, and eleven with smaller ones, kept a newcomer's small PUT at
429), so when the bytes are taken a caller holding less is admitted by cutting the body still arriving
of the caller holding the most (answered 429, as over the limit). Slow bodies are cut off as well, see
:func:`apiserver.http.endpoints.bodies.read_body`.

A reservation ends when the answer has been written (the connection handler runs ``after_sent``), or
at once when the request does not go through such a handler.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from apiserver.auth.identity import person
from apiserver.http.errors import StatusError
from apiserver.http.keys import AFTER_SENT, USER
from apiserver.http.logging import user_name
from apiserver.render.kubernetes.errors import status


def after_sent(request: web.Request, callback: Callable[[], None]) -> None:
    """Run ``callback`` once the answer to ``request`` is written, or now when nothing will tell."""
    if getattr(request.protocol, "runs_after_sent", False):
        pending = request.get(AFTER_SENT)
        if pending is None:
            request[AFTER_SENT] = pending = []
        pending.append(callback)
    else:
        callback()


def run_after_sent(request: web.BaseRequest) -> None:
    """The connection handler's half: the answer is out (or will never be)."""
    pending = request.get(AFTER_SENT)
    if pending:
        request[AFTER_SENT] = []
        for callback in pending:
            callback()


def caller_of(request: web.Request) -> str:
    """Whose share a request draws on: its authenticated user, else its peer's address."""
    if request.get(USER) is not None:
        name = user_name(request)
        if name:
            return "user:" + name
    return "peer:" + (request.remote or "")


def person_of(request: web.Request) -> str:
    """Whose fair share a request draws on (:func:`apiserver.auth.identity.person`): all the
    ServiceAccounts of one namespace are one person; else as :func:`caller_of`."""
    if request.get(USER) is not None:
        name = user_name(request)
        if name:
            return person(name)
    return "peer:" + (request.remote or "")


def too_many() -> StatusError:
    """kube-apiserver's answer over its in-flight limits; the connection closes (the body is not read)."""
    return StatusError(
        status(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
            details={"retryAfterSeconds": 1},
        ),
        {"Retry-After": "1"},
        close=True,
    )


@dataclass(frozen=True, slots=True)
class BodyPace:
    """How fast a body must move: all of it within ``timeout`` seconds, plus a second for every
    ``min_rate`` bytes (``--body-timeout``, ``--min-body-rate``), as Apache's ``RequestReadTimeout
    body=...,MinRate=...``. A request body: from its first wait, a second per ``min_rate`` bytes
    received; a large answer: a second per ``min_rate`` bytes of its size. A 3 MiB body has 58 s at the
    defaults (10 s, 64 KiB/s); one sent a byte a second is cut off after 10 s instead of holding its
    place for the whole request timeout."""

    timeout: float = 10.0
    min_rate: int = 64 * 1024

    def deadline(self, start: float, received: int) -> float:
        return start + self.timeout + received / self.min_rate


DEFAULT_PACE = BodyPace()


class Reservation:
    """Bytes held for one request; :meth:`release` (idempotent) gives them back. While its body is still
    arriving (:meth:`waiting` until :meth:`arrived`), another caller may need the room more: the budget
    then cuts it (``cut``: the request is answered 429) and gives its bytes to them."""

    __slots__ = ("_budget", "_cut", "caller", "size")

    def __init__(self, budget: ByteBudget, caller: str, size: int) -> None:
        self._budget = budget
        self.caller = caller
        self.size = size
        self._cut: Callable[[], None] | None = None

    def resize(self, size: int) -> None:
        """Hold ``size`` bytes instead (a body shorter than declared, an answer larger than its body):
        counted, never refused, since the bytes are already there. Nothing once released."""
        if self.size and size > 0:
            self._budget.add(self.caller, size - self.size)
            self.size = size

    def waiting(self, cut: Callable[[], None]) -> None:
        """The body is still arriving: the budget may ``cut`` it for a caller holding less."""
        if self.size:
            self._cut = cut
            self._budget.in_transit(self, True)

    def arrived(self) -> None:
        if self._cut is not None:
            self._cut = None
            self._budget.in_transit(self, False)

    def cut(self) -> None:
        """Cut the body still arriving (its request is answered 429) and give its bytes back."""
        cut = self._cut
        self.release()
        if cut is not None:
            cut()

    def release(self) -> None:
        self.arrived()
        if self.size:
            self._budget.add(self.caller, -self.size)
            self.size = 0


class ByteBudget:
    """``total`` bytes; a caller holds at most ``total // 2`` (at least ``min_share``: one body of the
    limit), and a caller holding any may not take the last quarter. One request is always admitted when
    nothing is held. When the bytes are taken, a caller is admitted by cutting bodies still arriving of
    the caller holding the most, as long as that caller holds more than the newcomer then would: so
    however many identities hold slow bodies, a caller holding little is admitted (max-min fairness,
    as the connection pool's :mod:`~apiserver.http.transport.fairpool`)."""

    def __init__(self, total: int, min_share: int = 0) -> None:
        self.total = total
        self.share = max(total // 2, min_share)
        self.reserve_for_newcomers = total - total * 3 // 4
        self.held = 0
        self.cut_bodies = 0  # bodies cut to make room for a caller holding less
        self._by_caller: dict[str, int] = {}
        self._waiting: dict[str, dict[Reservation, None]] = {}  # caller -> bodies arriving, oldest first

    def held_by(self, caller: str) -> int:
        return self._by_caller.get(caller, 0)

    def admits(self, caller: str, size: int) -> bool:
        if not self.held:
            return True
        mine = self._by_caller.get(caller, 0)
        if mine + size > self.share:
            return False
        room = self.total - (self.reserve_for_newcomers if mine else 0)
        return self.held + size <= room

    def reserve(self, caller: str, size: int) -> Reservation:
        """Hold ``size`` bytes for ``caller`` (cutting others' bodies where fair), or raise the 429."""
        while not self.admits(caller, size):
            victim = self._victim(caller, size)
            if victim is None:
                raise too_many()
            self.cut_bodies += 1
            victim.cut()
        self.add(caller, size)
        return Reservation(self, caller, size)

    def _victim(self, caller: str, size: int) -> Reservation | None:
        """The oldest body still arriving of the caller holding the most, when that is more than
        ``caller`` would hold with ``size`` more (and within its share); else None."""
        after = self._by_caller.get(caller, 0) + size
        if after > self.share:
            return None
        best, most = None, after
        for other, waiting in self._waiting.items():
            held = self._by_caller.get(other, 0)
            if other != caller and held > most and waiting:
                best, most = other, held
        return None if best is None else next(iter(self._waiting[best]))

    def in_transit(self, reservation: Reservation, waiting: bool) -> None:
        bodies = self._waiting.get(reservation.caller)
        if waiting:
            if bodies is None:
                bodies = self._waiting[reservation.caller] = {}
            bodies[reservation] = None
        elif bodies is not None:
            bodies.pop(reservation, None)
            if not bodies:
                del self._waiting[reservation.caller]

    def add(self, caller: str, size: int) -> None:
        self.held += size
        left = self._by_caller.get(caller, 0) + size
        if left > 0:
            self._by_caller[caller] = left
        else:
            self._by_caller.pop(caller, None)
