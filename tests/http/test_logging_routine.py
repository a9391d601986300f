"""Routine answers (probes, discovery, OpenAPI, metrics) go to the access log at debug level, so that
behind a real aggregator (about 40 of them a minute on an idle server: see tests/realk8s) the info
level shows the users' requests and every failure."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from apiserver.documents.manifests import read_manifest_paths
from apiserver.http.logging import ACCESS_LOGGER
from apiserver.sources.base import Check
from tests.support.http_helpers import EXAMPLES, GROUP, MemorySource, running_server, vm_path

ROUTINE = [
    "/livez",
    "/readyz?verbose",
    "/healthz",
    "/livez/ping",
    "/apis",
    f"/apis/{GROUP}",
    f"/apis/{GROUP}/v1",
    f"/apis/{GROUP}/v1alpha3",
    "/openapi/v2",
    "/openapi/v3",
    f"/openapi/v3/apis/{GROUP}/v1",
    "/metrics",
]


def lines(caplog: pytest.LogCaptureFixture) -> dict[str, str]:
    return {r.getMessage().rsplit(" ", 1)[0]: r.levelname for r in caplog.records if r.name == ACCESS_LOGGER}


async def test_routine_answers_are_debug_and_the_rest_info(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=ACCESS_LOGGER)
    objects = [obj for _, obj in read_manifest_paths([EXAMPLES])]
    async with running_server(MemorySource(objects), tmp_path) as srv:
        for path in ROUTINE:
            assert (await srv.get(path)).status == 200, path
        assert (await srv.get(vm_path(name="fedora"))).status == 200
        assert (await srv.get(vm_path(name="nosuch"))).status == 404
        assert (await srv.get(f"/apis/{GROUP}/v2")).status == 404  # not a route: "other"
        assert (await srv.get("/readyz/nosuch")).status == 404
    seen = lines(caplog)
    for path in ROUTINE:
        assert seen[f"GET {path} 200"] == "DEBUG", path
    assert seen[f"GET {vm_path(name='fedora')} 200"] == "INFO"
    assert seen[f"GET {vm_path(name='nosuch')} 404"] == "INFO"
    assert seen[f"GET /apis/{GROUP}/v2 404"] == "INFO"
    assert seen["GET /readyz/nosuch 404"] == "INFO"


async def test_failing_probe_is_info(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    source = MemorySource(check_list=[Check("manifests", False, "broken")])
    async with running_server(source, tmp_path) as srv:
        assert (await srv.get("/readyz")).status == 500
        assert (await srv.get("/livez")).status == 200
    assert lines(caplog) == {"GET /readyz 500": "INFO"}
