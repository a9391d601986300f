"""``?pretty=true`` and the curl/Wget/browser User-Agent rule, as kube-apiserver indents JSON answers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from apiserver.http.media import indent_json
from tests.support.http_helpers import EXAMPLES, RunningServer, examples_server, put_path, vm_path

CURL = {"User-Agent": "curl/8.5.0"}


def go_indented(value: Any) -> bytes:
    """What Go's json.MarshalIndent(v, "", "  ") writes for plain JSON values."""
    return json.dumps(value, indent=2, ensure_ascii=False).encode()


@pytest.fixture
async def srv(tmp_path: Path) -> AsyncIterator[RunningServer]:
    async with examples_server(tmp_path) as running:
        yield running


def test_indent_follows_go_marshal_indent() -> None:
    compact = b'{"a":[],"b":{},"c":[1,{"d":"x,\\"}:[ "}],"e":"\\u003c&"}'
    assert indent_json(compact) == (
        b'{\n  "a": [],\n  "b": {},\n  "c": [\n    1,\n    {\n      "d": "x,\\"}:[ "\n    }\n  ],\n'
        b'  "e": "\\u003c&"\n}'
    )
    assert indent_json(b"[]") == b"[]"


async def test_pretty_true_indents_the_same_json(srv: RunningServer) -> None:
    compact = await srv.get(vm_path())
    for value in ("true", "1", "t", "T", "TRUE", "True"):
        pretty = await srv.get(vm_path() + f"?pretty={value}")
        assert pretty.status == 200
        assert pretty.body == go_indented(compact.json()), value
        assert pretty.body == indent_json(compact.body)
    assert b"\n" not in compact.body


@pytest.mark.parametrize(
    ("query", "headers", "indented"),
    [
        ("", CURL, True),
        ("", {"User-Agent": "Wget/1.21.4"}, True),
        ("", {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64)"}, True),
        ("", {"User-Agent": "kubectl/v1.28.7 (linux/amd64) kubernetes/c8dcb00"}, False),
        ("?pretty=false", CURL, False),
        ("?pretty=0", CURL, False),
        ("?pretty=", CURL, True),  # empty: the User-Agent decides
        ("?pretty=yes", {}, False),  # Go's ParseBool refuses it: not pretty, and no error
        ("?pretty=yes", CURL, False),
    ],
)
async def test_user_agent_and_query_decide(
    srv: RunningServer, query: str, headers: dict[str, str], indented: bool
) -> None:
    reply = await srv.get(vm_path() + query, headers=headers)
    assert reply.status == 200, reply.body
    assert (b"\n  " in reply.body) is indented


async def test_errors_puts_and_discovery_are_indented_too(srv: RunningServer) -> None:
    missing = await srv.get(vm_path(name="ghost") + "?pretty=true")
    assert missing.status == 404
    assert missing.body == go_indented(missing.json())
    assert missing.json()["reason"] == "NotFound"
    body = (EXAMPLES / "vm-fedora.yaml").read_bytes()
    for _ in range(2):  # the second answer comes from the response cache
        put = await srv.put(put_path() + "?pretty=true", data=body)
        assert put.status == 200
        assert put.body == go_indented(put.json())
    discovery = await srv.get("/apis?pretty=true")
    assert discovery.body == go_indented(discovery.json())
    as_yaml = await srv.get(vm_path() + "?pretty=true", headers={"Accept": "application/yaml"})
    assert as_yaml.body.startswith(b"kind: VirtualMachine\n")


async def test_cached_answers_and_etags(srv: RunningServer) -> None:
    first = await srv.get(vm_path(), headers=CURL)
    second = await srv.get(vm_path(), headers=CURL)  # answered at once from the response cache
    assert first.body == second.body == go_indented(orjson.loads(first.body))
    compact = await srv.get(vm_path())
    # The same JSON in other bytes: a weak validator, which still revalidates either representation.
    assert first.headers["etag"] == "W/" + compact.headers["etag"]
    revalidated = await srv.get(vm_path(), headers={**CURL, "If-None-Match": first.headers["etag"]})
    assert revalidated.status == 304
    assert revalidated.headers["etag"] == first.headers["etag"]
