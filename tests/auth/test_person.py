"""Whose share an identity draws on (apiserver/auth/identity.py ``person``)."""

from __future__ import annotations

import pytest

from apiserver.auth.identity import person


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("system:serviceaccount:ns-a:minted-1", "namespace:ns-a"),
        ("system:serviceaccount:ns-a:minted-2", "namespace:ns-a"),
        ("system:serviceaccount:ns-b:x", "namespace:ns-b"),
        ("alice", "user:alice"),
        ("system:serviceaccount:ns-a", "user:system:serviceaccount:ns-a"),  # not a ServiceAccount's name
        ("system:serviceaccount::x", "user:system:serviceaccount::x"),
        ("system:node:n1", "user:system:node:n1"),
    ],
)
def test_the_service_accounts_of_a_namespace_are_one_person(name: str, expected: str) -> None:
    assert person(name) == expected
