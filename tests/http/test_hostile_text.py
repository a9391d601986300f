"""Text from the input reaches headers and terminals without its control characters (issue 12): a field
name holding NUL or an ANSI escape, under ``fieldValidation=Warn``, used to make aiohttp drop the
connection ("Forbidden control character ... in headers") with a traceback. Warning headers are bounded
as kube-apiserver bounds them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from apiserver.documents.manifests import read_manifest_paths
from apiserver.http.endpoints.expand import WARNING_ITEM, WARNINGS_TOTAL, warning_header, warning_headers
from tests.support.http_helpers import EXAMPLES, REPO, MemorySource, put_path, running_server
from tests.support.patience import patience


def _fedora() -> dict[str, Any]:
    (vm,) = [o for _, o in read_manifest_paths([str(EXAMPLES / "vm-fedora.yaml")])]
    return vm


def test_warning_header_escapes_control_characters() -> None:
    assert (
        warning_header('unknown field "a\x00b\x1b[31m\x7f"')
        == r'299 - "unknown field \"a\x00b\x1b[31m\x7f\""'
    )
    assert warning_header("é ok") == '299 - "é ok"'


def test_warning_headers_bounded_as_kube_apiserver_bounds_them() -> None:
    few = ["a", "b", "a", ""]
    assert warning_headers(few) == (("Warning", '299 - "a"'), ("Warning", '299 - "b"'))
    many = [f"{i:03d}" + "x" * 500 for i in range(100)]  # 50,000 characters
    headers = warning_headers(many)
    texts = [value[len('299 - "') : -1] for _, value in headers]
    assert all(len(t) == WARNING_ITEM for t in texts)
    assert texts[0].startswith("000") and texts[1].startswith("001")
    assert len(headers) == WARNINGS_TOTAL // WARNING_ITEM


async def test_a_control_character_in_a_field_name_is_a_clean_warning(tmp_path: Path) -> None:
    source = MemorySource([o for _, o in read_manifest_paths([str(EXAMPLES)])])
    vm = _fedora()
    vm["spec"]["template"]["spec"]["domain"]["x\x00\x1b[2J"] = 1
    async with running_server(source, tmp_path) as server:
        warned = await server.put(put_path() + "?fieldValidation=Warn", json_body=vm)
        refused = await server.put(put_path() + "?fieldValidation=Strict", json_body=vm)
    assert warned.status == 200
    assert warned.header_lists["warning"] == [
        r'299 - "unknown field \"spec.template.spec.domain.x\x00\x1b[2J\""'
    ]
    assert refused.status == 422
    assert refused.json()["details"]["causes"][0]["field"] == "spec.template.spec.domain.x\x00\x1b[2J"


def test_command_line_escapes_control_characters_on_stderr(tmp_path: Path) -> None:
    vm = _fedora()
    vm["metadata"]["name"] = "evil\x1b[31m"
    vm["spec"]["template"]["spec"]["domain"]["x\x1b[2J\x9b"] = 1
    path = tmp_path / "vm.json"
    path.write_text(json.dumps(vm))

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "apiserver.cli", "expand", "-f", str(path), "-f", str(EXAMPLES), *extra],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=patience(60),
            check=False,
        )

    warned = run("--field-validation", "Warn", "-o", "json")
    assert warned.returncode == 0, warned.stderr
    assert "\x1b" not in warned.stderr and "\x9b" not in warned.stderr
    assert (
        f"Warning: {path}: document 1: "
        + r'default/evil\x1b[31m: unknown field "spec.template.spec.domain.x\x1b[2J\x9b"'
        in warned.stderr
    )
    refused = run()
    assert refused.returncode == 1
    assert "\x1b" not in refused.stderr and "\x9b" not in refused.stderr
    error, status_line = refused.stderr.splitlines()[-3:-1]
    assert error.startswith(f"refused: {path}: document 1: " + r"default/evil\x1b[31m: ")
    assert json.loads(status_line)["details"]["name"] == "evil\x1b[31m"


def test_access_line_escapes_the_user_name_and_path() -> None:
    from aiohttp.test_utils import make_mocked_request

    from apiserver.http.keys import USER as USER_KEY
    from apiserver.http.logging import TextFormatter, log_request
    from tests.http.test_logging_fast import root_handler

    with root_handler() as (stream, handler):
        handler.setFormatter(TextFormatter())
        request = make_mocked_request("GET", "/apis/x%0Ay?labelSelector=%1B[2J")
        request[USER_KEY] = "jane\n2026-01-01 00:00:00,000 INFO forged"
        log_request(request, 403, 0.001)
        handler.flush()
    (line,) = stream.getvalue().splitlines()
    # The path as received (its escapes kept, as kube-apiserver's audit log keeps requestURI): an encoded
    # newline stays %0A; a decoded query value is escaped.
    assert line.endswith(
        r"GET /apis/x%0Ay?labelSelector=\x1b[2J 403 1.0ms user=jane\x0a2026-01-01 00:00:00,000 INFO forged"
    )
    with root_handler() as (stream, handler):
        handler.setFormatter(TextFormatter())
        log_request(make_mocked_request("GET", "/apis/x\x1b[2Jy"), 404, 0.001)  # raw, if a parser let it
        handler.flush()
    (line,) = stream.getvalue().splitlines()
    assert line.endswith(r"GET /apis/x\x1b[2Jy 404 1.0ms")
