"""``?presets`` and ``?validate`` are read as kube-apiserver reads boolean query parameters (absent, 0 or
false in any case: false; bare, empty, 1, t or true in any case: true; the first of repeated values),
and other values, which kube-apiserver would silently take as true, are a 400 Status naming them."""

from __future__ import annotations

import pytest
from aiohttp.test_utils import make_mocked_request

from apiserver.http.endpoints.expand import query_flag
from apiserver.http.errors import StatusError


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", False),
        ("other=1", False),
        ("presets", True),
        ("presets=", True),
        ("presets=1", True),
        ("presets=t", True),
        ("presets=T", True),
        ("presets=true", True),
        ("presets=TRUE", True),
        ("presets=True", True),
        ("presets=0", False),
        ("presets=false", False),
        ("presets=FALSE", False),
        ("presets=False", False),
        ("presets=fAlSe", False),
        ("presets=true&presets=false", True),
        ("presets=0&presets=1", False),
    ],
)
def test_read_as_kube_apiserver_reads_them(query: str, expected: bool) -> None:
    assert query_flag(make_mocked_request("GET", f"/x?{query}"), "presets") is expected


@pytest.mark.parametrize("value", ["yes", "no", "on", "off", "f", "F", "2", "%20false", "ture", "%0A"])
def test_other_values_are_a_400_naming_the_parameter(value: str) -> None:
    with pytest.raises(StatusError) as caught:
        query_flag(make_mocked_request("GET", f"/x?validate={value}"), "validate")
    body = caught.value.status
    assert (body["code"], body["reason"]) == (400, "BadRequest")
    assert body["message"].startswith('query parameter "validate" must be true or false')


def test_a_long_value_is_shortened_in_the_message() -> None:
    with pytest.raises(StatusError) as caught:
        query_flag(make_mocked_request("GET", "/x?presets=" + "y" * 10_000), "presets")
    assert len(caught.value.status["message"]) < 200
