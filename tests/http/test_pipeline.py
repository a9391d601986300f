"""The request pipeline composed in one place (apiserver/http/pipeline.py): the filters run in order
around every endpoint, and a request is answered without running them only when every one of them says
synchronously that it would pass it on. A filter that cannot say so (an audit filter, say) turns the
shortcut off: it sees every request."""

from __future__ import annotations

from pathlib import Path

from aiohttp import web
from aiohttp.typedefs import Handler

from apiserver.http.filters import compose
from apiserver.http.filters.scoping import OpenScoping
from apiserver.http.keys import PIPELINE
from apiserver.sources.folder import FolderSource
from tests.support.http_helpers import EXAMPLES, running_server, vm_path


class Audit:
    """A filter that records every request it sees, and cannot decide anything synchronously."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.seen.append(request.path)
        return await handler(request)


class Counting(Audit):
    """A filter that can say synchronously that it passes a request on (``allow``), and counts asking."""

    def __init__(self, allow: bool) -> None:
        super().__init__()
        self.allow = allow
        self.asked = 0

    def admit_now(self, request: web.Request) -> bool:
        self.asked += 1
        if self.allow:
            self.seen.append(request.path)
        return self.allow


async def test_a_filter_without_a_synchronous_answer_sees_every_request(tmp_path: Path) -> None:
    audit = Audit()
    source = FolderSource(EXAMPLES, watch=False)
    async with running_server(source, tmp_path, filters=[OpenScoping(), audit]) as srv:
        for _ in range(5):  # the answer is cached after the first
            assert (await srv.get(vm_path())).status == 200
        pipeline = srv.server.app[PIPELINE]
        assert pipeline.dispatched == 5 and pipeline.answered_at_once == 0
    assert audit.seen == [vm_path()] * 5


async def test_the_shortcut_asks_every_filter_and_runs_them_when_one_says_no(tmp_path: Path) -> None:
    yes, no = Counting(allow=True), Counting(allow=False)
    source = FolderSource(EXAMPLES, watch=False)
    async with running_server(source, tmp_path, filters=[OpenScoping(), yes]) as srv:
        for _ in range(5):
            assert (await srv.get(vm_path())).status == 200
        assert srv.server.app[PIPELINE].answered_at_once == 4  # all but the first, which rendered
    # Asked every time; the first request, not cached yet, then ran the whole way (the filter too).
    assert yes.asked == 5 and len(yes.seen) == 6
    async with running_server(source, tmp_path / "2", filters=[OpenScoping(), no]) as srv:
        for _ in range(3):
            assert (await srv.get(vm_path())).status == 200
        assert srv.server.app[PIPELINE].answered_at_once == 0
    assert no.asked == 3 and no.seen == [vm_path()] * 3  # said no: ran the whole way every time


async def test_filters_run_in_order_around_the_endpoint() -> None:
    order: list[str] = []

    def step(name: str) -> Audit:
        class Step(Audit):
            async def __call__(self, request: web.Request, handler: Handler) -> web.StreamResponse:
                order.append(f"{name} in")
                response = await handler(request)
                order.append(f"{name} out")
                return response

        return Step()

    async def endpoint(_request: web.Request) -> web.StreamResponse:
        order.append("endpoint")
        return web.Response()

    chain = compose([step("a"), step("b")], endpoint)
    await chain(None)  # type: ignore[arg-type]
    assert order == ["a in", "b in", "endpoint", "b out", "a out"]
