"""Who a request comes from, in the shape Kubernetes authorizers expect (``user.Info``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The group kube-apiserver gives every authenticated caller; SubjectAccessReviews carry it too.
AUTHENTICATED_GROUP = "system:authenticated"
MASTERS_GROUP = "system:masters"
# k8s.io/apiserver records the client certificate's fingerprint under this extra key.
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"
# What a ServiceAccount's user name starts with (k8s.io/apiserver serviceaccount.ServiceAccountUsernamePrefix).
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


def person(name: str) -> str:
    """Whose share an identity draws on: ``namespace:NS`` for a ServiceAccount of namespace NS, else
    ``user:NAME``. Whoever may impersonate ServiceAccounts of a namespace (the ``edit`` role may) can
    mint as many of them as they like, existing or not, and kube-apiserver forwards only the identity
    impersonated (X-Remote-User ``system:serviceaccount:NS:NAME``, groups ``system:serviceaccounts``,
    ``system:serviceaccounts:NS``, ``system:authenticated``; nothing of the impersonator): the
    namespace is what they all have in common. Any other name takes a cluster-wide right to mint
    (impersonating users, or an authenticator's), so it counts as a person of its own."""
    if name.startswith(SERVICE_ACCOUNT_PREFIX):
        namespace, colon, rest = name[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")
        if namespace and colon and rest:
            return "namespace:" + namespace
    return "user:" + name


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An authenticated identity: name, uid, groups and extra values (keys lower-case)."""

    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # How the identity was established ("request-header", "x509", "token"), for the access log.
    method: str = ""

    def review_fields(self) -> dict[str, Any]:
        """The ``user``/``uid``/``groups``/``extra`` members of a SubjectAccessReview spec."""
        spec: dict[str, Any] = {"user": self.name}
        if self.uid:
            spec["uid"] = self.uid
        if self.groups:
            spec["groups"] = list(self.groups)
        if self.extra:
            spec["extra"] = {k: list(v) for k, v in sorted(self.extra.items())}
        return spec

    def cache_key(self) -> tuple[Any, ...]:
        return (
            self.name,
            self.uid,
            self.groups,
            tuple(sorted((k, v) for k, v in self.extra.items())),
        )
