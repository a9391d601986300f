"""PUT bodies that are not JSON, answered as KubeVirt's real virt-api answered them.

``virtapi_bodies.json`` beside this file holds virt-api's own answers (recorded by
``hack/oracle/virtapi_bodies.py`` from the binary ../shared/oracle builds: an example VM cut short at
every length, bytes replaced and inserted, a few hand-picked bodies; Go's ``json.Unmarshal`` refusing each).
Ours, with ``--kubevirt-error-codes``, must give the same status and Status body for every one.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from tests.support.http_helpers import MemorySource, put_path, running_server

CASES: list[dict[str, Any]] = json.loads(Path(__file__).with_name("virtapi_bodies.json").read_text())["cases"]


def test_the_recording_covers_the_syntax_errors() -> None:
    messages = {case["answer"]["message"].rpartition("error: ")[2] for case in CASES}
    # Each kind of refusal Go's scanner words its own way is there (a recording that lost them says so).
    for part in (
        "unexpected end of JSON input",
        "looking for beginning of value",
        "after object key",
        "in string",
        "in numeric literal",
        "in literal",
        "after top-level value",
        "cannot unmarshal",
    ):
        assert any(part in message for message in messages), part


async def test_bodies_go_refuses_answered_as_virt_api(tmp_path: Path) -> None:
    found = []
    async with running_server(MemorySource(), tmp_path, kubevirt_error_codes=True) as srv:
        for case in CASES:
            data = base64.b64decode(case["body"])
            reply = await srv.put(
                put_path("default"), data=data, headers={"Content-Type": "application/json"}
            )
            got = (reply.status, reply.json())
            if got != (case["status"], case["answer"]):
                found.append(f"{data[:80]!r}...\n  ours:     {got}\n  virt-api: {case['answer']}")
    assert not found, f"{len(found)} of {len(CASES)} differ:\n" + "\n".join(found[:10])
