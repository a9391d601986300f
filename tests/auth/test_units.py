"""Request attributes, path classes and header decoding, as k8s.io/apiserver derives them."""

from __future__ import annotations

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from apiserver.auth.authorization import request_attributes
from apiserver.auth.gate import PathClass, _in_namespace, _wide, _wide_of, classify
from apiserver.auth.requestheader import decode_extra_key
from apiserver.auth.tokenreview import bearer_token


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        (
            "GET",
            "/apis/g/v1/namespaces/ns/virtualmachines/vm/expand-spec",
            ("get", "ns", "virtualmachines", "expand-spec", "vm"),
        ),
        (
            "HEAD",
            "/apis/g/v1/namespaces/ns/virtualmachines/vm/expand-spec",
            ("get", "ns", "virtualmachines", "expand-spec", "vm"),
        ),
        ("PUT", "/apis/g/v1/namespaces/ns/expand-vm-spec", ("update", "ns", "expand-vm-spec", "", "")),
        ("PUT", "/apis/g/v1/namespaces/ns/expand-vm-spec/", ("update", "ns", "expand-vm-spec", "", "")),
        ("GET", "/apis/g/v1/namespaces/ns/expand-vm-spec", ("list", "ns", "expand-vm-spec", "", "")),
        (
            "DELETE",
            "/apis/g/v1/namespaces/ns/virtualmachines",
            ("deletecollection", "ns", "virtualmachines", "", ""),
        ),
        ("GET", "/apis/g/v1/namespaces/ns", ("get", "ns", "namespaces", "", "ns")),
        ("GET", "/apis/g/v1/namespaces/ns/status", ("get", "ns", "namespaces", "status", "ns")),
    ],
)
def test_resource_attributes(method: str, path: str, expected: tuple[str, ...]) -> None:
    attrs = request_attributes(method, path)
    assert attrs.resource_request
    assert (attrs.group, attrs.version) == ("g", "v1")
    assert (attrs.verb, attrs.namespace, attrs.resource, attrs.subresource, attrs.name) == expected


@pytest.mark.parametrize(("method", "path"), [("GET", "/metrics"), ("POST", "/apis/g"), ("GET", "/")])
def test_non_resource_attributes(method: str, path: str) -> None:
    attrs = request_attributes(method, path)
    assert not attrs.resource_request
    assert attrs.review_fields() == {"nonResourceAttributes": {"path": path, "verb": method.lower()}}


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/livez", PathClass.PUBLIC),
        ("/readyz/authentication-config", PathClass.PUBLIC),
        ("/livezz", PathClass.REVIEWED),
        ("/apis", PathClass.AUTHENTICATED),
        ("/apis/subresources.kubevirt.io", PathClass.AUTHENTICATED),
        ("/apis/subresources.kubevirt.io/v1", PathClass.AUTHENTICATED),
        ("/apis/subresources.kubevirt.io/v1/version", PathClass.AUTHENTICATED),
        ("/openapi/v3/apis/subresources.kubevirt.io/v1", PathClass.AUTHENTICATED),
        ("/apis/subresources.kubevirt.io/v1/namespaces/ns/expand-vm-spec", PathClass.REVIEWED),
        ("/metrics", PathClass.REVIEWED),
        ("/version", PathClass.AUTHENTICATED),
        ("/version/", PathClass.AUTHENTICATED),
        ("/versionz", PathClass.REVIEWED),
    ],
)
def test_path_classes(path: str, kind: PathClass) -> None:
    assert classify(path) is kind


def test_extra_keys_are_lowercased_then_unescaped() -> None:
    assert decode_extra_key("Scopes.Example.com%2FTeam") == "scopes.example.com/team"
    assert decode_extra_key("Acme.com%2Fproject") == "acme.com/project"
    assert decode_extra_key("bad%zz") == "bad%zz"


def test_bearer_token_parsing() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer abc") == "abc"
    assert bearer_token("Basic abc") is None
    assert bearer_token("Bearer ") is None


async def test_review_cache_counts_and_the_metrics_export_it() -> None:
    """What an operator weighs --authorize-references by: lookups answered from the cache, reviews asked."""
    import asyncio

    from apiserver.auth.cache import TTLCache
    from apiserver.http.metrics import Metrics

    cache: TTLCache[bool] = TTLCache(lambda _v: 10.0)
    asked = 0

    async def review() -> bool:
        nonlocal asked
        asked += 1
        await asyncio.sleep(0.01)  # a review takes time: the other two ask while it is under way
        return True

    await asyncio.gather(*(cache.get("k", review) for _ in range(3)))  # one review, two share it
    await cache.get("k", review)
    await cache.get("other", review)
    assert (asked, cache.hits, cache.misses) == (2, 3, 2)
    metrics = Metrics()
    metrics.watch_reviews("subjectaccessreviews", lambda: (len(cache), cache.hits, cache.misses))
    text = metrics.exposition().decode()
    assert 'kubevirt_expand_review_cache_entries{review="subjectaccessreviews"} 2.0' in text
    assert 'kubevirt_expand_review_cache_hits_total{review="subjectaccessreviews"} 3.0' in text
    assert 'kubevirt_expand_review_cache_misses_total{review="subjectaccessreviews"} 2.0' in text


def _mostly(right: str, *wrong: str) -> st.SearchStrategy[str]:
    return st.one_of(
        st.just(right), st.just(right), st.just(right), st.sampled_from(wrong), st.text("ab.?/-%", max_size=3)
    )


# Paths near the shape of one named object of a namespace: each segment mostly right, cut anywhere.
_NEAR_NAMED = st.tuples(
    _mostly("apis", "api", ""),
    _mostly("g", ""),
    _mostly("v1", ""),
    _mostly("namespaces", "namespace", ""),
    _mostly("ns", ""),
    _mostly("virtualmachines", "status", "finalize", ""),
    _mostly("vm", ""),
    _mostly("expand-spec", "status", ""),
    st.sampled_from(["x", ""]),
).flatmap(lambda parts: st.sampled_from([7, 8, 8, 9, 0, 3, 6]).map(lambda n: list(parts[:n])))


@given(
    st.sampled_from(["GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS", "get"]),
    _NEAR_NAMED,
    st.sampled_from(["", "/", "//", "?watch"]),
)
@settings(max_examples=500)
@example("GET", ["apis", "g", "v1", "namespaces", "ns", "virtualmachines", "vm", "expand-spec"], "")
@example("GET", ["apis", "g", "v1", "namespaces", "ns", "status", "vm"], "")
@example("GET", ["apis", "g", "v1", "namespaces", "ns", "virtualmachines", "vm"], "?watch")
def test_a_path_is_taken_by_namespace_only_as_its_attributes_say(
    method: str, segments: list[str], end: str
) -> None:
    """The by-namespace admission's own parse of a path (a split, apiserver.auth.gate._in_namespace)
    names the name and every-name attributes that request_attributes and _wide derive, or declines;
    where it declines, the path's own memos decide, so declining costs speed, never correctness."""
    path = "/" + "/".join(segments) + end
    inside = _in_namespace(method, path)
    event("taken by namespace" if inside is not None else "declined")
    if inside is None:
        return
    shape, name = inside
    attrs = request_attributes(method, path)
    assert shape[0] == method
    wide = _wide_of(shape)
    assert (wide, name) == (_wide(attrs), attrs.name)
    assert wide.namespace and wide.name == "" and name
