"""The CPU seats' dispatcher: one person's burst waits behind its own steps, not another's."""

from __future__ import annotations

import asyncio
from functools import partial

import pytest

from apiserver.http.errors import StatusError
from apiserver.http.transport.seats import Seats


async def _burst(seats: Seats, plan: list[str]) -> list[str]:
    """Requests of the people named in ``plan``, all made ready in one turn of the loop (as a burst of
    requests that arrived together), each running one step; the order in which the steps ran."""
    ran: list[str] = []

    async def request(person: str, n: int) -> None:
        await seats.ticket(person).run(lambda: ran.append(f"{person}{n}"))

    await asyncio.gather(*(request(person, n) for n, person in enumerate(plan)))
    return ran


async def test_another_person_s_step_runs_next_not_after_one_person_s_burst() -> None:
    plan = ["a"] * 31 + ["b"]
    off = await _burst(Seats(0, 50), plan)
    assert off.index("b31") == 31  # arrival order: behind all of a's
    on = await _burst(Seats(1, 50), plan)
    assert on.index("b31") == 1  # a's first took the free seat; b's is the next person in turn
    assert sorted(on) == sorted(off)  # every step ran, each once
    two = await _burst(Seats(2, 50), plan)
    assert two.index("b31") <= 2


async def test_the_person_who_had_the_fewest_lately_goes_next_and_each_person_s_steps_stay_in_order() -> None:
    on = await _burst(Seats(1, 50), ["a", "a", "a", "b", "b", "c"])
    assert on == ["a0", "b3", "c5", "a1", "b4", "a2"]


async def test_a_request_s_steps_in_one_turn_share_its_seat_and_after_an_await_wait_again() -> None:
    seats = Seats(1, 50)
    ran: list[str] = []

    async def request() -> None:
        ticket = seats.ticket("a")
        await ticket.run(partial(ran.append, "parse"))
        await ticket.run(partial(ran.append, "render"))  # same turn: its seat still, while b waits
        await asyncio.sleep(0)  # as an await of I/O: the seat goes to b at the loop's next turn
        await ticket.run(partial(ran.append, "encode"))

    await asyncio.gather(request(), seats.ticket("b").run(partial(ran.append, "b")))
    assert ran == ["parse", "render", "b", "encode"]
    assert seats.waited == 2  # b's step and the encoding


async def test_a_step_runs_at_once_when_a_seat_is_free_and_nobody_waits() -> None:
    seats = Seats(1, 50)
    ticket = seats.ticket("a")
    # No await is reached: the step runs within the first send of the coroutine.
    coroutine = ticket.run(lambda: 42)
    with pytest.raises(StopIteration) as done:
        coroutine.send(None)
    assert done.value.value == 42
    assert seats.waited == 0
    await asyncio.sleep(0)  # the loop's next turn frees the seat given back
    assert seats.taken == 0


async def test_a_full_queue_is_a_429_but_a_request_already_seated_is_never_refused() -> None:
    seats = Seats(1, 2)
    started = [seats.ticket("a") for _ in range(4)]
    seated = seats.ticket("a")
    await seated.run(lambda: None)  # the free seat: this request has had one
    # In the loop's next turn the first takes the freed seat, the other two wait: a's queue is full.
    steps = [asyncio.ensure_future(t.run(lambda: None)) for t in started[:3]]
    await asyncio.sleep(0)
    assert seats.queued_by("a") == 2
    with pytest.raises(StatusError) as refused:
        await started[3].run(lambda: None)
    assert refused.value.status["code"] == 429
    assert refused.value.status["reason"] == "TooManyRequests"
    assert "--cpu-queue-per-user" in refused.value.status["message"]
    assert dict(refused.value.headers or {})["Retry-After"] == "1"
    assert seats.refused == 1
    later = asyncio.ensure_future(seated.run(lambda: "done"))  # over the bound, but already seated
    other = asyncio.ensure_future(seats.ticket("b").run(lambda: "b"))  # another person's queue
    assert await later == "done"
    assert await other == "b"
    await asyncio.gather(*steps)
    await asyncio.sleep(0)
    assert (seats.taken, seats.waiting, seats.people_waiting()) == (0, 0, 0)


def _requests(seats: Seats, people: str, ran: list[str]) -> list[asyncio.Future[None]]:
    """A request of each of ``people``, made ready in one turn: the first takes the free seat."""
    return [asyncio.ensure_future(seats.ticket(p).run(partial(ran.append, p))) for p in people]


async def test_a_waiting_request_cancelled_releases_nothing_it_did_not_hold() -> None:
    seats = Seats(1, 50)
    ran: list[str] = []
    _, b, c = _requests(seats, "abc", ran)
    await asyncio.sleep(0)  # a ran in the seat, which stays taken until the loop's next turn; b, c wait
    assert (ran, seats.waiting, seats.taken) == (["a"], 2, 1)
    b.cancel()  # b gives up before its turn comes: it held nothing, so nothing is given back
    with pytest.raises(asyncio.CancelledError):
        await b
    # Meanwhile the loop's next turn handed a's seat on, to c (which has not run yet): one seat.
    assert (seats.waiting, seats.queued_by("b"), seats.taken) == (0, 0, 1)
    await c
    assert ran == ["a", "c"]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert seats.taken == 0  # not -1: the cancelled one's seat was never counted
    assert (seats.waiting, seats.people_waiting()) == (0, 0)


async def test_a_seat_handed_to_a_request_cancelled_before_it_ran_goes_to_the_next() -> None:
    seats = Seats(1, 50)
    ran: list[str] = []
    _, b, c = _requests(seats, "abc", ran)
    await asyncio.sleep(0)  # a ran; b and c wait
    await asyncio.sleep(0)  # the loop's next turn: the seat is handed to b, which has not run yet
    assert (seats.waiting, seats.taken) == (1, 1)
    b.cancel()
    with pytest.raises(asyncio.CancelledError):
        await b
    await c
    assert ran == ["a", "c"]
    for _ in range(3):
        await asyncio.sleep(0)
    assert (seats.taken, seats.waiting) == (0, 0)


async def test_off_runs_every_step_at_once() -> None:
    seats = Seats(0, 1)
    assert not seats.enabled
    assert await asyncio.gather(*(seats.ticket("a").run(lambda: 1) for _ in range(5))) == [1] * 5
    assert seats.waited == 0


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="seats"):
        Seats(-1, 1)
    with pytest.raises(ValueError, match="queue"):
        Seats(1, 0)


def test_the_flags_set_the_seats_and_0_turns_them_off() -> None:
    from apiserver.cli import build_parser
    from apiserver.cli.serve import _settings

    parse = build_parser().parse_args
    assert (_settings(parse(["serve"])).cpu_seats, _settings(parse(["serve"])).cpu_queue_per_user) == (1, 50)
    settings = _settings(parse(["serve", "--cpu-seats=0", "--cpu-queue-per-user=7"]))
    assert (settings.cpu_seats, settings.cpu_queue_per_user) == (0, 7)
    with pytest.raises(SystemExit):
        parse(["serve", "--cpu-queue-per-user=0"])
